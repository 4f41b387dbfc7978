//! The memory steps work on, and the views that hold each step to its declared effect.
//!
//! A step never gets the buffers themselves: it gets a view made for its effect, which hands
//! out only the rows the effect declares (reads as shared slices, writes as exclusive ones, and
//! never the same row both ways at once), and panics on any other. The scheduler makes views
//! only for steps whose effects do not interfere with any other running step's, so two live
//! views never give out the same row where one of them writes it: safe code cannot race, even
//! with a wrong effect declaration (it panics instead).
//!
//! [`Grids`] also has a *shadow checker* ([`Grids::check`]): every row remembers which step
//! wrote it last, and every read and write compares that with the writer that program order
//! (all of phase 0's steps, then phase 1's, ...) says precedes it, from the steps' declared
//! writes. A schedule that let a step run too early or too late, for instance under an effect
//! type whose interference test misses a case, fails there with both steps named. It assumes a
//! step writes every row it declares written (the grid kernels do), and it costs a lookup per
//! row touched, so it is off unless asked for.

use crate::effect::{Effect, Rows};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Memory that steps of effect `E` work on through views.
///
/// # Safety
///
/// An implementation's views must give out only what their effect declares, so that views of
/// effects that do not interfere never give out the same data where one of them may write it.
pub unsafe trait Memory<E: Effect>: Sync {
    /// A step's access to the memory.
    type View<'a>
    where
        Self: 'a,
        E: 'a;

    /// The view of the step numbered `seq` in program order, with effect `effect`.
    ///
    /// # Safety
    ///
    /// While the view lives, no view of an effect that interferes with `effect` lives, and
    /// views of interfering effects are made in program order.
    unsafe fn view<'a>(&'a self, effect: &'a E, seq: u64) -> Self::View<'a>;

    /// Told, before a window runs and in program order, every step's number and effect (the
    /// shadow checker's plan). Does nothing by default.
    fn plan(&mut self, seq: u64, effect: &E) {
        let _ = (seq, effect);
    }
}

/// One row-major buffer of `f64`.
struct Buf {
    cols: usize,
    data: Box<[UnsafeCell<f64>]>,
}

/// What the shadow checker keeps per buffer and row.
struct Shadow {
    /// The last writer of each row, as its step number + 1 (0: nobody yet).
    last: Vec<Vec<AtomicU64>>,
    /// Each row's declared writers, in program order.
    writers: Vec<Vec<Vec<u64>>>,
}

/// Row-major buffers of `f64`, worked on by steps of effect [`Rows`].
pub struct Grids {
    bufs: Vec<Buf>,
    shadow: Option<Shadow>,
}

// SAFETY: the cells are reached only through `&mut Grids` (plain access) or through views, which
// `Memory::view`'s contract keeps from sharing a row where one writes it.
unsafe impl Sync for Grids {}

impl Grids {
    /// Buffers, each given as (columns, its values row by row; the length a multiple of the
    /// columns).
    ///
    /// Every value is copied into memory written here, never taken over in place: a buffer
    /// made by `vec![0.0; len]` and left mostly zero (a grid of which only the boundary was set)
    /// has pages the kernel has not given it yet. The first step to write each such page would
    /// then pay a page fault inside the timed run, and, with a second worker running, a TLB
    /// flush on every core (jacobi at n = 4096: 32 thousand faults per run, which made 2
    /// workers slower than 1).
    pub fn new(bufs: Vec<(usize, Vec<f64>)>) -> Grids {
        let bufs = bufs
            .into_iter()
            .map(|(cols, data)| {
                assert!(
                    cols > 0 && data.len() % cols == 0,
                    "a buffer of {} values is not whole rows of {cols}",
                    data.len()
                );
                let mut cells = Vec::with_capacity(data.len());
                cells.extend(data.iter().map(|&x| UnsafeCell::new(x)));
                Buf {
                    cols,
                    data: cells.into_boxed_slice(),
                }
            })
            .collect();
        Grids { bufs, shadow: None }
    }

    /// Turns the shadow checker on (see the module doc) for the runs that follow.
    pub fn check(mut self) -> Grids {
        self.shadow = Some(Shadow {
            last: self
                .bufs
                .iter()
                .map(|b| (0..self.rows_of(b)).map(|_| AtomicU64::new(0)).collect())
                .collect(),
            writers: self
                .bufs
                .iter()
                .map(|b| vec![Vec::new(); self.rows_of(b)])
                .collect(),
        });
        self
    }

