//! Keeps libtorch_cuda in the binary's needed libraries. torch-sys asks to link it, but rustc
//! passes `--as-needed` and no symbol of it is referenced, so the linker would drop it and
//! libtorch would then see no CUDA device. libtorch_cuda's own CUDA dependencies (cuDNN, NCCL,
//! cuBLAS, …) are not on this machine: they are left for the dynamic loader to find at run time.
fn main() {
    println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-ltorch_cuda,-ltorch_cpu,-lc10_cuda,--as-needed");
    println!("cargo:rustc-link-arg=-Wl,--allow-shlib-undefined");
}
