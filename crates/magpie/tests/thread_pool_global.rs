//! `ThreadPoolBuilder::build_global` (its own test binary: a process has one global pool): the
//! first call makes the global pool that `join`, `scope` and `spawn` use outside any pool; a
//! second is an error, as in rayon.

#[test]
fn build_global_once_then_an_error() {
    magpie::ThreadPoolBuilder::new()
        .num_threads(3)
        .thread_name(|i| format!("global-{i}"))
        .build_global()
        .unwrap();
    assert_eq!(magpie::current_num_threads(), 3);
    let mut names = vec![String::new(); 64];
    magpie::scope(|s| {
        for n in names.iter_mut() {
            s.spawn(move |_| *n = std::thread::current().name().unwrap_or("").to_string());
        }
    });
    assert!(names.iter().all(|n| n.starts_with("global-")), "{names:?}");
    let e = magpie::ThreadPoolBuilder::new().build_global().unwrap_err();
    assert!(e.to_string().contains("already been initialized"), "{e}");
    // The free spawn outside any pool runs on the global pool.
    let (tx, rx) = std::sync::mpsc::channel();
    magpie::spawn(move || tx.send(magpie::current_thread_index()).unwrap());
    let index = rx.recv().unwrap();
    assert!(index.is_some_and(|i| i < 3));
}
