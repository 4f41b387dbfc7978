//! Places: sending work to a group of workers with `Scope::spawn_at`.
//!
//!     cargo run --release -p magpie --example places
//!
//! A pool built with `places(true)` groups its workers into SLAW's places, one per socket of its
//! topology. Here the topology is virtual (`Topology::parse("2x2:1MiB")`: 2 sockets of 2 cores,
//! 1 MiB of last-level cache each), so the example runs the same on any machine: 4 workers in 2
//! places. The data is cut into chunks and chunk `i` is sent to place `i % 2`, where only that
//! place's workers take it (no `cross_place_steal`). Each task notes the place it ran on
//! (`magpie::place_index()`); the program checks that every chunk ran at the place it was sent
//! to and that the per-chunk sums match a serial computation, and panics otherwise.

use magpie::{Pool, Topology};
use std::sync::Mutex;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let topology = Topology::parse("2x2:1MiB")?;
    let pool = Pool::builder()
        .workers(4)
        .topology(topology)
        .places(true)
        .build()?;
    let places = pool.places();
    assert_eq!(places, 2);

    let data: Vec<u64> = (0..1_000_000).collect();
    let chunks: Vec<&[u64]> = data.chunks(50_000).collect();
    // One slot per chunk: (the place asked for, the place it ran on, its sum of squares).
    let results: Mutex<Vec<Option<(usize, usize, u64)>>> = Mutex::new(vec![None; chunks.len()]);

    pool.install(|| {
        magpie::scope(|s| {
            for (i, chunk) in chunks.iter().enumerate() {
                let (results, place) = (&results, i % places);
                s.spawn_at(place, move |_| {
                    let ran_at = magpie::place_index().expect("a pool with places");
                    let sum = chunk.iter().map(|x| x * x).sum::<u64>();
                    results.lock().unwrap()[i] = Some((place, ran_at, sum));
                });
            }
        })
    });

    let results = results.into_inner().unwrap();
    let mut per_place = vec![0usize; places];
    for (i, r) in results.iter().enumerate() {
        let (asked, ran_at, sum) = r.expect("every chunk ran");
        assert_eq!(
            asked, ran_at,
            "chunk {i} was sent to place {asked} but ran at {ran_at}"
        );
        assert_eq!(
            sum,
            chunks[i].iter().map(|x| x * x).sum::<u64>(),
            "chunk {i}"
        );
        per_place[ran_at] += 1;
    }
    let total: u64 = results.iter().map(|r| r.unwrap().2).sum();
    let serial: u64 = data.iter().map(|x| x * x).sum();
    assert_eq!(total, serial);
    println!("places: {places}, workers: {}", pool.workers());
    println!("chunks run per place: {per_place:?} (each at the place it was sent to)");
    println!("sum of squares: {total} (serial: {serial})");
    Ok(())
}
