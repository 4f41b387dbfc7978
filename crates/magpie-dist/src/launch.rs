//! Starting MPI the way magpie-dist needs it.
//!
//! Open MPI settings the crate applies or documents:
//!
//! - `OMPI_MCA_osc=sm`: Open MPI's shared-memory one-sided component. Under the default
//!   component a 64-bit `MPI_Compare_and_swap` crashes (a known Open MPI bug), and the split
//!   deque's word is exactly that. [`init`] sets it when the environment does not; it needs
//!   windows from `MPI_Win_allocate`, which [`crate::rma`] uses.
//! - As root, `mpirun` refuses to start unless `OMPI_ALLOW_RUN_AS_ROOT=1` and
//!   `OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1` are set in its environment; and more ranks than cores
//!   need `OMPI_MCA_rmaps_base_oversubscribe=1`. These are the launcher's, so the user (or the
//!   test script) sets them: see docs/DISTRIBUTED.md.
//! - Without `mpirun`, a program that calls [`init`] runs as one rank (MPI's singleton mode).

/// Sets the Open MPI settings this crate needs (see the module doc) and initialises MPI with
/// calls from the main thread only. `None` if MPI was already initialised.
pub fn init() -> Option<mpi::environment::Universe> {
    if std::env::var_os("OMPI_MCA_osc").is_none() {
        // SAFETY of the call (not an `unsafe` fn in this edition, but it races with other
        // threads reading the environment): called before MPI or any pool starts a thread.
        std::env::set_var("OMPI_MCA_osc", "sm");
    }
    mpi::initialize_with_threading(mpi::Threading::Funneled).map(|(u, _)| u)
}
