//! `#[mem_guard]`: the attribute of memlint's runtime guard. Use it through the `memlint` crate,
//! which documents it.
//!
//! `lib.rs` only wires: `args.rs` parses the attribute's arguments, `expand.rs` finds the sampled
//! loop, runs the static rules on the function and generates the guard.

mod args;
mod expand;
mod marks;

use proc_macro::TokenStream;

/// Samples memory once per iteration of a training loop (or once per call) and reports leaks.
/// See the `memlint` crate for the options.
#[proc_macro_attribute]
pub fn mem_guard(args: TokenStream, item: TokenStream) -> TokenStream {
    let original = proc_macro2::TokenStream::from(item.clone());
    let expanded = args::parse(args.into()).and_then(|args| expand::expand(args, item.into()));
    match expanded {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            // One error, and the function unchanged, so no follow-up errors about a missing item.
            let mut tokens = error.to_compile_error();
            tokens.extend(original);
            tokens.into()
        }
    }
}
