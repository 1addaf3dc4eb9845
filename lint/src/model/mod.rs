//! The semantic model of a crate's functions: what rules query.

pub mod rust;

#[cfg(test)]
mod tests;
