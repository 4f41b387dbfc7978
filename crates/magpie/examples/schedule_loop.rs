//! An iterative loop that records its schedule once and follows it afterwards.
//!
//!     cargo run --release -p magpie --example schedule_loop
//!
//! A 1-D heat stencil runs 10 time steps; each step splits the cells with `magpie::join`, the
//! same way every time. The first step runs inside `schedule::record`, which returns the
//! schedule it took: the *cuts*, tasks that ran on another worker than their parent. Every
//! later step runs inside `schedule::follow(&template, Constraint::Ordered, ..)`: no random
//! steals, each cut donated to the worker that ran it in the recorded step, so each band of
//! cells is computed by the same worker every step. (`schedule::Iterate` automates this loop,
//! with relaxed steps until the schedule settles.) Each step's grid is checked bit for bit
//! against a serial step; the program panics on any difference. (A step recorded while no other
//! worker was free to steal has no cuts, and its follows then run on one worker.)

use magpie::schedule::{self, Constraint};

const GRAIN: usize = 4096;

/// One step: `next[i]` from `cur[i-1..=i+1]`, the ends held at their values.
fn step_serial(cur: &[f64], next: &mut [f64], offset: usize) {
    let n = cur.len();
    for (k, out) in next.iter_mut().enumerate() {
        let i = offset + k;
        *out = if i == 0 || i == n - 1 {
            cur[i]
        } else {
            0.25 * cur[i - 1] + 0.5 * cur[i] + 0.25 * cur[i + 1]
        };
    }
}

/// The same step, the output cells halved with `join` down to `GRAIN` cells.
fn step_par(cur: &[f64], next: &mut [f64], offset: usize) {
    if next.len() <= GRAIN {
        return step_serial(cur, next, offset);
    }
    let mid = next.len() / 2;
    let (a, b) = next.split_at_mut(mid);
    magpie::join(
        || step_par(cur, a, offset),
        || step_par(cur, b, offset + mid),
    );
}

fn main() -> Result<(), magpie::Error> {
    let n = 1 << 20;
    let init: Vec<f64> = (0..n)
        .map(|i| if i % 1000 < 10 { 100.0 } else { 0.0 })
        .collect();
    let (mut cur, mut next) = (init.clone(), vec![0.0; n]);
    let (mut want, mut want_next) = (init, vec![0.0; n]);

    let pool = magpie::Pool::builder().build()?;
    let mut template: Option<schedule::Schedule> = None;
    for it in 0..10 {
        let deviations = pool.stats().deviations;
        let taken = pool.install(|| match &template {
            None => schedule::record(|| step_par(&cur, &mut next, 0)).1,
            Some(t) => schedule::follow(t, Constraint::Ordered, || step_par(&cur, &mut next, 0)).1,
        });
        step_serial(&want, &mut want_next, 0);
        assert!(
            next == want_next,
            "iteration {it}: parallel step differs from the serial one"
        );
        let how = match &template {
            None => "recorded".to_string(),
            Some(t) => format!("followed, {:.0}% of cuts kept", t.kept_in(&taken) * 100.0),
        };
        let new_deviations = pool.stats().deviations - deviations;
        let cuts = taken.cuts().len();
        println!("iteration {it}: {how}, {cuts} cuts, {new_deviations} deviations, checked");
        template.get_or_insert(taken);
        std::mem::swap(&mut cur, &mut next);
        std::mem::swap(&mut want, &mut want_next);
    }
    println!("heat after 10 steps: {:.6}", cur.iter().sum::<f64>());
    Ok(())
}
