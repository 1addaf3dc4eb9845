//! memlint finds memory leaks in machine-learning training loops.
//!
//! Two halves share one set of rules:
//! - `cargo memlint` (crate `memlint-lint`) reads your sources and reports loss tensors summed
//!   across iterations, graph-carrying outputs kept past their step, missing gradient clearing
//!   and `Rc`/`Arc` cycles, without compiling or running anything.
//! - [`mem_guard`] instruments a training function at run time and reports steady memory growth
//!   per loop iteration with the loop's location and a projection of when memory runs out.

pub use memlint_macros::mem_guard;
pub use memlint_runtime::*;
