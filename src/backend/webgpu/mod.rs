//! The WebGPU backend: the same BERT, MPNet, nomic-bert, ModernBERT, Qwen3 and EmbeddingGemma
//! models as `backend::cpu`, as WGSL compute kernels on
//! wgpu (Vulkan/Metal/DX12 natively, the browser's WebGPU in wasm), with the CPU
//! behind it ([`GpuWithCpuFallback`]).
//!
//! # Design
//!
//! * **Weights.** Uploaded once per model ([`weights`]: one upload per architecture), linear
//!   layers **as the file stores them**: f32, or the file's q8_0 / q4_0 blocks
//!   (34 / 18 bytes per 32 weights, the bytes read as u32 words), dequantized inside the
//!   matmul kernel while a tile is loaded (f16 scale by `unpack2x16float`), so a quantized
//!   model takes 3.8× / 7.1× less GPU memory for its matrices than f32. The dequantized values
//!   are exactly the CPU backend's (`MatmulMode::UnpackAtLoad` dequantizes the same blocks to
//!   f32), so parity is bounded by summation order only. Q, K and V are fused into one
//!   `[3·hidden, hidden]` matrix (blocks run along rows, so fusing quantized parts is
//!   concatenation). The token table (30,522 rows) stays on the CPU: a batch's rows are
//!   gathered there exactly as the CPU backend does and uploaded (hidden·4 bytes a token), so
//!   the GPU never holds it. MPNet differs from BERT only in its weights: positions start
//!   after the padding index (right padding makes token i's position `pad + 1 + i`), no token
//!   types, and a relative-position bias per head and distance (its T5 buckets resolved on the
//!   CPU once per model, 49 KB) that the attention kernel adds to every score. nomic-bert and
//!   ModernBERT have no position table: rotary positions (their cosines and sines computed on
//!   the CPU by the CPU backend's own `Rope`, per batch for its length, and written beside the
//!   inputs); their bias-free matrices get zero bias buffers, their gated feed-forwards one
//!   `[2·inter, hidden]` matrix (gate rows first). nomic-bert's token-type row and ModernBERT's
//!   embedding norm are applied on the CPU to the gathered rows.
//! * **Kernels** (`wgsl/`): a tiled matmul (64×64 output tile per 16×16 workgroup, 4×4 per
//!   thread, K in steps of 16 through workgroup memory; edges zero-padded, so any m, n, k)
//!   with a fused epilogue (bias, then exact-erf GELU or a residual add); LayerNorm (one
//!   workgroup per row, two-pass mean/variance); masked multi-head attention (one workgroup
//!   per query × head × sentence: scores in workgroup memory, max-subtracted softmax, masked
//!   keys excluded, MPNet's relative bias added, ModernBERT's sliding window on its local
//!   layers); rotary positions in place on Q and K (`rope.wgsl`, NeoX halves); the gated
//!   middle of a feed-forward (`glu.wgsl`: GELU or SiLU of the gate times the up half); the
//!   embedding sum (word + position + token
//!   type); pooling over the mask (mean, first token, last token or max: every mode the
//!   loader accepts) fused with L2 normalisation. GELU uses Numerical Recipes' `erfcc` (fractional error
//!   < 1.2e-7; the kernel test measures the GELU error on a dense grid).
//! * **Dispatches.** Per layer 7: QKV matmul, attention, output projection + residual,
//!   LayerNorm, FFN-in + GELU, FFN-out + residual, LayerNorm; plus 2 for the embeddings and 1
//!   for pooling: 45 for MiniLM, all in one compute pass, **one submit and one readback per
//!   batch** (`batch × hidden` floats). nomic-bert adds the rotary and gated steps per layer;
//!   ModernBERT records its pre-norm order ([`graph`]) and a final LayerNorm, with its
//!   activations in f32 (its residual stream is bound where activations are read). Qwen3 and
//!   EmbeddingGemma record the decoders' RMSNorm layers (stacked grouped-query QKV, per-head
//!   norms fused with the rotary step, causal or windowed attention, Gemma's post-norms adding
//!   the residual), f32 too; Gemma's Dense head runs on the CPU on the pooled vectors read back.
//! * **Length.** The attention kernel keeps a row of scores in workgroup memory: up to 512
//!   tokens ([`kernels::ATTENTION_MAX_SEQ`]). A batch of longer sentences runs on the CPU
//!   ([`GpuWithCpuFallback::encode_batches`], with a notice); the GPU goes on with the rest.
//! * **Buffers.** Activations (`[rows, width]` f32 or f16), the mask and the readback buffer are
//!   reused across batches (a [`graph`] of recorded steps): allocated for the first batch, grown
//!   to the next power of two when a batch has more tokens; their bind groups are built once
//!   with them. Per batch the word rows, the mask and one buffer of parameter blocks (one
//!   256-byte-aligned slot per dispatch, a single write) are written. Each kernel's parameters
//!   are one `#[repr(C)]` struct (in its kernel's file under [`kernels`]) from which its WGSL
//!   `Params` is generated.
//! * **Memory** ([`GpuMemory`]). Every buffer is created through `buffers/`, which counts
//!   its bytes by use (weights, activations, params, readback) for `backend_status`. At load
//!   the weights and two full-batch graphs are first built as a *plan* (same code, placeholder
//!   buffers) and refused with the figures (`out-of-memory`) when the largest buffer exceeds
//!   the adapter's limits or the total exceeds `GpuOptions::memory_budget`.
//! * **Two batches in flight.** Two graphs: batch i+1 is written, recorded and submitted into
//!   one before batch i is read back from the other (`EncoderBackend::encode_many`).
//! * **Optional features.** `subgroups`, when the adapter has it, for the LayerNorm,
//!   pooling and softmax reductions (`wgsl/reduce_subgroup.wgsl`; `GpuOptions::plain_kernels`
//!   keeps `wgsl/reduce.wgsl`). `shader-f16`, when the adapter has it, stores the activations
//!   between kernels (all but the f32 residual stream `x`) as f16, computed in f32
//!   ([`kernels::Activations`]; off with `plain_kernels` or `GpuOptions::no_f16`,
//!   `SR_BENCH_GPU_F16=0`). Natively, wgpu's experimental cooperative matrices (tensor cores)
//!   with 16 × 16 f16 blocks and subgroups of 32: the matmul on matrix
//!   units (`wgsl/matmul_coop.wgsl`), used once it matched the tiled matmul on the device in
//!   a self-check at start (`matrix_units.rs`; off with `plain_kernels` or
//!   `GpuOptions::no_matrix_units`, `SR_BENCH_GPU_COOP=0`).
//!   `AdapterSummary::features_used` says which are in use.
//! * **Async.** Readback is asynchronous by nature ([`GpuEncoder::encode_async`]), while
//!   [`EncoderBackend::encode`] is synchronous. The smallest clean bridge: the GPU encoder's
//!   own API is `async`; natively the future is driven by `pollster` and the readback waits in
//!   `device.poll(wait)`, so `encode` (and the whole CLI) works unchanged; in the browser
//!   nothing ever blocks — `Embedder::embed_async` awaits `EncoderBackend::encode_async`, and
//!   the wasm layer exposes it as promises (`Model.load_with_backend`, `Model.embed_async`).
//!   A synchronous `encode` in the browser runs on the CPU (and says so in the notices).
//! * **Fallback** ([`GpuWithCpuFallback`]). `auto` uses the GPU whenever an adapter exists and says
//!   when it is a software one (device type CPU / `isFallbackAdapter`: llvmpipe, SwiftShader).
//!   No WebGPU, no adapter, a refused device or a failed weight upload select the CPU with
//!   the reason (`auto`, or `webgpu` with [`GpuFallback::UseCpu`]; else loading fails); a device loss, an out-of-memory or validation error during a batch switches
//!   to the CPU for good and **redoes that batch on the CPU**, so no run is lost.
//!
//! # Layout
//!
//! One concern per file: [`GpuWithCpuFallback`] (`fallback.rs`); the device (`context.rs`);
//! the kernels, each launch beside its WGSL source, their shader assembly and pipelines
//! (`kernels/`); every buffer and the memory ledger (`buffers/`); the weights' upload, one
//! recipe per architecture (`weights/`); a batch's recorded steps (`graph/`); the encoder
//! that loads a model and runs its batches (`encoder/`); natively the matmul on matrix units
//! (`matrix_units.rs`); the kernel tests' single-kernel runs (`runners/`, `testing` feature)
//! and the kernel benchmark's timings (`profile.rs`, `bench` feature).

