//! Backends run the encoder's forward pass behind [`crate::model::EncoderBackend`].
//! `cpu`: candle on the CPU (wasm SIMD in the browser).

pub mod cpu;

use anyhow::{bail, Result};

use crate::model::{Embedder, ModelFile};

/// Which backend runs the forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Cpu,
}

impl std::str::FromStr for BackendKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cpu" => Ok(Self::Cpu),
            other => bail!("unknown backend '{other}' (expected: cpu)"),
        }
    }
}

/// How quantized linear layers are computed.
///
/// Measured on all-MiniLM-L6-v2 q8_0 (82 reference texts): `F32` keeps the parity bound
/// (min cosine 0.99946) and is ~5× faster natively; `Quantized` also rounds the activations
/// to 8 bits in candle's int8 dot products (min cosine 0.9976) but keeps weights at ~1 byte each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatmulMode {
    /// Weights are dequantized to f32 once at load; products run in f32.
    #[default]
    F32,
    /// Weights stay quantized; candle's quantized matmul (activations rounded to q8).
    Quantized,
}

impl std::str::FromStr for MatmulMode {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "f32" => Ok(Self::F32),
            "quantized" => Ok(Self::Quantized),
            other => bail!("unknown matmul mode '{other}' (expected: f32, quantized)"),
        }
    }
}

/// Parses a model file and builds an [`Embedder`] on the chosen backend.
pub fn load_embedder(bytes: Vec<u8>, kind: BackendKind) -> Result<Embedder> {
    load_embedder_with(bytes, kind, MatmulMode::default())
}

/// [`load_embedder`] with an explicit matmul mode (benchmarks compare both).
pub fn load_embedder_with(
    bytes: Vec<u8>,
    kind: BackendKind,
    matmul: MatmulMode,
) -> Result<Embedder> {
    let file = ModelFile::from_bytes(bytes)?;
    let word_embeddings = Embedder::load_word_embeddings(&file)?;
    let backend = match kind {
        BackendKind::Cpu => cpu::load(&file, word_embeddings.clone(), matmul)?,
    };
    Embedder::new(&file, word_embeddings, backend)
}
