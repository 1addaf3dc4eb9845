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

/// Methods through which a store receiver still names the same place.
pub const PLACE_METHODS: &[&str] = &[
    "borrow_mut",
    "lock",
    "write",
    "get_mut",
    "as_mut",
    "unwrap",
    "expect",
    "entry",
    "last_mut",
    "first_mut",
    "deref_mut",
    "or_default",
    "get_or_insert_with",
    "or_insert_with",
    "or_insert_with_key",
    "as_deref_mut",
];

/// Methods that store their (last) argument into the receiver.
pub const STORE_METHODS: &[&str] =
    &["push", "push_back", "push_front", "insert", "extend", "append", "extend_from_slice", "or_insert"];

/// Functions that wrap their argument without computing.
pub const WRAPPERS: &[&str] = &[
    "Some",
    "Ok",
    "Err",
    "Box::new",
    "Rc::new",
    "Arc::new",
    "RefCell::new",
    "Mutex::new",
    "Cell::new",
    "RwLock::new",
    "Rc::clone",
    "Arc::clone",
    "identity",
];

/// Methods that empty a collection.
pub const CLEAR_METHODS: &[&str] = &["clear", "drain", "truncate"];

/// The standard library's collections, strings and handles: a binding declared with one says
/// nothing of which collection it is.
const STD_CONTAINERS: &[&str] = &[
    "Vec",
    "VecDeque",
    "HashMap",
    "BTreeMap",
    "HashSet",
    "BTreeSet",
    "BinaryHeap",
    "LinkedList",
    "String",
    "Option",
    "Box",
    "Rc",
    "Arc",
    "RefCell",
    "Cell",
    "Mutex",
    "RwLock",
];

/// Whether `ty` (a declared type's name) is one of the standard library's containers.
pub fn is_std_collection(ty: &str) -> bool {
    STD_CONTAINERS.contains(&ty)
}

/// Methods that take the oldest or chosen elements out of a collection (a window kept to a
/// size). Not `pop()`: taking the last element out (`let Some(last) = self.history.pop()`) leaves
/// the rest.
pub const SHRINK_METHODS: &[&str] = &["pop_front", "remove", "swap_remove", "retain", "split_off"];

/// Methods whose closure argument runs only when the receiver holds nothing yet.
pub const LAZY_INIT_METHODS: &[&str] =
    &["unwrap_or_else", "get_or_insert_with", "or_insert_with", "or_else", "map_or_else", "get_or_init"];

/// Methods that copy their receiver.
pub const COPY_METHODS: &[&str] = &["clone", "to_owned"];

/// Generic types whose methods are reached through their first type argument (after `unwrap`,
/// `lock` or `Deref`): a value declared `Option<&Tokenizer>` is used as a `Tokenizer`.
pub const TRANSPARENT_WRAPPERS: &[&str] = &["Option", "Box", "Rc", "Arc", "RefCell", "Mutex", "RwLock", "Cow"];

/// Methods that hand on their receiver's value (unwrapped or copied), not a new one.
pub const UNWRAP_METHODS: &[&str] = &[
    "unwrap",
    "expect",
    "unwrap_or",
    "unwrap_or_else",
    "unwrap_or_default",
    "clone",
    "to_owned",
    "as_ref",
    "as_mut",
    "as_deref",
    "borrow",
    "borrow_mut",
];

/// `Result`/`Option` adapters that hand on the success value unchanged (only the error or the
/// wrapper changes): `make::<B>(..).map_err(..)?` is still what `make::<B>` made. A `match`: it
/// runs for many method calls.
pub fn is_pass_on(name: &str) -> bool {
    matches!(
        name,
        "map_err"
            | "context"
            | "with_context"
            | "wrap_err"
            | "wrap_err_with"
            | "ok"
            | "ok_or"
            | "ok_or_else"
            | "inspect"
            | "inspect_err"
    )
}

/// Whether a method hands on its receiver's value: [`UNWRAP_METHODS`] or [`is_pass_on`].
pub fn hands_on_receiver(name: &str) -> bool {
    UNWRAP_METHODS.contains(&name) || is_pass_on(name)
}

