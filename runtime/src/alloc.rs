//! [`TrackingAllocator`]: a global allocator that counts live heap bytes.
//!
//! It forwards every call to [`System`] and keeps five process-wide counters with relaxed
//! atomics. It never allocates itself, so it can never count its own bookkeeping.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// An atomic counter on its own cache line, so threads updating different counters do not
/// contend (false sharing).
#[repr(align(128))]
struct Counter(AtomicU64);

impl std::ops::Deref for Counter {
    type Target = AtomicU64;
    fn deref(&self) -> &AtomicU64 {
        &self.0
    }
}

/// Live heap bytes (allocated minus freed), in bytes.
static CURRENT: Counter = Counter(AtomicU64::new(0));
/// Highest `CURRENT` since the process started, in bytes.
static PEAK: Counter = Counter(AtomicU64::new(0));
/// Highest `CURRENT` since the last [`TrackingAllocator::reset_window_peak`], in bytes.
static WINDOW_PEAK: Counter = Counter(AtomicU64::new(0));
/// Number of allocations (including reallocations), a count.
static ALLOCATIONS: Counter = Counter(AtomicU64::new(0));
/// Number of deallocations, a count.
static DEALLOCATIONS: Counter = Counter(AtomicU64::new(0));
/// Set by the first allocation that goes through a `TrackingAllocator`: tells the runtime that
/// the allocator is installed as `#[global_allocator]` and its figures are meaningful.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// A `#[global_allocator]` that gives `#[mem_guard]` exact host-memory figures.
///
/// ```
/// #[global_allocator]
/// static ALLOC: memlint_runtime::TrackingAllocator = memlint_runtime::TrackingAllocator::new();
/// ```
///
/// Costs a few relaxed atomic additions per allocation. Without it the guard falls back to the
/// process's resident set size.
#[derive(Debug, Default, Clone, Copy)]
pub struct TrackingAllocator {
    _private: (),
}

/// A snapshot of the [`TrackingAllocator`]'s counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AllocStats {
    /// Live heap bytes.
    pub current_bytes: u64,
    /// Highest live heap bytes since the process started.
    pub peak_bytes: u64,
    /// Highest live heap bytes since the last window reset.
    pub window_peak_bytes: u64,
    /// Allocations so far (reallocations count as one each).
    pub allocations: u64,
    /// Deallocations so far.
    pub deallocations: u64,
}

impl TrackingAllocator {
    /// The allocator; `const` so it can initialise a `static`.
    pub const fn new() -> Self {
        Self { _private: () }
    }

    /// Whether a `TrackingAllocator` is the process's global allocator (it has seen an allocation).
    pub fn is_installed() -> bool {
        INSTALLED.load(Relaxed)
    }

    /// The current counters. All zero when no `TrackingAllocator` is installed.
    pub fn stats() -> AllocStats {
        AllocStats {
            current_bytes: clamp(CURRENT.load(Relaxed)),
            peak_bytes: PEAK.load(Relaxed),
            window_peak_bytes: WINDOW_PEAK.load(Relaxed),
            allocations: ALLOCATIONS.load(Relaxed),
            deallocations: DEALLOCATIONS.load(Relaxed),
        }
    }

    /// Starts a new peak window: the window peak becomes the current live bytes.
    pub fn reset_window_peak() {
        WINDOW_PEAK.store(CURRENT.load(Relaxed), Relaxed);
    }

    #[inline]
    fn grew(size: u64) {
        let now = CURRENT.fetch_add(size, Relaxed).wrapping_add(size);
        // A plain load first: the read-modify-write only happens when a peak really moves.
        if now > WINDOW_PEAK.load(Relaxed) {
            WINDOW_PEAK.fetch_max(now, Relaxed);
            if now > PEAK.load(Relaxed) {
                PEAK.fetch_max(now, Relaxed);
            }
        }
    }

    #[inline]
    fn shrank(size: u64) {
        CURRENT.fetch_sub(size, Relaxed);
    }

    #[inline]
    fn mark_installed() {
        if !INSTALLED.load(Relaxed) {
            INSTALLED.store(true, Relaxed);
        }
    }
}

impl TrackingAllocator {
    /// Counts a fresh allocation (`alloc` and `alloc_zeroed` alike) and passes the pointer on.
    #[inline]
    fn counted_allocation(ptr: *mut u8, layout: Layout) -> *mut u8 {
        if !ptr.is_null() {
            Self::mark_installed();
            ALLOCATIONS.fetch_add(1, Relaxed);
            Self::grew(layout.size() as u64);
        }
        ptr
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and only
// updates counters afterwards; no allocation happens here.
unsafe impl GlobalAlloc for TrackingAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let ptr = unsafe { System.alloc(layout) };
        Self::counted_allocation(ptr, layout)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        Self::counted_allocation(ptr, layout)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) };
        DEALLOCATIONS.fetch_add(1, Relaxed);
        Self::shrank(layout.size() as u64);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            ALLOCATIONS.fetch_add(1, Relaxed);
            let old = layout.size() as u64;
            let new_size = new_size as u64;
            if new_size >= old {
                Self::grew(new_size - old);
            } else {
                Self::shrank(old - new_size);
            }
        }
        new
    }
}

/// Frees of blocks that were allocated before this allocator counted (only possible when a
/// program switches allocators at run time, as the benchmarks do) can wrap the counter below
/// zero; read such values as zero.
fn clamp(bytes: u64) -> u64 {
    if bytes > u64::MAX / 2 { 0 } else { bytes }
}
