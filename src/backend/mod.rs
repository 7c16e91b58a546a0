//! Backends run the encoder's forward pass behind [`crate::model::EncoderBackend`].
//! `cpu`: candle on the CPU (our wasm SIMD kernels in the browser); `webgpu`: WGSL kernels on
//! wgpu, with the CPU behind it. This module owns backend selection: which backend a request
//! gets, when the CPU takes over, and the [`BackendStatus`] that says so.

pub mod cpu;
pub mod memory;
pub mod webgpu;

use anyhow::Result;
use serde::Serialize;

use crate::error::{coded, ErrorCode};
use crate::model::{EncoderConfig, LoadOptions, ModelFile, ModelInfo};

/// Which backend runs the forward pass. One vocabulary for the CLI, the wasm API and the
/// page: `cpu`, `webgpu`, `auto` (`gpu` is accepted as another name for `webgpu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Cpu,
    /// The WebGPU backend. Without an adapter, loading fails unless [`GpuFallback::UseCpu`]
    /// was asked for; a device failure during a run always redoes the batch on the CPU.
    WebGpu,
    /// The GPU when an adapter exists, else the CPU (the reason is reported).
    Auto,
}

impl BackendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::WebGpu => "webgpu",
            Self::Auto => "auto",
        }
    }

    /// What to do when the GPU cannot be used at load time: `auto` always takes the CPU;
    /// `webgpu` does when `cpu_fallback` is set (the page), else fails (the CLI).
    pub fn gpu_fallback(self, cpu_fallback: bool) -> GpuFallback {
        if self == Self::Auto || cpu_fallback {
            GpuFallback::UseCpu
        } else {
            GpuFallback::Fail
        }
    }
}

impl std::str::FromStr for BackendKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cpu" => Ok(Self::Cpu),
            "webgpu" | "gpu" => Ok(Self::WebGpu),
            "auto" => Ok(Self::Auto),
            other => Err(coded(
                ErrorCode::BadRequest,
                format!("unknown backend '{other}' (expected: cpu, webgpu, auto)"),
            )),
        }
    }
}

/// When the GPU cannot be used at load time (no WebGPU, no adapter, a refused device, an
/// architecture the GPU kernels lack, a failed upload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuFallback {
    /// Loading fails with the reason.
    Fail,
    /// The CPU runs the model; [`BackendStatus::fallback_reason`] says why.
    UseCpu,
}

/// Where the encoder runs and why: shown by the CLI on stderr and by the page.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BackendStatus {
    /// What was asked for: "cpu", "webgpu" or "auto".
    pub requested: String,
    /// Where batches run now: "webgpu" or "cpu".
    pub active: String,
    /// The adapter in use (absent when none was found).
    pub adapter: Option<webgpu::AdapterReport>,
    /// The adapter is a software fallback (CPU emulation): GPU speed figures mean little.
    pub software_adapter: bool,
    /// Why the CPU runs instead of the GPU (absent while the GPU runs).
    pub fallback_reason: Option<String>,
    /// Messages for users, oldest first (adapter choice, fallbacks).
    pub notices: Vec<String>,
    /// GPU memory the model holds now (the buffers created: weights, and the activations of
    /// the batches run so far); absent when the GPU is not used.
    pub gpu_memory: Option<webgpu::GpuMemory>,
}

impl BackendStatus {
    /// A model loaded for the CPU only.
    pub fn cpu_only() -> Self {
        Self {
            requested: BackendKind::Cpu.as_str().into(),
            active: BackendKind::Cpu.as_str().into(),
            adapter: None,
            software_adapter: false,
            fallback_reason: None,
            notices: vec![],
            gpu_memory: None,
        }
    }
}

/// How the CPU backend keeps quantized linear weights, named after what runs.
///
/// Measured on all-MiniLM-L6-v2 q8_0 (82 reference texts), both keep the parity bound (min
/// cosine 0.99946 natively). candle's own int8 matmul (which also rounds the activations to 8
/// bits: min cosine 0.9976) is not offered.
///
/// [`load_embedder`] picks the mode per model with [`MatmulMode::for_model`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatmulMode {
    /// Weights are unpacked once at load into what the product kernel reads: natively dense
    /// f32 for candle's threaded gemm; in wasm the file's q8_0/q4_0 integers packed for our
    /// int16 simd128 kernel (f32 files: packed f32).
    #[default]
    UnpackAtLoad,
    /// Weights stay quantized in the model file's bytes and are unpacked for each product,
    /// then dropped (extra memory: one weight matrix at a time, at most 9.4 MB for mpnet's
    /// FFN). Natively the same numbers as `UnpackAtLoad`.
    UnpackPerProduct,
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

    /// The default for a model: `UnpackAtLoad` (fastest, no per-product work) while the
    /// dequantized linear weights take at most [`Self::DENSE_LIMIT_BYTES`],
    /// `UnpackPerProduct` beyond.
    ///
    /// all-MiniLM-L6-v2 (42 MB dense) unpacks at load in every dtype; all-mpnet-base-v2 (340
    /// MB dense, ~3× its q8_0 file, all of it wasm memory in the browser) unpacks per product
    /// in every dtype: the weights then live in the file's bytes only (q8_0 in Chromium: 171
    /// MB of wasm memory after load, 1.45× the file). Measured natively (2 cores, 800 SR
    /// sentences, batch 32), per-product unpacking costs mpnet q8_0 3 % (43.5 → 42.1
    /// sentences/s), its f32 file 12 % (42.8 → 37.5) and MiniLM q8_0 5 % (245 → 231); at batch
    /// 8 mpnet q8_0 loses 24 % (36.5 → 27.7): the unpacking is paid once per batch.
    pub fn for_model(_info: &ModelInfo, config: &EncoderConfig) -> Self {
        if Self::dense_weight_bytes(config) <= Self::DENSE_LIMIT_BYTES {
            Self::UnpackAtLoad
        } else {
            Self::UnpackPerProduct
        }
    }
}

