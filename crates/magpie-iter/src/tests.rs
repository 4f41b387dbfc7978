//! Parallel iterators against their sequential twins: every adaptor and consumer over random
//! lengths (0 and 1 included), in order where rayon promises one, at 1, 2, 3 and 8 workers and
//! under every policy; panics reach the caller and the pool lives on; nesting.

// The retired iterators' own tests: they hold while the code stays.
#![allow(deprecated)]

use crate::prelude::*;
use magpie::{Policy, Pool};
use std::collections::{BTreeMap, HashMap, HashSet};

fn pools() -> Vec<Pool> {
    let mut v = Vec::new();
    for workers in [1, 2, 3, 8] {
        for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
            v.push(
                Pool::builder()
                    .workers(workers)
                    .policy(policy)
                    .build()
                    .unwrap(),
            );
        }
    }
    v
}

/// Lengths 0, 1, small, around the chunk size and a few larger, pseudo-random.
fn lengths() -> Vec<usize> {
    let mut v = vec![
        0, 1, 2, 3, 7, 255, 256, 257, 511, 513, 1000, 4095, 4096, 4097, 8193,
    ];
    let mut x = 0x9e37_79b9u64;
    for _ in 0..4 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push((x % 20_000) as usize);
    }
    v
}

#[test]
fn adaptors_and_consumers_match_the_sequential_iterator() {
    for pool in pools() {
        pool.install(|| {
            for n in lengths() {
                let v: Vec<u64> = (0..n as u64).map(|i| i * 7 % 1000).collect();
                let what = format!("n={n}, {} workers, {:?}", pool.workers(), pool.policy());
                // Ordered: map, filter, filter_map, enumerate, zip, copied, cloned, collect.
                let got: Vec<u64> = v.par_iter().map(|x| x * 3).collect();
                let want: Vec<u64> = v.iter().map(|x| x * 3).collect();
                assert_eq!(got, want, "map {what}");
                let got: Vec<u64> = v.par_iter().copied().filter(|x| x % 3 == 0).collect();
                let want: Vec<u64> = v.iter().copied().filter(|x| x % 3 == 0).collect();
                assert_eq!(got, want, "filter {what}");
                let got: Vec<u64> = v
                    .par_iter()
                    .filter_map(|&x| (x % 2 == 1).then_some(x / 2))
                    .collect();
                let want: Vec<u64> = v
                    .iter()
                    .filter_map(|&x| (x % 2 == 1).then_some(x / 2))
                    .collect();
                assert_eq!(got, want, "filter_map {what}");
                let got: Vec<(usize, u64)> = v.par_iter().cloned().enumerate().collect();
                let want: Vec<(usize, u64)> = v.iter().cloned().enumerate().collect();
                assert_eq!(got, want, "enumerate {what}");
                let w: Vec<u64> = (0..(n / 2) as u64).collect();
                let got: Vec<(u64, u64)> =
                    v.par_iter().copied().zip(w.par_iter().copied()).collect();
                let want: Vec<(u64, u64)> = v.iter().copied().zip(w.iter().copied()).collect();
                assert_eq!(got, want, "zip {what}");
                let got: Vec<usize> = (0..n).into_par_iter().collect();
                assert_eq!(got, (0..n).collect::<Vec<_>>(), "range {what}");
                let got: Vec<u64> = v.clone().into_par_iter().map(|x| x + 1).collect();
                let want: Vec<u64> = v.iter().map(|x| x + 1).collect();
                assert_eq!(got, want, "vec into_par_iter {what}");
                // Consumers.
                assert_eq!(v.par_iter().count(), n, "count {what}");
                assert_eq!(
                    v.par_iter().sum::<u64>(),
                    v.iter().sum::<u64>(),
                    "sum {what}"
                );
                // 30 factors of at most 3 fit a u64 (debug builds check for overflow).
                assert_eq!(
                    v.par_iter().take(30).map(|x| x % 3 + 1).product::<u64>(),
                    v.iter().take(30).map(|x| x % 3 + 1).product::<u64>(),
                    "product {what}"
                );
                assert_eq!(
                    v.par_iter().copied().reduce(|| 0, |a, b| a.max(b)),
                    v.iter().copied().fold(0, u64::max),
                    "reduce {what}"
                );
                assert_eq!(
                    v.par_iter().copied().reduce_with(|a, b| a + b),
                    v.iter().copied().reduce(|a, b| a + b),
                    "reduce_with {what}"
                );
                assert_eq!(v.par_iter().min(), v.iter().min(), "min {what}");
                assert_eq!(v.par_iter().max(), v.iter().max(), "max {what}");
                assert_eq!(
                    v.par_iter()
                        .min_by_key(|x| (**x as i64 - 500).abs())
                        .map(|x| (*x as i64 - 500).abs()),
                    v.iter()
                        .min_by_key(|x| (**x as i64 - 500).abs())
                        .map(|x| (*x as i64 - 500).abs()),
                    "min_by_key {what}"
                );
                assert_eq!(
                    v.par_iter().max_by_key(|x| **x % 97).map(|x| *x % 97),
                    v.iter().max_by_key(|x| **x % 97).map(|x| *x % 97),
                    "max_by_key {what}"
                );
                assert_eq!(
                    v.par_iter().any(|&x| x == 999),
                    v.contains(&999),
                    "any {what}"
                );
                assert!(v.par_iter().all(|&x| x < 1000), "all {what}");
                assert_eq!(
                    v.par_iter().all(|&x| x < 500),
                    v.iter().all(|&x| x < 500),
                    "all {what}"
                );
                let found = v.par_iter().find_any(|&&x| x % 101 == 13);
                match found {
                    Some(x) => assert_eq!(x % 101, 13, "find_any {what}"),
                    None => assert!(!v.iter().any(|&x| x % 101 == 13), "find_any {what}"),
                }
                // Unordered collections.
                let got: HashSet<u64> = v.par_iter().copied().collect();
                assert_eq!(got, v.iter().copied().collect::<HashSet<_>>(), "set {what}");
                let got: BTreeMap<u64, usize> = v
                    .par_iter()
                    .copied()
                    .enumerate()
                    .map(|(i, x)| (x, i))
                    .collect();
                let want: BTreeMap<u64, usize> =
                    v.iter().copied().enumerate().map(|(i, x)| (x, i)).collect();
                assert_eq!(got, want, "btree map: later items win {what}");
                let got: HashMap<u64, usize> = v
                    .par_iter()
                    .copied()
                    .enumerate()
                    .map(|(i, x)| (x, i))
                    .collect();
                assert_eq!(
                    got,
                    want.into_iter().collect::<HashMap<_, _>>(),
                    "hash map {what}"
                );
            }
        });
    }
}

