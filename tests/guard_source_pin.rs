//! `#[mem_guard(source = "..")]` pins the primary source: with the `TrackingAllocator` installed
//! the automatic choice is the heap; the pinned function reports the RSS, the other one the heap.

mod common;

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

struct Opt;

impl Opt {
    fn step(&mut self) {}
}

#[memlint::mem_guard(source = "host-rss", warmup = 2)]
fn pinned(opt: &mut Opt, n: usize) -> usize {
    let mut kept = 0;
    for i in 0..n {
        kept += std::hint::black_box(vec![0u8; 64 + i]).len();
        opt.step();
    }
    kept
}

#[memlint::mem_guard(warmup = 2)]
fn automatic(opt: &mut Opt, n: usize) -> usize {
    let mut kept = 0;
    for i in 0..n {
        kept += std::hint::black_box(vec![0u8; 64 + i]).len();
        opt.step();
    }
    kept
}

#[test]
fn the_pinned_source_is_the_primary_one() {
    assert_eq!(pinned(&mut Opt, 20), automatic(&mut Opt, 20));
    assert_eq!(common::only_report("pinned")["backend"], "host-rss");
    assert_eq!(common::only_report("automatic")["backend"], "host-allocator");
}
