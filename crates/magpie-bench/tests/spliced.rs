//! Every kernel, spliced, bit-identical to its unspliced twin: windows 1-16, several grains,
//! sequentially, in parallel at 1 and 2 workers and in random orders of the dependence graph,
//! from tiny and odd sizes up, with the shadow checker on; and with step pipelining, at several
//! slice sizes. And against the suite's own kernels where a run has the suite's step count.

use magpie_bench::spliced::{Fdtd, Heat, Jacobi};
use magpie_splice::kernels::{Seidel, Sliced};
use magpie_splice::splice::{run, Mode, Phase};
use magpie_splice::{Grids, Memory, Rows};

/// Runs `phases` on fresh grids (shadow-checked) unspliced and as `mode` with `window`: the
/// buffers and the phases' outputs must be bit-identical.
fn same<P, O>(what: &str, grids: impl Fn() -> Grids, phases: &[P], window: usize, mode: Mode)
where
    P: Phase<Effect = Rows, Memory = Grids, Output = O>,
    O: PartialEq + std::fmt::Debug,
{
    let mut want = grids().check();
    let (want_out, _) = run(phases, &mut want, 1, Mode::Unspliced);
    let mut got = grids().check();
    let (got_out, stats) = run(phases, &mut got, window, mode);
    assert_eq!(got_out, want_out, "{what}: window {window}, {mode:?}");
    let steps: u64 = stats.steps;
    assert!(steps > 0);
    for b in 0..want.buffers() {
        let (w, g) = (want.buffer(b).to_vec(), got.buffer(b));
        assert!(
            w.iter().zip(g).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{what}: window {window}, {mode:?}: buffer {b} differs"
        );
    }
}

fn pool(workers: usize) -> magpie::Pool {
    magpie::Pool::builder().workers(workers).build().unwrap()
}

fn every_mode<P, O>(what: &str, grids: impl Fn() -> Grids + Sync, phases: &[P])
where
    P: Phase<Effect = Rows, Memory = Grids, Output = O> + Sync,
    O: PartialEq + std::fmt::Debug + Send,
{
    for window in [1, 2, 3, 5, 8, 16] {
        same(what, &grids, phases, window, Mode::Spliced);
        for seed in [1, 7, 1234] {
            same(what, &grids, phases, window, Mode::Random(seed));
        }
        for workers in [1, 2] {
            pool(workers).install(|| same(what, &grids, phases, window, Mode::Parallel));
        }
    }
}

/// `every_mode` for each size and grain: `phases(n, grain)` on `grids(n)`.
fn sizes_and_grains<P, O>(
    name: &str,
    sizes: &[usize],
    grains: &[usize],
    grids: fn(usize) -> Grids,
    phases: impl Fn(usize, usize) -> Vec<P>,
) where
    P: Phase<Effect = Rows, Memory = Grids, Output = O> + Sync,
    O: PartialEq + std::fmt::Debug + Send,
{
    for &n in sizes {
        for &grain in grains {
            let what = format!("{name} n={n} grain={grain}");
            every_mode(&what, || grids(n), &phases(n, grain));
        }
    }
}

#[test]
fn heat_spliced_is_bit_identical_at_every_window_grain_and_size() {
    sizes_and_grains(
        "heat",
        &[3, 4, 5, 9, 33],
        &[1, 2, 5],
        Heat::grids,
        |n, g| Heat::phases(n, 7, g),
    );
}

#[test]
fn jacobi_spliced_is_bit_identical_and_keeps_each_steps_residual() {
    sizes_and_grains("jacobi", &[3, 5, 17, 40], &[1, 3], Jacobi::grids, |n, g| {
        Jacobi::phases(n, 6, g)
    });
}

#[test]
fn seidel_in_place_spliced_is_bit_identical_to_the_plain_loops() {
    let (sizes, grains) = ([3, 4, 5, 12, 31], [1, 2, 4]);
    sizes_and_grains("seidel", &sizes, &grains, Seidel::grids, |n, g| {
        Seidel::phases(n, 6, g)
    });
    for n in sizes {
        for grain in grains {
            let mut plain = Seidel::grids(n);
            Seidel::plain(n, 6, plain.buffer_mut(0));
            let mut spliced = Seidel::grids(n);
            run(&Seidel::phases(n, 6, grain), &mut spliced, 6, Mode::Spliced);
            assert_eq!(spliced.buffer(0), plain.buffer(0), "n={n} grain={grain}");
        }
    }
}

#[test]
fn fdtd_spliced_is_bit_identical_at_every_window() {
    sizes_and_grains("fdtd", &[3, 4, 5, 19], &[1, 3], Fdtd::grids, |n, g| {
        Fdtd::phases(n, 5, g)
    });
}

