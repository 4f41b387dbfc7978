//! `magpie corun`: two programs co-running, the experiment of DWS (Chen et al.) §4. Each program
//! is this binary in a process of its own (`magpie corun-child`, see [`child`]).

pub mod child;