#[test]
fn mutable_iteration_chunks_and_strings() {
    for pool in pools() {
        pool.install(|| {
            for n in lengths() {
                let mut v: Vec<u32> = (0..n as u32).collect();
                v.par_iter_mut().for_each(|x| *x = *x * 2 + 1);
                assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32 * 2 + 1));
                for size in [1, 3, 64] {
                    let sums: Vec<u32> = v.par_chunks(size).map(|c| c.iter().sum()).collect();
                    let want: Vec<u32> = v.chunks(size).map(|c| c.iter().sum()).collect();
                    assert_eq!(sums, want, "par_chunks({size}) n={n}");
                    v.par_chunks_mut(size)
                        .enumerate()
                        .for_each(|(i, c)| c[0] = i as u32);
                    assert!(v.chunks(size).enumerate().all(|(i, c)| c[0] == i as u32));
                }
                let s: String = (0..n)
                    .into_par_iter()
                    .map(|i| char::from(b'a' + (i % 26) as u8))
                    .collect();
                let want: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
                assert_eq!(s, want);
            }
        });
    }
}

#[test]
fn every_item_is_seen_once() {
    use std::sync::atomic::{AtomicU64, Ordering};
    for pool in pools() {
        let seen: Vec<AtomicU64> = (0..10_000).map(|_| AtomicU64::new(0)).collect();
        pool.install(|| {
            (0..10_000usize).into_par_iter().for_each(|i| {
                seen[i].fetch_add(1, Ordering::Relaxed);
            })
        });
        assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1));
        let inspected = AtomicU64::new(0);
        let n = pool.install(|| {
            (0..5000u32)
                .into_par_iter()
                .inspect(|_| {
                    inspected.fetch_add(1, Ordering::Relaxed);
                })
                .count()
        });
        assert_eq!((n, inspected.load(Ordering::Relaxed)), (5000, 5000));
    }
}

#[test]
fn a_panic_reaches_the_caller_and_the_pool_lives_on() {
    let pool = Pool::builder().workers(3).build().unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.install(|| {
            (0..10_000u32).into_par_iter().for_each(|i| {
                if i == 7777 {
                    panic!("item 7777");
                }
            })
        })
    }));
    let msg = r.unwrap_err().downcast_ref::<&str>().copied().unwrap_or("");
    assert_eq!(msg, "item 7777");
    let sum: u64 = pool.install(|| (0..1000u64).into_par_iter().map(|x| x * 2).sum());
    assert_eq!(sum, 999_000);
}

