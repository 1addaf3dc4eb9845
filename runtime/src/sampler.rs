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
    /// This process's device memory as NVML counts it (libtorch's and cubecl's caches included).
    #[serde(rename = "nvml-process")]
    NvmlProcess,
    /// Device memory in use by every process (`cuMemGetInfo`): total minus free.
    #[serde(rename = "cuda-device")]
    CudaDevice,
    /// A cubecl client's memory (burn's GPU backends), handed over by [`crate::watch`].
    #[serde(rename = "cubecl")]
    Cubecl,
}

impl BackendKind {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::HostAllocator => "host-allocator",
            BackendKind::HostRss => "host-rss",
            BackendKind::NvmlProcess => "nvml-process",
            BackendKind::CudaDevice => "cuda-device",
            BackendKind::Cubecl => "cubecl",
        }
    }

    /// The name of the source in a report's `sources` and in diagnostics (`cuda-pool` for the
    /// CUDA pool, which the v1 `backend` field calls `cuda`).
    pub fn source_name(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda-pool",
            other => other.as_str(),
        }
    }

    /// Parses a source name as `source = ".."` / `MEMLINT_SOURCE` give it (short forms accepted).
    pub fn parse(name: &str) -> Option<BackendKind> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "cuda" | "cuda-pool" | "pool" => BackendKind::Cuda,
            "host-allocator" | "allocator" | "heap" => BackendKind::HostAllocator,
            "host-rss" | "rss" => BackendKind::HostRss,
            "nvml" | "nvml-process" => BackendKind::NvmlProcess,
            "cuda-device" | "mem-get-info" => BackendKind::CudaDevice,
            "cubecl" | "burn" => BackendKind::Cubecl,
            _ => return None,
        })
    }

    /// What the memory is called in a diagnostic.
    pub fn memory_noun(self) -> &'static str {
        match self {
            BackendKind::Cuda => "CUDA pool memory",
            BackendKind::HostAllocator => "heap",
            BackendKind::HostRss => "resident memory",
            BackendKind::NvmlProcess | BackendKind::CudaDevice => "GPU memory",
            BackendKind::Cubecl => "cubecl memory",
        }
    }

    /// Whether the memory lives on a device (not the host).
    pub fn on_device(self) -> bool {
        matches!(self, BackendKind::Cuda | BackendKind::NvmlProcess | BackendKind::CudaDevice | BackendKind::Cubecl)
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
    /// Highest bytes the allocator held (reserved) since the last [`Sample::begin_iteration`],
    /// where it reserves memory in blocks and knows its high-water mark. This, not the peak of
    /// live allocations, is what runs out first when blocks fragment. `None` by default.
    fn reserved_peak(&mut self) -> Option<u64> {
        None
    }
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
