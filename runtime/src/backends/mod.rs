//! Memory backends, one per file.

pub mod cuda;
pub mod host;
