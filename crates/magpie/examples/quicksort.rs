//! Parallel in-place quicksort with `magpie::join`.
//!
//!     cargo run --release -p magpie --example quicksort
//!
//! Each partition step splits the slice in two with `split_at_mut` and sorts the halves with
//! `magpie::join`; below a cutoff a slice is sorted sequentially. The input is pseudo-random
//! `u64`s from a small xorshift generator. The result is checked against `sort_unstable` on a
//! copy (sorted, and the same multiset of keys); the program panics if it is wrong.

/// Below this many keys a slice is sorted sequentially: a task must be worth spawning.
const CUTOFF: usize = 2048;

/// Marsaglia's xorshift64: good enough for test data, no external crate.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Lomuto partition around the median of the first, middle and last keys; returns the pivot's
/// final index.
fn partition(v: &mut [u64]) -> usize {
    let (last, mid) = (v.len() - 1, v.len() / 2);
    let mut three = [(v[0], 0), (v[mid], mid), (v[last], last)];
    three.sort_unstable();
    v.swap(three[1].1, last);
    let pivot = v[last];
    let mut store = 0;
    for i in 0..last {
        if v[i] < pivot {
            v.swap(i, store);
            store += 1;
        }
    }
    v.swap(store, last);
    store
}

fn quicksort(v: &mut [u64]) {
    if v.len() <= CUTOFF {
        v.sort_unstable();
        return;
    }
    let p = partition(v);
    let (left, right) = v.split_at_mut(p);
    // right[0] is the pivot, already in place.
    magpie::join(|| quicksort(left), || quicksort(&mut right[1..]));
}

fn main() -> Result<(), magpie::Error> {
    let n = 500_000;
    let mut state = 0x9E37_79B9_7F4A_7C15;
    let mut keys: Vec<u64> = (0..n).map(|_| xorshift(&mut state) % 100_000).collect();
    let mut expected = keys.clone();
    expected.sort_unstable();

    let pool = magpie::Pool::builder().build()?;
    pool.install(|| quicksort(&mut keys));

    // Sorted, and a permutation of the input: equal to the input sorted by std.
    assert!(keys.windows(2).all(|w| w[0] <= w[1]), "not sorted");
    assert_eq!(keys, expected, "not a permutation of the input");
    println!("workers: {}", pool.workers());
    println!("size: {n}");
    println!("sorted: ok");
    Ok(())
}
