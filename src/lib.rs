//! sr-bench: the SR syntax benchmark for quantized sentence encoders, in the browser and natively.
//!
//! Layers (arrows point one way):
//! - [`model`]: the self-describing GGUF model file, tokenizer, batching, pooling — backend-neutral.
//! - [`backend`]: runs an encoder forward pass (CPU via candle).
//! - [`eval`]: datasets, metrics and the benchmark runner — pure Rust, parses bytes, no I/O.
//! - `wasm` (wasm32 only): the thin wasm-bindgen layer the web app calls.
//! - `convert`, `cli` (native only): model conversion from the pinned wheels and the command line.

pub mod backend;
pub mod eval;
pub mod model;

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
#[cfg(not(target_arch = "wasm32"))]
pub mod convert;
#[cfg(target_arch = "wasm32")]
pub mod wasm;
