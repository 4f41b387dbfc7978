//! Runs the rayon version of each kernel given (the suite's rayon peer for it) and prints one
//! line per kernel and worker count:
//!
//!   kernel workers peer median_s verified times_s result
//!
//! where `times_s` is every run's time, comma-separated, in run order (`-` for none), and
//! `result` the answer of the first verified run, the rest of the line (`-` for none); a run that
//! could not be made prints `NaN false - error: why`. Which rayon-core it runs
//! on is decided by how it was built (see Cargo.toml): `scripts/build-rayon-compare.sh` builds it
//! twice, once as is and once with rayon-core patched to magpie's. `magpie suite` and `magpie
//! bench` run the patched build for the seven rayon programs (rayon's iterators on magpie's
//! core, with the pool's settings from `MAGPIE_POLICY` and the other `MAGPIE_*` variables) and
//! the other build for rayon's own figure; `scripts/rayon-on-magpie.sh` compares the two builds
//! on every kernel with a rayon version.
//!
//!   rayon-core-compare KERNELS WORKERS RUNS [SIZE]
//!   rayon-core-compare --which-core
//!
//! KERNELS and WORKERS are comma-separated; SIZE is ci, default (the default), paper, or a
//! problem size n. Each result is checked by the kernel's verifier on every run; a kernel that
//! does not verify makes the exit status 1, bad arguments 2. `--which-core` prints `magpie` or
//! `rayon`: the core a rayon pool of this build runs on.

use magpie_bench::runner::{run_peer, Case};
use magpie_bench::{Kernel, Peer, Size};
use std::process::ExitCode;

const USAGE: &str = "usage: rayon-core-compare KERNELS WORKERS RUNS [SIZE] | --which-core";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args == ["--which-core"] {
        return match which_core() {
            Ok(core) => {
                println!("{core}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        };
    }
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The core under this build's rayon: a rayon pool's thread is a magpie worker exactly when
/// rayon-core is magpie's.
fn which_core() -> Result<&'static str, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| format!("a rayon pool: {e}"))?;
    Ok(if pool.install(magpie::worker_index).is_some() {
        "magpie"
    } else {
        "rayon"
    })
}

fn run(args: &[String]) -> Result<bool, String> {
    let [kernels, workers, runs, rest @ ..] = args else {
        return Err("expected KERNELS WORKERS RUNS".into());
    };
    let kernels = kernels
        .split(',')
        .map(|k| {
            k.parse::<Kernel>()
                .map_err(|e| format!("kernel `{k}`: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let workers = workers
        .split(',')
        .map(|w| match w.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("workers `{w}`: expected a whole number ≥ 1")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let runs = match runs.parse::<usize>() {
        Ok(n) if n >= 1 => n,
        _ => return Err(format!("runs `{runs}`: expected a whole number ≥ 1")),
    };
    let n_of = |k: Kernel| -> Result<u64, String> {
        match rest {
            [] => Ok(k.size_n(Size::Default)),
            [s] => match s.parse::<u64>() {
                Ok(n) => Ok(n),
                Err(_) => Ok(k.size_n(s.parse::<Size>().map_err(|e| format!("size `{s}`: {e}"))?)),
            },
            _ => Err("too many arguments".into()),
        }
    };
    let mut all_verified = true;
    for &k in &kernels {
        let Some(&peer) = k
            .peers()
            .iter()
            .find(|p| matches!(p, Peer::RayonJoin | Peer::RayonScope | Peer::RayonIter))
        else {
            return Err(format!("{} has no rayon version", k.name()));
        };
        let case = Case::new(k, n_of(k)?);
        case.check()?;
        for &w in &workers {
            match run_peer(peer, &case, w, runs) {
                Ok(m) => {
                    all_verified &= m.verified;
                    let times: Vec<String> =
                        m.timing.times_s.iter().map(|t| format!("{t:.9}")).collect();
                    println!(
                        "{} {} {} {:.9} {} {} {}",
                        k.name(),
                        w,
                        peer.name(),
                        m.timing.median().unwrap_or(f64::NAN),
                        m.verified,
                        if times.is_empty() {
                            "-".to_string()
                        } else {
                            times.join(",")
                        },
                        m.result.as_deref().unwrap_or("-").replace('\n', " "),
                    );
                }
                Err(e) => {
                    all_verified = false;
                    let e = e.to_string().replace('\n', " ");
                    println!("{} {} {} NaN false - error: {e}", k.name(), w, peer.name());
                }
            }
        }
    }
    Ok(all_verified)
}
