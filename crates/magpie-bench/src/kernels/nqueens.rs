//! N-Queens: count the placements of `n` non-attacking queens on an `n`×`n` board (the BOTS
//! nqueens kernel that CAB and DWS (Chen et al., ICPP 2011 §V; PMAM 2014 §4) run). A partial
//! placement is three bitmasks (columns and both diagonals taken); each free square of the next row
//! is a child. [`parallel`] spawns one task per child into a `magpie::scope` for the first
//! [`PAR_ROWS`] rows (the cutoff, as BOTS has one; [`parallel_grain`] and the peers' `_grain`
//! versions take another), then counts serially; the serial twin is the same search without
//! tasks, so it has no grain. [`verify`] checks against the known counts (OEIS A000170), which no
//! grain changes.
//!
//! Under the race checker ([`race_run`], `magpie::race`) the search is the thesis's
//! AllQueens-style variant with shared memory, since [`parallel`] shares none (its boards are
//! copied into each task, its count is an atomic): each task of the first [`RACE_ROWS`] rows
//! writes its subtree's count into its own slot of one heap table, and a task that spawned
//! children sums their slots once its scope has closed. The planted race ([`crate::races`]) is
//! an indexing bug: the child's slot computed without its column, so that all the children of
//! one task write one slot.

use crate::harness::{answered, Measured, RunError};
use crate::kernel::{self, Def, Grain, Kernel};
use crate::kernel::Case;
use crate::workload::Runtime;
use crate::Peer;

use std::sync::atomic::{AtomicU64, Ordering};

/// Board side for `--size ci`.
pub const CI: u64 = 10;
/// Board side for `--size default`: BOTS's medium input, as `paper` (n = 15 takes ~2 s serially
/// and would push the default suite past its 10-minute budget on 2 cores).
pub const DEFAULT: u64 = 14;
/// Board side for `--size paper` (BOTS's medium input).
pub const PAPER: u64 = 14;
/// Largest side with a known answer in [`KNOWN`].
pub const MAX_N: u64 = 16;
/// The default grain: queens on the first this-many rows are placed by tasks; the rest of each
/// board is searched serially inside one task (about 10^5 tasks at n = 15).
pub const PAR_ROWS: u32 = 5;

/// Solutions for n = 0..=16 (OEIS A000170); n = 0 counts the empty board.
pub const KNOWN: [u64; 17] = [
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512,
];

/// A partial placement: the squares of the next row attacked by columns, left and right diagonals.
#[derive(Clone, Copy)]
struct Board {
    cols: u32,
    left: u32,
    right: u32,
    rows_left: u32,
    /// Rows already placed.
    row: u32,
    full: u32,
}

impl Board {
    fn new(n: u64) -> Board {
        assert!(n <= MAX_N, "n-queens side {n} above {MAX_N}");
        Board {
            cols: 0,
            left: 0,
            right: 0,
            rows_left: n as u32,
            row: 0,
            full: ((1u64 << n) - 1) as u32,
        }
    }
    /// Free squares of the next row, as a bitmask.
    #[inline]
    fn free(self) -> u32 {
        !(self.cols | self.left | self.right) & self.full
    }
    /// Whether the rest of this board is searched serially: `par_rows` rows are placed (the
    /// cutoff), or the board is full.
    #[inline]
    fn serial_below(self, par_rows: u32) -> bool {
        self.row >= par_rows || self.rows_left == 0
    }
    /// The board after a queen on square `bit` of the next row.
    #[inline]
    fn place(self, bit: u32) -> Board {
        Board {
            cols: self.cols | bit,
            left: (self.left | bit) << 1,
            right: (self.right | bit) >> 1,
            rows_left: self.rows_left - 1,
            row: self.row + 1,
            full: self.full,
        }
    }
}

fn count_serial(b: Board) -> u64 {
    if b.rows_left == 0 {
        return 1;
    }
    let mut free = b.free();
    let mut total = 0;
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free ^= bit;
        total += count_serial(b.place(bit));
    }
    total
}

/// The serial twin (no tasks, so no grain: the count is the same at every grain).
pub fn serial(n: u64) -> u64 {
    count_serial(Board::new(n))
}

fn visit<'s>(s: &magpie::Scope<'s>, b: Board, par_rows: u32, total: &'s AtomicU64) {
    if b.serial_below(par_rows) {
        // Relaxed: a sum only, read once the scope has returned (which orders it).
        total.fetch_add(count_serial(b), Ordering::Relaxed);
        return;
    }
    let mut free = b.free();
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free ^= bit;
        let child = b.place(bit);
        s.spawn(move |s| visit(s, child, par_rows, total));
    }
}

