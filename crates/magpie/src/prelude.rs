//! `use magpie::prelude::*;` in place of `use rayon::prelude::*;`: the traits that give
//! `par_iter()`, `par_iter_mut()`, `into_par_iter()`, `par_chunks(_mut)` and the parallel
//! iterator methods.

// Retired with `iter`, whose items it re-exports; users see the module's deprecation.
#![allow(deprecated)]

pub use crate::iter::{
    FromParallelIterator, IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator,
    IntoParallelRefMutIterator, ParallelExtend, ParallelIterator, ParallelSlice, ParallelSliceMut,
    ParallelString,
};