#[test]
fn nested_parallel_iterators_and_outside_any_pool() {
    let pool = Pool::builder().workers(3).build().unwrap();
    let got: Vec<u64> = pool.install(|| {
        (0..50u64)
            .into_par_iter()
            .map(|i| (0..i).into_par_iter().sum::<u64>())
            .collect()
    });
    let want: Vec<u64> = (0..50u64).map(|i| (0..i).sum()).collect();
    assert_eq!(got, want);
    let inside_scope: u64 = pool.install(|| {
        let mut out = 0;
        magpie::scope(|s| {
            s.spawn(|_| out = (0..1000u64).into_par_iter().filter(|x| x % 2 == 0).sum());
        });
        out
    });
    assert_eq!(inside_scope, 249_500);
    // Outside a pool: the global pool, as for `join`.
    let v: Vec<i64> = (-500..500i64).into_par_iter().map(|x| x * x).collect();
    assert_eq!(v, (-500..500i64).map(|x| x * x).collect::<Vec<_>>());
    assert_eq!((0..0u64).into_par_iter().sum::<u64>(), 0);
    let (hi, lo) = (5i32, 3i32);
    assert_eq!((hi..lo).into_par_iter().count(), 0, "an empty range");
    assert_eq!(
        (0..3_000_000_000u64)
            .into_par_iter()
            .filter(|x| x % 1_000_000_000 == 0)
            .count(),
        3
    );
}

