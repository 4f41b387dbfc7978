//! Parallel sorts of slices, on whatever magpie pool the caller runs on (outside any pool, the
//! global pool's): the stable `par_sort`, `par_sort_by` and `par_sort_by_key`, and the unstable
//! `par_sort_unstable`, `par_sort_unstable_by` and `par_sort_unstable_by_key`.
//!
//! They are free functions so that any program on magpie's workers can call them, a rayon
//! program on magpie's rayon-core (`rayon-core/`) included: on magpie's core they take
//! 0.44–0.80× the time of rayon's own sorts (docs/RAYON.md has the figures). Both kinds split the
//! work a few levels deep with `join` (about two pieces per worker) and leave the pieces to the
//! standard library's sequential sorts, whose algorithms are newer than those rayon's sorts carry.
//! No `unsafe`: the stable merge rotates and recurses, the unstable partition swaps.
//!
//! ```
//! let mut people = vec![("cid", 31), ("ann", 31), ("bob", 25), ("dee", 25)];
//! magpie::sort::par_sort_by_key(&mut people, |p| p.1); // stable: ties keep their order
//! assert_eq!(people, [("bob", 25), ("dee", 25), ("cid", 31), ("ann", 31)]);
//! let mut v: Vec<u64> = (0..100_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
//! magpie::sort::par_sort_unstable(&mut v);
//! assert!(v.windows(2).all(|w| w[0] <= w[1]));
//! ```

use std::cmp::Ordering;

/// Sorts `v`, stably (equal elements keep their order).
pub fn par_sort<T: Ord + Send>(v: &mut [T]) {
    par_sort_by(v, T::cmp)
}

/// Sorts `v` by `cmp`, stably.
pub fn par_sort_by<T, F>(v: &mut [T], cmp: F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    on_a_worker(|| par_stable_sort(v, &cmp, sort_levels()))
}

/// Sorts `v` by the key `f` gives, stably.
pub fn par_sort_by_key<T, K, F>(v: &mut [T], f: F)
where
    T: Send,
    K: Ord,
    F: Fn(&T) -> K + Sync,
{
    par_sort_by(v, |a, b| f(a).cmp(&f(b)))
}

/// Sorts `v` (equal elements in any order).
pub fn par_sort_unstable<T: Ord + Send>(v: &mut [T]) {
    par_sort_unstable_by(v, T::cmp)
}

/// Sorts `v` by `cmp` (equal elements in any order).
pub fn par_sort_unstable_by<T, F>(v: &mut [T], cmp: F)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    on_a_worker(|| par_unstable_sort(v, &cmp, sort_levels()))
}

/// Sorts `v` by the key `f` gives (equal keys in any order).
pub fn par_sort_unstable_by_key<T, K, F>(v: &mut [T], f: F)
where
    T: Send,
    K: Ord,
    F: Fn(&T) -> K + Sync,
{
    par_sort_unstable_by(v, |a, b| f(a).cmp(&f(b)))
}

/// Pieces the sorts below leave to the standard library's sequential sorts.
const SEQUENTIAL_SORT: usize = 4096;

/// How many levels a sort splits its work in parallel before it runs sequential sorts: enough
/// for about two pieces per worker (as the iterators' eager halvings, see the module doc).
fn sort_levels() -> u32 {
    let w = crate::worker::current().map_or(1, |wt| wt.core.registry.config.workers);
    usize::BITS - (w - 1).leading_zeros() + 1
}

/// Sorts `v` by `cmp`, stably: the halves in parallel (recursively, `levels` deep), then the
/// two sorted halves merged in parallel by [`par_merge`]. Below that, the standard library's
/// stable sort.
fn par_stable_sort<T, F>(v: &mut [T], cmp: &F, levels: u32)
where
    T: Send,
    F: Fn(&T, &T) -> std::cmp::Ordering + Sync,
{
    if levels == 0 || v.len() <= SEQUENTIAL_SORT {
        v.sort_by(cmp);
        return;
    }
    let mid = v.len() / 2;
    let (l, r) = v.split_at_mut(mid);
    crate::join(
        || par_stable_sort(l, cmp, levels - 1),
        || par_stable_sort(r, cmp, levels - 1),
    );
    par_merge(v, mid, cmp, levels);
}