/// One task per placement into a `magpie::scope` for the first [`PAR_ROWS`] rows. Call inside
/// `Pool::install`.
pub fn parallel(n: u64) -> u64 {
    parallel_grain(n, PAR_ROWS)
}

/// [`parallel`] with tasks for the first `par_rows` rows (0: one task, the whole search serial).
pub fn parallel_grain(n: u64, par_rows: u32) -> u64 {
    let total = AtomicU64::new(0);
    magpie::scope(|s| visit(s, Board::new(n), par_rows, &total));
    total.into_inner()
}

fn visit_rayon<'s>(s: &rayon::Scope<'s>, b: Board, par_rows: u32, total: &'s AtomicU64) {
    if b.serial_below(par_rows) {
        // Relaxed: a sum only, read once the scope has returned (which orders it).
        total.fetch_add(count_serial(b), Ordering::Relaxed);
        return;
    }
    let mut free = b.free();
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free ^= bit;
        let child = b.place(bit);
        s.spawn(move |s| visit_rayon(s, child, par_rows, total));
    }
}

/// The same search on `rayon::scope`. Call inside a rayon pool's `install`.
pub fn rayon_scope(n: u64) -> u64 {
    rayon_scope_grain(n, PAR_ROWS)
}

/// [`rayon_scope`] with tasks for the first `par_rows` rows.
pub fn rayon_scope_grain(n: u64, par_rows: u32) -> u64 {
    let total = AtomicU64::new(0);
    rayon::scope(|s| visit_rayon(s, Board::new(n), par_rows, &total));
    total.into_inner()
}

/// Counts the placements below `b` whose next queen is on one of the squares in `cands`, splitting
/// the candidates in halves with `join` (chili has join only), for the first `par_rows` rows.
fn split_chili(s: &mut chili::Scope<'_>, b: Board, par_rows: u32, cands: u32) -> u64 {
    if b.serial_below(par_rows) {
        let mut free = cands;
        let mut total = 0;
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            total += count_serial(b.place(bit));
        }
        return total;
    }
    match cands.count_ones() {
        0 => 0,
        1 => {
            let child = b.place(cands);
            if child.rows_left == 0 {
                1
            } else {
                split_chili(s, child, par_rows, child.free())
            }
        }
        k => {
            // The lowest half of the candidate bits, and the rest.
            let mut low = 0;
            let mut rest = cands;
            for _ in 0..k / 2 {
                let bit = rest & rest.wrapping_neg();
                low |= bit;
                rest ^= bit;
            }
            let (a, c) = s.join(
                |s| split_chili(s, b, par_rows, low),
                |s| split_chili(s, b, par_rows, rest),
            );
            a + c
        }
    }
}

/// The same search on `chili::Scope::join`, splitting each row's candidates in halves.
pub fn chili_join(s: &mut chili::Scope<'_>, n: u64) -> u64 {
    chili_join_grain(s, n, PAR_ROWS)
}

/// [`chili_join`] splitting the candidates of the first `par_rows` rows.
pub fn chili_join_grain(s: &mut chili::Scope<'_>, n: u64, par_rows: u32) -> u64 {
    let b = Board::new(n);
    if b.rows_left == 0 {
        return 1;
    }
    split_chili(s, b, par_rows, b.free())
}

/// A run's answer: `N solutions`.
pub fn answer(got: u64) -> String {
    format!("{got} solutions")
}

/// Checks a count against the known answer.
pub fn verify(n: u64, got: u64) -> Result<(), String> {
    let want = KNOWN[n as usize];
    if got == want {
        Ok(())
    } else {
        Err(format!("nqueens({n}) = {got}, expected {want}"))
    }
}

/// Rows whose queens [`race_run`]'s search places by tasks (fewer than [`PAR_ROWS`], so that
/// its slot table, one slot per possible task, stays small: about n³ slots).
pub const RACE_ROWS: u32 = 3;

/// The slot table of [`race_run`]'s search, a heap `Vec<u64>` shared by raw pointer, laid out
/// as a complete `n`-ary tree: the root task's slot is 0, and the child of the task in slot `p`
/// that places its queen in column `c` has slot `p·n + c + 1`, so the children of one task
/// have the `n` consecutive slots from `p·n + 1` (a column taken on the board leaves its slot 0).
#[derive(Clone, Copy)]
struct Slots<'t> {
    base: *mut u64,
    len: usize,
    n: usize,
    _table: std::marker::PhantomData<&'t [u64]>,
}

