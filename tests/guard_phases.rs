//! Phases and lines on real candle CPU loops: a lazily created optimizer state (first iteration
//! higher in the `step` phase), a line that holds the peak (a large temporary), a line that keeps
//! memory every iteration, and a static finding shown beside its line.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::loss;

#[path = "common/momentum_mlp.rs"]
mod momentum_mlp;
use momentum_mlp::{BATCH, INPUTS, Setup, batch};

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

const HIDDEN: usize = 128;
const PARAMS: usize = momentum_mlp::params(HIDDEN);

fn setup() -> Result<Setup> {
    momentum_mlp::setup(HIDDEN)
}

#[memlint::mem_guard(report = "target/memlint-test/phases.json")]
fn train_phases(s: &mut Setup, steps: usize) -> Result<f32> {
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

#[memlint::mem_guard(lines, report = "target/memlint-test/lines.json")]
fn train_lines(s: &mut Setup, steps: usize) -> Result<f32> {
    let mut kept = Vec::new();
    let mut total = Tensor::zeros((), DType::F32, s.teacher.device())?;
    for _step in 0..steps {
        let (xs, ys) = batch(&s.teacher)?;
        let logits = s.model.forward(&xs)?;
        let loss = loss::cross_entropy(&logits, &ys)?;
        let grads = loss.backward()?;
        s.opt.step(&grads)?;
        let scratch = Tensor::ones((1024, 1024), DType::F32, xs.device())?.sum_all()?.to_scalar::<f32>()?;
        kept.push((&xs * f64::from(scratch).recip())?);
        total = (total + &loss)?;
    }
    Ok(total.to_scalar::<f32>()? + kept.len() as f32)
}

/// Host figures are process-wide: the tests take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn read(path: &str) -> serde_json::Value {
    // The guard writes its reports on a background thread: wait for them before reading one.
    memlint::wait_for_reports();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn row<'a>(rows: &'a [serde_json::Value], key: &str, value: &str) -> &'a serde_json::Value {
    rows.iter()
        .find(|r| r[key].as_str().is_some_and(|v| v.contains(value)))
        .unwrap_or_else(|| panic!("no {value} in {rows:?}"))
}

fn i(v: &serde_json::Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn phase_table_shows_the_lazily_created_optimizer_state() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut s = setup().unwrap();
    train_phases(&mut s, 40).unwrap();
    let report = read("target/memlint-test/phases.json");
    assert_eq!(report["version"], 5);
    let phases = &report["phases"];
    assert_eq!(phases["source"], "host-allocator");
    let table = phases["table"].as_array().unwrap();
    let names: Vec<&str> = table.iter().map(|r| r["phase"].as_str().unwrap()).collect();
    assert_eq!(names, ["forward", "loss", "backward", "step", "end"]);
    // 8 dense iterations, then 8, 16, 24 and 32 on the stride (40 is not run).
    assert_eq!(phases["records"].as_array().unwrap().len(), 12);
    let state = (PARAMS * 4) as i64;
    let step = row(table, "phase", "step");
    let (first, steady) = (i(&step["first"]["delta_bytes"]), i(&step["steady"]["delta_bytes"]));
    assert!(first >= state && first < state + 16 * 1024, "first step adds the state: {first} vs {state}");
    assert!(steady.abs() < 4096, "later steps add nothing: {steady}");
    // The first iteration ends higher by the state; the steady state stays flat.
    let end = row(table, "phase", "end");
    assert!(i(&end["first"]["allocated_bytes"]) - i(&end["first"]["delta_bytes"]) > 0);
    let forward = row(table, "phase", "forward");
    // Forward covers the batch (32×128 f32 inputs) and the activations.
    assert!(i(&forward["steady"]["delta_bytes"]) >= (BATCH * INPUTS * 4) as i64, "{forward}");
    assert!(i(&forward["steady"]["peak_bytes"]) >= i(&forward["steady"]["allocated_bytes"]));
    // No lines without `lines`.
    assert_eq!(report["lines"].as_array().unwrap().len(), 0);
    assert_eq!(report["verdict"]["leak"], false);
}

#[test]
fn lines_find_the_peak_the_kept_memory_and_the_static_finding() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut s = setup().unwrap();
    train_lines(&mut s, 40).unwrap();
    let report = read("target/memlint-test/lines.json");
    let lines = report["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 9, "8 statements and the end: {lines:?}");
    // The 4 MiB temporary holds the peak and adds nothing.
    let scratch = row(lines, "code", "let scratch");
    assert_eq!(scratch["holds_peak"], true, "{lines:?}");
    assert!(i(&scratch["steady_delta_bytes"]).abs() < 1024, "{scratch}");
    assert!(i(&scratch["steady_peak_bytes"]) >= 4 << 20, "{scratch}");
    assert_eq!(lines.iter().filter(|r| r["holds_peak"] == true).count(), 1);
    // The kept product: 32×128 f32 every iteration, and the iteration grows by at least that.
    let kept = row(lines, "code", "kept.push");
    let delta = i(&kept["steady_delta_bytes"]);
    assert!((16384..16384 + 1024).contains(&delta), "kept line adds {delta}");
    assert_eq!(kept["grows"], true);
    assert!(i(&report["verdict"]["total_growth_bytes"]) > 0);
    // The loss sum is the static finding, shown beside its line.
    let total = row(lines, "code", "total = (total");
    let findings: Vec<&str> = total["static_findings"].as_array().unwrap().iter().filter_map(|f| f.as_str()).collect();
    assert!(findings.iter().any(|f| f.starts_with("accumulated_loss_tensor")), "{total}");
    let end = row(lines, "code", "(end of iteration)");
    assert!(i(&end["steady_delta_bytes"]) < 0, "the end drops the iteration's locals: {end}");
    // Line mode marks every statement; the phases are still named.
    let phases: Vec<&str> =
        report["phases"]["table"].as_array().unwrap().iter().map(|r| r["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["forward", "loss", "backward", "step", "end"]);
}
