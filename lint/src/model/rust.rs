//! Rust-language vocabulary the model needs (no framework names: those live in
//! [`crate::frameworks`]).

/// Types whose values are host data, never a tensor: numbers, `bool`, characters and strings.
pub const HOST_TYPES: &[&str] = &[
    "f16", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
    "bool", "char", "String", "str",
];

/// Whether a type name is a host type (see [`HOST_TYPES`]).
pub fn is_host_type(name: &str) -> bool {
    HOST_TYPES.contains(&name)
}