#[test]
fn the_second_group_matches_the_sequential_iterator() {
    use std::collections::BTreeSet;
    for pool in pools() {
        pool.install(|| {
            for n in lengths() {
                let v: Vec<u64> = (0..n as u64).map(|i| i * 7 % 1000).collect();
                let w: Vec<u64> = (0..(n / 3) as u64).collect();
                let what = format!("n={n}, {} workers, {:?}", pool.workers(), pool.policy());
                let got: Vec<u64> = v.par_iter().copied().chain(w.par_iter().copied()).collect();
                let want: Vec<u64> = v.iter().copied().chain(w.iter().copied()).collect();
                assert_eq!(got, want, "chain {what}");
                let got: Vec<u64> = v.par_iter().copied().rev().collect();
                assert_eq!(
                    got,
                    v.iter().copied().rev().collect::<Vec<_>>(),
                    "rev {what}"
                );
                for step in [1, 2, 7] {
                    let got: Vec<u64> = v.par_iter().copied().step_by(step).collect();
                    let want: Vec<u64> = v.iter().copied().step_by(step).collect();
                    assert_eq!(got, want, "step_by({step}) {what}");
                }
                for k in [0, 1, n / 2, n + 5] {
                    let got: Vec<u64> = v.par_iter().copied().take(k).collect();
                    assert_eq!(
                        got,
                        v.iter().copied().take(k).collect::<Vec<_>>(),
                        "take {what}"
                    );
                    let got: Vec<u64> = v.par_iter().copied().skip(k).collect();
                    assert_eq!(
                        got,
                        v.iter().copied().skip(k).collect::<Vec<_>>(),
                        "skip {what}"
                    );
                }
                let got: Vec<u64> = v
                    .par_iter()
                    .flat_map_iter(|&x| (0..x % 4).map(move |k| x + k))
                    .collect();
                let want: Vec<u64> = v
                    .iter()
                    .flat_map(|&x| (0..x % 4).map(move |k| x + k))
                    .collect();
                assert_eq!(got, want, "flat_map_iter {what}");
                let got: Vec<u64> = v
                    .par_iter()
                    .flat_map(|&x| (0..x % 3).into_par_iter().map(move |k| x * k))
                    .collect();
                let want: Vec<u64> = v
                    .iter()
                    .flat_map(|&x| (0..x % 3).map(move |k| x * k))
                    .collect();
                assert_eq!(got, want, "flat_map {what}");
                let got: Vec<u64> = v
                    .par_iter()
                    .map_with(5u64, |s, &x| {
                        *s += 0;
                        x + *s
                    })
                    .collect();
                assert_eq!(
                    got,
                    v.iter().map(|x| x + 5).collect::<Vec<_>>(),
                    "map_with {what}"
                );
                let got: Vec<usize> = v
                    .par_iter()
                    .map_init(Vec::<u64>::new, |buf, &x| {
                        buf.push(x);
                        x as usize
                    })
                    .collect();
                assert_eq!(
                    got,
                    v.iter().map(|&x| x as usize).collect::<Vec<_>>(),
                    "map_init {what}"
                );
                let total: u64 = v
                    .par_iter()
                    .fold(|| 0u64, |a, &x| a + x)
                    .reduce(|| 0, |a, b| a + b);
                assert_eq!(total, v.iter().sum::<u64>(), "fold {what}");
                for (min, max) in [(1, 1), (100, usize::MAX), (1, 7)] {
                    let got: Vec<u64> = v
                        .par_iter()
                        .with_min_len(min)
                        .with_max_len(max)
                        .map(|x| x + 1)
                        .collect();
                    assert_eq!(
                        got,
                        v.iter().map(|x| x + 1).collect::<Vec<_>>(),
                        "lengths {what}"
                    );
                }
                let r: Result<(), u64> =
                    v.par_iter()
                        .try_for_each(|&x| if x == 993 { Err(x) } else { Ok(()) });
                assert_eq!(
                    r,
                    if v.contains(&993) { Err(993) } else { Ok(()) },
                    "try_for_each {what}"
                );
                let o: Option<()> = v.par_iter().try_for_each(|&x| (x != 7).then_some(()));
                assert_eq!(o.is_none(), v.contains(&7), "try_for_each option {what}");
                assert_eq!(
                    v.par_iter().find_first(|&&x| x % 13 == 5),
                    v.iter().find(|&&x| x % 13 == 5),
                    "find_first {what}"
                );
                assert_eq!(
                    v.par_iter().position_first(|&x| x % 13 == 5),
                    v.iter().position(|&x| x % 13 == 5),
                    "position_first {what}"
                );
                match v.par_iter().position_any(|&x| x % 13 == 5) {
                    Some(i) => assert_eq!(v[i] % 13, 5, "position_any {what}"),
                    None => assert!(!v.iter().any(|&x| x % 13 == 5), "position_any {what}"),
                }
                let (a, b): (Vec<u64>, Vec<usize>) =
                    v.par_iter().map(|&x| (x, x as usize * 2)).unzip();
                assert_eq!(a, v, "unzip {what}");
                assert_eq!(
                    b,
                    v.iter().map(|&x| x as usize * 2).collect::<Vec<_>>(),
                    "unzip {what}"
                );
                let (even, odd): (Vec<u64>, Vec<u64>) =
                    v.par_iter().copied().partition(|&x| x % 2 == 0);
                let (we, wo): (Vec<u64>, Vec<u64>) = v.iter().partition(|&&x| x % 2 == 0);
                assert_eq!((even, odd), (we, wo), "partition {what}");
                for size in [1, 2, 5] {
                    let got: Vec<u64> = v.par_windows(size).map(|w| w.iter().sum()).collect();
                    let want: Vec<u64> = v.windows(size).map(|w| w.iter().sum()).collect();
                    assert_eq!(got, want, "par_windows({size}) {what}");
                }
                let mut e = w.clone();
                e.par_extend(v.par_iter().copied());
                assert_eq!(
                    e,
                    w.iter().chain(&v).copied().collect::<Vec<_>>(),
                    "par_extend {what}"
                );
                let set: BTreeSet<u64> = v.iter().copied().collect();
                let got: u64 = set.par_iter().copied().sum();
                assert_eq!(got, set.iter().sum::<u64>(), "btree set {what}");
                let some: Vec<u64> = Some(3u64).into_par_iter().collect();
                assert_eq!(some, [3]);
                // Sorting, stably: sort by key of pairs and check the ties keep their order.
                let mut pairs: Vec<(u64, usize)> =
                    v.iter().enumerate().map(|(i, &x)| (x % 17, i)).collect();
                let mut want = pairs.clone();
                want.sort_by_key(|p| p.0);
                pairs.par_sort_by_key(|p| p.0);
                assert_eq!(pairs, want, "par_sort_by_key {what}");
                let mut s = v.clone();
                s.par_sort_unstable();
                let mut want = v.clone();
                want.sort_unstable();
                assert_eq!(s, want, "par_sort_unstable {what}");
            }
        });
    }
    // Outside any pool, and a sort long enough to split.
    let mut big: Vec<u32> = (0..100_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % 100_003)
        .collect();
    let mut want = big.clone();
    want.sort();
    big.par_sort();
    assert_eq!(big, want);
}

