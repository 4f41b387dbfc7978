//! `magpie splice`: one stencil of `magpie-splice` run spliced against unspliced (and against
//! rayon running the suite's own unspliced recursion when the step count is the suite's),
//! alternating the versions run by run, every spliced result compared bit for bit with the
//! unspliced one. Prints medians, the ratio, the scheduler's statistics and `verified`.

use crate::args::parse_workers;
use crate::failure::Failure;
use crate::measure::splice::{outcome, Splice};
use crate::model::splice::Outcome;
use clap::Args;

/// `magpie splice`.
#[derive(Args, Debug)]
pub(crate) struct SpliceArgs {
    /// heat, jacobi, fdtd-2d (the suite's kernels) or seidel-2d (in place).
    #[arg(value_parser = ["heat", "jacobi", "fdtd-2d", "seidel-2d"])]
    pub kernel: String,
    /// Grid side.
    #[arg(long, default_value_t = 1024, value_parser = parse_splice_n)]
    pub n: usize,
    /// Time steps [default: the suite's: heat 20, jacobi 10, fdtd-2d 100; seidel-2d 20].
    #[arg(long, value_parser = parse_positive)]
    pub steps: Option<usize>,
    /// Time steps spliced together (1: unspliced).
    #[arg(long, default_value_t = 8, value_parser = parse_positive)]
    pub window: usize,
    /// Rows per step (the leaves of the row-halving recursion) [default: 8192 / n, at least 2:
    /// small blocks keep a window's band of rows in the cache (2 rows was the best at n = 4096
    /// here), and a step of about 8192 points keeps the scheduler's cost per step small where
    /// the grid fits in the cache anyway (scripts/splice-sweep.sh)].
    #[arg(long, value_parser = parse_positive)]
    pub grain: Option<usize>,
    /// Step pipelining: run each step in parts of this many rows, the window's phases taking
    /// turns a part at a time (0: whole steps). For the spliced walk (`--workers 1`); the
    /// dependence graph runs steps whole. With large steps (`--grain 16` and up) it keeps the
    /// band of rows small at a fraction of the steps' scheduling cost.
    #[arg(long, default_value_t = 0, value_parser = parse_slice)]
    pub slice: usize,
    /// Workers: 1 runs the spliced walk on one thread, more the dependence graph on a pool.
    #[arg(long, default_value_t = 1, value_parser = parse_workers)]
    pub workers: usize,
    /// Timed runs of each version (medians are reported).
    #[arg(long, default_value_t = 3, value_parser = parse_positive)]
    pub runs: usize,
    /// Run one version only, once, and print its time and checksum (for a profiler such as
    /// cachegrind; nothing to compare against in-process, so compare the two checksums);
    /// `setup` builds the grids and takes their checksum without running a step (what a
    /// profile of either version includes besides the steps).
    #[arg(long, value_parser = ["spliced", "unspliced", "setup"])]
    pub only: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

fn parse_slice(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n <= 1_000_000 => Ok(n),
        _ => Err("expected rows per part, a whole number from 0 (whole steps) to 1000000".into()),
    }
}

fn parse_positive(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err("expected a whole number from 1 to 1000000".into()),
    }
}

fn parse_splice_n(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (3..=16384).contains(&n) => Ok(n),
        _ => Err("expected a grid side from 3 to 16384".into()),
    }
}

pub(crate) fn run(a: SpliceArgs) -> Result<(), Failure> {
    let o = outcome(&a.splice())?;
    if let Some(only) = &a.only {
        println!(
            "{}: {only} only, {:.4} s, checksum {} (not compared: run the other version and \
             compare)",
            header(&o),
            o.spliced_median_s,
            o.result
        );
        return Ok(());
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&o).map_err(|e| Failure::Failed(e.to_string()))?
        );
        return Ok(());
    }
    println!(
        "{}: spliced {:.4} s, unspliced {:.4} s ({:.2}× faster){}; verified, checksum {}",
        header(&o),
        o.spliced_median_s,
        o.unspliced_median_s,
        o.speedup,
        match o.rayon_median_s {
            Some(r) => format!(", rayon (the suite's unspliced recursion) {r:.4} s"),
            None => String::new(),
        },
        o.result
    );
    let st = &o.stats;
    println!(
        "  last run: {} steps{}, {} interference checks, {} thread switches, {} delayed, {} \
         dependences, peak {:.1} KiB delayed",
        st.steps,
        if o.slice > 0 {
            format!(" in {} parts", st.slices)
        } else {
            String::new()
        },
        st.checks,
        st.switches,
        st.delayed,
        st.dependences,
        st.peak_delayed_bytes as f64 / 1024.0
    );
    Ok(())
}

/// What was run: `heat n=4096 steps=16 window=8 grain=16 [slice=2] workers=1`.
fn header(o: &Outcome) -> String {
    let slice = if o.slice > 0 {
        format!(" slice={}", o.slice)
    } else {
        String::new()
    };
    format!(
        "{} n={} steps={} window={} grain={}{slice} workers={}",
        o.kernel, o.n, o.steps, o.window, o.grain, o.workers
    )
}

impl SpliceArgs {
    /// The run these arguments ask for (the output option aside).
    fn splice(&self) -> Splice {
        Splice {
            kernel: self.kernel.clone(),
            n: self.n,
            steps: self.steps,
            window: self.window,
            grain: self.grain,
            slice: self.slice,
            workers: self.workers,
            runs: self.runs,
            only: self.only.clone(),
        }
    }
}
