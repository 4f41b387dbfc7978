//! `use magpie_iter::prelude::*;` in place of `use rayon::prelude::*;`: the traits that give
//! `par_iter()`, `par_iter_mut()`, `into_par_iter()`, `par_chunks(_mut)` and the parallel
//! iterator methods.

pub use crate::{
    FromParallelIterator, IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator,
    IntoParallelRefMutIterator, ParallelExtend, ParallelIterator, ParallelSlice, ParallelSliceMut,
    ParallelString,
};
