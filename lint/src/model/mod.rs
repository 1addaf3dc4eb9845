//! The semantic model of a crate's functions: what rules query.
//!
//! - [`build`](self::build) is the one traversal: it turns each function of a parsed file into a
//!   [`FnModel`], knowing Rust and asking [`crate::frameworks`] what calls mean.
//! - [`link`] resolves calls to the crate's own functions and applies their summaries, then
//!   computes which values carry an autograd graph. After it, models are read-only: their fields
//!   are private to this module and rules use the query methods of [`FnModel`].
//! - [`rust`] is the Rust-language vocabulary the traversal needs.

mod build;
mod graph;
mod link;
pub mod rust;

use std::sync::Arc;

pub use build::pat_idents;
pub(crate) use build::{is_test_attr, registers};
pub use graph::{
    Binding, BindingId, BindingKind, Blend, CallKind, Copied, FieldStore, FnModel, Iteration, KeptCopy, LoopId,
    ParamRewrite, Span, StateCall, Store, Taint, Through, TrainingCall, TrainingCallKind, UseAfterBackward,
    VarCreation, VarRoot, VocabCall,
};
pub use link::{CrateNames, crate_names};

use crate::frameworks::Spec;
use crate::source::SourceFile;

/// Builds the models of every function, method and nested function in `file` (not yet linked:
/// see [`link`]). `known`: the framework was detected or configured, not guessed; `offset` is
/// added to every byte position; `names` comes from [`crate_names`].
pub fn function_models(
    file: &syn::File,
    spec: &'static Spec,
    known: bool,
    offset: usize,
    names: &CrateNames,
) -> Vec<FnModel> {
    build::function_graphs(file, spec, known, offset, names)
}

/// Links calls across the crate's files and completes the models; after this they are only read.
/// A bug here falls back to per-function analysis instead of crashing the run.
pub fn link(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    autodiff_fields: &[(String, String)],
    module_types: &[String],
    field_types: &[(String, String, String)],
    generic_fields: &crate::type_graph::GenericFields,
    names: &CrateNames,
) {
    let aliases = &names.alias_names;
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        link::link(files, autodiff_fields, module_types, field_types, generic_fields, aliases)
    }))
    .is_err()
    {
        for (_, models) in files.iter_mut() {
            models.iter_mut().for_each(FnModel::propagate);
        }
    }
}

#[cfg(test)]
mod tests;