/// Iterator methods that hand their closure a value of their own first argument as the closure's
/// first parameter (rayon: `(0..n).into_par_iter().map_with(model, |model, i| ..)`).
pub const WITH_STATE_METHODS: &[&str] = &["map_with", "for_each_with", "try_for_each_with", "fold_with"];

/// Iterator methods that call their closure once per element (`xs.iter().map(|x| ..)`, rayon's
/// `par_iter().for_each(..)`): on an iterator, the closure's body is a loop body.
pub const PER_ELEMENT_METHODS: &[&str] = &[
    "map",
    "for_each",
    "try_for_each",
    "filter_map",
    "flat_map",
    "filter",
    "fold",
    "try_fold",
    "scan",
    "map_while",
    "take_while",
    "skip_while",
    "find_map",
    "any",
    "all",
    "inspect",
    "map_with",
    "for_each_with",
    "try_for_each_with",
    "fold_with",
    "map_init",
    "for_each_init",
];

/// [`PER_ELEMENT_METHODS`] whose result holds only what their closure returns (`map`, not
/// `filter` or `inspect`, which hand on the receiver's elements).
pub const YIELDING_METHODS: &[&str] =
    &["map", "filter_map", "flat_map", "map_while", "find_map", "map_with", "map_init"];

/// Methods that make an iterator of a collection, range or reader (the receiver of a
/// [`PER_ELEMENT_METHODS`] call is an iterator when its chain starts with one of these).
const ITERATOR_SOURCES: &[&str] = &[
    "iter",
    "iter_mut",
    "into_iter",
    "par_iter",
    "par_iter_mut",
    "into_par_iter",
    "par_chunks",
    "par_bridge",
    "chunks",
    "chunks_exact",
    "windows",
    "drain",
    "values",
    "values_mut",
    "keys",
    "lines",
    "chars",
    "bytes",
];

/// Iterator adapters that hand on an iterator (the chain stays one).
const ITERATOR_ADAPTERS: &[&str] = &[
    "map",
    "filter",
    "filter_map",
    "flat_map",
    "flatten",
    "enumerate",
    "zip",
    "rev",
    "skip",
    "take",
    "step_by",
    "chain",
    "cycle",
    "cloned",
    "copied",
    "peekable",
    "map_while",
    "take_while",
    "skip_while",
    "scan",
    "inspect",
    "with_min_len",
    "with_max_len",
];

/// Whether `e` is an iterator by its spelling: a range, or a method chain that starts at an
/// iterator of a collection (`batches.iter().enumerate()`) and goes through adapters only
/// (`xs.iter().next()` is an `Option`, `opt.take()` is not an iterator).
pub fn is_iterator_chain(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Paren(p) => is_iterator_chain(&p.expr),
        syn::Expr::Range(_) => true,
        syn::Expr::MethodCall(m) => {
            let name = m.method.to_string();
            if ITERATOR_SOURCES.contains(&name.as_str()) {
                true
            } else if ITERATOR_ADAPTERS.contains(&name.as_str()) {
                // `Option::take()`/`Option::map(..)` have no argument / one closure too: only a
                // chain that reaches a source counts.
                is_iterator_chain(&m.receiver)
            } else {
                false
            }
        }
        _ => false,
    }
}

/// Iterator methods whose closure's first parameter starts as their first argument
/// (`fold(init, |acc, x| ..)`).
/// Traits of the standard library and of common crates that a parameter's trait object or `impl
/// Trait` may name without holding a model (`f: impl Fn(&Tensor) -> Tensor`, `out: &mut dyn
/// Write`, `rng: &mut impl Rng`).
pub const STD_TRAITS: &[&str] = &[
    "Fn",
    "FnMut",
    "FnOnce",
    "Iterator",
    "IntoIterator",
    "DoubleEndedIterator",
    "ExactSizeIterator",
    "AsRef",
    "AsMut",
    "Borrow",
    "Into",
    "From",
    "ToString",
    "Display",
    "Debug",
    "Write",
    "Read",
    "BufRead",
    "Seek",
    "Error",
    "Any",
    "Send",
    "Sync",
    "Clone",
    "Hash",
    "Rng",
    "RngCore",
    "CryptoRng",
    "Serialize",
    "Deserialize",
    "Future",
];

