//! N-body: direct O(n²) gravitational simulation of `n` bodies in three dimensions, the "nbody"
//! benchmark of Lifflander's thesis. Units have G = 1; the force is softened with
//! [`SOFTENING2`] = ε² so that close encounters stay finite. The acceleration of body i is
//!
//! ```text
//! a_i = Σ_{j ≠ i} m_j (x_j − x_i) / (|x_j − x_i|² + ε²)^{3/2}
//! ```
//!
//! summed over j = 0, 1, …, n − 1 in that order. A run computes the initial accelerations and
//! then takes [`STEPS`] leapfrog (kick-drift-kick) steps of [`DT`]: `v += a·dt/2; x += v·dt`
//! for every body, new accelerations, `v += a·dt/2`.
//!
//! The force pass is the parallel part: the bodies are halved recursively with `join` down to
//! `grain` bodies, each half owning its bodies' accelerations and velocities (split off with
//! `split_at_mut`) while every task reads all positions and masses through shared slices; the
//! half-kick that ends a step is done in the same task, right after the body's new
//! acceleration. The drift (`v += a·dt/2; x += v·dt`, O(n)) is a plain loop between force
//! passes. All in safe Rust.
//!
//! Each body's sum runs over j in the same order whatever runs in parallel, so every version is
//! bit-for-bit equal to [`plain`] (the same steps as plain loops), which [`NBody::expected`]
//! computes and the verifier compares with.
//!
//! Under the race checker (`magpie::race`, [`race_run`]) each leaf of a force pass declares
//! what it touches: it reads all positions (each `[f64; 3]` one location) and all masses, and
//! writes its bodies' accelerations and, in the passes that end a step, their velocities (each
//! `[f64; 3]` one location). The drift runs in the root task between force passes and is not
//! declared. The planted race ([`crate::races::planted`]) is a block bound off by one: a leaf
//! also declares a write of the acceleration of the next block's first body, which the next
//! leaf of the same pass writes.

use crate::kernel::{Def, Kernel};
use crate::common::{first_bit_difference, for_row_bands, SplitMix64};
use crate::fork::Fork;
use crate::harness::{abs_sum12, sum12};
use crate::workload::{self, Info, Workload};

/// Leapfrog steps of one run.
pub const STEPS: usize = 4;
/// The time step.
pub const DT: f64 = 1e-3;
/// The softening length squared, ε².
pub const SOFTENING2: f64 = 1e-4;

/// The bodies: positions, velocities, accelerations and masses, one entry per body.
#[derive(Clone, Debug, PartialEq)]
pub struct Bodies {
    /// Positions.
    pub pos: Vec<[f64; 3]>,
    /// Velocities.
    pub vel: Vec<[f64; 3]>,
    /// Accelerations (of the last force pass).
    pub acc: Vec<[f64; 3]>,
    /// Masses.
    pub mass: Vec<f64>,
}

/// The initial bodies: positions uniform in the unit ball, small random velocities, masses in
/// [0.5, 1.5) / n (the total is about 1), from SplitMix64.
pub fn input(n: usize) -> Bodies {
    let mut rng = SplitMix64(0x4e42_4f44_5900_0000 ^ n as u64);
    let mut unit = || rng.next_f64();
    let mut b = Bodies {
        pos: Vec::with_capacity(n),
        vel: Vec::with_capacity(n),
        acc: vec![[0.0; 3]; n],
        mass: Vec::with_capacity(n),
    };
    for _ in 0..n {
        let p = loop {
            let p = [2.0 * unit() - 1.0, 2.0 * unit() - 1.0, 2.0 * unit() - 1.0];
            if p[0] * p[0] + p[1] * p[1] + p[2] * p[2] <= 1.0 {
                break p;
            }
        };
        b.pos.push(p);
        b.vel.push([
            0.1 * (unit() - 0.5),
            0.1 * (unit() - 0.5),
            0.1 * (unit() - 0.5),
        ]);
        b.mass.push((0.5 + unit()) / n as f64);
    }
    b
}

/// The acceleration of body `i` from all the others, summed in index order.
#[inline]
pub fn acceleration(i: usize, pos: &[[f64; 3]], mass: &[f64]) -> [f64; 3] {
    let p = pos[i];
    let mut a = [0.0; 3];
    let mut add = |q: &[f64; 3], m: f64| {
        let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + SOFTENING2;
        let s = m / (r2 * r2.sqrt());
        a[0] += d[0] * s;
        a[1] += d[1] * s;
        a[2] += d[2] * s;
    };
    for (q, &m) in pos[..i].iter().zip(&mass[..i]) {
        add(q, m);
    }
    for (q, &m) in pos[i + 1..].iter().zip(&mass[i + 1..]) {
        add(q, m);
    }
    a
}

/// `v += a·h`, component by component.
#[inline]
fn kick(v: &mut [f64; 3], a: &[f64; 3], h: f64) {
    for (v, a) in v.iter_mut().zip(a) {
        *v += a * h;
    }
}