impl std::str::FromStr for MatmulMode {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "unpack-at-load" => Ok(Self::UnpackAtLoad),
            "unpack-per-product" => Ok(Self::UnpackPerProduct),
            other => Err(coded(
                ErrorCode::BadRequest,
                format!(
                    "unknown matmul mode '{other}' (expected: unpack-at-load, unpack-per-product)"
                ),
            )),
        }
    }
}

/// Parses a model file and builds an [`Embedder`](crate::model::Embedder) on the chosen
/// backend, with the matmul mode [`MatmulMode::for_model`] picks for it. `webgpu` fails
/// without an adapter; `auto` takes the CPU. Natively only: in the browser the GPU loads
/// asynchronously ([`webgpu::load_embedder_async`]).
pub fn load_embedder(bytes: Vec<u8>, kind: BackendKind) -> Result<crate::model::Embedder> {
    load_embedder_with_options(bytes, kind, LoadOptions::default())
}

/// [`load_embedder`] with the user's choices (e.g. a `max_seq_length` for a llama.cpp file).
pub fn load_embedder_with_options(
    bytes: Vec<u8>,
    kind: BackendKind,
    options: LoadOptions,
) -> Result<crate::model::Embedder> {
    let file = ModelFile::from_bytes_with(bytes, options)?;
    let matmul = MatmulMode::for_model(&file.info, &file.config);
    build_embedder(file, kind, matmul)
}

/// [`load_embedder`] with an explicit matmul mode (benchmarks and tests compare them).
pub fn load_embedder_with(
    bytes: Vec<u8>,
    kind: BackendKind,
    matmul: MatmulMode,
) -> Result<crate::model::Embedder> {
    build_embedder(ModelFile::from_bytes(bytes)?, kind, matmul)
}

fn build_embedder(
    file: ModelFile,
    kind: BackendKind,
    matmul: MatmulMode,
) -> Result<crate::model::Embedder> {
    match kind {
        BackendKind::Cpu => cpu::embedder(file, matmul),
        BackendKind::WebGpu | BackendKind::Auto => {
            load_gpu_embedder(file, kind, matmul).map(|(embedder, _)| embedder)
        }
    }
}

/// An embedder on the GPU backend and the handle that reports its [`BackendStatus`].
pub type GpuEmbedder = (
    crate::model::Embedder,
    std::rc::Rc<webgpu::GpuWithCpuFallback>,
);

/// [`load_embedder_with_options`] for `webgpu` / `auto` natively, with the handle that reports
/// the [`BackendStatus`] (the benchmark prints it after the run: memory, adapter, fallback).
#[cfg(not(target_arch = "wasm32"))]
pub fn load_gpu_embedder_with_status(
    bytes: Vec<u8>,
    kind: BackendKind,
    options: LoadOptions,
) -> Result<GpuEmbedder> {
    let file = ModelFile::from_bytes_with(bytes, options)?;
    let matmul = MatmulMode::for_model(&file.info, &file.config);
    load_gpu_embedder(file, kind, matmul)
}

/// `webgpu` / `auto` natively: blocks on the adapter and device requests and reports the
/// adapter (and any fallback) on stderr. `SR_BENCH_NO_GPU` forces "no adapter".
#[cfg(not(target_arch = "wasm32"))]
fn load_gpu_embedder(
    file: ModelFile,
    kind: BackendKind,
    matmul: MatmulMode,
) -> Result<GpuEmbedder> {
    let options = webgpu::GpuOptions::from_env();
    let (embedder, gpu) = pollster::block_on(webgpu::embedder_from_file(
        file,
        kind,
        kind.gpu_fallback(false),
        matmul,
        &options,
    ))?;
    for notice in gpu.status().notices {
        eprintln!("sr-bench: {notice}");
    }
    Ok((embedder, gpu))
}

#[cfg(target_arch = "wasm32")]
fn load_gpu_embedder(
    _file: ModelFile,
    _kind: BackendKind,
    _matmul: MatmulMode,
) -> Result<GpuEmbedder> {
    Err(coded(
        ErrorCode::BadRequest,
        "in the browser the webgpu/auto backends load asynchronously: use Model.load_with_backend",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_vocabulary_with_gpu_as_an_alias() {
        for (word, kind) in [
            ("cpu", BackendKind::Cpu),
            ("webgpu", BackendKind::WebGpu),
            ("gpu", BackendKind::WebGpu),
            ("auto", BackendKind::Auto),
        ] {
            assert_eq!(word.parse::<BackendKind>().unwrap(), kind);
        }
        assert_eq!(BackendKind::WebGpu.as_str(), "webgpu");
        let err = "cuda".parse::<BackendKind>().unwrap_err();
        assert_eq!(crate::error::code_of(&err), ErrorCode::BadRequest);
    }

    #[test]
    fn only_webgpu_without_cpu_fallback_fails_without_a_gpu() {
        assert_eq!(BackendKind::WebGpu.gpu_fallback(false), GpuFallback::Fail);
        assert_eq!(BackendKind::WebGpu.gpu_fallback(true), GpuFallback::UseCpu);
        assert_eq!(BackendKind::Auto.gpu_fallback(false), GpuFallback::UseCpu);
    }
}