/// Lookups by key (`grads.get(var)`, `map.remove(&i)`, `tensor.get(0)`): the result is part
/// of the receiver, whatever the key is made of.
pub const KEY_LOOKUP_METHODS: &[&str] = &["get", "get_mut", "remove", "get_key_value", "contains_key", "get_id"];

pub const SEEDED_FOLD_METHODS: &[&str] = &["fold", "try_fold", "scan"];

/// Methods that apply a function to the value inside a wrapper (`Result::map`, `Option::map`).
pub const UNWRAP_MAP_METHODS: &[&str] = &["map", "and_then", "map_ok"];

/// Whether byte `b` can be part of an identifier: ASCII alphanumerics and `_`, and every byte of
/// a non-ASCII character (identifiers may hold Unicode letters; other non-ASCII characters sit in
/// comments and strings, where a name read a little too long does no harm).
fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The length in bytes of the identifier `s` starts with (0: none). Works on bytes: the end is at
/// an ASCII byte, so always at a character boundary.
pub fn ident_len(s: &str) -> usize {
    s.bytes().position(|b| !ident_byte(b)).unwrap_or(s.len())
}

/// The type name a field's type text holds values of: through owning and sharing wrappers and
/// sequences (`Vec<Cell<B>>`, `[Box<Cell>; 4]`, `Option<Cell>` → `Cell`).
pub fn element_head(mut ty: &str) -> &str {
    for _ in 0..8 {
        ty = ty.trim_start().trim_start_matches('&').trim_start();
        if let Some(lifetime) = ty.strip_prefix('\'') {
            ty = lifetime[ident_len(lifetime)..].trim_start();
        }
        ty = ty.strip_prefix("mut ").unwrap_or(ty).trim_start();
        if let Some(inner) = ty.strip_prefix('[') {
            ty = inner;
            continue;
        }
        let head = &ty[..ident_len(ty)];
        match (head, ty[head.len()..].trim_start().strip_prefix('<')) {
            ("Vec" | "VecDeque" | "Box" | "Option" | "Arc" | "Rc" | "RefCell" | "Mutex" | "RwLock", Some(inner)) => {
                ty = inner;
            }
            _ => return head,
        }
    }
    &ty[..ident_len(ty)]
}

/// Where the identifier that `s` ends with starts (`s.len()`: none), at a character boundary.
pub fn ident_start(s: &str) -> usize {
    s.bytes().rposition(|b| !ident_byte(b)).map_or(0, |p| p + 1)
}

/// Type names of data pipelines (batchers, datasets, loaders), by their ending: made for a
/// backend, they make batches, not models.
const DATA_PIPELINE_ENDINGS: &[&str] = &["Batcher", "Dataset", "DataLoader", "Loader", "LoaderBuilder"];

/// Whether a type name names a data pipeline (see [`DATA_PIPELINE_ENDINGS`]).
pub fn is_data_pipeline_type(name: &str) -> bool {
    DATA_PIPELINE_ENDINGS.iter().any(|end| name.ends_with(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_read_by_bytes_on_character_boundaries() {
        assert_eq!(ident_len("agent_2: Agent"), 7);
        assert_eq!(ident_len("größe = 1"), "größe".len());
        assert_eq!(ident_len(" x"), 0);
        assert_eq!(ident_start("let größe"), 4);
        assert_eq!(ident_start("self.model"), 5);
        assert_eq!(ident_start("x "), 2);
    }

    #[test]
    fn element_types_are_read_through_wrappers_and_sequences() {
        assert_eq!(element_head("Vec<SsmLayer>"), "SsmLayer");
        assert_eq!(element_head("[Box<Cell<B>>; 4]"), "Cell");
        assert_eq!(element_head("Option<Arc<Mutex<Encoder>>>"), "Encoder");
        assert_eq!(element_head("&'a mut Vec<Cell>"), "Cell");
        assert_eq!(element_head("HashMap<String, Cell>"), "HashMap");
        assert_eq!(element_head("Tensor<B, 2>"), "Tensor");
    }
}
