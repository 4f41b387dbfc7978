//! Writing a fork-join kernel once: [`Fork::join`] is `join` on magpie ([`Magpie`]), on rayon
//! ([`Rayon`]), or the two closures one after the other ([`Serial`], for serial twins that must
//! be the same algorithm without a runtime). chili's `join` hands its closures a scope with a
//! fresh lifetime, which does not fit this one signature, so chili versions are written out.

/// A way to run two closures, possibly in parallel.
pub trait Fork: Sized {
    /// Runs `a` and `b` and returns both results.
    fn join<A, B, RA, RB>(&mut self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut Self) -> RA + Send,
        B: FnOnce(&mut Self) -> RB + Send,
        RA: Send,
        RB: Send;
}

/// No runtime: `a`, then `b`.
pub struct Serial;
/// `magpie::join` (call inside `Pool::install`).
pub struct Magpie;
/// `rayon::join` (call inside a rayon pool's `install`).
pub struct Rayon;

impl Fork for Serial {
    fn join<A, B, RA, RB>(&mut self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut Self) -> RA + Send,
        B: FnOnce(&mut Self) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let ra = a(self);
        (ra, b(self))
    }
}

impl Fork for Magpie {
    fn join<A, B, RA, RB>(&mut self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut Self) -> RA + Send,
        B: FnOnce(&mut Self) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        magpie::join(|| a(&mut Magpie), || b(&mut Magpie))
    }
}

impl Fork for Rayon {
    fn join<A, B, RA, RB>(&mut self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut Self) -> RA + Send,
        B: FnOnce(&mut Self) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        rayon::join(|| a(&mut Rayon), || b(&mut Rayon))
    }
}