// SAFETY: a `Slots` is a pointer into a table that outlives every task of the search (the
// table is `slot_search`'s, and the search's scopes close before it returns); the tasks that
// share it write disjoint slots, and each slot is read only after the scope of the task that
// wrote it closed (`visit_slots`).
unsafe impl Send for Slots<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for Slots<'_> {}

impl<'t> Slots<'t> {
    /// Slots for a search of side `n` with tasks for `rows` rows: `1 + n + … + n^rows`.
    fn len(n: usize, rows: u32) -> usize {
        (0..=rows).map(|d| n.pow(d)).sum()
    }

    /// Slot `i`'s address (only formed: declared and, by [`Slots::set`], written).
    fn at(self, i: usize) -> *mut u64 {
        assert!(i < self.len, "slot {i} of {}", self.len);
        self.base.wrapping_add(i)
    }

    /// Writes `v` into slot `i`.
    ///
    /// # Safety
    ///
    /// No other task reads or writes slot `i` while this one does (the slot is the caller's own).
    unsafe fn set(self, i: usize, v: u64) {
        // SAFETY: `at` checked the bound, the table is alive (see `Send`), and the caller owns
        // the slot.
        unsafe { self.at(i).write(v) }
    }

    /// The `n` slots of the children of the task in slot `p`.
    ///
    /// # Safety
    ///
    /// Every task that writes one of them has finished (its parent's scope has closed), and
    /// none will write them while the slice lives.
    unsafe fn children(self, p: usize) -> &'t [u64] {
        let first = p * self.n + 1;
        assert!(first + self.n <= self.len, "children of slot {p}");
        // SAFETY: in bounds (checked), the table is alive for the search (see `Send`), and
        // no task writes these slots any more (the caller's obligation).
        unsafe { std::slice::from_raw_parts(self.base.add(first), self.n) }
    }
}

/// [`race_run`]'s task for board `b`, whose slot is `slot`: a board past the first `rows` rows
/// is counted serially; otherwise one task per free square is spawned into this task's own
/// scope, and once the scope has closed the children's slots are summed. Either way the count
/// goes into this task's slot.
///
/// Declares (in a checked run) the read of its children's `n` slots (after the scope) and the
/// write of its own slot. Planted, it also declares the write the indexing bug would make: the
/// slot computed without the column, `p·n + 1` for every child of the task in slot `p`, so that
/// siblings, which run in parallel, write one slot. Only declared: the count goes into the
/// task's own slot.
fn visit_slots(b: Board, slot: usize, rows: u32, slots: Slots<'_>) {
    let count = if b.serial_below(rows) {
        count_serial(b)
    } else {
        magpie::scope(|s| {
            let mut free = b.free();
            while free != 0 {
                let bit = free & free.wrapping_neg();
                free ^= bit;
                let child = slot * slots.n + bit.trailing_zeros() as usize + 1;
                s.spawn(move |_| visit_slots(b.place(bit), child, rows, slots));
            }
        });
        // SAFETY: the children wrote their slots inside the scope, which has closed.
        let kids = unsafe { slots.children(slot) };
        if magpie::race::checking() {
            magpie::race::read(kids);
        }
        kids.iter().sum()
    };
    if magpie::race::checking() {
        magpie::race::write_raw(slots.at(slot), 1);
        if crate::races::planted() && slot > 0 {
            let parent = (slot - 1) / slots.n;
            magpie::race::write_raw(slots.at(parent * slots.n + 1), 1);
        }
    }
    // SAFETY: the slot is this task's own: its index is its path of columns from the root, and
    // its parent reads it only after its scope has closed.
    unsafe { slots.set(slot, count) }
}

/// The search of [`race_run`]: tasks for the first `rows` rows, each count in its own slot of a
/// shared table (see `visit_slots`; `1 + n + … + n^rows` slots, so keep `rows` small). Call
/// inside `Pool::install` (or `magpie::race::check`).
pub fn slot_search(n: u64, rows: u32) -> u64 {
    // No task places a queen past the last row.
    let rows = rows.min(n as u32);
    let side = (n as usize).max(1);
    let mut table = vec![0u64; Slots::len(side, rows)];
    let slots = Slots {
        base: table.as_mut_ptr(),
        len: table.len(),
        n: side,
        _table: std::marker::PhantomData,
    };
    visit_slots(Board::new(n), 0, rows, slots);
    if magpie::race::checking() {
        magpie::race::read(&table[..1]);
    }
    table[0]
}

/// This kernel under the race checker ([`crate::races`]).
pub const RACE: crate::races::Facet = crate::races::Facet {
    name: "nqueens",
    default_n: 8,
    run: race_run,
};