    fn rows_of(&self, b: &Buf) -> usize {
        b.data.len() / b.cols
    }

    /// How many buffers.
    pub fn buffers(&self) -> usize {
        self.bufs.len()
    }

    /// Rows of buffer `buf`.
    pub fn rows(&self, buf: usize) -> usize {
        self.rows_of(&self.bufs[buf])
    }

    /// Columns of buffer `buf`.
    pub fn cols(&self, buf: usize) -> usize {
        self.bufs[buf].cols
    }

    /// Buffer `buf`'s values, row by row.
    pub fn buffer(&mut self, buf: usize) -> &[f64] {
        let cells: &mut [UnsafeCell<f64>] = &mut self.bufs[buf].data;
        // SAFETY: `&mut self` excludes every view; `UnsafeCell<f64>` has `f64`'s layout.
        unsafe { std::slice::from_raw_parts(cells.as_ptr() as *const f64, cells.len()) }
    }

    /// Buffer `buf`'s values, to change outside a run.
    pub fn buffer_mut(&mut self, buf: usize) -> &mut [f64] {
        let cells: &mut [UnsafeCell<f64>] = &mut self.bufs[buf].data;
        // SAFETY: as in `buffer`, and the borrow is exclusive.
        unsafe { std::slice::from_raw_parts_mut(cells.as_mut_ptr() as *mut f64, cells.len()) }
    }

    fn row_ptr(&self, buf: usize, row: usize) -> (*mut f64, usize) {
        let b = &self.bufs[buf];
        let cells = &b.data[row * b.cols..(row + 1) * b.cols];
        (UnsafeCell::raw_get(cells.as_ptr()), b.cols)
    }

    /// The shadow checker's test of an access by step `seq` to `(buf, row)`. Inlined: with the
    /// checker off (every timed run) it is one test per row.
    #[inline]
    fn shadow_access(&self, seq: u64, buf: usize, row: usize, write: bool) {
        let Some(sh) = &self.shadow else {
            return;
        };
        let ws = &sh.writers[buf][row];
        let before = ws.partition_point(|&w| w < seq);
        let want = if before == 0 { 0 } else { ws[before - 1] + 1 };
        let last = &sh.last[buf][row];
        // Acquire: pairs with the Release below of the step that wrote the row last, so a
        // check that passes also sees that step's writes as done.
        let got = last.load(Ordering::Acquire);
        // A step may see its own earlier writes (an in-place update reads rows it wrote).
        let own = got == seq + 1 && ws.get(before) == Some(&seq);
        if got != want && !own {
            let who = |x: u64| match x {
                0 => "the initial value".to_string(),
                s => format!("step {}", s - 1),
            };
            panic!(
                "shadow check: step {seq} {} row {row} of buffer {buf} after {}, but program \
                 order puts {} last before it",
                if write { "writes" } else { "reads" },
                who(got),
                who(want)
            );
        }
        if write {
            // Release: pairs with the Acquire above in the next step's check.
            last.store(seq + 1, Ordering::Release);
        }
    }
}

// SAFETY: a `View` gives out only rows its effect declares, and exclusive slices only of rows
// declared written, never two of one row at once (`View::rows`); so views of non-interfering
// effects never give out one row where one of them writes it.
unsafe impl Memory<Rows> for Grids {
    type View<'a> = View<'a>;

    unsafe fn view<'a>(&'a self, effect: &'a Rows, seq: u64) -> View<'a> {
        View {
            grids: self,
            effect,
            seq,
        }
    }

    fn plan(&mut self, seq: u64, effect: &Rows) {
        let Some(sh) = &mut self.shadow else {
            return;
        };
        for s in &effect.writes {
            for r in s.rows.clone() {
                let ws = &mut sh.writers[s.buf][r];
                if ws.last() != Some(&seq) {
                    ws.push(seq);
                }
            }
        }
    }
}

/// A step's access to [`Grids`], held to its declared [`Rows`].
pub struct View<'a> {
    grids: &'a Grids,
    effect: &'a Rows,
    seq: u64,
}

