//! GPU models (`models/*.toml`) and the occupancy calculator.
