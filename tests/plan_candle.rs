//! `memlint::Planner` on a real candle CPU training step, checked against the truth: the peak of
//! a real step at the predicted batch size fits the budget, and a batch 10 % larger does not.

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{AdamW, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap, linear, loss};

/// The allocator's counters are process-wide and the test harness runs tests on threads: one test
/// at a time, so no test measures another's allocations.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

struct Setup {
    model: (Linear, Linear),
    opt: AdamW,
    teacher: Tensor,
    parameter_bytes: u64,
}

fn setup() -> Result<Setup> {
    let device = Device::Cpu;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
    let model = (linear(64, 1024, vb.pp("hidden"))?, linear(1024, 16, vb.pp("out"))?);
    let parameter_bytes = varmap.all_vars().iter().map(|v| (v.elem_count() * v.dtype().size_in_bytes()) as u64).sum();
    let opt = AdamW::new(varmap.all_vars(), ParamsAdamW::default())?;
    let teacher = Tensor::randn(0f32, 1.0, (64, 16), &device)?;
    Ok(Setup { model, opt, teacher, parameter_bytes })
}

fn step(s: &mut Setup, batch: usize) -> Result<()> {
    let xs = Tensor::randn(0f32, 1.0, (batch, 64), &Device::Cpu)?;
    let ys = xs.matmul(&s.teacher)?.argmax(1)?;
    let logits = s.model.1.forward(&s.model.0.forward(&xs)?.relu()?)?;
    let loss = loss::cross_entropy(&logits, &ys)?;
    s.opt.backward_step(&loss)?;
    loss.to_scalar::<f32>().map(drop)
}

fn peak_of_step(s: &mut Setup, batch: usize) -> u64 {
    step(s, batch).unwrap(); // same state as the planner's second step at this size
    memlint::TrackingAllocator::reset_window_peak();
    step(s, batch).unwrap();
    memlint::TrackingAllocator::stats().window_peak_bytes
}

#[test]
fn predicted_batch_fits_the_budget_and_ten_percent_more_does_not() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = setup().unwrap();
    let held = memlint::TrackingAllocator::stats().current_bytes;
    // A budget that fits about 1,000 samples of this model above what is held now.
    let budget = held + (24 << 20);
    let plan = memlint::Planner::new()
        .batches(&[32, 64, 128])
        .device(memlint::DeviceChoice::Host)
        .budget(budget)
        .margin(0.1)
        .parameter_bytes(s.parameter_bytes)
        .run(|batch| step(&mut s, batch))
        .expect("a plan");
    assert_eq!(plan.backend, "host-allocator");
    assert!(plan.per_sample_bytes > 1024.0 * 4.0, "at least the hidden row per sample: {plan}");
    // candle's CPU kernels change regime between batch 128 and 256 (measured: 17.7 KiB per
    // sample below, 45.6 KiB above), so the small sizes sit off the final line: refinement near
    // the limit is what makes the prediction right.
    assert!(plan.measurements.len() > 3, "refinement measured near the limit: {plan}");
    assert!(plan.refinement_stopped.is_none(), "{plan}");
    assert!(plan.split.created_by_first_step_bytes >= 2 * s.parameter_bytes, "AdamW keeps 2 moments: {plan}");
    assert!(plan.recommended_batch < plan.largest_batch);
    let best = plan.largest_batch as usize;
    assert!(best > 128, "{plan}");
    let at_best = peak_of_step(&mut s, best);
    let above = peak_of_step(&mut s, best * 11 / 10);
    assert!(
        at_best <= budget + budget / 50,
        "peak {at_best} at the predicted batch {best} over budget {budget}\n{plan}"
    );
    assert!(
        above > budget,
        "peak {above} at 1.1 × {best} still under budget {budget}: the plan is too cautious\n{plan}"
    );
    let text = plan.to_string();
    assert!(text.contains("largest batch") && text.contains("recommended") && text.contains("per sample"), "{text}");
}

#[test]
fn a_failing_step_names_its_batch_size() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let err = memlint::Planner::new()
        .batches(&[4, 8])
        .device(memlint::DeviceChoice::Host)
        .run(|batch| if batch == 8 { Err("out of memory") } else { Ok(()) })
        .unwrap_err();
    assert_eq!(err.to_string(), "the step failed at batch size 8: out of memory");
}
