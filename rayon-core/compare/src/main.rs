//! Runs the rayon version of each kernel given (the suite's rayon peer for it) and prints one
//! line per kernel and worker count: `kernel workers peer median_s verified result`. Which
//! rayon-core it runs on is decided by how it was built (see Cargo.toml).
//!
//!   rayon-core-compare KERNELS WORKERS RUNS [SIZE] [--with-magpie-iter]
//!
//! KERNELS and WORKERS are comma-separated; SIZE is ci, default (the default) or paper. With
//! `--with-magpie-iter`, each of the seven rayon programs also runs on magpie's own iterators
//! (`magpie_iter::prelude`, magpie's pool), printed as peer `magpie-iter`. Each
//! result is checked by the kernel's verifier on every run; a kernel that does not verify
//! makes the exit status 1.

use magpie_bench::runner::{run_magpie, run_peer, Case};
use magpie_bench::{Kernel, Peer, Size};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("usage: rayon-core-compare KERNELS WORKERS RUNS [SIZE] [--with-magpie-iter]");
            ExitCode::from(2)
        }
    }
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
    let own = rest.last().is_some_and(|a| a == "--with-magpie-iter");
    let rest = &rest[..rest.len() - own as usize];
    let size = match rest {
        [] => Size::Default,
        [s] => s.parse::<Size>().map_err(|e| format!("size `{s}`: {e}"))?,
        _ => return Err("too many arguments".into()),
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
        let case = Case::new(k, k.size_n(size));
        for &w in &workers {
            let mut results = vec![(peer.name(), run_peer(peer, &case, w, runs))];
            if own && peer == Peer::RayonIter {
                let pool = magpie::Pool::builder()
                    .workers(w)
                    .build()
                    .map_err(|e| format!("magpie's pool: {e}"))?;
                results.push(("magpie-iter", run_magpie(&pool, &case, runs)));
            }
            for (name, r) in results {
                match r {
                    Ok(m) => {
                        all_verified &= m.verified;
                        println!(
                            "{} {} {} {:.9} {} {}",
                            k.name(),
                            w,
                            name,
                            m.timing.median().unwrap_or(f64::NAN),
                            m.verified,
                            m.result.as_deref().unwrap_or("-").replace(' ', "_")
                        );
                    }
                    Err(e) => {
                        all_verified = false;
                        println!("{} {} {} NaN false error:{e:?}", k.name(), w, name);
                    }
                }
            }
        }
    }
    Ok(all_verified)
}
