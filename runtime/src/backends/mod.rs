//! Memory backends (sources), one per file.

pub mod cubecl;
pub mod cuda;
pub mod cuda_device;
pub mod host;
pub mod nvml;
pub mod watched;
