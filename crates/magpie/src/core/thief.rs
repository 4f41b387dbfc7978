//! A worker's record as a thief: its random stream, the order in which it tries victims, and
//! the victim of its last successful steal. The steal round that uses it is `steal.rs`'s.

use std::cell::Cell;

/// A worker's record as a thief (`WorkerThread::thief`).
pub(crate) struct Thief {
    /// The state of its random stream (`next_rand`).
    rng: Cell<u64>,
    /// The other workers in the order a thief tries them (`Registry::victim_tiers`); `None`
    /// for random victims.
    tiers: Option<[Vec<usize>; 3]>,
    /// The victim of this worker's last successful steal.
    last_victim: Cell<usize>,
}

impl Thief {
    /// Worker `index`'s thief, trying victims in the order `tiers` (random if `None`).
    pub(crate) fn new(index: usize, tiers: Option<[Vec<usize>; 3]>) -> Thief {
        Thief {
            rng: Cell::new(
                0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407),
            ),
            tiers,
            last_victim: Cell::new(0),
        }
    }

    /// The next number of the random stream (xorshift64*).
    #[inline]
    pub(crate) fn next_rand(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The other workers in the order to try them, nearest tier first; `None` for random
    /// victims.
    pub(crate) fn tiers(&self) -> Option<&[Vec<usize>; 3]> {
        self.tiers.as_ref()
    }

    /// Records a successful steal from `v`.
    pub(crate) fn stole_from(&self, v: usize) {
        self.last_victim.set(v);
    }

    /// The victim of the last successful steal.
    pub(crate) fn last_victim(&self) -> usize {
        self.last_victim.get()
    }
}
