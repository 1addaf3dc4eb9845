//! The rules, one per file, and the registry.

mod accumulated_loss_tensor;
mod autodiff_buffer;
mod autodiff_forward_without_backward;
mod autodiff_ops_after_backward;
mod eval_without_no_grad;
mod grads_allocated_in_loop;
mod graph_copied_into_buffer;
mod leaky_trace_in_loop;
mod missing_zero_grad;
mod no_grad_guard_dropped;
mod param_rebuilt_in_loop;
mod rc_cycle;
mod retained_graph_output;
mod sampling_loop_chains_graph;
mod soft_update_without_detach;
#[cfg(test)]
mod testing;
mod unbounded_copy_history;
mod variables_created_per_step;

use crate::rule::{Rule, RuleMeta};

/// The label on the loop whose iterations a finding concerns.
pub(crate) const TRAINING_LOOP: &str = "this loop runs backward every iteration";

/// Labels the chain of calls down to a store made inside called functions of the crate, one
/// per hop, outermost first: a label where the hop is in the reported file, else a note naming
/// the place. `innermost` words the hop that makes the store (`"`f` stores it in `x` here"`).
pub(crate) fn label_hops(
    mut report: crate::context::Report,
    cx: &crate::context::Context<'_>,
    through: Option<&crate::model::Through>,
    innermost: impl Fn(&crate::model::Through) -> String,
) -> crate::context::Report {
    for hop in through.into_iter().flat_map(crate::model::Through::hops) {
        let text = match hop.inner() {
            Some(next) => format!("`{}` passes it to `{}`", hop.callee(), next.callee()),
            None => innermost(hop),
        };
        if cx.file().is_some_and(|file| file.path == hop.file()) {
            report = report.label(hop.span().clone(), text);
        } else {
            report.elsewhere.push((hop.file().to_path_buf(), hop.line(), text));
        }
    }
    report
}

/// Every rule, in the order they are documented.
pub fn all() -> &'static [&'static dyn Rule] {
    static RULES: &[&dyn Rule] = &[
        &accumulated_loss_tensor::AccumulatedLossTensor,
        &retained_graph_output::RetainedGraphOutput,
        &missing_zero_grad::MissingZeroGrad,
        &rc_cycle::RcCycle,
        // Wave 2: framework lifecycle mistakes.
        &no_grad_guard_dropped::NoGradGuardDropped,
        &eval_without_no_grad::EvalWithoutNoGrad,
        &leaky_trace_in_loop::LeakyTraceInLoop,
        &grads_allocated_in_loop::GradsAllocatedInLoop,
        &param_rebuilt_in_loop::ParamRebuiltInLoop,
        &autodiff_forward_without_backward::AutodiffForwardWithoutBackward,
        &autodiff_ops_after_backward::AutodiffOpsAfterBackward,
        &autodiff_buffer::AutodiffBuffer,
        &soft_update_without_detach::SoftUpdateWithoutDetach,
        &variables_created_per_step::VariablesCreatedPerStep,
        &sampling_loop_chains_graph::SamplingLoopChainsGraph,
        &graph_copied_into_buffer::GraphCopiedIntoBuffer,
        &unbounded_copy_history::UnboundedCopyHistory,
    ];
    RULES
}

/// Metadata of every diagnostic code memlint emits: the rules, then `parse_error` and
/// `unused_suppression`.
pub fn all_meta() -> Vec<&'static RuleMeta> {
    all().iter().map(|r| r.meta()).chain([&crate::source::PARSE_ERROR, &crate::suppress::UNUSED_SUPPRESSION]).collect()
}

/// Metadata by id (`rc_cycle` or `memlint::rc_cycle`).
pub fn find(id: &str) -> Option<&'static RuleMeta> {
    let id = id.strip_prefix("memlint::").unwrap_or(id);
    all_meta().into_iter().find(|m| m.id == id)
}

/// Where a rule's documentation lives.
pub fn docs_url(id: &str) -> String {
    format!("https://github.com/memlint/memlint/blob/main/docs/rules.md#{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_snake_case_and_documented() {
        let metas = all_meta();
        for (i, m) in metas.iter().enumerate() {
            assert!(m.id.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{} is not snake_case", m.id);
            assert!(metas[..i].iter().all(|o| o.id != m.id), "duplicate id {}", m.id);
            for heading in ["### What it does", "### Why is this bad?", "### Example", "### Use instead"] {
                assert!(m.docs.contains(heading), "{} docs lack {heading:?}", m.id);
            }
            assert!(!m.summary.ends_with('.'), "{} summary ends with a period", m.id);
        }
    }
}
