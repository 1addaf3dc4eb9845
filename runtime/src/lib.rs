//! Runtime of memlint's `#[mem_guard]`: per-iteration memory sampling (CUDA memory pool through
//! cudarc with the `cuda` feature, the [`TrackingAllocator`], or the process's RSS), a leak
//! detector (consistent growth against the loop's own noise, at several time scales), a cost
//! judgement (time to exhaustion against a horizon), a budget guard,
//! and reports: a miette diagnostic on stderr and a versioned JSON file per guarded run.
//!
//! Use it through the `memlint` crate: `#[memlint::mem_guard]` generates the calls into
//! [`__private`]; the public API here is the allocator, the detector and the report types.

mod alloc;
pub mod backends;
pub mod cost;
pub mod detector;
mod guard;
pub mod pace;
pub mod phases;
pub mod plan;
pub mod report;
pub mod sampler;
pub mod sources;
pub mod summary;
pub mod testing;
pub mod view;
mod writer;

pub use alloc::{AllocStats, TrackingAllocator};
pub use backends::watched::{Watched, unwatch_all, watch};
pub use guard::{OnLeak, enabled, report_dir};
pub use plan::{Plan, PlanError, Planner};
pub use sampler::{BackendKind, DeviceChoice};
pub use testing::{GrowthCheck, assert_no_growth, assert_peak_below};
pub use writer::wait_for_reports;

/// What `#[mem_guard]` expands to. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::cost::HorizonSpec;
    pub use crate::guard::{CallScope, Guard, OnLeak, Options, Site, SiteState};
    pub use crate::phases::Mark;
    pub use crate::report::StaticFinding;
    pub use crate::sampler::DeviceChoice;
}
