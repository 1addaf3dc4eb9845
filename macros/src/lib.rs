//! `#[mem_guard]`: see the `memlint` crate.
use proc_macro::TokenStream;

#[proc_macro_attribute]
pub fn mem_guard(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