#[cfg(target_arch = "wasm32")]
mod browser;
mod buffers;
mod context;
mod encoder;
mod fallback;
mod graph;
mod kernels;
/// The matmul on matrix units (wgpu's cooperative matrices), natively.
#[cfg(not(target_arch = "wasm32"))]
mod matrix_units;
/// Kernel timings for the GPU kernel benchmark.
#[cfg(all(feature = "bench", not(target_arch = "wasm32")))]
mod profile;
/// Single-kernel runs for the kernel tests.
#[cfg(feature = "testing")]
mod runners;
mod weights;

use std::rc::Rc;
use std::sync::Arc;

use anyhow::Result;
use serde::Serialize;

pub use buffers::GpuMemory;
pub use context::{AdapterSummary, GpuContext, GpuOptions};
pub use encoder::{EncodeError, GpuEncoder};
pub use fallback::GpuWithCpuFallback;
#[cfg(all(feature = "bench", not(target_arch = "wasm32")))]
pub use profile::{Epilogue, MatmulTiming, TimedMatmul};
#[cfg(feature = "testing")]
pub use runners::AttentionMasks;

use super::{cpu, BackendKind, GpuFallback, MatmulMode};
use crate::error::{coded, ErrorCode};
use crate::model::{Embedder, ModelFile};

