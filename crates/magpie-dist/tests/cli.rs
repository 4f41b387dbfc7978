//! The `magpie-dist` binary's bad input: a message and exit code 2, with or without MPI.

use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_magpie-dist"))
        .args(args)
        .output()
        .expect("run magpie-dist")
}

#[test]
fn bad_input_exits_2_with_a_message() {
    for args in [
        &[][..],
        &["bogus"][..],
        &["selftest"][..],
        &["selftest", "nothing"][..],
        &["selftest", "deque", "--tasks"][..],
        &["selftest", "deque", "--tasks", "0"][..],
        &["selftest", "deque", "--tasks", "many"][..],
        &["selftest", "deque", "--what"][..],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains("usage: magpie-dist"), "{args:?}: {err}");
    }
    let o = run(&["--help"]);
    assert!(o.status.success());
}
