//! Phases of every source on a real candle CPU loop: with the `TrackingAllocator` installed the
//! heap is the primary source and the RSS a secondary one; both are read at the marks, and both
//! phase tables show the optimizer state created lazily at the first `step`.
//!
//! `MEMLINT_READ_EVERY=1` makes the RSS a source read every iteration whatever its read cost on
//! the machine: on two busy cores an RSS read in the loop cost 16 µs in one run and 63 µs in
//! another, around 0.1 % of a debug build's step, so its rate (and whether it is read at the
//! marks after the first iteration) changes from run to run. The choice itself is tested with
//! fake sources in `guard.rs`.

use candle_core::{Module, Result};
use candle_nn::loss;

#[path = "common/momentum_mlp.rs"]
mod momentum_mlp;
use momentum_mlp::{BATCH, CLASSES, INPUTS, Setup, batch};

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

const HIDDEN: usize = 1024;
/// Iterations run: 0..24, of which 0..8 and 8 and 16 recorded; the rates are chosen after
/// iteration 4 (warm-up 4, at least 5 timed), so the RSS is read at the marks of iterations 0,
/// 5..8, 8 and 16.
const STEPS: usize = 24;
const PARAMS: usize = momentum_mlp::params(HIDDEN);

fn setup() -> Result<Setup> {
    momentum_mlp::setup(HIDDEN)
}

#[memlint::mem_guard(warmup = 4, report = "target/memlint-test/phase-sources.json")]
fn train(s: &mut Setup, steps: usize) -> Result<f32> {
    let mut sum = 0f32;
    for _step in 0..steps {
        let (xs, ys) = batch(&s.teacher)?;
        let logits = s.model.forward(&xs)?;
        let loss = loss::cross_entropy(&logits, &ys)?;
        let grads = loss.backward()?;
        s.opt.step(&grads)?;
        sum += loss.to_scalar::<f32>()?;
    }
    Ok(sum)
}

/// Host figures are process-wide: the tests take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
static FORCE_RATE: std::sync::Once = std::sync::Once::new();

/// Takes the turn; the first test sets `MEMLINT_READ_EVERY=1` before anything reads it.
fn turn() -> std::sync::MutexGuard<'static, ()> {
    let turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: every test of this binary takes `SERIAL` first, so no other test thread runs (or
    // reads the environment) while the first one sets the variable, before any guard or candle
    // code has run in this process.
    FORCE_RATE.call_once(|| unsafe { std::env::set_var("MEMLINT_READ_EVERY", "1") });
    turn
}

fn read(path: &str) -> serde_json::Value {
    // The guard writes its reports on a background thread: wait for them before reading one.
    memlint::wait_for_reports();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn i(v: &serde_json::Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// A phase row's value: `row[part][field]`.
fn at(table: &[serde_json::Value], phase: &str, part: &str, field: &str) -> i64 {
    let row = table.iter().find(|r| r["phase"] == phase).unwrap_or_else(|| panic!("no {phase} in {table:?}"));
    i(&row[part][field])
}

#[test]
fn both_sources_have_a_phase_table() {
    let _turn = turn();
    let mut s = setup().unwrap();
    train(&mut s, STEPS).unwrap();
    let path = "target/memlint-test/phase-sources.json";
    let report = read(path);
    assert_eq!(report["version"], 5);
    let phases = &report["phases"];
    assert_eq!(phases["source"], "host-allocator");
    let heap = phases["table"].as_array().unwrap();
    let [rss] = phases["secondary"].as_array().unwrap().as_slice() else { panic!("{phases}") };
    assert_eq!((&rss["source"], &rss["read_every"]), (&"host-rss".into(), &1.into()));
    let recorded: Vec<u64> =
        rss["records"].as_array().unwrap().iter().map(|r| r["iteration"].as_u64().unwrap()).collect();
    assert_eq!(recorded, [0, 5, 6, 7, 8, 16]);
    let rss = rss["table"].as_array().unwrap();
    let names = |t: &[serde_json::Value]| t.iter().map(|r| (r["phase"].clone(), r["line"].clone())).collect::<Vec<_>>();
    assert_eq!(names(rss), names(heap), "the same phases, ended at the same lines");

    // The heap rows match what the loop allocates. Forward (with the batch, the first phase)
    // keeps the inputs, the labels (u32), three hidden activations (matmul, bias, relu) and two
    // outputs (matmul, bias) for backward, plus tensor headers.
    let forward = ((BATCH * INPUTS + BATCH + 3 * BATCH * HIDDEN + 2 * BATCH * CLASSES) * 4) as i64;
    let delta = at(heap, "forward", "steady", "delta_bytes");
    assert!((forward..forward + 8 * 1024).contains(&delta), "forward adds {delta}, expected {forward}");
    // Backward holds one gradient per parameter (and the activations' gradients).
    let grads = (PARAMS * 4) as i64;
    let delta = at(heap, "backward", "steady", "delta_bytes");
    assert!((grads..grads + forward).contains(&delta), "backward adds {delta}, gradients {grads}");
    // The momentum state is created at the first step only.
    let (first, steady) = (at(heap, "step", "first", "delta_bytes"), at(heap, "step", "steady", "delta_bytes"));
    assert!((grads..grads + 8 * 1024).contains(&first), "the first step adds the state: {first} vs {grads}");
    assert!(steady.abs() < 1024, "later steps add nothing: {steady}");
    // A fixed loop: the end gives back what the phases added.
    let net: i64 = heap.iter().map(|r| i(&r["steady"]["delta_bytes"])).sum();
    assert!(net.abs() < 1024, "steady net change {net}");

    // The RSS rows: every phase in both columns, each above the heap (the RSS holds it), and the
    // first iteration grows the RSS by at least the state up to the end of its step.
    for row in rss {
        for part in ["first", "steady"] {
            let (resident, live) =
                (i(&row[part]["allocated_bytes"]), at(heap, row["phase"].as_str().unwrap(), part, "allocated_bytes"));
            assert!(resident > live, "{row}: RSS {resident} vs heap {live}");
        }
    }
    let grown: i64 = rss.iter().take(4).map(|r| i(&r["first"]["delta_bytes"])).sum();
    assert!(grown >= grads, "the RSS grew by {grown} in the first iteration up to the step");

    // The summary prints both tables.
    let text = memlint::summary::render(&memlint::view::ReportView::read(std::path::Path::new(path)).unwrap());
    for expected in [
        "phases (host-allocator; first iteration vs median of 9 other recorded iterations):",
        "phases (host-rss; first iteration vs median of 5 later recorded iterations; peak = highest reading at the marks):",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    let step = format!(" step (line {}) ", heap.iter().find(|r| r["phase"] == "step").unwrap()["line"]);
    assert_eq!(text.matches(&step).count(), 2, "a step row in each table:\n{text}");
}
