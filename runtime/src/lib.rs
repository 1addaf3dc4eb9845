//! Runtime of `#[mem_guard]`.