/// The force pass over all bodies, split in halves down to `grain` bodies ([`for_row_bands`]);
/// with `kick_after`, each body's velocity then gets half a step of its new acceleration.
///
/// In a checked run (`magpie::race::checking()`) each leaf declares that it reads all of `pos`
/// and `mass` and writes its bodies' accelerations (and velocities, with `kick_after`); with
/// the race planted ([`crate::races::planted`]) it also declares a write of the acceleration
/// just after its block, when there is one (the next leaf's first body, as a leaf whose bound
/// is one body too far would write). The planted write is declared only: it is not made.
fn forces<F: Fork>(
    f: &mut F,
    acc: &mut [[f64; 3]],
    vel: &mut [[f64; 3]],
    pos: &[[f64; 3]],
    mass: &[f64],
    kick_after: bool,
    grain: usize,
) {
    for_row_bands(f, (acc, vel), 0, grain, &|first, (acc, vel)| {
        if magpie::race::checking() {
            magpie::race::read(pos);
            magpie::race::read(mass);
            magpie::race::write(acc);
            if kick_after {
                magpie::race::write(vel);
            }
            if crate::races::planted() && first + acc.len() < pos.len() {
                magpie::race::write_raw(acc.as_ptr_range().end, 1);
            }
        }
        for (k, (a, v)) in acc.iter_mut().zip(vel).enumerate() {
            *a = acceleration(first + k, pos, mass);
            if kick_after {
                kick(v, a, 0.5 * DT);
            }
        }
    });
}

/// The first half of a leapfrog step: half a kick and a drift for every body.
fn kick_drift(b: &mut Bodies) {
    for ((x, v), a) in b.pos.iter_mut().zip(&mut b.vel).zip(&b.acc) {
        kick(v, a, 0.5 * DT);
        for (x, v) in x.iter_mut().zip(v.iter()) {
            *x += v * DT;
        }
    }
}

/// The kernel over any [`Fork`]: initial accelerations, then [`STEPS`] leapfrog steps.
pub fn run<F: Fork>(f: &mut F, b: &mut Bodies, grain: u64) {
    let grain = grain.max(1) as usize;
    let Bodies {
        pos,
        vel,
        acc,
        mass,
    } = &mut *b;
    forces(f, acc, vel, pos, mass, false, grain);
    for _ in 0..STEPS {
        kick_drift(b);
        let Bodies {
            pos,
            vel,
            acc,
            mass,
        } = &mut *b;
        forces(f, acc, vel, pos, mass, true, grain);
    }
}

/// The plain loops: the same steps, body after body.
pub fn plain(b: &mut Bodies) {
    let n = b.pos.len();
    for i in 0..n {
        b.acc[i] = acceleration(i, &b.pos, &b.mass);
    }
    for _ in 0..STEPS {
        kick_drift(b);
        for i in 0..n {
            b.acc[i] = acceleration(i, &b.pos, &b.mass);
            kick(&mut b.vel[i], &b.acc[i], 0.5 * DT);
        }
    }
}

/// The N-body workload.
pub struct NBody;

