//! Thin binary: all behaviour lives in the library (`gpumodel::cli`).

fn main() {
    std::process::exit(gpumodel::cli::main());
}