#[test]
fn eager_splitting_gives_the_same_results() {
    for pool in pools() {
        pool.install(|| {
            for n in lengths() {
                let v: Vec<u64> = (0..n as u64).collect();
                let got: Vec<u64> = v.par_iter().map(|x| x * 2).split_eagerly().collect();
                assert_eq!(got, v.iter().map(|x| x * 2).collect::<Vec<_>>());
                assert_eq!(
                    v.par_iter().split_eagerly().sum::<u64>(),
                    v.iter().sum::<u64>()
                );
            }
        });
    }
}

#[test]
fn parallel_sorts_match_the_standard_sorts_on_every_shape() {
    // Shapes that stress the merge's split (runs of very different lengths, one side all
    // smaller, ties across the halves) and the selection's (all equal, few values).
    fn shapes(n: usize) -> Vec<(&'static str, Vec<u32>)> {
        let mut x = 0x2545_f491u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        vec![
            ("random", (0..n).map(|_| rnd() as u32).collect()),
            ("few values", (0..n).map(|_| (rnd() % 3) as u32).collect()),
            ("all equal", vec![7; n]),
            ("ascending", (0..n as u32).collect()),
            ("descending", (0..n as u32).rev().collect()),
            (
                "organ pipe",
                (0..n).map(|i| i.min(n - i) as u32).collect::<Vec<_>>(),
            ),
            (
                "halves swapped",
                (0..n).map(|i| ((i + n / 2) % n) as u32 / 5).collect(),
            ),
            (
                "one small run",
                (0..n)
                    .map(|i| {
                        if i < n / 9 {
                            1_000_000 + i as u32
                        } else {
                            (i / 3) as u32
                        }
                    })
                    .collect(),
            ),
        ]
    }
    for workers in [1, 2, 3, 8] {
        let pool = Pool::builder().workers(workers).build().unwrap();
        pool.install(|| {
            for n in [0, 1, 2, 4096, 4097, 8193, 30_001, 100_000] {
                for (shape, keys) in shapes(n) {
                    let what = format!("{shape}, n={n}, {workers} workers");
                    // Stable: the index rides along, so any reordering of ties shows.
                    let mut pairs: Vec<(u32, usize)> = keys.iter().copied().zip(0..).collect();
                    let mut want = pairs.clone();
                    want.sort_by_key(|p| p.0);
                    pairs.par_sort_by_key(|p| p.0);
                    assert_eq!(pairs, want, "par_sort_by_key {what}");
                    let mut desc = pairs.clone();
                    desc.par_sort_by(|a, b| b.0.cmp(&a.0));
                    want.sort_by_key(|p| std::cmp::Reverse(p.0));
                    assert_eq!(desc, want, "par_sort_by descending {what}");
                    let mut s = keys.clone();
                    s.par_sort_unstable();
                    let mut want = keys.clone();
                    want.sort_unstable();
                    assert_eq!(s, want, "par_sort_unstable {what}");
                    let mut s = keys.clone();
                    s.par_sort_unstable_by_key(|k| std::cmp::Reverse(*k));
                    want.reverse();
                    assert_eq!(s, want, "par_sort_unstable_by_key {what}");
                }
            }
        });
    }
}

#[test]
fn a_comparator_that_panics_leaves_a_permutation_and_the_pool_usable() {
    // The comparator panics at its k-th call, on whichever worker makes it; the panic reaches
    // the caller, and the slice still holds every element once (the sorts move elements only
    // by swaps, rotations and the standard library's sorts).
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut x = 0x9e37_79b9u64;
    let keys: Vec<u64> = (0..50_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 1000
        })
        .collect();
    let mut want = keys.clone();
    want.sort_unstable();
    let pool = Pool::builder().workers(4).build().unwrap();
    for k in [1, 100, 5_000, 60_000, 200_000] {
        for stable in [false, true] {
            let calls = AtomicUsize::new(0);
            let cmp = |a: &u64, b: &u64| {
                if calls.fetch_add(1, Ordering::Relaxed) + 1 == k {
                    panic!("comparator gives up at call {k}");
                }
                a.cmp(b)
            };
            let mut v = keys.clone();
            let r = catch_unwind(AssertUnwindSafe(|| {
                pool.install(|| match stable {
                    true => v.par_sort_by(cmp),
                    false => v.par_sort_unstable_by(cmp),
                })
            }));
            assert!(
                r.is_err(),
                "k={k}, stable={stable}: the panic did not reach the caller"
            );
            v.sort_unstable();
            assert_eq!(
                v, want,
                "k={k}, stable={stable}: not a permutation any more"
            );
        }
    }
    let mut v = keys.clone();
    pool.install(|| v.par_sort_unstable());
    assert_eq!(v, want);
}

