//! A fresh directory for one test, removed on drop; shared by the test files that need one
//! (included with `#[path]`, here and in magpie-cli's tests).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    /// `$TMPDIR/magpie-<name>-<pid>-<n>`, empty.
    pub(crate) fn new(name: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "magpie-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    /// A core table's path inside it.
    #[allow(dead_code)]
    pub(crate) fn table(&self) -> PathBuf {
        self.0.join("cores")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