static DEF: Def = Def {
    race: Some(RACE),
    ..workload::def::<NBody>()
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for NBody {
    const INFO: Info = Info {
        name: "nbody",
        // The thesis's section and table were not at hand when this was written.
        source: "Lifflander's thesis (nbody)",
        n_meaning: "bodies (direct O(n^2) forces, 4 leapfrog steps)",
        ci: 512,
        default: 5632,
        // The thesis's body count was not at hand: 16384 stands in.
        paper: 16384,
        min_n: 1,
        // 5 force passes of n^2 pairs, twice (the run and `expected`): 2^17 bodies are about 540
        // times the default's work, minutes serially; 2^20 would take hours.
        max_n: 1 << 17,
        grain: 16,
        grain_meaning: "bodies whose forces one task sums",
    };
    type Shared = ();
    type Input = Bodies;
    type Output = ();
    type Expected = Bodies;

    fn shared(_: u64) {}
    fn input(n: u64, _: &()) -> Bodies {
        input(n as usize)
    }
    fn run<F: Fork>(f: &mut F, _: u64, grain: u64, _: &(), b: &mut Bodies) {
        run(f, b, grain)
    }
    fn expected(n: u64, _: &()) -> Bodies {
        let mut b = input(n as usize);
        plain(&mut b);
        b
    }
    fn answer(_: u64, _: &(), b: &Bodies, _: &()) -> String {
        format!(
            "position sum {}, velocity abs sum {}",
            sum12(b.pos.as_flattened()),
            abs_sum12(b.vel.as_flattened())
        )
    }
    fn verify(n: u64, _: &(), want: &Bodies, got: &Bodies, _: ()) -> Result<(), String> {
        let len = want.pos.len();
        if [got.pos.len(), got.vel.len(), got.acc.len(), got.mass.len()] != [len; 4] {
            return Err(format!(
                "nbody({n}): {}/{}/{}/{} positions/velocities/accelerations/masses, expected {len}",
                got.pos.len(),
                got.vel.len(),
                got.acc.len(),
                got.mass.len()
            ));
        }
        for (what, g, w) in [
            ("position", &got.pos, &want.pos),
            ("velocity", &got.vel, &want.vel),
            ("acceleration", &got.acc, &want.acc),
        ] {
            if let Some(k) = first_bit_difference(g.as_flattened(), w.as_flattened()) {
                let i = k / 3;
                return Err(format!(
                    "nbody({n}): body {i}'s {what} is {:?}, the plain loops give {:?}",
                    g[i], w[i]
                ));
            }
        }
        Ok(())
    }
}

/// This kernel under the race checker ([`crate::races`]).
pub const RACE: crate::races::Facet = crate::races::Facet {
    name: "nbody",
    default_n: 256,
    run: race_run,
};

/// N-body under the race checker (`crate::races`): [`run`] with `magpie::join`
/// (`fork::Magpie`, the workload's default grain of 16 bodies a leaf) on [`input`]`(n)` in the
/// current pool, its bodies checked bit for bit against the plain loops' ([`NBody::verify`]
/// against [`NBody::expected`]; the plain loops declare nothing, so they add nothing to the
/// report). Returns the workload's answer line, or one line: an invalid `n` or the first body
/// that differs. Up to 16 bodies are one leaf, with nothing in parallel to check.
pub fn race_run(n: u64) -> Result<String, String> {
    NBody::check_n(n)?;
    let mut b = input(n as usize);
    run(&mut crate::fork::Magpie, &mut b, NBody::INFO.grain);
    NBody::verify(n, &(), &NBody::expected(n, &()), &b, ())?;
    Ok(NBody::answer(n, &(), &b, &()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::Serial;

    #[test]
    fn race_checker_finds_no_race_unless_planted() {
        // 64 bodies at the grain of 16: four leaves a force pass.
        let n = 64;
        let want = NBody::answer(n, &(), &NBody::expected(n, &()), &());
        crate::races::assert_clean_and_planted_found(RACE, n, &want);
        assert!(race_run(0).unwrap_err().contains("between 1"));
    }

    #[test]
    fn every_version_matches_the_plain_loops() {
        crate::workload::check_everywhere::<NBody>(&[1, 2, 17, 100], &[1, 3, 16]);
    }

    #[test]
    fn forces_are_newtonian() {
        // Two bodies: equal and opposite forces of the softened inverse-square size.
        let pos = [[0.0, 0.0, 0.0], [0.3, 0.4, 0.0]];
        let mass = [2.0, 3.0];
        let a0 = acceleration(0, &pos, &mass);
        let a1 = acceleration(1, &pos, &mass);
        let r2: f64 = 0.25 + SOFTENING2;
        let s = 1.0 / (r2 * r2.sqrt());
        let want0 = [0.3 * 3.0 * s, 0.4 * 3.0 * s, 0.0];
        for k in 0..3 {
            assert!(
                (a0[k] - want0[k]).abs() <= 1e-12 * want0[0],
                "{a0:?} {want0:?}"
            );
            assert!((mass[0] * a0[k] + mass[1] * a1[k]).abs() <= 1e-12 * want0[0]);
        }
        // Many bodies: the total force Σ m_i a_i vanishes (Newton's third law) up to rounding.
        let mut b = input(300);
        run(&mut Serial, &mut b, 7);
        for k in 0..3 {
            let total: f64 = b.acc.iter().zip(&b.mass).map(|(a, m)| m * a[k]).sum();
            let scale: f64 = b.acc.iter().zip(&b.mass).map(|(a, m)| m * a[k].abs()).sum();
            assert!(total.abs() <= 1e-12 * scale, "{total} vs {scale}");
        }
    }

    #[test]
    fn wrong_results_are_rejected() {
        let n = 40;
        let want = NBody::expected(n, &());
        let mut b = NBody::input(n, &());
        run(&mut Serial, &mut b, 3);
        assert_eq!(NBody::verify(n, &(), &want, &b, ()), Ok(()));
        let mut bad = b.clone();
        bad.vel[13][2] = f64::from_bits(bad.vel[13][2].to_bits() ^ 1);
        let e = NBody::verify(n, &(), &want, &bad, ()).unwrap_err();
        assert!(e.contains("body 13's velocity") && !e.contains('\n'), "{e}");
        let mut bad = b.clone();
        bad.pos[39][0] += 1e-9;
        let e = NBody::verify(n, &(), &want, &bad, ()).unwrap_err();
        assert!(e.contains("body 39's position"), "{e}");
        // No steps is not the result.
        assert!(NBody::verify(n, &(), &want, &NBody::input(n, &()), ()).is_err());
    }
}