/// Step pipelining: every kernel with its steps sliced into parts of 1-3 rows, spliced at
/// windows 1-16, is bit-identical to the unspliced run of the same steps whole (and the shadow
/// checker passes every part's reads); the dependence graph runs the sliced phases' steps
/// whole, with the same results.
#[test]
fn pipelined_kernels_are_bit_identical_at_every_slice_size() {
    fn sliced<P, O>(
        name: &str,
        sizes: &[usize],
        grids: fn(usize) -> Grids,
        phases: impl Fn(usize, usize) -> Vec<P>,
    ) where
        P: Phase<Node = std::ops::Range<usize>, Effect = Rows, Memory = Grids, Output = O> + Sync,
        O: PartialEq + std::fmt::Debug + Send,
    {
        for &n in sizes {
            for grain in [1, 4, 9] {
                for rows in [1, 2, 3] {
                    let what = format!("{name} n={n} grain={grain} slice={rows}");
                    let ph = Sliced::all(phases(n, grain), rows);
                    for window in [1, 2, 3, 8, 16] {
                        same(&what, || grids(n), &ph, window, Mode::Spliced);
                    }
                    pool(2).install(|| same(&what, || grids(n), &ph, 4, Mode::Parallel));
                }
            }
        }
    }
    sliced("heat", &[3, 4, 5, 33], Heat::grids, |n, g| {
        Heat::phases(n, 7, g)
    });
    sliced("jacobi", &[3, 5, 40], Jacobi::grids, |n, g| {
        Jacobi::phases(n, 6, g)
    });
    sliced("seidel", &[3, 4, 5, 31], Seidel::grids, |n, g| {
        Seidel::phases(n, 6, g)
    });
    sliced("fdtd", &[3, 4, 19], Fdtd::grids, |n, g| {
        Fdtd::phases(n, 5, g)
    });
}

/// With the suite's step counts, the spliced kernels give the suite's own serial results.
#[test]
fn the_spliced_kernels_compute_the_suites_bits() {
    let n = 48;
    let steps = magpie_bench::kernels::heat::STEPS;
    let mut g = Heat::grids(n);
    run(&Heat::phases(n, steps, 4), &mut g, 8, Mode::Spliced);
    let mut want = magpie_bench::kernels::heat::input(n as u64);
    magpie_bench::kernels::heat::serial(n as u64, &mut want);
    assert_eq!(g.buffer(steps % 2), &want[..]);

    let steps = magpie_bench::kernels::jacobi::STEPS;
    let mut g = Jacobi::grids(n);
    let (res, _) = run(&Jacobi::phases(n, steps, 4), &mut g, 4, Mode::Spliced);
    let mut p = magpie_bench::kernels::jacobi::input(n as u64);
    let want_res = magpie_bench::kernels::jacobi::serial(n as u64, &mut p);
    assert_eq!(g.buffer(steps % 2), &p.grid[..]);
    assert_eq!(res.last().copied(), Some(want_res));

    let steps = magpie_bench::kernels::fdtd2d::STEPS;
    let mut g = Fdtd::grids(n);
    run(&Fdtd::phases(n, steps, 4), &mut g, 8, Mode::Spliced);
    let mut f = magpie_bench::kernels::fdtd2d::input(n);
    magpie_bench::kernels::fdtd2d::plain(&mut f);
    assert_eq!(g.buffer(0), &f.ey[..]);
    assert_eq!(g.buffer(1), &f.ex[..]);
    assert_eq!(g.buffer(2), &f.hz[..]);
}

/// A heat phase that records every step (or part of one) it runs, in the order they ran: its
/// program-order number and its rows.
struct Traced<'a> {
    inner: Heat,
    order: &'a std::sync::Mutex<Vec<(u64, std::ops::Range<usize>)>>,
}

impl Phase for Traced<'_> {
    type Node = std::ops::Range<usize>;
    type Effect = Rows;
    type Memory = Grids;
    type Output = ();
    fn root(&self) -> Self::Node {
        self.inner.root()
    }
    fn effect(&self, b: &Self::Node) -> Rows {
        self.inner.effect(b)
    }
    fn split(&self, b: &Self::Node) -> Vec<Self::Node> {
        self.inner.split(b)
    }
    fn step(&self, b: &Self::Node, v: &mut <Grids as Memory<Rows>>::View<'_>) {
        self.order.lock().unwrap().push((v.seq(), b.clone()));
        self.inner.step(b, v)
    }
    fn empty(&self) {}
    fn merge(&self, _: (), _: ()) {}
}

/// `phases` heat phases of side `n` and grain `grain`, traced into `order`.
fn traced_heat(
    n: usize,
    phases: usize,
    grain: usize,
    order: &std::sync::Mutex<Vec<(u64, std::ops::Range<usize>)>>,
) -> Vec<Traced<'_>> {
    Heat::phases(n, phases, grain)
        .into_iter()
        .map(|inner| Traced { inner, order })
        .collect()
}

