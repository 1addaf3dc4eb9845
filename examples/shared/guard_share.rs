//! The guard's own share of each guarded call, from its report: shared by the GPU examples
//! (`#[path]`-included; each example is its own workspace).

/// The guard's own share of the last guarded call that wrote `path`: (guard s, elapsed s,
/// carried s, reads), read with memlint's own report reader.
pub fn guard_share(path: &str) -> Option<(f64, f64, f64, Option<u64>)> {
    memlint::wait_for_reports();
    let v = memlint::view::ReportView::read(std::path::Path::new(path)).ok()?;
    Some((v.guard_seconds, v.elapsed_seconds, v.pace.carried_seconds, v.reads))
}

/// Prints each guarded call's share and the share over all of them.
pub fn print_shares(name: &str, shares: &[(f64, f64, f64, Option<u64>)]) {
    let (mut guard, mut elapsed) = (0.0, 0.0);
    for (k, &(g, e, c, reads)) in shares.iter().enumerate() {
        println!(
            "GUARDSHARE {name} call {k}: {:.1} µs of {:.1} ms = {:.3} % (carried {:.2} ms, reads {})",
            g * 1e6,
            e * 1e3,
            g / e * 100.0,
            c * 1e3,
            reads.map_or("?".to_owned(), |n| n.to_string())
        );
        (guard, elapsed) = (guard + g, elapsed + e);
    }
    if elapsed > 0.0 {
        println!("GUARDSHARE {name} all {} calls: {:.3} % of their time", shares.len(), guard / elapsed * 100.0);
    }
}
