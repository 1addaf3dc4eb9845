//! What a memory backend reads, and how the guard picks one.

use std::fmt;

use serde::Serialize;

/// Which memory a report's numbers describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum BackendKind {
    /// The CUDA device memory pool (cudarc): allocated = pool used, reserved = pool reserved.
    #[serde(rename = "cuda")]
    Cuda,
    /// Live heap bytes counted by [`crate::TrackingAllocator`].
    #[serde(rename = "host-allocator")]
    HostAllocator,
    /// The process's resident set size (`/proc/self/statm`).
    #[serde(rename = "host-rss")]
    HostRss,
}

impl BackendKind {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::HostAllocator => "host-allocator",
            BackendKind::HostRss => "host-rss",
        }
    }
}

/// One reading of a backend, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Bytes in use by live allocations.
    pub allocated: u64,
    /// Bytes held by the allocator (in use or cached), when the backend knows.
    pub reserved: Option<u64>,
    /// Highest allocated bytes since the last [`Sample::begin_iteration`], when the backend knows.
    pub peak: Option<u64>,
}

/// How much memory is left where a backend allocates, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Bytes still available to this process (device free memory plus the pool's cached bytes,
    /// or the host's available memory).
    pub available: u64,
    /// Total bytes of the device or host.
    pub total: u64,
}

/// A failed reading. The guard records it in the report and goes on; sampling never panics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleError(pub String);

impl fmt::Display for SampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A memory backend: one per file under `backends/`.
pub trait Sample: Send {
    /// What the numbers describe.
    fn kind(&self) -> BackendKind;
    /// The device, e.g. `host` or `cuda:0`.
    fn device(&self) -> String;
    /// Starts a new iteration: resets the peak (high-water mark) where the backend has one.
    fn begin_iteration(&mut self);
    /// Reads the current figures. Cheap: called once per iteration.
    fn read(&mut self) -> Result<Reading, SampleError>;
    /// Reads how much memory is left. May be slow (tens of µs): call it sparingly.
    fn capacity(&mut self) -> Option<Capacity>;
}

/// Where the guard samples, from the `device` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// CUDA when a driver is present and the process uses a GPU, else host.
    Auto,
    /// Host memory only.
    Host,
    /// This CUDA device ordinal.
    Cuda(u32),
}

/// The chosen backend and, when the choice differs from what was asked, a one-line notice.
pub struct Selected {
    /// The backend.
    pub sampler: Box<dyn Sample>,
    /// Why the backend differs from the request (shown once per process).
    pub notice: Option<String>,
}

/// Picks the backend for `choice`. Never panics: anything missing falls back to host memory.
pub fn select(choice: DeviceChoice) -> Selected {
    let (cuda, notice) = match choice {
        DeviceChoice::Host => (None, None),
        DeviceChoice::Auto => match crate::backends::cuda::open_in_use() {
            Ok(sampler) => (Some(sampler), None),
            Err(why) => (None, why),
        },
        DeviceChoice::Cuda(ordinal) => match crate::backends::cuda::open(ordinal) {
            Ok(sampler) => (Some(sampler), None),
            Err(why) => (None, Some(why)),
        },
    };
    match cuda {
        Some(sampler) => Selected { sampler, notice },
        None => Selected { sampler: crate::backends::host::open(), notice },
    }
}
