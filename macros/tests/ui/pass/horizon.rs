// The `horizon` option in its three forms: wall time, iterations as text, iterations as a number.

#[memlint::mem_guard(horizon = "8h", report = "target/memlint/ui-horizon-hours.json")]
fn hours(steps: usize) -> usize {
    let mut kept = Vec::new();
    for step in 0..steps {
        kept.push(step);
    }
    kept.len()
}

#[memlint::mem_guard(horizon = "1000000 iterations", tolerance = "64KiB", report = "target/memlint/ui-horizon-text.json")]
fn iterations_text(steps: usize) -> usize {
    (0..steps).sum()
}

#[memlint::mem_guard(horizon = 5000, report = "target/memlint/ui-horizon-number.json")]
fn iterations_number(steps: usize) -> usize {
    let mut total = 0;
    for step in 0..steps {
        total += step;
    }
    total
}

fn main() {
    assert_eq!(hours(20), 20);
    assert_eq!(iterations_text(20), 190);
    assert_eq!(iterations_number(20), 190);
}
