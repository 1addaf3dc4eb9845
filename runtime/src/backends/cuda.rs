//! CUDA device memory through cudarc's driver API (feature `cuda`).
//!
//! Per iteration it reads the device's current memory pool: used bytes (= allocated), reserved
//! bytes, and the used high-water mark, which it resets at the start of each iteration to get
//! that iteration's peak. `cuMemGetInfo` (free/total for the whole device) is slower and only
//! read for projections. The driver is loaded at run time: no driver means host memory, with a
//! one-line notice, never a panic.

use crate::sampler::Sample;

#[cfg(feature = "cuda")]
pub(crate) use imp::{call, contexts_in_use};

/// Opens a sampler over every CUDA device whose primary context is active in this process.
/// `Err(Some(notice))` when there is none (no driver, no device, no GPU in use);
/// `Err(None)` when the crate was built without the `cuda` feature (host memory, silently).
pub fn open_in_use() -> Result<Box<dyn Sample>, Option<String>> {
    imp::open_in_use()
}

/// Opens a sampler over CUDA device `ordinal`. `Err` carries a one-line notice.
pub fn open(ordinal: u32) -> Result<Box<dyn Sample>, String> {
    imp::open(ordinal)
}

#[cfg(not(feature = "cuda"))]
mod imp {
    use crate::sampler::Sample;

    pub fn open_in_use() -> Result<Box<dyn Sample>, Option<String>> {
        Err(None)
    }

    pub fn open(ordinal: u32) -> Result<Box<dyn Sample>, String> {
        Err(format!(
            "memlint: device `cuda:{ordinal}` asked for, but memlint was built without its `cuda` feature; sampling host memory"
        ))
    }
}

#[cfg(feature = "cuda")]
mod imp {
    use std::ffi::c_void;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::Arc;

    use cudarc::driver::sys::{CUmemPool_attribute, CUmemoryPool};
    use cudarc::driver::{CudaContext, DriverError, result, sys};

    use crate::sampler::{BackendKind, Capacity, Reading, Sample, SampleError};

    /// One device: its (primary) context and its current memory pool.
    struct Device {
        ctx: Arc<CudaContext>,
        /// The device's current memory pool, from which cudarc's stream allocations come.
        pool: CUmemoryPool,
    }

    /// The pool readings of one or more devices, summed.
    pub struct CudaSampler {
        devices: Vec<Device>,
    }

    // SAFETY: a `CUmemoryPool` is an opaque driver handle that may be used from any thread; the
    // contexts are `Send + Sync` already.
    unsafe impl Send for CudaSampler {}

