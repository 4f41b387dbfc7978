//! What the downstream programs share: timing several versions of one computation round robin,
//! so that drifting machine load hits every version alike, with every result checked.

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Runs each of `versions` versions once as a warm-up, then `runs` times, round robin:
/// `run(i)` runs version `i` and returns the seconds to count, or what was wrong with its result,
/// which this prints before exiting with status 1. Returns each version's median.
pub fn round_robin(
    versions: usize,
    runs: usize,
    mut run: impl FnMut(usize) -> Result<f64, String>,
) -> Vec<f64> {
    let mut times = vec![Vec::with_capacity(runs); versions];
    for round in 0..=runs {
        for (i, t) in times.iter_mut().enumerate() {
            match run(i) {
                Ok(s) if round > 0 => t.push(s),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("error: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
    times.iter_mut().map(|t| median(t)).collect()
}
