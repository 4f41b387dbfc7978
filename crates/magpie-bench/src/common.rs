//! Code the [`Workload`](crate::workload::Workload) kernels share: their random generator
//! ([`SplitMix64`]), the bit-for-bit comparison their verifiers make ([`first_bit_difference`]),
//! the size check of the kernels whose `n` is a power of two ([`check_power_of_two`]), and the
//! recursive halving of rows with `join` that several of them fork by ([`for_row_bands`]).

use crate::fork::Fork;

/// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014), the generator of every kernel's input: the
/// state advances by the golden-ratio increment and each output is the state, mixed.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1): the top 53 bits times 2^-53.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [-1, 1): the top 53 bits times 2^-52, less 1 (a multiple of 2^-52; the same
    /// number as `2.0 * next_f64() - 1.0`).
    #[inline]
    pub fn next_signed_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 52) as f64) - 1.0
    }

    /// Uniform in `0..m` (`m` ≥ 1) by the remainder, whose slight bias the kernels do not mind.
    #[inline]
    pub fn below(&mut self, m: u64) -> u64 {
        self.next_u64() % m
    }
}

/// The first index at which `a` and `b` differ in their bits, or, where one is a prefix of the
/// other, the shorter one's length (the first index only one of them has); `None` when they are
/// equal bit for bit. A caller that prints the two values should compare the lengths first.
pub fn first_bit_difference(a: &[f64], b: &[f64]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x.to_bits() != y.to_bits())
        .or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

/// Checks that `n` is a power of two in `min..=max`, for the kernel `name` whose `n` is
/// `meaning` (such as "matrix side"); the error is one line.
pub fn check_power_of_two(
    name: &str,
    n: u64,
    min: u64,
    max: u64,
    meaning: &str,
) -> Result<(), String> {
    if (min..=max).contains(&n) && n.is_power_of_two() {
        Ok(())
    } else {
        Err(format!(
            "invalid n `{n}` for {name}: expected a power of two between {min} and {max} \
             ({meaning})"
        ))
    }
}

/// What one task of [`for_row_bands`] owns: a band of rows of one or more arrays, which can be
/// cut after a number of rows.
pub trait Band: Send + Sized {
    /// The rows in the band.
    fn rows(&self) -> usize;
    /// The first `k` rows and the rest.
    fn split(self, k: usize) -> (Self, Self);
}

/// Whole rows of a row-major array: the entries, and the entries per row (at least 1).
pub struct Rows<'a, T>(pub &'a mut [T], pub usize);

impl<T: Send> Band for Rows<'_, T> {
    fn rows(&self) -> usize {
        self.0.len() / self.1.max(1)
    }
    fn split(self, k: usize) -> (Self, Self) {
        let (lo, hi) = self.0.split_at_mut(k * self.1);
        (Rows(lo, self.1), Rows(hi, self.1))
    }
}

/// A slice whose entries are the rows (one per body, one per point).
impl<T: Send> Band for &mut [T] {
    fn rows(&self) -> usize {
        self.len()
    }
    fn split(self, k: usize) -> (Self, Self) {
        self.split_at_mut(k)
    }
}

/// The same rows of two arrays (the first one's count is the band's).
impl<A: Band, B: Band> Band for (A, B) {
    fn rows(&self) -> usize {
        self.0.rows()
    }
    fn split(self, k: usize) -> (Self, Self) {
        let (a0, a1) = self.0.split(k);
        let (b0, b1) = self.1.split(k);
        ((a0, b0), (a1, b1))
    }
}

/// Runs `body(first_row, band)` over bands of at most `grain` rows covering `band`, whose first
/// row is row `first`: a band of more rows is cut after half of them (rounded down) and the two
/// halves run with `join`. Which rows a task gets never changes what `body` computes for a row,
/// so a kernel whose rows are independent gives the same bits at every grain.
pub fn for_row_bands<F: Fork, B: Band>(
    f: &mut F,
    band: B,
    first: usize,
    grain: usize,
    body: &(impl Fn(usize, B) + Sync),
) {
    let count = band.rows();
    // A task under a strict schedule with no cut below it does its rows as one leaf (dynamic
    // coarsening; never for the other forks).
    if count <= grain || f.coarse() {
        return body(first, band);
    }
    let half = count / 2;
    let (lo, hi) = band.split(half);
    f.join(
        |f| for_row_bands(f, lo, first, grain, body),
        |f| for_row_bands(f, hi, first + half, grain, body),
    );
}

