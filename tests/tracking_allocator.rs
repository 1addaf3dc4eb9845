//! The `TrackingAllocator`'s counters (own binary: it is the global allocator here).

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

use memlint::TrackingAllocator;

#[test]
fn counts_live_bytes_peaks_and_calls() {
    assert!(TrackingAllocator::is_installed());
    let before = TrackingAllocator::stats();
    TrackingAllocator::reset_window_peak();
    let block = std::hint::black_box(vec![1u8; 8 << 20]);
    let during = TrackingAllocator::stats();
    assert!(during.current_bytes >= before.current_bytes + (8 << 20), "{before:?} {during:?}");
    assert!(during.allocations > before.allocations);
    drop(block);
    let after = TrackingAllocator::stats();
    assert!(after.current_bytes < during.current_bytes - (8 << 20) + 4096, "{during:?} {after:?}");
    assert!(after.deallocations > during.deallocations);
    assert!(after.window_peak_bytes >= before.current_bytes + (8 << 20));
    assert!(after.peak_bytes >= after.window_peak_bytes);
    // A new window forgets the 8 MiB block.
    TrackingAllocator::reset_window_peak();
    assert!(TrackingAllocator::stats().window_peak_bytes < after.window_peak_bytes);

    // realloc: growing and shrinking a Vec moves the count by the size difference.
    let mut v: Vec<u8> = Vec::with_capacity(1 << 20);
    let grown_from = TrackingAllocator::stats().current_bytes;
    v.reserve_exact(3 << 20);
    let grown = TrackingAllocator::stats().current_bytes;
    assert!(grown >= grown_from + (2 << 20), "{grown_from} -> {grown}");
    v.shrink_to(0);
    assert!(TrackingAllocator::stats().current_bytes + (3 << 20) <= grown + 4096);
}
