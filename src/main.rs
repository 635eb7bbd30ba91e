//! Thin binary: all behaviour lives in the library (`gpumodel::cli`).
//!
//! The binary allocates through mimalloc: the trace reader's multi-megabyte text chunks
//! and the engine's per-run state are allocated and dropped again and again, and glibc's
//! allocator returns them to the OS each time, so every run paid the page faults and
//! zeroing anew (BENCHMARKS.md, "The allocator": 1.2x on the reference kernels, outputs
//! byte-identical). The library sets no allocator; embedders choose their own.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(gpumodel::cli::main());
}
