//! This process's device memory through NVML (feature `nvml`, on with `cuda`).
//!
//! NVML lists, per GPU, the processes holding memory on it and how much each holds: every
//! allocation of this process whatever allocator made it (cudarc's pool, libtorch's caching
//! allocator, cubecl's pages, the context itself). The library (`libnvidia-ml.so.1`) is opened
//! at run time by `nvml-wrapper` (through `libloading`), never linked. A listing costs tens of
//! µs or more, so the guard reads it at a measured lower rate. NVML cannot see the process when
//! its pid namespace differs from the driver's (some containers): then it is not used and the
//! guard falls back to `cuMemGetInfo` ([`super::cuda_device`]), saying why.

use crate::sampler::Sample;

/// Opens the NVML source for this process. `Err` says why it cannot be used (one line).
pub fn open() -> Result<Box<dyn Sample>, String> {
    imp::open()
}

#[cfg(not(feature = "nvml"))]
mod imp {
    use crate::sampler::Sample;

    pub fn open() -> Result<Box<dyn Sample>, String> {
        Err("memlint was built without its `nvml` feature".to_owned())
    }
}

#[cfg(feature = "nvml")]
mod imp {
    use nvml_wrapper::Nvml;
    use nvml_wrapper::enums::device::UsedGpuMemory;

    use crate::sampler::{BackendKind, Capacity, Reading, Sample, SampleError};

    /// NVML and the indices of the GPUs on which it lists this process.
    pub struct NvmlSampler {
        nvml: Nvml,
        pid: u32,
        devices: Vec<u32>,
    }

    pub fn open() -> Result<Box<dyn Sample>, String> {
        let nvml = Nvml::init().map_err(|e| format!("NVML not usable ({e})"))?;
        let count = nvml.device_count().map_err(|e| format!("NVML device count failed ({e})"))?;
        let pid = std::process::id();
        let mut sampler = NvmlSampler { nvml, pid, devices: Vec::new() };
        for index in 0..count {
            if sampler.used_on(index).map_err(|e| e.0)?.is_some() {
                sampler.devices.push(index);
            }
        }
        if sampler.devices.is_empty() {
            return Err(format!(
                "NVML lists no process with this pid ({pid}) on its {count} GPU(s) (another pid namespace?)"
            ));
        }
        Ok(Box::new(sampler))
    }

    impl NvmlSampler {
        /// This process's bytes on GPU `index`, `None` when it is not listed there.
        fn used_on(&self, index: u32) -> Result<Option<u64>, SampleError> {
            let err = |e: nvml_wrapper::error::NvmlError| SampleError(format!("NVML: {e}"));
            let device = self.nvml.device_by_index(index).map_err(err)?;
            let processes = device.running_compute_processes().map_err(err)?;
            let mut found = None;
            for p in processes.iter().filter(|p| p.pid == self.pid) {
                let bytes = match p.used_gpu_memory {
                    UsedGpuMemory::Used(bytes) => bytes,
                    UsedGpuMemory::Unavailable => {
                        return Err(SampleError("NVML: used memory unavailable for this process".to_owned()));
                    }
                };
                found = Some(found.unwrap_or(0) + bytes);
            }
            Ok(found)
        }
    }

    impl Sample for NvmlSampler {
        fn kind(&self) -> BackendKind {
            BackendKind::NvmlProcess
        }

        fn device(&self) -> String {
            let indices: Vec<String> = self.devices.iter().map(u32::to_string).collect();
            format!("nvml:{}", indices.join(","))
        }

        fn begin_iteration(&mut self) {}

        fn read(&mut self) -> Result<Reading, SampleError> {
            let mut allocated = 0;
            for &index in &self.devices {
                allocated += self.used_on(index)?.unwrap_or(0);
            }
            Ok(Reading { allocated, reserved: None, peak: None })
        }

        fn capacity(&mut self) -> Option<Capacity> {
            let mut capacity = Capacity { available: 0, total: 0 };
            for &index in &self.devices {
                let info = self.nvml.device_by_index(index).ok()?.memory_info().ok()?;
                capacity.available += info.free;
                capacity.total += info.total;
            }
            Some(capacity)
        }
    }
}
