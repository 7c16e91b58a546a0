//! sr-bench: the SR syntax benchmark for quantized sentence encoders, in the browser and natively.
//!
//! Layers (arrows point one way):
//! - [`model`]: the self-describing GGUF model file, tokenizer, batching, pooling — backend-neutral.
//! - [`backend`]: runs an encoder forward pass (CPU via candle and our wasm kernels, WebGPU
//!   via wgpu) and owns backend selection ([`backend::BackendStatus`]).
//! - [`scoring`]: a model (or its syntax-blind baseline) as the benchmark's encoder: the one
//!   place where `model` meets `eval`.
//! - [`explain`]: token-pair contributions, word-order probes, the layer probe (model + eval).
//! - [`error`]: error codes chosen where a failure happens, handed to the page.
//! - [`eval`]: datasets, metrics and the benchmark runner — pure Rust, parses bytes, no I/O.
//! - `wasm` (wasm32 only): the thin wasm-bindgen layer the web app calls.
//! - `convert`, `cli` (native only): model conversion from the pinned wheels and the command line.

pub mod backend;
pub mod error;
pub mod eval;
pub mod explain;
pub mod model;
pub mod scoring;

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
#[cfg(not(target_arch = "wasm32"))]
pub mod convert;
#[cfg(target_arch = "wasm32")]
pub mod wasm;
