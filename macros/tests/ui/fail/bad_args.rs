#[memlint::mem_guard(windows = 3)]
fn unknown_key() {}

#[memlint::mem_guard(warmup = 1, warmup = 2)]
fn twice() {}

#[memlint::mem_guard(tolerance = "7 potatoes")]
fn bad_size() {}

#[memlint::mem_guard(on_leak = "abort")]
fn bad_on_leak() {}

#[memlint::mem_guard(device = "gpu")]
fn bad_device() {}

#[memlint::mem_guard(window = 1)]
fn small_window() {}

#[memlint::mem_guard(warmup = "ten")]
fn warmup_string() {}

#[memlint::mem_guard(budget)]
fn budget_without_value() {}

#[memlint::mem_guard(source = "gpu-ram")]
fn bad_source() {}

fn main() {}
