//! Procedural synthetic kernels from a TOML spec.
