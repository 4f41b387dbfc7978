//! Two programs sharing the machine's cores (DWS): this example starts a second copy of itself,
//! and both run parallel work at once on pools built with `share(SharingMode::Dws)`.
//!
//!     cargo run --release -p magpie --example corun_pair
//!
//! Each copy registers in a core table in shared memory, takes its share of the cores, runs
//! its workers only on cores it holds, and gives a core back when its workers run out of work
//! (docs/CORUN.md). Here the table is a file of the example's own in the temporary directory
//! (`Builder::share_table`), so it does not touch the table other magpie programs on this
//! machine use. While both copies run, the first prints the programs the table lists. Each copy
//! checks every sum it makes against the closed form and exits non-zero when one is wrong or
//! when sharing is not in force; the first also fails when the second does. Core sharing needs
//! Linux: elsewhere the example says so and exits.

#[cfg(target_os = "linux")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, table, name] = &args[..] {
        if flag == "--copy" {
            return run(std::path::Path::new(table), name);
        }
    }
    let table = std::env::temp_dir().join(format!("magpie-corun-example-{}", std::process::id()));
    // The second copy: this program again, told the table and its name.
    let mut other = std::process::Command::new(std::env::current_exe()?)
        .arg("--copy")
        .arg(&table)
        .arg("b")
        .spawn()?;
    let mine = run(&table, "a");
    let theirs = other.wait()?;
    let _ = std::fs::remove_file(&table);
    mine?;
    if !theirs.success() {
        return Err(format!("the second copy failed: {theirs}").into());
    }
    println!("both copies ran with their cores shared through one table");
    Ok(())
}

/// One copy's work: a pool sharing cores through `table`, and sums over it for about a second.
#[cfg(target_os = "linux")]
fn run(table: &std::path::Path, name: &str) -> Result<(), Box<dyn std::error::Error>> {
    use magpie::dws::SharingMode;
    let workers = std::thread::available_parallelism()?.get();
    let pool = magpie::Pool::builder()
        .workers(workers)
        .share(SharingMode::Dws)
        .share_table(table)
        .build()?;
    // A table that cannot be used leaves the pool unshared, with a warning: here that is a
    // failure, since sharing is what the example shows.
    if pool.share_mode() != SharingMode::Dws {
        return Err(format!("{name}: the core table could not be used").into());
    }
    let n: u64 = 2_000_000;
    let want = n * (n - 1) / 2;
    let start = std::time::Instant::now();
    let mut sums = 0;
    while start.elapsed() < std::time::Duration::from_secs(1) {
        let got = pool.install(|| sum(0, n));
        if got != want {
            return Err(format!("{name}: sum of 0..{n} gave {got}, expected {want}").into());
        }
        sums += 1;
        if name == "a" && sums == 3 {
            if let Some(s) = magpie::dws::CoreTable::inspect(table, magpie::dws::cpu_slots())? {
                for p in &s.programs {
                    println!(
                        "table: program in slot {} holds cores {:?} (alive: {})",
                        p.slot, p.cores, p.alive
                    );
                }
            }
        }
    }
    println!("{name}: {sums} sums of 0..{n} on {workers} workers sharing cores, each = {want}");
    Ok(())
}

/// The sum of `lo..hi`, split in halves with `join` down to 4,096 numbers.
#[cfg(target_os = "linux")]
fn sum(lo: u64, hi: u64) -> u64 {
    if hi - lo <= 4096 {
        return (lo..hi).sum();
    }
    let mid = lo + (hi - lo) / 2;
    let (a, b) = magpie::join(|| sum(lo, mid), || sum(mid, hi));
    a + b
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!(
        "sharing cores between programs needs Linux; on this platform Builder::build refuses it"
    );
}
