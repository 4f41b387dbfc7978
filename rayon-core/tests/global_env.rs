//! The global pool takes rayon's `RAYON_NUM_THREADS` when nothing built it first. (A test file
//! of its own: the global pool is made once per process.)

#[test]
fn the_global_pool_reads_rayon_num_threads() {
    // Set before anything in this process touched the global pool.
    std::env::set_var("RAYON_NUM_THREADS", "3");
    assert_eq!(rayon_core::current_num_threads(), 3);
    let seen = rayon_core::broadcast(|ctx| ctx.index());
    assert_eq!(seen, [0, 1, 2]);
    // It exists now: building it again is rayon's error.
    let e = rayon_core::ThreadPoolBuilder::new()
        .build_global()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "The global thread pool has already been initialized."
    );
}