/// [`for_row_bands`] on magpie with SLAW's locality hints (§IV): in a pool with places, `band`
/// is cut into one contiguous part per place (balanced to a row), each part is sent to its place
/// with `Scope::spawn_at` and split there; without places, plain [`for_row_bands`]. Which rows
/// a task gets never changes what `body` computes, so the result is the same bits either way.
/// Call inside `Pool::install`.
pub fn for_row_bands_placed<B: Band>(
    band: B,
    first: usize,
    grain: usize,
    body: &(impl Fn(usize, B) + Sync),
) {
    let places = magpie::current_places();
    if places <= 1 {
        return for_row_bands(&mut crate::fork::Magpie, band, first, grain, body);
    }
    magpie::scope(|s| {
        let (mut rest, mut at) = (band, first);
        for p in 0..places {
            let take = rest.rows() / (places - p);
            let (part, r) = rest.split(take);
            rest = r;
            let f0 = at;
            at += take;
            s.spawn_at(p, move |_| {
                for_row_bands(&mut crate::fork::Magpie, part, f0, grain, body)
            });
        }
    });
}

/// [`for_row_bands`] on magpie split CAB's way (§III): in a pool with squads, `band` is halved
/// by [`magpie::bi_tier`]'s inter-socket spawns down to its boundary level for `data_bytes`
/// (Eq. 4), and each part at that level is split by `join` within the squad that took it;
/// elsewhere, plain [`for_row_bands`]. Each inter-socket task names a squad
/// ([`magpie::Scope::inter_spawn_at`]): the squads are halved with the rows, so the same rows
/// go to the same squad every time the band is split the same way. The same bits either way.
/// Call inside `Pool::install`.
pub fn for_row_bands_tiered<B: Band>(
    band: B,
    first: usize,
    grain: usize,
    data_bytes: u64,
    body: &(impl Fn(usize, B) + Sync),
) {
    if !magpie::current_squads() {
        return for_row_bands(&mut crate::fork::Magpie, band, first, grain, body);
    }
    let squads = 0..magpie::current_places();
    magpie::bi_tier(data_bytes, 2, |s, bl| {
        inter_tier(s, 1, bl, squads, band, first, grain, body)
    });
}

/// One task of the inter-socket tier at `level`, for squads `squads`: halves `band` into two
/// inter-socket tasks, each named for the first of its half of the squads, or at the boundary
/// level (or a single row) runs it within the squad.
#[allow(clippy::too_many_arguments)]
fn inter_tier<'s, B: Band + 's, Body: Fn(usize, B) + Sync>(
    s: &magpie::Scope<'s>,
    level: u32,
    bl: u32,
    squads: std::ops::Range<usize>,
    band: B,
    first: usize,
    grain: usize,
    body: &'s Body,
) {
    let rows = band.rows();
    if level >= bl || rows <= 1 {
        return for_row_bands(&mut crate::fork::Magpie, band, first, grain, body);
    }
    let half = rows / 2;
    let (lo, hi) = band.split(half);
    let (sq_lo, sq_hi) = halve_squads(squads);
    s.inter_spawn_at(sq_lo.start, move |s| {
        inter_tier(s, level + 1, bl, sq_lo, lo, first, grain, body)
    });
    s.inter_spawn_at(sq_hi.start, move |s| {
        inter_tier(s, level + 1, bl, sq_hi, hi, first + half, grain, body)
    });
}

/// The squads of the two halves of an inter-socket split: the lower and upper halves of
/// `squads`, or `squads` for both when it has only one.
pub fn halve_squads(
    squads: std::ops::Range<usize>,
) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    if squads.len() > 1 {
        let mid = squads.start + squads.len() / 2;
        (squads.start..mid, mid..squads.end)
    } else {
        (squads.clone(), squads)
    }
}

/// Pools of 4 workers on a virtual 2×2 topology with each locality strategy the kernels take
/// hints for: places, places with cross-place stealing, CAB's squads (for kernels' tests that
/// their hints leave the result unchanged).
#[cfg(test)]
pub fn locality_pools() -> Vec<(&'static str, magpie::Pool)> {
    [
        ("places", false, false),
        ("places-cross", true, false),
        ("cab", false, true),
    ]
    .into_iter()
    .map(|(name, cross, squads)| {
        let pool = magpie::Pool::builder()
            .workers(4)
            .topology(magpie::Topology::parse("2x2:64KiB").unwrap())
            .places(!squads)
            .cross_place_steal(cross)
            .squads(squads)
            .build()
            .unwrap();
        (name, pool)
    })
    .collect()
}

