//! A task whose own recursion overflows its fiber stack gets a clear message and an abort, not a
//! bare segmentation fault. The overflow runs in a child process (this test binary re-run with an
//! environment variable), since it ends the process.

// These exercise the runtime, which is not built under `--cfg loom` (see lib.rs).
#![cfg(not(loom))]

use std::process::Command;

const CHILD: &str = "MAGPIE_OVERFLOW_CHILD";

#[inline(never)]
fn deep(n: u64, pad: &mut [u8; 512]) -> u64 {
    let mut mine = [0u8; 512];
    mine[(n % 512) as usize] = pad[(n % 511) as usize].wrapping_add(1);
    if n == 0 {
        return mine[0] as u64;
    }
    let r = deep(n - 1, &mut mine);
    r + std::hint::black_box(mine[7]) as u64
}

#[test]
fn fiber_stack_overflow_is_reported() {
    if std::env::var_os(CHILD).is_some() {
        let pool = magpie::Pool::builder()
            .workers(1)
            .stack_size(256 << 10)
            .build()
            .unwrap();
        // ~600 bytes a frame, 100k frames: far past 256 KiB.
        let r = pool.install(|| deep(100_000, &mut [0u8; 512]));
        println!("unexpectedly survived: {r}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", "fiber_stack_overflow_is_reported", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child survived: {err}");
    assert!(
        err.contains("magpie: fatal: a task overflowed its fiber stack"),
        "no clear message; stderr was: {err}"
    );
}
