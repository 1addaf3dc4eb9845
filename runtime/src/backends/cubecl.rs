//! cubecl clients (burn's GPU backends: CUDA, wgpu, HIP, Metal, CPU) as watched sources.
//!
//! - feature `cubecl` (cubecl 0.11, burn 0.22): a `cubecl_runtime::client::Client`; every
//!   stream's pools of the device (`memory_report(MemoryScope::Device).usage()`).
//! - feature `cubecl-0-10` (cubecl 0.10, burn 0.21): a `ComputeClient<R>`;
//!   `memory_usage()`, which covers the stream of the thread that reads it: the guard reads it
//!   from the guarded loop's thread, the thread that runs the model.
//!
//! allocated = `bytes_in_use`, reserved = `bytes_reserved`. Hand one over with [`crate::watch`].

#[cfg(feature = "cubecl")]
mod v0_11 {
    use cubecl_runtime::client::Client;
    use cubecl_runtime::memory_management::MemoryScope;

    use crate::backends::watched::Watched;
    use crate::sampler::{BackendKind, Reading, SampleError};

    impl Watched for Client {
        fn kind(&self) -> BackendKind {
            BackendKind::Cubecl
        }

        fn device(&self) -> String {
            "cubecl".to_owned()
        }

        fn read(&mut self) -> Result<Reading, SampleError> {
            let usage = self.memory_report(MemoryScope::Device).usage();
            Ok(Reading { allocated: usage.bytes_in_use, reserved: Some(usage.bytes_reserved), peak: None })
        }
    }
}

#[cfg(feature = "cubecl-0-10")]
mod v0_10 {
    use cubecl_runtime_0_10::client::ComputeClient;
    use cubecl_runtime_0_10::runtime::Runtime;

    use crate::backends::watched::Watched;
    use crate::sampler::{BackendKind, Reading, SampleError};

    impl<R: Runtime + 'static> Watched for ComputeClient<R> {
        fn kind(&self) -> BackendKind {
            BackendKind::Cubecl
        }

        fn device(&self) -> String {
            format!("cubecl:{}", R::name(self))
        }

        fn read(&mut self) -> Result<Reading, SampleError> {
            let usage = self.memory_usage().map_err(|e| SampleError(format!("cubecl memory_usage: {e:?}")))?;
            Ok(Reading { allocated: usage.bytes_in_use, reserved: Some(usage.bytes_reserved), peak: None })
        }
    }
}
