//! Class-pattern matching (Punyala et al., seed 001 §III-B): which applications of a
//! waiting queue should share the GPU.
