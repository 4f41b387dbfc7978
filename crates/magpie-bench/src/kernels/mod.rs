//! The registry: every kernel's file, and the kernels each defines, in report order.
//!
//! - SLAW (Guo et al., IPDPS 2010) Table I: fib, fj, fj-rec, pdfs, sor, cg, sort, matmul, lu, gc.
//! - CAB (Chen et al., ICPP 2011) and DWS: nqueens, heat, ge, mergesort, fft, cholesky.
//! - Friendly Barriers: uts, jacobi, cilksort, barnes-hut, lud.
//! - Lifflander's thesis: strassen, nbody, floyd-warshall, fdtd-2d, prefix-scan.
//! - chili's and Spice's published benchmark: tree-sum.
//! - Ordinary rayon programs ([`programs`]): mandelbrot, par-sort-unstable, par-sort-by-key,
//!   nbody-step, word-count, fine-sum, spmv.
//!
//! A kernel's file defines its [`Kernel`] (a handle on its [`Def`](crate::kernel::Def)); one
//! line here declares the file and lists the kernels it defines.

use crate::{placement, Kernel};
use std::str::FromStr;

/// Declares each kernel file as a module and lists its kernels, in order, in [`ALL`].
macro_rules! registry {
    ($($module:ident: $($kernel:ident),+;)*) => {
        $(pub mod $module;)*
        impl Kernel {
            /// Every kernel, in report order.
            pub const ALL: &'static [Kernel] = &[$($($module::$kernel,)+)*];
        }
    };
}

registry! {
    fib: KERNEL;
    fj: FJ, FJ_REC;
    pdfs: KERNEL;
    sor: KERNEL;
    cg: KERNEL;
    sort: KERNEL;
    matmul: KERNEL;
    lu: KERNEL;
    gc: KERNEL;
    nqueens: KERNEL;
    heat: KERNEL;
    ge: KERNEL;
    mergesort: KERNEL;
    fft: KERNEL;
    cholesky: KERNEL;
    uts: KERNEL;
    jacobi: KERNEL;
    cilksort: KERNEL;
    barnes_hut: KERNEL;
    lud: KERNEL;
    strassen: KERNEL;
    nbody: KERNEL;
    floyd_warshall: KERNEL;
    fdtd2d: KERNEL;
    prefix_scan: KERNEL;
    tree_sum: KERNEL;
    programs: MANDELBROT, PAR_SORT_UNSTABLE, PAR_SORT_BY_KEY, NBODY_STEP, WORD_COUNT, FINE_SUM, SPMV;
}

impl Kernel {
    /// [`placement::run`] on the kernel's program at size `n`, with `grain` (default: the
    /// kernel's) and `iterations` (default: the facet's). A kernel that is not a placed program,
    /// or a bad size, is an error naming what to do.
    pub fn run_placed(
        self,
        pool: &magpie::Pool,
        n: u64,
        grain: Option<u64>,
        iterations: Option<usize>,
        strategy: placement::Strategy,
        pace: std::time::Duration,
    ) -> Result<placement::Report, String> {
        let Some(f) = self.placement() else {
            let with: Vec<&str> = Kernel::ALL
                .iter()
                .filter(|k| k.placement().is_some())
                .map(|k| k.name())
                .collect();
            return Err(format!(
                "{} has no first-touch initialiser (these do: {})",
                self.name(),
                with.join(", ")
            ));
        };
        self.check_n(n)?;
        let grain = grain.or(self.default_grain()).unwrap_or(1);
        let iterations = iterations.unwrap_or_else(|| (f.iterations)(n));
        (f.run)(pool, n, grain, iterations, strategy, pace)
    }
}

impl FromStr for Kernel {
    type Err = String;
    fn from_str(s: &str) -> Result<Kernel, String> {
        Kernel::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Kernel::ALL.iter().map(|k| k.name()).collect();
                format!("unknown kernel `{s}`: expected one of {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    /// Every file (or folder) in kernels/ has its line in the registry: a kernel file left out
    /// would not even be compiled, let alone measured.
    #[test]
    fn every_kernel_file_is_registered() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernels");
        let registry = include_str!("mod.rs");
        for e in std::fs::read_dir(&dir).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            let module = name.trim_end_matches(".rs");
            if module == "mod" {
                continue;
            }
            let line = format!("{module}: ");
            assert!(
                registry.lines().any(|l| l.trim_start().starts_with(&line)),
                "kernels/{name} has no line in the registry"
            );
        }
    }
}
