//! `source = ".."` is accepted (its effect on the report: the facade's
//! `tests/guard_source_pin.rs`); the loop runs as written.

#[memlint::mem_guard(source = "host-rss", warmup = 2)]
fn count(n: u64) -> u64 {
    let mut total = 0;
    for i in 0..n {
        total += i;
    }
    total
}

fn main() {
    assert_eq!(count(10), 45);
}