/// Merges the sorted runs `v[..mid]` and `v[mid..]` stably, in place and without `unsafe`,
/// splitting the merge into independent pieces `levels` deep.
///
/// Let A = `v[..mid]` and B = `v[mid..]`, and take the middle element of the longer run as a
/// pivot. If it is A's `A[i]`, `j` counts B's elements strictly less than it; if it is B's
/// `B[j]`, `i` counts A's elements not greater than it. Either way every element of `A[..i]`
/// and `B[..j]` sorts no later than every element of `A[i..]` and `B[j..]`, and ties between A
/// and B fall with A's on the left or both on the same side, A's first. Rotating `v[i..mid +
/// j]` by `mid - i` makes the order `A[..i] B[..j] | A[i..] B[j..]`: two smaller merges with
/// nothing crossing the bar, run in parallel with `join`. A piece at the last level (or small)
/// is merged by the standard library's stable sort, which finds the two runs and merges them
/// in one pass. The comparator may panic only inside a search or a sort, when `v` holds a
/// permutation of its elements, as the standard library promises for its sorts.
fn par_merge<T, F>(v: &mut [T], mid: usize, cmp: &F, levels: u32)
where
    T: Send,
    F: Fn(&T, &T) -> std::cmp::Ordering + Sync,
{
    use std::cmp::Ordering::{Greater, Less};
    let (na, nb) = (mid, v.len() - mid);
    if na == 0 || nb == 0 {
        return;
    }
    if levels == 0 || v.len() <= SEQUENTIAL_SORT {
        v.sort_by(cmp);
        return;
    }
    let (i, j) = if na >= nb {
        let i = na / 2;
        let j = v[mid..].partition_point(|x| cmp(x, &v[i]) == Less);
        (i, j)
    } else {
        let j = nb / 2;
        let i = v[..mid].partition_point(|x| cmp(x, &v[mid + j]) != Greater);
        (i, j)
    };
    v[i..mid + j].rotate_left(mid - i);
    let (l, r) = v.split_at_mut(i + j);
    crate::join(
        || par_merge(l, i, cmp, levels - 1),
        || par_merge(r, mid - i, cmp, levels - 1),
    );
}

/// Sorts `v` by `cmp`, in any order of equal elements: a parallel quicksort, `levels` deep, then
/// the standard library's unstable sort.
///
/// Each level takes the median of a sample as its pivot ([`sample_pivot`]), partitions around it
/// in one pass ([`partition_less`]) and sorts the two sides in parallel with `join`. The
/// partitions along one path down the levels are what no worker can share (n + n/2 + n/4 + ...
/// element visits before the last level's sorts start), so each is one cheap pass. The exact
/// median by `select_nth_unstable_by`, which this used before, partitions several times per
/// level, and at 16 workers that path set the sort's time (docs/RESULTS.md, "The unstable sort
/// at 16 workers"). A sample's median leaves the sides within a few percent of equal. Every
/// element is compared with the pivot by the one thread that partitions, so `T` need not be
/// `Sync`; the sides are disjoint slices.
///
/// Equal elements: the pivot is set aside at each level, so every level shrinks the slice and
/// the recursion ends after `levels`. When few elements are less than the pivot (many equal to
/// it, as in a slice of few values), the larger side is partitioned once more into those equal to
/// the pivot, which are in place already, and the greater ones, which alone go on.
fn par_unstable_sort<T, F>(v: &mut [T], cmp: &F, levels: u32)
where
    T: Send,
    F: Fn(&T, &T) -> std::cmp::Ordering + Sync,
{
    use std::cmp::Ordering::Less;
    if levels == 0 || v.len() <= SEQUENTIAL_SORT {
        v.sort_unstable_by(cmp);
        return;
    }
    let n = v.len();
    v.swap(0, sample_pivot(v, cmp));
    let (pivot, rest) = v.split_first_mut().expect("longer than SEQUENTIAL_SORT");
    let lt = partition_less(rest, |x| cmp(x, pivot) == Less);
    // v[1..=lt] < pivot <= v[lt + 1..]: the pivot goes between them.
    v.swap(0, lt);
    let (left, right) = v.split_at_mut(lt);
    let (pivot, mut right) = right.split_first_mut().expect("the pivot is there");
    if lt < n / 8 {
        // Few smaller elements: take those equal to the pivot off the right side first.
        let eq = partition_less(right, |x| cmp(pivot, x) != Less);
        right = &mut right[eq..];
    }
    crate::join(
        || par_unstable_sort(left, cmp, levels - 1),
        || par_unstable_sort(right, cmp, levels - 1),
    );
}

/// The index of the median of up to 255 elements of `v` sampled at equal distances.
fn sample_pivot<T, F>(v: &[T], cmp: &F) -> usize
where
    F: Fn(&T, &T) -> std::cmp::Ordering,
{
    let k = v.len().min(255);
    let step = v.len() / k;
    let mut at: Vec<usize> = (0..k).map(|i| i * step + step / 2).collect();
    let (_, &mut median, _) = at.select_nth_unstable_by(k / 2, |&a, &b| cmp(&v[a], &v[b]));
    median
}

/// Moves the elements `first` accepts to the front of `v`, keeping none of the order, and
/// returns how many there are. One pass, written without a branch on the outcome of `first`:
/// each element is swapped with the front of the rest, and the front moves on by one if it was
/// accepted (Lomuto's scheme), so that random data does not cost mispredicted branches.
fn partition_less<T>(v: &mut [T], first: impl Fn(&T) -> bool) -> usize {
    let mut front = 0;
    for i in 0..v.len() {
        let take = first(&v[i]);
        v.swap(front, i);
        front += take as usize;
    }
    front
}

/// Runs `f` on a worker (the global pool's, outside any pool).
fn on_a_worker<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if crate::worker::current().is_some() {
        f()
    } else {
        crate::pool::outside(f)
    }
}