/// nqueens under the race checker ([`crate::races`]): [`slot_search`] of side `n` with tasks
/// for [`RACE_ROWS`] rows on the current pool, checked against the known count and the serial
/// twin. Returns the answer line; the error (an invalid `n`, a wrong count) is one line.
pub fn race_run(n: u64) -> Result<String, String> {
    KERNEL.check_n(n)?;
    let got = slot_search(n, RACE_ROWS);
    verify(n, got)?;
    let twin = serial(n);
    if got != twin {
        return Err(format!(
            "nqueens({n}) = {got}, the serial twin gives {twin}"
        ));
    }
    Ok(answer(got))
}

static DEF: Def = Def {
    name: "nqueens",
    n_meaning: "board side",
    sizes: [CI, DEFAULT, PAPER],
    max_n: MAX_N,
    grain: Some(Grain {
        default: Some(PAR_ROWS as u64),
        max: Some(MAX_N),
        meaning: "rows of the board placed by tasks before the search turns serial",
        check: None,
    }),
    peers: &[Peer::RayonScope, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp],
    race: Some(RACE),
    measure,
    ..kernel::NONE
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

/// Times the count on `rt`, tasks placing the case's grain of rows.
fn measure(rt: &Runtime<'_>, case: &Case, runs: usize) -> Result<Measured, RunError> {
    let n = case.n;
    let rows = case
        .grain
        .map_or(PAR_ROWS, |g| u32::try_from(g).unwrap_or(u32::MAX));
    kernel::measure_versions(
        rt,
        runs,
        || (),
        // The serial twin places no tasks, so the grain does not apply to it.
        |_| serial(n),
        |_| parallel_grain(n, rows),
        |_| rayon_scope_grain(n, rows),
        |s, _| chili_join_grain(s, n, rows),
        |_, r| answered(verify(n, r), || answer(r)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_twin_matches_known_counts() {
        for n in 0..=11 {
            assert_eq!(verify(n, serial(n)), Ok(()), "n = {n}");
        }
        assert_eq!(serial(12), 14_200);
        assert!(verify(8, 93).unwrap_err().contains("expected 92"));
    }

    #[test]
    fn every_version_counts_right_at_other_grains() {
        // CI = 10: grain 10 and above put a task on every placement of the search.
        for par_rows in [0, 1, 2, 7, CI as u32, u32::MAX] {
            for w in [1, 2] {
                let pool = magpie::Pool::builder().workers(w).build().unwrap();
                let got = pool.install(|| parallel_grain(CI, par_rows));
                assert_eq!(verify(CI, got), Ok(()), "magpie x{w}, grain {par_rows}");
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .unwrap();
                let got = pool.install(|| rayon_scope_grain(CI, par_rows));
                assert_eq!(verify(CI, got), Ok(()), "rayon x{w}, grain {par_rows}");
                let pool = chili::ThreadPool::with_config(chili::Config {
                    thread_count: std::num::NonZero::new(w),
                    ..Default::default()
                });
                let got = chili_join_grain(&mut pool.scope(), CI, par_rows);
                assert_eq!(verify(CI, got), Ok(()), "chili x{w}, grain {par_rows}");
            }
        }
        // The smallest boards, whose searches end before the cutoff.
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        for n in 0..=4 {
            for par_rows in [1, 2, 16] {
                let got = pool.install(|| parallel_grain(n, par_rows));
                assert_eq!(verify(n, got), Ok(()), "n = {n}, grain {par_rows}");
            }
        }
    }

    #[test]
    fn peers_match_known_counts() {
        for w in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| rayon_scope(CI)), KNOWN[CI as usize]);
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: std::num::NonZero::new(w),
                ..Default::default()
            });
            for n in [1, 4, 8, CI] {
                assert_eq!(
                    chili_join(&mut pool.scope(), n),
                    KNOWN[n as usize],
                    "n = {n}"
                );
            }
        }
    }

    #[test]
    fn slot_search_counts_right() {
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        for n in 0..=CI {
            for rows in [0, 1, 2, RACE_ROWS] {
                let got = pool.install(|| slot_search(n, rows));
                assert_eq!(verify(n, got), Ok(()), "n = {n}, rows {rows}");
            }
        }
    }

    #[test]
    fn race_checker_finds_no_race_unless_planted() {
        // 6 queens: 4 solutions, a few dozen tasks over the first three rows.
        let n = 6;
        crate::races::assert_clean_and_planted_found(RACE, n, &answer(KNOWN[n as usize]));
        assert!(race_run(MAX_N + 1).unwrap_err().contains("invalid n"));
    }
}