/// Pools that record leaves (for kernels' tests of what their leaves declare): plain with 2
/// workers, and places and CAB's squads with 4, all on a virtual 2×2 topology.
#[cfg(test)]
pub fn recording_pools() -> Vec<(&'static str, magpie::Pool)> {
    [
        ("plain", magpie::Pool::builder().workers(2)),
        ("places", magpie::Pool::builder().workers(4).places(true)),
        ("cab", magpie::Pool::builder().workers(4).squads(true)),
    ]
    .into_iter()
    .map(|(name, b)| {
        let pool = b
            .topology(magpie::Topology::parse("2x2:64KiB").unwrap())
            .record_leaves(true)
            .build()
            .unwrap();
        (name, pool)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Magpie, Serial};

    #[test]
    fn splitmix_matches_the_reference_and_the_kernels_formulas() {
        // The first outputs from seed 0 (Vigna's splitmix64.c).
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        for seed in [0, 1, 0x4c55_0000_0000_0000, u64::MAX] {
            let (mut a, mut b, mut c) = (SplitMix64(seed), SplitMix64(seed), SplitMix64(seed));
            for _ in 0..1000 {
                let bits = a.next_u64() >> 11;
                let x = b.next_f64();
                let y = c.next_signed_f64();
                assert_eq!(x, bits as f64 / 9_007_199_254_740_992.0);
                assert!((0.0..1.0).contains(&x) && (-1.0..1.0).contains(&y));
                assert_eq!(y.to_bits(), (2.0 * x - 1.0).to_bits());
            }
        }
        let mut r = SplitMix64(5);
        assert!((0..100).all(|_| r.below(7) < 7));
    }

    #[test]
    fn first_bit_difference_finds_bits_and_lengths() {
        let a = [1.0, 0.0, f64::NAN, 3.0];
        assert_eq!(first_bit_difference(&a, &a), None);
        assert_eq!(
            first_bit_difference(&a, &[1.0, -0.0, f64::NAN, 3.0]),
            Some(1)
        );
        assert_eq!(first_bit_difference(&a, &a[..3]), Some(3));
        assert_eq!(first_bit_difference(&a[..2], &a), Some(2));
        assert_eq!(first_bit_difference(&[], &[]), None);
        let mut b = a;
        b[3] = f64::from_bits(b[3].to_bits() ^ 1);
        assert_eq!(first_bit_difference(&a, &b), Some(3));
    }

    #[test]
    fn power_of_two_check() {
        assert_eq!(check_power_of_two("k", 64, 1, 1024, "points"), Ok(()));
        for n in [0, 3, 96, 2048] {
            let e = check_power_of_two("k", n, 1, 1024, "points").unwrap_err();
            assert_eq!(
                e,
                format!(
                    "invalid n `{n}` for k: expected a power of two between 1 and 1024 (points)"
                )
            );
        }
    }

    #[test]
    fn row_bands_cover_every_row_once() {
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        for rows in [0, 1, 2, 7, 100] {
            for grain in [1, 3, 100] {
                let width = 3;
                let mut a = vec![0usize; rows * width];
                let mut b = vec![0usize; rows];
                let body = |first: usize, (Rows(a, w), b): (Rows<'_, usize>, &mut [usize])| {
                    assert!(b.len() <= grain);
                    for (r, (row, x)) in a.chunks_exact_mut(w).zip(b.iter_mut()).enumerate() {
                        row.iter_mut().for_each(|e| *e += first + r + 1);
                        *x += first + r + 1;
                    }
                };
                for_row_bands(
                    &mut Serial,
                    (Rows(&mut a, width), &mut b[..]),
                    0,
                    grain,
                    &body,
                );
                pool.install(|| {
                    for_row_bands(
                        &mut Magpie,
                        (Rows(&mut a, width), &mut b[..]),
                        0,
                        grain,
                        &body,
                    )
                });
                let want: Vec<usize> = (1..=rows).map(|i| 2 * i).collect();
                assert_eq!(b, want, "{rows} rows, grain {grain}");
                for (i, row) in a.chunks_exact(width).enumerate() {
                    assert!(row.iter().all(|&e| e == 2 * (i + 1)));
                }
            }
        }
    }
}
