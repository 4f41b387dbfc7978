//! The native (C++) peers: every kernel at CI size, and edge sizes, on 1 and 2 threads, verified,
//! when `scripts/build-peers.sh` has built them; skipped (and passing) where it has not, so
//! machines without TBB still pass. The missing-binary error is checked everywhere.

use magpie_bench::native::{self, Native};
use std::path::Path;

#[test]
fn missing_binary_says_how_to_build_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("no-such-dir/tbb_kernels");
    let e = native::run_binary(&path, "fib", 10, 1, 1).unwrap_err();
    assert!(e.contains("scripts/build-peers.sh"), "{e}");
    assert!(e.contains("no-such-dir"), "{e}");
}

#[test]
fn bad_requests_are_errors_before_anything_runs() {
    let path = Path::new("/nonexistent/omp_kernels");
    let e = native::run_binary(path, "jacobi", 10, 1, 1).unwrap_err();
    assert!(e.contains("unknown kernel 'jacobi'"), "{e}");
    assert!(native::run_binary(path, "fib", 10, 0, 1).is_err());
    assert!(native::run_binary(path, "fib", 10, 1, 0).is_err());
}

#[test]
fn kernels_verify_at_ci_and_edge_sizes() {
    for peer in Native::built() {
        for (kernel, n) in [
            ("fib", 20),
            ("fj", 4),
            ("nqueens", 10),
            ("uts", 1),
            ("uts", 6),
            ("sort", 1),
            ("sort", 3 * 8192 + 17),
            ("sort", 100_000),
            ("matmul", 1),
            ("matmul", 64),
            ("matmul", 128),
            ("matmul", 256),
            ("heat", 3),
            ("heat", 37),
            ("heat", 128),
        ] {
            for threads in [1, 2] {
                let runs = peer
                    .run(kernel, n, threads, 2)
                    .unwrap_or_else(|e| panic!("{peer} {kernel} n={n} threads={threads}: {e}"));
                assert_eq!(runs.len(), 2, "{peer} {kernel}");
                for (secs, verified) in runs {
                    assert!(verified, "{peer} {kernel} n={n} threads={threads}");
                    assert!(secs >= 0.0 && secs.is_finite());
                }
            }
        }
    }
}

#[test]
fn out_of_range_sizes_are_errors() {
    for peer in Native::built() {
        let e = peer.run("nqueens", 17, 1, 1).unwrap_err();
        assert!(e.contains("rejected its arguments"), "{e}");
        let e = peer.run("fib", 61, 1, 1).unwrap_err();
        assert!(e.contains("bad n"), "{e}");
    }
}
