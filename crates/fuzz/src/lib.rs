//! The fuzz campaign of `docs/fuzzing.md`, on stable Rust: no coverage
//! instrumentation, no nightly toolchain. A [`Target`] is one decoder or
//! parser with its corpus (seeds from `traces/`, `csr-maps/` and the
//! timing defaults), a generator of fresh inputs and an `exec` that feeds
//! one input through the library and checks its invariants. [`campaign`]
//! drives a target with seeds, generated and mutated inputs for a time
//! budget, on a worker thread, and checks every input for
//!
//! - no panic (caught and reported with the input),
//! - no broken invariant (`exec` returns `Err`: a round trip that differs),
//! - bounded time (each input within [`Budget::input_timeout`]),
//! - bounded memory (resident set growth from `/proc/self/status`).
//!
//! A finding is shrunk (panics and broken checks) and written to
//! `target/fuzz-findings/TARGET/`. `cargo xtask fuzz` runs the campaign;
//! `tests/short.rs` runs a few seconds of every target in `cargo test`.

pub mod corpus;
pub mod harness;
pub mod mutate;
pub mod targets;

pub use harness::{Budget, Finding, FindingKind, Report, Target, campaign};
pub use mutate::Rng;
