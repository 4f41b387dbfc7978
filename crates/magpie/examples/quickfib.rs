use std::time::Instant;
fn sfib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        sfib(n - 1) + sfib(n - 2)
    }
}
fn pfib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| pfib(n - 1), || pfib(n - 2));
    a + b
}
fn med(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}
fn main() {
    let n: u64 = std::env::var("N").map_or(36, |s| s.parse().unwrap());
    let s = med((0..5)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(sfib(std::hint::black_box(n)));
            t.elapsed().as_secs_f64()
        })
        .collect());
    println!("serial {:.1} ms", s * 1e3);
    for w in [std::env::args().nth(1).map_or(1, |s| s.parse().unwrap())] {
        for p in [std::env::var("P").map_or(magpie::Policy::WorkFirst, |s| s.parse().unwrap())] {
            let pool = magpie::Pool::builder()
                .workers(w)
                .policy(p)
                .build()
                .unwrap();
            let m = med((0..5)
                .map(|_| {
                    let t = Instant::now();
                    assert_eq!(pool.install(|| pfib(n)), sfib(n));
                    t.elapsed().as_secs_f64()
                })
                .collect());
            println!(
                "w={w} {p}: {:.1} ms = {:.2}x serial  {:?}",
                m * 1e3,
                m / s,
                pool.stats().steals_child + pool.stats().steals_continuation
            );
        }
    }
}
