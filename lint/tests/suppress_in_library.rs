//! Suppression comments are applied by the engine itself, so `lint_source` (what `#[mem_guard]`
//! embeds) and `Linter` honour them, not only the command line.

use std::path::Path;

use memlint_lint::{Level, Levels, Linter, lint_source};

/// A candle loop that sums loss tensors across iterations; `{above}` and `{trailing}` are
/// replaced by comments.
const LOOP: &str = "use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{loss, AdamW, Linear, Module, Optimizer};

fn train(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Tensor)], dev: &Device) -> Result<()> {
    let mut total = Tensor::zeros((), DType::F32, dev)?;
    for (x, y) in data {
        let loss = loss::mse(&model.forward(x)?, y)?;
        opt.backward_step(&loss)?;
        {above}
        total = (total + &loss)?;{trailing}
    }
    println!(\"{}\", total.to_scalar::<f32>()?);
    Ok(())
}
";

fn source(above: &str, trailing: &str) -> String {
    LOOP.replace("{above}", above).replace("{trailing}", trailing)
}

fn rules(text: &str) -> Vec<(&'static str, usize)> {
    lint_source(Path::new("train.rs"), text).iter().map(|f| (f.rule, f.line)).collect()
}

#[test]
fn lint_source_reports_the_leak_without_a_comment() {
    assert_eq!(rules(&source("", "")), vec![("accumulated_loss_tensor", 10)]);
}

#[test]
fn lint_source_honours_a_trailing_suppression() {
    assert_eq!(rules(&source("", " // memlint: allow(accumulated_loss_tensor)")), vec![]);
}

#[test]
fn lint_source_honours_a_suppression_on_the_line_above() {
    assert_eq!(rules(&source("// memlint: allow(memlint::accumulated_loss_tensor)", "")), vec![]);
}

#[test]
fn lint_source_honours_a_file_suppression() {
    let text = format!("// memlint: allow-file(accumulated_loss_tensor)\n{}", source("", ""));
    assert_eq!(rules(&text), vec![]);
}

#[test]
fn a_suppression_of_another_rule_hides_nothing_and_is_reported_unused() {
    let found = rules(&source("", " // memlint: allow(grads_allocated_in_loop)"));
    assert_eq!(found, vec![("accumulated_loss_tensor", 10), ("unused_suppression", 10)]);
    // A nursery rule is off by default: its suppression cannot be "unused".
    let found = rules(&source("", " // memlint: allow(rc_cycle)"));
    assert_eq!(found, vec![("accumulated_loss_tensor", 10)]);
}

#[test]
fn a_suppression_of_an_allowed_rule_is_not_reported_unused() {
    let mut levels = Levels::default();
    levels.set("rc_cycle", Level::Allow);
    let text = source("", " // memlint: allow(rc_cycle)");
    let found = Linter::new(levels).lint_text(Path::new("train.rs"), &text, None);
    let found: Vec<(&str, usize)> = found.iter().map(|f| (f.rule, f.line)).collect();
    assert_eq!(found, vec![("accumulated_loss_tensor", 10)]);
}
