//! Writing a fork-join kernel once: [`Fork::join`] is `join` on magpie ([`Magpie`]), on rayon
//! ([`Rayon`]), or the two closures one after the other ([`Serial`], for serial twins that must
//! be the same algorithm without a runtime), or `chili::Scope::join` ([`Chili`]). fib, nqueens
//! and uts keep their chili versions written out by hand (their magpie versions call `magpie::join`
//! or `magpie::scope` directly, as a user would); every other kernel runs on chili through
//! [`Chili`].

/// A way to run two closures, possibly in parallel.
pub trait Fork: Sized {
    /// Runs `a` and `b` and returns both results.
    fn join<A, B, RA, RB>(&mut self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut Self) -> RA + Send,
        B: FnOnce(&mut Self) -> RB + Send,
        RA: Send,
        RB: Send;

    /// SLAW's places the runtime offers for locality hints (1: none). Only magpie's pools with
    /// places have more.
    fn places(&self) -> usize {
        1
    }

    /// Whether the calling task may run its whole subtree as a sequential kernel (dynamic
    /// coarsening: only [`Coarsen`] says yes, under a strict schedule with no cut below).
    fn coarse(&mut self) -> bool {
        false
    }

    /// Whether the pool has CAB's squads (magpie in a pool built with `squads`).
    fn squads(&self) -> bool {
        false
    }
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

    fn places(&self) -> usize {
        magpie::current_places()
    }

    fn squads(&self) -> bool {
        magpie::current_squads()
    }
}

/// magpie with dynamic coarsening (Lifflander's thesis, §6.5): a join asks
/// [`magpie::schedule::may_coarsen`] whether the template being followed (under a strict
/// constraint) cuts nothing below this task; if so, this task and everything below it run the
/// two halves one after the other, as [`Serial`] does, with no spawn and no further question.
/// A kernel that asks [`Fork::coarse`] first can call its sequential code instead (the row
/// sweeps do: a coarse band is one leaf). Outside a followed region it is [`Magpie`] plus one
/// thread-local read per join.
#[derive(Clone, Copy, Debug, Default)]
pub struct Coarsen {
    /// Whether an ancestor found that nothing below it is cut.
    below: bool,
}

impl Coarsen {
    /// Whether the last join coarsened (this task's subtree runs sequentially).
    pub fn coarsened(&self) -> bool {
        self.below
    }
}

impl Fork for Coarsen {
    fn join<A, B, RA, RB>(&mut self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut Self) -> RA + Send,
        B: FnOnce(&mut Self) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        if self.below || magpie::schedule::may_coarsen() {
            self.below = true;
            let ra = a(self);
            return (ra, b(self));
        }
        magpie::join(|| a(&mut Coarsen::default()), || b(&mut Coarsen::default()))
    }

    fn coarse(&mut self) -> bool {
        self.below = self.below || magpie::schedule::may_coarsen();
        self.below
    }

    fn places(&self) -> usize {
        magpie::current_places()
    }

    fn squads(&self) -> bool {
        magpie::current_squads()
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

/// `chili::Scope::join`. chili hands each closure a `&mut Scope<'_>` with a fresh lifetime, which
/// the one signature of [`Fork::join`] cannot name, so this adapter keeps a raw pointer to the
/// scope and gives each closure a new adapter around the scope chili handed it.
pub struct Chili<'a, 's> {
    scope: *mut chili::Scope<'s>,
    _borrow: std::marker::PhantomData<&'a mut chili::Scope<'s>>,
}

impl<'a, 's> Chili<'a, 's> {
    /// An adapter around `scope`, borrowed for as long as the adapter lives.
    pub fn new(scope: &'a mut chili::Scope<'s>) -> Self {
        Chili {
            scope,
            _borrow: std::marker::PhantomData,
        }
    }
}

impl Fork for Chili<'_, '_> {
    fn join<A, B, RA, RB>(&mut self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&mut Self) -> RA + Send,
        B: FnOnce(&mut Self) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        // SAFETY: `self.scope` comes from a `&mut Scope` that outlives `self` (`new` borrows it for
        // `'a`, or it is the scope chili passed to the closure running this call), and nothing
        // else uses that scope while this call runs. The scopes chili hands the closures are cast
        // to the outer scope's lifetime parameter only to fit `Self`: chili's `join` puts no bound
        // tying its closures or their scopes to that parameter, and each adapter made here lives
        // only inside its closure, so no scope is used after chili is done with it.
        unsafe {
            (*self.scope).join(
                |s| {
                    let mut f = Chili {
                        scope: s as *mut chili::Scope<'_> as *mut _,
                        _borrow: std::marker::PhantomData,
                    };
                    a(&mut f)
                },
                |s| {
                    let mut f = Chili {
                        scope: s as *mut chili::Scope<'_> as *mut _,
                        _borrow: std::marker::PhantomData,
                    };
                    b(&mut f)
                },
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fib<F: Fork>(f: &mut F, n: u64, joins: &std::sync::atomic::AtomicU64) -> u64 {
        if n < 2 {
            return n;
        }
        let (a, b) = f.join(|f| fib(f, n - 1, joins), |f| fib(f, n - 2, joins));
        if magpie::worker_index().is_some() && magpie::schedule::may_coarsen() {
            joins.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        a + b
    }

    #[test]
    fn coarsen_runs_sequentially_only_below_every_cut_of_a_strict_template() {
        use magpie::schedule::{self, Constraint, Schedule};
        use std::sync::atomic::AtomicU64;
        let pool = magpie::Pool::builder().workers(4).build().unwrap();
        let joins = AtomicU64::new(0);
        // Plain: the same answer, nothing coarsened.
        assert_eq!(
            pool.install(|| fib(&mut Coarsen::default(), 20, &joins)),
            6765
        );
        assert_eq!(joins.load(std::sync::atomic::Ordering::Relaxed), 0);
        // Under a strict halving template the subtrees below depth 2 coarsen, and the work still
        // spreads over the four workers (the cuts above are followed).
        for c in [Constraint::Ordered, Constraint::Unordered] {
            let (r, taken) = pool.install(|| {
                schedule::follow(&Schedule::halving(4), c, || {
                    fib(&mut Coarsen::default(), 20, &joins)
                })
            });
            assert_eq!(r, 6765);
            assert_eq!(taken.cuts().len(), 3, "{c:?}");
            assert!(joins.load(std::sync::atomic::Ordering::Relaxed) > 0);
        }
        // Relaxed never coarsens: idle workers may still steal below.
        joins.store(0, std::sync::atomic::Ordering::Relaxed);
        pool.install(|| {
            schedule::follow(&Schedule::halving(4), Constraint::Relaxed, || {
                fib(&mut Coarsen::default(), 20, &joins)
            })
        });
        assert_eq!(joins.load(std::sync::atomic::Ordering::Relaxed), 0);
    }
}