impl View<'_> {
    /// The step's number in program order.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Row `row` of buffer `buf`, to read. Panics unless the step declared it read.
    pub fn row(&self, buf: usize, row: usize) -> &[f64] {
        self.check_read(buf, row);
        let (p, n) = self.grids.row_ptr(buf, row);
        // SAFETY: declared read, so no running step writes it (the scheduler's guarantee), and
        // this view gives out no exclusive slice while `&self` is borrowed.
        unsafe { std::slice::from_raw_parts(p, n) }
    }

    /// The rows `writes` to write and `reads` to read, at once: a stencil's output rows and
    /// its inputs. Panics unless every write is declared written and every read declared read,
    /// and when a row is asked for twice among the writes or both written and read (read a
    /// row in place through its exclusive slice).
    pub fn rows<const W: usize, const R: usize>(
        &mut self,
        writes: [(usize, usize); W],
        reads: [(usize, usize); R],
    ) -> ([&mut [f64]; W], [&[f64]; R]) {
        for (i, &(b, r)) in writes.iter().enumerate() {
            assert!(
                self.effect.writes_row(b, r),
                "step {} writes row {r} of buffer {b}, which its effect does not declare written",
                self.seq
            );
            assert!(
                !writes[..i].contains(&(b, r)) && !reads.contains(&(b, r)),
                "step {} asks for row {r} of buffer {b} twice",
                self.seq
            );
            self.grids.shadow_access(self.seq, b, r, true);
        }
        for &(b, r) in &reads {
            self.check_read(b, r);
        }
        let w = writes.map(|(b, r)| {
            let (p, n) = self.grids.row_ptr(b, r);
            // SAFETY: declared written, so no other running step reads or writes it; the rows
            // are distinct, and `&mut self` keeps this view from giving out more meanwhile.
            unsafe { std::slice::from_raw_parts_mut(p, n) }
        });
        let rd = reads.map(|(b, r)| {
            let (p, n) = self.grids.row_ptr(b, r);
            // SAFETY: declared read (no running step writes it) and not among `writes`.
            unsafe { std::slice::from_raw_parts(p as *const f64, n) }
        });
        (w, rd)
    }

    fn check_read(&self, buf: usize, row: usize) {
        assert!(
            self.effect.reads_row(buf, row),
            "step {} reads row {row} of buffer {buf}, which its effect does not declare read",
            self.seq
        );
        self.grids.shadow_access(self.seq, buf, row, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grids() -> Grids {
        Grids::new(vec![(2, vec![0.0; 8]), (2, vec![1.0; 8])])
    }

    #[test]
    fn a_view_gives_out_only_declared_rows() {
        let g = grids();
        let e = Rows::new().read(0, 0..3).write(1, 1..2);
        // SAFETY: the only view.
        let mut v = unsafe { g.view(&e, 0) };
        assert_eq!(v.row(0, 2), &[0.0, 0.0]);
        let ([out], [a, b]) = v.rows([(1, 1)], [(0, 0), (0, 1)]);
        out[0] = a[0] + b[1] + 5.0;
        let caught = |f: &mut dyn FnMut()| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .unwrap_err()
                .downcast_ref::<String>()
                .cloned()
                .unwrap()
        };
        assert!(caught(&mut || {
            v.row(0, 3);
        })
        .contains("does not declare read"));
        assert!(caught(&mut || {
            v.rows([(1, 2)], []);
        })
        .contains("does not declare written"));
        assert!(caught(&mut || {
            v.rows([(1, 1), (1, 1)], []);
        })
        .contains("twice"));
        let mut g = g;
        assert_eq!(g.buffer(1), &[1.0, 1.0, 5.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    }

    #[test]
    fn the_shadow_checker_names_a_read_before_its_writer() {
        let mut g = grids().check();
        let writer = Rows::new().write(0, 0..1);
        let reader = Rows::new().read(0, 0..1);
        g.plan(0, &writer);
        g.plan(1, &reader);
        // Program order: step 0 writes row 0, step 1 reads it. Run the reader first.
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: one view at a time.
            let v = unsafe { g.view(&reader, 1) };
            v.row(0, 0);
        }))
        .unwrap_err();
        let msg = err.downcast_ref::<String>().unwrap();
        assert!(
            msg.contains("after the initial value") && msg.contains("step 0"),
            "{msg}"
        );
        // In order, it passes.
        let mut g = grids().check();
        g.plan(0, &writer);
        g.plan(1, &reader);
        // SAFETY: one view at a time.
        unsafe {
            g.view(&writer, 0).rows([(0, 0)], []);
            g.view(&reader, 1).row(0, 0);
        }
    }
}
