//! Names the supported frameworks share: tensor methods and constructors, parameter types,
//! and the autodiff spellings found in types. Per-framework facts are in the framework's file.

/// Methods that move or borrow a value without computing (clones keep the graph).
pub const MOVE_METHODS: &[&str] = &[
    "clone",
    "shallow_clone",
    "to_owned",
    "borrow",
    "as_ref",
    "as_mut",
    "unwrap",
    "expect",
    "into",
    "iter",
    "into_iter",
    "collect",
    "copied",
    "cloned",
    "get",
    "first",
    "last",
    "as_tensor",
    "lock",
    "read",
    "deref",
    "take",
    "map",
];

/// Whether a method is one of the tensor methods common to the frameworks: never the crate's
/// own functions, so no call site is recorded for them (they are most method calls in ML code).
/// A `match`, not a scan of a list: it runs for every method call.
pub fn is_tensor_method(name: &str) -> bool {
    matches!(
        name,
        "add"
            | "sub"
            | "mul"
            | "div"
            | "matmul"
            | "broadcast_add"
            | "broadcast_sub"
            | "broadcast_mul"
            | "broadcast_div"
            | "sqr"
            | "sqrt"
            | "exp"
            | "log"
            | "relu"
            | "gelu"
            | "tanh"
            | "sigmoid"
            | "softmax"
            | "log_softmax"
            | "sum"
            | "sum_all"
            | "sum_keepdim"
            | "mean"
            | "mean_all"
            | "mean_keepdim"
            | "max"
            | "min"
            | "argmax"
            | "argmin"
            | "reshape"
            | "view"
            | "transpose"
            | "t"
            | "permute"
            | "narrow"
            | "squeeze"
            | "unsqueeze"
            | "flatten"
            | "flatten_all"
            | "contiguous"
            | "to_dtype"
            | "to_device"
            | "to_kind"
            | "neg"
            | "abs"
            | "powf"
            | "powf_scalar"
            | "affine"
            | "clamp"
            | "gather"
            | "index_select"
            | "cat"
            | "stack"
            | "chunk"
            | "split"
            | "slice"
            | "i"
            | "get"
            | "ge"
            | "gt"
            | "le"
            | "lt"
            | "eq"
            | "ne"
            | "map"
            | "and_then"
            | "ok"
            | "ok_or"
            | "unwrap_or"
            | "iter"
            | "enumerate"
            | "zip"
            | "filter"
            | "collect"
            | "len"
            | "cross_entropy_for_logits"
            | "mse_loss"
            | "nll_loss"
            | "backward"
            | "square"
            | "exp_"
            | "log_"
            | "expand"
            | "repeat"
            | "pad"
            | "mean_dim"
            | "sum_dim"
            | "max_dim"
            | "min_dim"
            | "powi"
            | "swap_dims"
            | "select"
    )
}

/// Methods that make a trainable parameter out of their receiver.
pub const PARAM_METHODS: &[&str] = &["set_requires_grad", "requires_grad_", "require_grad"];

/// Types whose constructors make trainable parameters.
pub const PARAM_TYPES: &[&str] = &["Var", "Param"];

/// Tensor types whose constructors make plain data.
pub const TENSOR_TYPES: &[&str] = &["Tensor", "Array"];

/// candle's recurrent cells (`candle_nn::rnn`): `cell.step(&x, &state)` runs one step of the
/// cell, a forward pass.
pub const RNN_CELL_TYPES: &[&str] = &["LSTM", "GRU"];

/// The functions that make them (`candle_nn::lstm(..)`, `rnn::gru(..)`).
pub const RNN_CELL_CONSTRUCTORS: &[&str] = &["lstm", "gru"];

/// Tensor constructors that make plain data (observations, batches, constants).
pub const DATA_CONSTRUCTORS: &[&str] = &[
    "new",
    "from_vec",
    "from_slice",
    "from_iter",
    "from_data",
    "from_floats",
    "from_ints",
    "from_bools",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "full",
    "arange",
    "arange_step",
    "rand",
    "randn",
    "rand_like",
    "randn_like",
    "eye",
    "of_slice",
    "from_array",
    "empty",
    "from_raw_buffer",
    "read_npy",
    "load",
    "from_primitive",
    "linspace",
    "random",
    "f_from_slice",
    "of_slice2",
    "from_slice2",
    "scalar_tensor",
];

/// Methods that leave the autodiff backend (burn `inner()`, `valid()`): a value computed with
/// them is not tracked.
pub const LEAVE_AUTODIFF_METHODS: &[&str] = &["inner", "valid"];

/// Associated functions of a tensor type that record an op on their arguments.
pub const TENSOR_OP_FUNCTIONS: &[&str] = &["cat", "stack"];

/// Modules whose functions are tensor ops on their arguments (`activation::softmax`).
pub const OP_MODULES: &[&str] = &["activation"];

/// Tensor methods that are sums or differences (the shape of a blend `a * (1 - tau) + b * tau`).
pub const ADDITIVE_METHODS: &[&str] = &["add", "sub", "lerp"];

/// Fields of layers that hold parameters (`linear.weight`).
pub const PARAM_FIELDS: &[&str] = &["weight", "bias", "gamma", "beta", "weights", "biases", "kernel"];

/// Whether a path segment names an autodiff backend: `AutodiffBackend` (and crate traits
/// extending it, `GaeAutodiffBackend`), `AutodiffModule`, `Autodiff<B>`, and their older names.
pub fn is_autodiff_name(name: &str) -> bool {
    name.ends_with("AutodiffBackend")
        || name == "AutodiffModule"
        || name == "Autodiff"
        // The names before burn called them `Autodiff*`: `ADBackendDecorator<B>`, `ADBackend`.
        || name == "ADBackendDecorator"
        || name.ends_with("ADBackend")
        || name == "ADModule"
}

/// burn modules that hold no parameter (activations, dropout, pooling, losses): a struct of
/// plain tensors that holds one still has no parameter.
pub const PARAMETER_FREE_MODULES: &[&str] = &[
    "Gelu",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Dropout",
    "LeakyRelu",
    "Silu",
    "SiLU",
    "HardSigmoid",
    "Softplus",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "MseLoss",
    "CrossEntropyLoss",
    "HuberLoss",
    "BinaryCrossEntropyLoss",
];

/// burn's backends without autodiff (`NdArray`, `Wgpu<f32>`, ..): a model made for one of them
/// (`cfg.init::<Wgpu>(&device)`, or through a crate alias of one) records no graph.
pub const PLAIN_BACKEND_NAMES: &[&str] = &[
    "NdArray", "Wgpu", "WebGpu", "Vulkan", "Metal", "Cuda", "CudaJit", "Rocm", "Hip", "HipJit", "LibTorch", "Candle",
    "Flex", "Remote", "Router",
];

/// How code names a gradient store it holds (`grads`, `self.grads`): a copy of one is a new
/// store.
pub const GRADS_NAME: &str = "grads";

/// The type of a gradient store (dfdx `Gradients<E, D>`): a binding declared with it, or made
/// by an allocation of one, is a store whatever its name.
pub const GRADS_TYPE: &str = "Gradients";