    /// Runs a driver call, turning both its error and a panic inside cudarc (how it reports a
    /// missing symbol or library) into a message.
    pub(crate) fn call<T>(what: &str, f: impl FnOnce() -> Result<T, DriverError>) -> Result<T, String> {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(format!("{what}: {e:?}")),
            Err(_) => Err(format!("{what}: the CUDA driver could not be used")),
        }
    }

    /// Whether the driver library can be loaded at all (checked before any cudarc call, since a
    /// missing libcuda panics inside cudarc).
    fn driver_loadable() -> bool {
        // SAFETY: dlopen with a valid C string; the handle is deliberately kept open (cudarc
        // opens the same library).
        let handle = unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_LAZY) };
        !handle.is_null()
    }

    fn init() -> Result<i32, String> {
        if !driver_loadable() {
            return Err("no CUDA driver (libcuda.so.1) found".to_owned());
        }
        call("cuInit", result::init)?;
        call("cuDeviceGetCount", result::device::get_count)
    }

    fn device(ordinal: u32) -> Result<Device, String> {
        let ctx = call("cuDevicePrimaryCtxRetain", || CudaContext::new(ordinal as usize))?;
        // SAFETY: the device comes from a live context.
        let pool = call("cuDeviceGetMemPool", || unsafe { result::device::get_mem_pool(ctx.cu_device()) })?;
        Ok(Device { ctx, pool })
    }

    fn primary_context_active(ordinal: i32) -> bool {
        let state = call("cuDevicePrimaryCtxGetState", || {
            let dev = result::device::get(ordinal)?;
            let mut flags = 0u32;
            let mut active = 0i32;
            // SAFETY: valid device and out-pointers.
            unsafe { sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active).result()? };
            Ok(active != 0)
        });
        state.unwrap_or(false)
    }

    /// The contexts of every device whose primary context is active in this process.
    pub(crate) fn contexts_in_use() -> Result<Vec<Arc<CudaContext>>, String> {
        let count = init()?;
        let mut contexts = Vec::new();
        for ordinal in 0..count {
            if primary_context_active(ordinal) {
                contexts.push(call("cuDevicePrimaryCtxRetain", || CudaContext::new(ordinal as usize))?);
            }
        }
        if contexts.is_empty() {
            return Err(format!("no CUDA device in use by this process ({count} present)"));
        }
        Ok(contexts)
    }

    pub fn open_in_use() -> Result<Box<dyn Sample>, Option<String>> {
        let count = init().map_err(|e| Some(format!("memlint: {e}; sampling host memory")))?;
        let mut devices = Vec::new();
        for ordinal in 0..count {
            if primary_context_active(ordinal) {
                devices.push(device(ordinal as u32).map_err(|e| Some(format!("memlint: {e}; sampling host memory")))?);
            }
        }
        if devices.is_empty() {
            return Err(Some(format!(
                "memlint: no CUDA device in use by this process ({count} present); sampling host memory"
            )));
        }
        Ok(Box::new(CudaSampler { devices }))
    }

    pub fn open(ordinal: u32) -> Result<Box<dyn Sample>, String> {
        let fallback = |e: String| format!("memlint: cuda:{ordinal}: {e}; sampling host memory");
        let count = init().map_err(fallback)?;
        if ordinal as i64 >= count as i64 {
            return Err(fallback(format!("only {count} CUDA device(s) present")));
        }
        let dev = device(ordinal).map_err(fallback)?;
        Ok(Box::new(CudaSampler { devices: vec![dev] }))
    }

    fn get(pool: CUmemoryPool, attr: CUmemPool_attribute) -> Result<u64, SampleError> {
        let mut value = 0u64;
        call("cuMemPoolGetAttribute", || unsafe {
            // SAFETY: a valid pool and a u64 out-value, the type of the byte-count attributes.
            result::mem_pool::get_attribute(pool, attr, &mut value as *mut u64 as *mut c_void)
        })
        .map_err(SampleError)?;
        Ok(value)
    }

    impl Sample for CudaSampler {
        fn kind(&self) -> BackendKind {
            BackendKind::Cuda
        }

        fn device(&self) -> String {
            let ordinals: Vec<String> = self.devices.iter().map(|d| d.ctx.ordinal().to_string()).collect();
            format!("cuda:{}", ordinals.join(","))
        }

        fn begin_iteration(&mut self) {
            for d in &self.devices {
                // A failed reset only makes the next peak cover more than one iteration.
                for attr in [
                    CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                    CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
                ] {
                    let mut zero = 0u64;
                    let _ = call("cuMemPoolSetAttribute", || unsafe {
                        // SAFETY: a valid pool; setting a high-water attribute to 0 resets it.
                        result::mem_pool::set_attribute(d.pool, attr, &mut zero as *mut u64 as *mut c_void)
                    });
                }
            }
        }

        fn reserved_peak(&mut self) -> Option<u64> {
            let mut total = 0;
            for d in &self.devices {
                total += get(d.pool, CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH).ok()?;
            }
            Some(total)
        }

        fn read(&mut self) -> Result<Reading, SampleError> {
            let mut reading = Reading { allocated: 0, reserved: Some(0), peak: Some(0) };
            for d in &self.devices {
                let used = get(d.pool, CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
                let reserved = get(d.pool, CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
                let high = get(d.pool, CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?;
                reading.allocated += used;
                reading.reserved = reading.reserved.map(|r| r + reserved);
                reading.peak = reading.peak.map(|p| p + high.max(used));
            }
            Ok(reading)
        }

        fn capacity(&mut self) -> Option<Capacity> {
            let mut capacity = Capacity { available: 0, total: 0 };
            for d in &self.devices {
                let (free, total) = call("cuMemGetInfo", || d.ctx.mem_get_info()).ok()?;
                let used = get(d.pool, CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT).ok()?;
                let reserved = get(d.pool, CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT).ok()?;
                // Cached pool memory is reusable by the next allocations.
                capacity.available += free as u64 + reserved.saturating_sub(used);
                capacity.total += total as u64;
            }
            Some(capacity)
        }
    }
}
