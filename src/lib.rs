//! memlint finds memory leaks in machine-learning training loops.
//!
//! Two halves share one set of rules:
//! - `cargo memlint` (crate `memlint-lint`) reads your sources and reports loss tensors summed
//!   across iterations, graph-carrying outputs kept past their step, missing gradient clearing
//!   and `Rc`/`Arc` cycles, without compiling or running anything.
//! - [`mem_guard`] instruments a training function at run time and reports steady memory growth
//!   per loop iteration with the loop's location and a projection of when memory runs out.
//!
//! # Guarding a training loop
//!
//! ```no_run
//! #[global_allocator] // optional: exact host-memory figures instead of the RSS
//! static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();
//!
//! #[memlint::mem_guard(budget = "8GiB")]
//! fn train(batches: &[Vec<f32>]) -> Result<f32, String> {
//!     let mut sum = 0.0;
//!     for batch in batches {
//!         let loss: f32 = batch.iter().sum();
//!         sum += loss;
//!         // opt.backward_step(&loss)?;  <- the loop whose body runs a training step is sampled
//!     }
//!     Ok(sum)
//! }
//! # fn main() { let _ = train(&[]); }
//! ```
//!
//! The sampled loop is the innermost loop whose body runs backward or an optimizer step, or the
//! loop named with `loop = "label"`. A function without one is sampled once per call.
//!
//! | option | default | meaning |
//! |---|---|---|
//! | `loop = "train"` | innermost training loop | sample `'train: for …` |
//! | `warmup = 10` | 10 | iterations ignored at first (allocator and cache growth) |
//! | `window = 12` | 12 | sliding window of the growth fit, in iterations |
//! | `tolerance = "1MiB"` | 1 MiB | growth across a window that still counts as flat |
//! | `budget = "70GiB"` | none | report (and with `on_leak = "panic"` panic) when crossed |
//! | `on_leak = "warn"` | `warn` | `panic` to stop the run when a leak is found |
//! | `device = "cuda:0"` | automatic | `host`, `cuda:N`, or `auto` |
//! | `report = "path.json"` | `$MEMLINT_REPORT_DIR/<fn>-<pid>-<n>.json` | JSON report path |
//!
//! Environment: `MEMLINT=off` disables every guard; `MEMLINT_REPORT_DIR` (default
//! `target/memlint`) receives the JSON reports. `docs/runtime.md` describes the report schema.

pub use memlint_macros::mem_guard;
pub use memlint_runtime::*;