#[test]
fn splitting_at_separators_matches_the_standard_library() {
    // Random texts over an alphabet with separators, runs of them, `\r\n`, and multi-byte
    // characters (so cuts must move to character boundaries); pieces forced small with
    // `with_max_len` so every split path runs.
    let alphabet = ['a', 'b', ',', ' ', '\n', '\r', 'é', '→', '\t', ','];
    let mut x = 0x1234_5678_9abc_def1u64;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut texts: Vec<String> = ["", ",", "a", "\n", "a\r", "a\r\n", ",a,", "  ", "é,"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for _ in 0..40 {
        let n = rnd(600) as usize;
        texts.push((0..n).map(|_| alphabet[rnd(10) as usize]).collect());
    }
    for workers in [1, 2, 3, 8] {
        let pool = Pool::builder().workers(workers).build().unwrap();
        pool.install(|| {
            for t in &texts {
                for max in [1, 2, 5, 64, usize::MAX] {
                    let what = format!("{t:?}, max_len {max}, {workers} workers");
                    let got: Vec<&str> = t.par_split(',').with_max_len(max).collect();
                    assert_eq!(got, t.split(',').collect::<Vec<_>>(), "split {what}");
                    let got: Vec<&str> = t
                        .par_split(|c: char| c.is_ascii_punctuation() || !c.is_ascii())
                        .with_max_len(max)
                        .collect();
                    let want: Vec<&str> = t
                        .split(|c: char| c.is_ascii_punctuation() || !c.is_ascii())
                        .collect();
                    assert_eq!(got, want, "split by closure {what}");
                    let got: Vec<&str> = t.par_split(&[',', 'é'][..]).with_max_len(max).collect();
                    assert_eq!(
                        got,
                        t.split(&[',', 'é'][..]).collect::<Vec<_>>(),
                        "split by chars {what}"
                    );
                    let got: Vec<&str> = t.par_split_terminator(',').with_max_len(max).collect();
                    let want: Vec<&str> = t.split_terminator(',').collect();
                    assert_eq!(got, want, "split_terminator {what}");
                    let got: Vec<&str> = t.par_lines().with_max_len(max).collect();
                    assert_eq!(got, t.lines().collect::<Vec<_>>(), "lines {what}");
                    let got: Vec<&str> = t.par_split_whitespace().with_max_len(max).collect();
                    let want: Vec<&str> = t.split_whitespace().collect();
                    assert_eq!(got, want, "split_whitespace {what}");
                    let got: String = t.par_chars().with_max_len(max).collect();
                    assert_eq!(&got, t, "chars {what}");
                    let got: Vec<(usize, char)> = t.par_char_indices().with_max_len(max).collect();
                    assert_eq!(
                        got,
                        t.char_indices().collect::<Vec<_>>(),
                        "char_indices {what}"
                    );
                    let got: Vec<u8> = t.par_bytes().with_max_len(max).collect();
                    assert_eq!(got, t.as_bytes(), "bytes {what}");
                    // Slices split at an element, shared and mutable.
                    let b = t.as_bytes();
                    let got: Vec<&[u8]> = b.par_split(|&c| c == b',').with_max_len(max).collect();
                    assert_eq!(
                        got,
                        b.split(|&c| c == b',').collect::<Vec<_>>(),
                        "slice {what}"
                    );
                    let mut m = b.to_vec();
                    m.par_split_mut(|&c| c == b',')
                        .with_max_len(max)
                        .for_each(|f| f.reverse());
                    let mut want = b.to_vec();
                    want.split_mut(|&c| c == b',').for_each(|f| f.reverse());
                    assert_eq!(m, want, "slice split_mut {what}");
                }
            }
        });
    }
    // Long enough that the lazy scheduler and eager splitting both cut it.
    let long: String = (0..200_000).map(|i| alphabet[(i * 7919) % 10]).collect();
    let got: usize = long.par_split_whitespace().map(str::len).sum();
    assert_eq!(got, long.split_whitespace().map(str::len).sum::<usize>());
    let got: Vec<&str> = long.par_lines().split_eagerly().collect();
    assert_eq!(got, long.lines().collect::<Vec<_>>());
}

#[test]
fn results_do_not_depend_on_where_pieces_are_cut() {
    // Random lengths with random piece bounds (`with_max_len` forces cuts every few items,
    // `with_min_len` forbids them) and random chunk sizes for `par_chunks`: every ordered
    // adaptor and consumer still gives the sequential answer.
    let mut x = 0x5eed_1234_abcd_9876u64;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let cases: Vec<(usize, usize, usize, usize)> = (0..24)
        .map(|_| {
            (
                rnd(3000) as usize,
                1 + rnd(40) as usize,
                1 + rnd(600) as usize,
                1 + rnd(50) as usize,
            )
        })
        .collect();
    for pool in pools() {
        pool.install(|| {
            for &(n, max, min, chunk) in &cases {
                let v: Vec<u64> = (0..n as u64).map(|i| i * 31 % 997).collect();
                let what = format!(
                    "n={n} max={max} min={min} chunk={chunk}, {} workers, {:?}",
                    pool.workers(),
                    pool.policy()
                );
                for bounded in [0, 1] {
                    // The same pipeline with cuts forced often, then with cuts forbidden.
                    macro_rules! cut {
                        ($it:expr) => {
                            if bounded == 0 {
                                $it.with_max_len(max).collect::<Vec<_>>()
                            } else {
                                $it.with_min_len(min).collect::<Vec<_>>()
                            }
                        };
                    }
                    let got = cut!(v
                        .par_iter()
                        .enumerate()
                        .filter(|(_, x)| *x % 3 != 0)
                        .map(|(i, x)| i as u64 * x));
                    let want: Vec<u64> = v
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| *x % 3 != 0)
                        .map(|(i, x)| i as u64 * x)
                        .collect();
                    assert_eq!(got, want, "enumerate-filter-map {what}");
                    let got = cut!(v.par_iter().zip(v.par_iter().rev()).map(|(a, b)| a ^ b));
                    let want: Vec<u64> = v.iter().zip(v.iter().rev()).map(|(a, b)| a ^ b).collect();
                    assert_eq!(got, want, "zip-rev {what}");
                    let got = cut!(v.par_iter().copied().skip(n / 5).take(n / 2).step_by(3));
                    let want: Vec<u64> = v
                        .iter()
                        .copied()
                        .skip(n / 5)
                        .take(n / 2)
                        .step_by(3)
                        .collect();
                    assert_eq!(got, want, "skip-take-step_by {what}");
                    let got = cut!(v.par_chunks(chunk).map(|c| c.iter().sum::<u64>()));
                    let want: Vec<u64> = v.chunks(chunk).map(|c| c.iter().sum()).collect();
                    assert_eq!(got, want, "par_chunks({chunk}) {what}");
                    let got = cut!(v
                        .par_iter()
                        .copied()
                        .chain(v.par_iter().copied().filter(|x| x % 2 == 0))
                        .flat_map_iter(|x| std::iter::repeat_n(x, (x % 3) as usize)));
                    let want: Vec<u64> = v
                        .iter()
                        .copied()
                        .chain(v.iter().copied().filter(|x| x % 2 == 0))
                        .flat_map(|x| std::iter::repeat_n(x, (x % 3) as usize))
                        .collect();
                    assert_eq!(got, want, "chain-flat_map_iter {what}");
                }
                let target = v.get(n / 2).copied().unwrap_or(0);
                assert_eq!(
                    v.par_iter()
                        .with_max_len(max)
                        .position_first(|&x| x == target),
                    v.iter().position(|&x| x == target),
                    "position_first {what}"
                );
                assert_eq!(
                    v.par_iter().with_max_len(max).find_first(|&&x| x > 500),
                    v.iter().find(|&&x| x > 500),
                    "find_first {what}"
                );
                // fold then reduce keep the order of the pieces (left before right).
                let got: Vec<u64> = v
                    .par_iter()
                    .with_max_len(max)
                    .fold(Vec::new, |mut a, &x| {
                        a.push(x);
                        a
                    })
                    .reduce(Vec::new, |mut a, mut b| {
                        a.append(&mut b);
                        a
                    });
                assert_eq!(got, v, "fold-reduce {what}");
                assert_eq!(
                    v.par_iter()
                        .with_max_len(max)
                        .map(|&x| x as u128)
                        .sum::<u128>(),
                    v.iter().map(|&x| x as u128).sum::<u128>(),
                    "sum {what}"
                );
            }
        });
    }
}