fn traced(window: usize, mode: Mode) -> (Vec<u64>, magpie_splice::Stats) {
    let order = std::sync::Mutex::new(Vec::new());
    let n = 40;
    let (_, stats) = run(
        &traced_heat(n, 6, 4, &order),
        &mut Heat::grids(n),
        window,
        mode,
    );
    let order = order.into_inner().unwrap();
    (order.into_iter().map(|(seq, _)| seq).collect(), stats)
}

/// Window 1 is the unspliced program step for step, in every mode; a wider window interleaves
/// the phases (and says so in its statistics).
#[test]
fn window_1_runs_the_unspliced_order_and_wider_windows_interleave() {
    let (plain, _) = traced(1, Mode::Unspliced);
    let steps = plain.len() as u64;
    assert_eq!(plain, (0..steps).collect::<Vec<_>>());
    for mode in [Mode::Spliced, Mode::Random(3)] {
        assert_eq!(traced(1, mode).0, plain, "{mode:?}");
    }
    let (spliced, stats) = traced(6, Mode::Spliced);
    let mut sorted = spliced.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, plain, "every step once");
    assert_ne!(spliced, plain, "interleaved");
    assert_eq!(stats.steps, steps);
    assert!(stats.switches > 6 && stats.delayed > 0 && stats.checks > 0);
    assert!(stats.peak_delayed_bytes > 0);
    // Heat at grain 4 over 38 interior rows: each later phase trails the one before by about a
    // block, so a step of phase k runs before phase 0 has finished.
    let first_of_last = spliced.iter().position(|&s| s >= 5 * steps / 6).unwrap();
    let last_of_first = spliced.iter().rposition(|&s| s < steps / 6).unwrap();
    assert!(
        first_of_last < last_of_first,
        "phase 5 starts before phase 0 ends"
    );
}

/// Step pipelining runs each step as parts that cover its rows once, top to bottom, and the
/// phases' parts interleave: another phase's part runs between two parts of one step, which
/// whole steps cannot do. The statistics count the parts.
#[test]
fn pipelining_interleaves_the_phases_parts_of_steps() {
    let n = 40;
    let order = std::sync::Mutex::new(Vec::new());
    let phases = traced_heat(n, 6, 8, &order);
    let steps: Vec<std::ops::Range<usize>> = {
        // The leaves of one phase, in program order: what the unsliced run gives each step.
        let o = std::sync::Mutex::new(Vec::new());
        run(
            &traced_heat(n, 1, 8, &o),
            &mut Heat::grids(n),
            1,
            Mode::Unspliced,
        );
        o.into_inner()
            .unwrap()
            .into_iter()
            .map(|(_, b)| b)
            .collect()
    };
    assert!(
        steps.iter().all(|b| b.len() > 1),
        "steps of several rows: {steps:?}"
    );
    let sliced = Sliced::all(phases, 1);
    let mut got = Heat::grids(n);
    let (_, stats) = run(&sliced, &mut got, 6, Mode::Spliced);
    let mut want = Heat::grids(n);
    run(&Heat::phases(n, 6, 8), &mut want, 1, Mode::Unspliced);
    assert_eq!(got.buffer(0), want.buffer(0));
    let order = order.into_inner().unwrap();
    let per_phase = steps.len() as u64;
    assert_eq!(stats.steps, 6 * per_phase);
    assert_eq!(stats.slices, order.len() as u64, "every part counted");
    assert!(
        order.len() > 2 * stats.steps as usize,
        "steps were sliced: {}",
        order.len()
    );
    // Each step's parts, in the order they ran, are consecutive rows covering its block.
    for seq in 0..6 * per_phase {
        let parts: Vec<_> = order
            .iter()
            .filter(|(s, _)| *s == seq)
            .map(|(_, b)| b.clone())
            .collect();
        let block = &steps[(seq % per_phase) as usize];
        assert_eq!(
            parts.first().map(|b| b.start),
            Some(block.start),
            "step {seq}"
        );
        assert!(
            parts.windows(2).all(|w| w[0].end == w[1].start),
            "step {seq}: {parts:?}"
        );
        assert_eq!(parts.last().map(|b| b.end), Some(block.end), "step {seq}");
    }
    // Some step's parts have another phase's part between them.
    let interleaved = (0..6 * per_phase).any(|seq| {
        let at: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, (s, _))| *s == seq)
            .map(|(i, _)| i)
            .collect();
        at.windows(2).any(|w| {
            order[w[0] + 1..w[1]]
                .iter()
                .any(|(s, _)| s / per_phase != seq / per_phase)
        })
    });
    assert!(interleaved, "parts of different phases interleave");
}

type Block = std::ops::Range<usize>;

