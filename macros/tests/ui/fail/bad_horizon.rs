#[memlint::mem_guard(horizon = "soon")]
fn unknown_unit() {}

#[memlint::mem_guard(horizon = "1.5 iterations")]
fn fractional_iterations() {}

#[memlint::mem_guard(horizon = 0)]
fn zero() {}

#[memlint::mem_guard(horizon = "8h", horizon = "2h")]
fn twice() {}

#[memlint::mem_guard(horizon)]
fn without_value() {}

fn main() {}