#[test]
fn min_by_max_by_flatten_update_and_collect_into_vec_match_std() {
    for pool in pools() {
        pool.install(|| {
            for n in lengths() {
                // Pairs with many equal keys: ties show which of equal items comes back.
                let v: Vec<(u64, usize)> = (0..n).map(|i| ((i as u64 * 7) % 5, i)).collect();
                let what = format!("n={n}, {} workers, {:?}", pool.workers(), pool.policy());
                let by_key = |a: &&(u64, usize), b: &&(u64, usize)| a.0.cmp(&b.0);
                assert_eq!(
                    v.par_iter().with_max_len(7).min_by(by_key),
                    v.iter().min_by(by_key),
                    "min_by {what}"
                );
                assert_eq!(
                    v.par_iter().with_max_len(7).max_by(by_key),
                    v.iter().max_by(by_key),
                    "max_by {what}"
                );
                let nested: Vec<Vec<usize>> = (0..n / 50).map(|i| (0..i % 9).collect()).collect();
                let got: Vec<usize> = nested.par_iter().flatten().copied().collect();
                let want: Vec<usize> = nested.iter().flatten().copied().collect();
                assert_eq!(got, want, "flatten {what}");
                let got: Vec<(u64, usize)> = v.par_iter().copied().update(|p| p.0 += 1).collect();
                let want: Vec<(u64, usize)> = v.iter().map(|&(a, b)| (a + 1, b)).collect();
                assert_eq!(got, want, "update {what}");
                let mut target = vec![(9, 9); 3];
                v.par_iter().copied().collect_into_vec(&mut target);
                assert_eq!(target, v, "collect_into_vec {what}");
            }
        });
    }
}