/// A caught panic's message.
fn panic_message(err: Box<dyn std::any::Any + Send>) -> String {
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Heat with a planted mistake: its effects, or its slices, replaced.
struct Mutant {
    heat: Heat,
    effect: fn(&Heat, &Block) -> Rows,
    slice: fn(&Heat, &Block) -> Option<(Block, Block)>,
}

impl Phase for Mutant {
    type Node = Block;
    type Effect = Rows;
    type Memory = Grids;
    type Output = ();
    fn root(&self) -> Block {
        self.heat.root()
    }
    fn effect(&self, b: &Block) -> Rows {
        (self.effect)(&self.heat, b)
    }
    fn split(&self, b: &Block) -> Vec<Block> {
        self.heat.split(b)
    }
    fn step(&self, b: &Block, v: &mut <Grids as Memory<Rows>>::View<'_>) {
        self.heat.step(b, v)
    }
    fn empty(&self) {}
    fn merge(&self, _: (), _: ()) {}
    fn slice(&self, b: &Block) -> Option<(Block, Block)> {
        (self.slice)(&self.heat, b)
    }
}

/// `phases` heat phases of side `n` and grain `grain` with `effect` and `slice` planted.
fn mutants(
    n: usize,
    phases: usize,
    grain: usize,
    effect: fn(&Heat, &Block) -> Rows,
    slice: fn(&Heat, &Block) -> Option<(Block, Block)>,
) -> Vec<Mutant> {
    Heat::phases(n, phases, grain)
        .into_iter()
        .map(|heat| Mutant {
            heat,
            effect,
            slice,
        })
        .collect()
}

/// A slice whose part is not covered by its step's effect is refused with a message.
#[test]
fn a_slice_outside_its_step_is_refused() {
    let n = 20;
    // The first part reaches one row past the step.
    let wide = |h: &Heat, b: &Block| {
        (b.len() > 1 && b.end < h.n - 1).then(|| (b.start..b.end + 1, b.start + 1..b.end))
    };
    let phases = mutants(n, 2, 4, |h, b| h.effect(b), wide);
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(&phases, &mut Heat::grids(n), 2, Mode::Spliced);
    }))
    .expect_err("a part outside its step must be refused");
    let msg = panic_message(err);
    assert!(msg.contains("slice is not covered"), "{msg}");
}

/// A step that reads a row it did not declare is stopped by its view, whatever the mode: the
/// mutation "shrink one declared read by a row".
#[test]
fn a_step_reading_past_its_declared_rows_is_caught() {
    let shrunk = |h: &Heat, b: &Block| {
        let mut e = h.effect(b);
        // The step at rows 9..: one row fewer read above.
        if b.start == 9 && h.split(b).is_empty() {
            e.reads[0].rows.start += 1;
        }
        e
    };
    let n = 34;
    for mode in [Mode::Spliced, Mode::Random(5), Mode::Parallel] {
        let phases = mutants(n, 4, 8, shrunk, |_, _| None);
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool(2).install(|| run(&phases, &mut Heat::grids(n).check(), 4, mode))
        }))
        .expect_err("caught");
        let msg = panic_message(err);
        assert!(
            msg.contains("reads row 8 of buffer") && msg.contains("does not declare read"),
            "{mode:?}: {msg}"
        );
    }
}

/// A call whose effect does not cover its children's is refused before anything runs (the
/// scheduler's shortcuts rely on inclusive call effects).
#[test]
fn a_call_that_does_not_cover_its_steps_is_refused() {
    struct Narrow(Heat);
    impl Phase for Narrow {
        type Node = std::ops::Range<usize>;
        type Effect = Rows;
        type Memory = Grids;
        type Output = ();
        fn root(&self) -> Self::Node {
            self.0.root()
        }
        fn effect(&self, b: &Self::Node) -> Rows {
            let mut e = self.0.effect(b);
            if *b == self.0.root() {
                e.writes[0].rows.end -= 1;
            }
            e
        }
        fn split(&self, b: &Self::Node) -> Vec<Self::Node> {
            self.0.split(b)
        }
        fn step(&self, b: &Self::Node, v: &mut <Grids as Memory<Rows>>::View<'_>) {
            self.0.step(b, v)
        }
        fn empty(&self) {}
        fn merge(&self, _: (), _: ()) {}
    }
    let n = 20;
    let phases: Vec<Narrow> = Heat::phases(n, 2, 4).into_iter().map(Narrow).collect();
    let mut g = Heat::grids(n);
    let before = g.buffer(1).to_vec();
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(&phases, &mut g, 2, Mode::Spliced)
    }))
    .expect_err("refused");
    let msg = panic_message(err);
    assert!(msg.contains("does not cover its child"), "{msg}");
    assert_eq!(g.buffer(1), &before[..], "nothing ran");
}
