//! `MEMLINT=off` disables every guard: no sampling, no report, same results.

mod common;

struct Opt;

impl Opt {
    fn step(&mut self) {}
}

#[memlint::mem_guard]
fn train(opt: &mut Opt, keep: &mut Vec<Vec<u8>>) -> usize {
    for _ in 0..50 {
        keep.push(vec![0u8; 1 << 20]);
        opt.step();
    }
    keep.len()
}

#[test]
fn memlint_off_disables_guards() {
    // SAFETY: set before any guard reads it; this binary runs a single test.
    unsafe { std::env::set_var("MEMLINT", "off") };
    assert!(!memlint::enabled());
    let mut keep = Vec::new();
    assert_eq!(train(&mut Opt, &mut keep), 50);
    assert!(common::reports_for("train").is_empty());
}