#[test]
fn inclusive_ranges_reversed_adaptors_and_copying_collections_work_as_in_rayon() {
    for pool in pools() {
        pool.install(|| {
            let all: Vec<u8> = (0..=u8::MAX).into_par_iter().collect();
            assert_eq!(all, (0..=u8::MAX).collect::<Vec<_>>());
            let (lo, hi) = (5, lengths().len() % 2 + 3); // 5..=4 or 5..=3: empty
            assert_eq!((lo..=hi).into_par_iter().count(), 0);
            let top: Vec<u64> = (u64::MAX - 2..=u64::MAX).into_par_iter().collect();
            assert_eq!(top, [u64::MAX - 2, u64::MAX - 1, u64::MAX]);
            assert_eq!((1..=1000u64).into_par_iter().sum::<u64>(), 500_500);
            for n in lengths() {
                let v: Vec<u32> = (0..n as u32).collect();
                let got: Vec<(usize, u32)> =
                    v.par_iter().map(|x| x * 2).enumerate().rev().collect();
                let want: Vec<(usize, u32)> = v.iter().map(|x| x * 2).enumerate().rev().collect();
                assert_eq!(got, want, "map-enumerate-rev n={n}");
                let got: Vec<u32> = v.par_iter().inspect(|_| ()).copied().rev().collect();
                assert_eq!(got, v.iter().copied().rev().collect::<Vec<_>>());
                // Items are references; the collections hold copies (`Extend<&T>`).
                let (even, odd): (Vec<u32>, Vec<u32>) = v.par_iter().partition(|&&x| x % 2 == 0);
                assert_eq!(even.len() + odd.len(), n);
                assert!(even.iter().all(|x| x % 2 == 0) && odd.iter().all(|x| x % 2 == 1));
                assert!(
                    even.windows(2).all(|w| w[0] < w[1]),
                    "partition keeps order"
                );
            }
        });
    }
}

#[test]
fn a_piece_of_a_few_costly_items_is_split_when_another_worker_runs_dry() {
    // Two workers; the eager halving gives each four items. Items 0-3 are instant; items 4-7
    // are costly (a millisecond or more), and item 4 holds its worker until the other worker,
    // dry, has asked it for work. Then the rest of its piece (three items, far fewer than a full
    // chunk) must be split, so some of items 5-7 run on the other thread. (Before chunks grew
    // from one item as their cost allows, such a piece ran whole where it was.)
    use std::sync::Mutex;
    use std::thread::ThreadId;
    for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
        let pool = Pool::builder().workers(2).policy(policy).build().unwrap();
        let ran: Mutex<Vec<(u64, ThreadId)>> = Mutex::new(Vec::new());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        pool.install(|| {
            (0..8u64).into_par_iter().for_each(|i| {
                if i == 4 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    while !super::hungry() {
                        assert!(
                            std::time::Instant::now() < deadline,
                            "nobody asked for work"
                        );
                        std::hint::spin_loop();
                    }
                }
                if i > 4 {
                    // Long enough that the first of them cannot take the rest before the thief
                    // has its half.
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                ran.lock().unwrap().push((i, std::thread::current().id()));
            })
        });
        let ran = ran.into_inner().unwrap();
        assert_eq!(ran.len(), 8, "every item once");
        let holder = ran.iter().find(|(i, _)| *i == 4).unwrap().1;
        assert!(
            ran.iter().any(|(i, t)| *i > 4 && *t != holder),
            "{policy:?}: items 5-7 all ran where item 4 did: {ran:?}"
        );
    }
}