/// top level) and, in the browser, the browser's own `GPUAdapterInfo` — there wgpu gets no
/// name ("unnamed adapter"), while the browser says e.g. vendor "google", architecture
/// "swiftshader".
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AdapterReport {
    #[serde(flatten)]
    pub summary: AdapterSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_info: Option<BrowserAdapterInfo>,
}

impl std::ops::Deref for AdapterReport {
    type Target = AdapterSummary;
    fn deref(&self) -> &AdapterSummary {
        &self.summary
    }
}

/// The browser's `GPUAdapterInfo` (empty strings where it withholds a field).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct BrowserAdapterInfo {
    pub vendor: String,
    pub architecture: String,
    pub device: String,
    pub description: String,
}

/// Parses a model file and builds an [`Embedder`] whose backend is the GPU (`webgpu`: fails
/// without one) or the GPU when there is one (`auto`), with the [`GpuWithCpuFallback`] handle.
pub async fn load_embedder_async(
    bytes: Vec<u8>,
    kind: BackendKind,
    options: &GpuOptions,
) -> Result<(Embedder, Rc<GpuWithCpuFallback>)> {
    let file = ModelFile::from_bytes(bytes)?;
    let matmul = MatmulMode::for_model(&file.info, &file.config);
    embedder_from_file(file, kind, kind.gpu_fallback(false), matmul, options).await
}

/// [`load_embedder_async`] on a parsed file, with the load-time fallback policy; `matmul` is
/// the CPU backend's matmul mode.
pub async fn embedder_from_file(
    file: ModelFile,
    kind: BackendKind,
    fallback: GpuFallback,
    matmul: MatmulMode,
    options: &GpuOptions,
) -> Result<(Embedder, Rc<GpuWithCpuFallback>)> {
    if kind == BackendKind::Cpu {
        return Err(coded(
            ErrorCode::BadRequest,
            "the GPU loader builds the webgpu/auto backends; the CPU loads with load_embedder",
        ));
    }
    let file = Arc::new(file);
    let words = cpu::load_words(&file)?;
    let gpu = Rc::new(
        GpuWithCpuFallback::new(file.clone(), words.clone(), kind, fallback, matmul, options)
            .await?,
    );
    let tokens = Box::new(cpu::StaticTable::new(words));
    let embedder = Embedder::new(&file, tokens, Box::new(gpu.clone()))?;
    Ok((embedder, gpu))
}
