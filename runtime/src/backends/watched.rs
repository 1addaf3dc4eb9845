//! Memory sources the program hands to the guard: [`crate::watch`] (e.g. a cubecl client of
//! burn's GPU backends, see [`super::cubecl`]). Every guarded run started afterwards reads them,
//! every iteration, and prefers them as its primary source.

use std::sync::{Arc, Mutex};

use crate::sampler::{BackendKind, Capacity, Reading, Sample, SampleError};

/// Something whose memory the guard can read: implemented for cubecl clients (features
/// `cubecl`, `cubecl-0-10`), or by the program for its own allocator.
pub trait Watched: Send + 'static {
    /// What the numbers describe.
    fn kind(&self) -> BackendKind;
    /// The device, e.g. `cubecl:cuda:0`.
    fn device(&self) -> String;
    /// Bytes in use and reserved now.
    fn read(&mut self) -> Result<Reading, SampleError>;
}

type Shared = Arc<Mutex<Box<dyn Watched>>>;

static WATCHED: Mutex<Vec<Shared>> = Mutex::new(Vec::new());

/// Hands `source` to the guard: guarded runs that start after this call read it every
/// iteration and report it as a source of its own (the primary one unless another is pinned).
///
/// ```ignore
/// // burn 0.22 on CUDA (feature `cubecl`):
/// let device = burn::backend::cuda::CudaDevice::default();
/// memlint::watch(<cubecl::cuda::CudaRuntime as cubecl::Runtime>::client(&device));
/// ```
pub fn watch(source: impl Watched) {
    let mut watched = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
    watched.push(Arc::new(Mutex::new(Box::new(source))));
}

/// Forgets every source handed over by [`watch`] (runs already started keep theirs).
pub fn unwatch_all() {
    WATCHED.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

/// The number of watched sources (to notice a [`watch`] after sources were opened).
pub(crate) fn count() -> usize {
    WATCHED.lock().unwrap_or_else(|p| p.into_inner()).len()
}

/// One sampler per watched source.
pub(crate) fn open_all() -> Vec<Box<dyn Sample>> {
    let watched = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
    watched.iter().map(|w| Box::new(WatchedSampler { inner: Arc::clone(w) }) as Box<dyn Sample>).collect()
}

struct WatchedSampler {
    inner: Shared,
}

impl Sample for WatchedSampler {
    fn kind(&self) -> BackendKind {
        self.inner.lock().map_or(BackendKind::Cubecl, |w| w.kind())
    }

    fn device(&self) -> String {
        self.inner.lock().map_or_else(|_| "watched".to_owned(), |w| w.device())
    }

    fn begin_iteration(&mut self) {}

    fn read(&mut self) -> Result<Reading, SampleError> {
        let mut inner = self.inner.lock().map_err(|_| SampleError("watched source poisoned".to_owned()))?;
        // A panic inside the framework's client is an error of this source, not of the program.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.read()))
            .unwrap_or_else(|_| Err(SampleError("the watched source panicked".to_owned())))
    }

    fn capacity(&mut self) -> Option<Capacity> {
        None
    }
}
