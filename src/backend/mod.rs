//! Backends run the encoder's forward pass behind [`crate::model::EncoderBackend`].
//! `cpu`: candle on the CPU (wasm SIMD in the browser); `webgpu`: WGSL kernels on wgpu, with
//! automatic CPU fallback (`gpu`, `auto`).

pub mod cpu;
pub mod webgpu;

use anyhow::{bail, Result};

use crate::model::{Embedder, EncoderConfig, ModelFile, ModelInfo};

/// Which backend runs the forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Cpu,
    /// The WebGPU backend; loading fails without an adapter. A device failure during a run
    /// still redoes the batch on the CPU.
    Gpu,
    /// The GPU when an adapter exists, else the CPU (the reason is reported).
    Auto,
}

impl std::str::FromStr for BackendKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            "auto" => Ok(Self::Auto),
            other => bail!("unknown backend '{other}' (expected: cpu, gpu, auto)"),
        }
    }
}

/// How quantized linear layers are computed.
///
/// Measured on all-MiniLM-L6-v2 q8_0 (82 reference texts): `F32` keeps the parity bound
/// (min cosine 0.99946) and is ~5× faster natively; `Quantized` also rounds the activations
/// to 8 bits in candle's int8 dot products (min cosine 0.9976) but keeps weights at ~1 byte each.
/// `Streaming` gives exactly `F32`'s numbers in the quantized file's memory: each weight stays
/// quantized (in the model file's own bytes when the backend holds the file, see
/// `cpu::load_shared`) and is dequantized to f32 just before its product, then dropped (extra
/// memory: one weight matrix at a time, at most 9.4 MB for mpnet's FFN).
///
/// [`load_embedder`] picks the mode per model with [`MatmulMode::for_model`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatmulMode {
    /// Weights are dequantized to f32 once at load; products run in f32.
    #[default]
    F32,
    /// Weights stay quantized; candle's quantized matmul (activations rounded to q8).
    Quantized,
    /// Weights stay quantized; each is dequantized to f32 per product (same numbers as `F32`).
    Streaming,
}

impl MatmulMode {
    /// Dense f32 weights are kept only while they take at most this many bytes.
    pub const DENSE_LIMIT_BYTES: usize = 256 << 20;

    /// Bytes the encoder's linear weights take once dequantized to f32:
    /// per layer q, k, v, o (h×h) and the two FFN matrices (h×i).
    pub fn dense_weight_bytes(config: &EncoderConfig) -> usize {
        let (h, i) = (config.hidden_size, config.intermediate_size);
        4 * config.num_hidden_layers * (4 * h * h + 2 * h * i)
    }

    /// The default for a model: `F32` (dense: fastest, no per-product work) while the
    /// dequantized linear weights take at most [`Self::DENSE_LIMIT_BYTES`], `Streaming` beyond.
    ///
    /// all-MiniLM-L6-v2 (42 MB dense) stays dense in every dtype; all-mpnet-base-v2 (340 MB
    /// dense, ~3× its q8_0 file, all of it wasm memory in the browser) streams in every dtype:
    /// the weights then live in the file's bytes only (q8_0 in Chromium: 171 MB of wasm memory
    /// after load, 1.45× the file). Measured natively (2 cores, 800 SR sentences, batch 32),
    /// streaming costs mpnet q8_0 3 % (43.5 → 42.1 sentences/s), its f32 file 12 %
    /// (42.8 → 37.5) and MiniLM q8_0 5 % (245 → 231); at batch 8 mpnet q8_0 loses 24 %
    /// (36.5 → 27.7): the dequantization is paid once per batch.
    pub fn for_model(_info: &ModelInfo, config: &EncoderConfig) -> Self {
        if Self::dense_weight_bytes(config) <= Self::DENSE_LIMIT_BYTES {
            Self::F32
        } else {
            Self::Streaming
        }
    }
}

impl std::str::FromStr for MatmulMode {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "f32" => Ok(Self::F32),
            "quantized" => Ok(Self::Quantized),
            "streaming" => Ok(Self::Streaming),
            other => bail!("unknown matmul mode '{other}' (expected: f32, quantized, streaming)"),
        }
    }
}

/// Parses a model file and builds an [`Embedder`] on the chosen backend, with the matmul mode
/// [`MatmulMode::for_model`] picks for it.
pub fn load_embedder(bytes: Vec<u8>, kind: BackendKind) -> Result<Embedder> {
    let file = ModelFile::from_bytes(bytes)?;
    let matmul = MatmulMode::for_model(&file.info, &file.config);
    build_embedder(file, kind, matmul)
}

/// [`load_embedder`] with an explicit matmul mode (benchmarks compare them).
pub fn load_embedder_with(
    bytes: Vec<u8>,
    kind: BackendKind,
    matmul: MatmulMode,
) -> Result<Embedder> {
    build_embedder(ModelFile::from_bytes(bytes)?, kind, matmul)
}

fn build_embedder(file: ModelFile, kind: BackendKind, matmul: MatmulMode) -> Result<Embedder> {
    let word_embeddings = Embedder::load_word_embeddings(&file)?;
    match kind {
        BackendKind::Cpu => {
            // Shared with the backend: `Streaming` weights stay in the file's bytes.
            let file = std::sync::Arc::new(file);
            let backend = cpu::load_shared(file.clone(), word_embeddings.clone(), matmul)?;
            Embedder::new(&file, word_embeddings, backend)
        }
        BackendKind::Gpu | BackendKind::Auto => load_gpu_embedder(file, kind, matmul),
    }
}

/// `gpu` / `auto` natively: blocks on the adapter and device requests and reports the adapter
/// (and any fallback) on stderr. `SR_BENCH_NO_GPU` forces "no adapter".
#[cfg(not(target_arch = "wasm32"))]
fn load_gpu_embedder(file: ModelFile, kind: BackendKind, matmul: MatmulMode) -> Result<Embedder> {
    let options = webgpu::GpuOptions::from_env();
    let (embedder, auto) =
        pollster::block_on(webgpu::embedder_from_file(file, kind, matmul, &options))?;
    for notice in auto.status().notices {
        eprintln!("sr-bench: {notice}");
    }
    Ok(embedder)
}

/// In the browser the GPU backend loads asynchronously (`webgpu::load_embedder_async`;
/// `Model.load_with_backend` in JS).
#[cfg(target_arch = "wasm32")]
fn load_gpu_embedder(
    _file: ModelFile,
    _kind: BackendKind,
    _matmul: MatmulMode,
) -> Result<Embedder> {
    bail!("in the browser the gpu/auto backends load asynchronously: use Model.load_with_backend")
}
