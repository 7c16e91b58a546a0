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
//!   are one `#[repr(C)]` struct ([`params`]) from which its WGSL `Params` is generated.
//! * **Memory** ([`GpuMemory`]). Every buffer is created through `buffers.rs`, which counts
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
//! * **Async.** Readback is asynchronous by nature ([`GpuBert::encode_async`]), while
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

#[cfg(target_arch = "wasm32")]
mod browser;
mod buffers;
mod context;
mod encoder;
mod graph;
mod kernels;
/// The matmul on matrix units (wgpu's cooperative matrices), natively.
#[cfg(not(target_arch = "wasm32"))]
mod matrix_units;
mod params;
/// Kernel timings for the GPU kernel benchmark.
#[cfg(all(feature = "bench", not(target_arch = "wasm32")))]
mod profile;
/// Single-kernel runs for the kernel tests.
#[cfg(feature = "testing")]
mod runners;
mod weights;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use anyhow::{bail, Result};
use candle_core::quantized::QMatMul;
use serde::Serialize;

pub use buffers::GpuMemory;
pub use context::{AdapterSummary, GpuContext, GpuOptions};
pub use encoder::{EncodeError, GpuBert};
#[cfg(all(feature = "bench", not(target_arch = "wasm32")))]
pub use profile::{Epilogue, MatmulTiming, TimedMatmul};
#[cfg(feature = "testing")]
pub use runners::AttentionMasks;

use super::{cpu, BackendKind, BackendStatus, GpuFallback, MatmulMode};
use crate::error::{coded, with_code, ErrorCode};
use crate::model::{
    Embedder, EncodeFuture, EncodeManyFuture, EncoderBackend, ModelFile, TokenBatch,
};

/// The adapter as [`BackendStatus`] reports it: wgpu's summary (its fields serialize at the
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

/// The GPU encoder with the CPU backend behind it: at load (no GPU → the CPU, when the
/// request allows it) and during a run (a failed batch is redone on the CPU, and the rest of
/// the run stays there).
///
/// Shared (`Rc`): the [`Embedder`] holds one handle as its backend, the caller another for the
/// status and the fallback tests.
pub struct GpuWithCpuFallback {
    gpu: RefCell<Option<Rc<GpuBert>>>,
    cpu: RefCell<Option<Rc<dyn EncoderBackend>>>,
    /// Kept to build the CPU backend on a fallback (the model's bytes, not a copy of them).
    file: Arc<ModelFile>,
    words: QMatMul,
    matmul: MatmulMode,
    status: RefCell<BackendStatus>,
}

impl GpuWithCpuFallback {
    /// Opens the GPU (unless `options` disable it) and uploads the model; without a GPU,
    /// `fallback` decides between the CPU (with the reason) and an error.
    pub async fn new(
        file: Arc<ModelFile>,
        words: QMatMul,
        kind: BackendKind,
        fallback: GpuFallback,
        matmul: MatmulMode,
        options: &GpuOptions,
    ) -> Result<Self> {
        let mut status = BackendStatus {
            requested: kind.as_str().into(),
            ..BackendStatus::cpu_only()
        };
        // Pre-norm layers (ModernBERT's, the decoders') add each residual to the f32 stream,
        // which their kernels read as activations: they are f32 for them (Gemma's would also
        // overflow f16).
        let mut options = options.clone();
        options.no_f16 |= matches!(
            file.info.architecture.as_str(),
            "modern-bert" | "qwen3" | "gemma-embedding"
        );
        let gpu = match GpuContext::new(&options).await {
            Ok(ctx) => {
                let adapter = AdapterReport {
                    summary: ctx.adapter.clone(),
                    browser_info: None,
                };
                status.software_adapter = adapter.software;
                status
                    .notices
                    .push(format!("WebGPU adapter: {}", adapter.describe()));
                status.adapter = Some(adapter);
                GpuBert::new(ctx, &file, words.clone()).await
            }
            Err(e) => Err(with_code(e, ErrorCode::NoAdapter)),
        };
        let gpu = match gpu {
            Ok(g) => {
                status.active = BackendKind::WebGpu.as_str().into();
                status.notices.push(format!(
                    "GPU memory: {:.1} MB of weights uploaded; batches of up to {} sentences",
                    g.memory().weights as f64 / 1e6,
                    g.max_sentences()
                ));
                #[cfg(target_arch = "wasm32")]
                if let Some(adapter) = status.adapter.as_mut() {
                    adapter.browser_info = browser::adapter_info().await;
                }
                Some(Rc::new(g))
            }
            Err(e) => {
                let e = match kind {
                    BackendKind::Auto => e,
                    _ => e.context("the GPU backend is unavailable"),
                };
                if fallback == GpuFallback::Fail {
                    return Err(e);
                }
                let reason = format!("{e:#}; running on the CPU");
                status.notices.push(reason.clone());
                status.fallback_reason = Some(reason);
                None
            }
        };
        let this = Self {
            gpu: RefCell::new(gpu),
            cpu: RefCell::new(None),
            file,
            words,
            matmul,
            status: RefCell::new(status),
        };
        if this.gpu.borrow().is_none() {
            this.cpu()?;
        }
        Ok(this)
    }

    /// The status, with the GPU memory held now.
    pub fn status(&self) -> BackendStatus {
        let mut status = self.status.borrow().clone();
        status.gpu_memory = self.gpu().map(|g| g.memory());
        status
    }

    /// "webgpu" while the GPU runs, "cpu" after a fallback.
    pub fn active(&self) -> &'static str {
        if self.gpu.borrow().is_some() {
            BackendKind::WebGpu.as_str()
        } else {
            BackendKind::Cpu.as_str()
        }
    }

    /// The GPU encoder, while it is in use.
    pub fn gpu(&self) -> Option<Rc<GpuBert>> {
        self.gpu.borrow().clone()
    }

    fn cpu(&self) -> Result<Rc<dyn EncoderBackend>> {
        if let Some(cpu) = self.cpu.borrow().as_ref() {
            return Ok(cpu.clone());
        }
        let cpu: Rc<dyn EncoderBackend> =
            cpu::load_shared(self.file.clone(), self.words.clone(), self.matmul)?.into();
        *self.cpu.borrow_mut() = Some(cpu.clone());
        Ok(cpu)
    }

    fn notice(&self, message: String) {
        #[cfg(not(target_arch = "wasm32"))]
        eprintln!("sr-bench: {message}");
        self.status.borrow_mut().notices.push(message);
    }

    /// Leaves the GPU for good; later batches run on the CPU.
    fn fall_back(&self, reason: String) {
        self.gpu.borrow_mut().take();
        let mut status = self.status.borrow_mut();
        status.active = BackendKind::Cpu.as_str().into();
        status.fallback_reason = Some(reason.clone());
        drop(status);
        self.notice(reason);
    }

    /// Marks the GPU device as lost (tests of the fallback; the next batch notices it).
    pub fn simulate_device_lost(&self) {
        if let Some(gpu) = self.gpu.borrow().as_ref() {
            gpu.ctx.simulate_device_lost();
        }
    }

    /// Batches in order: on the GPU while it works (two in flight); a GPU failure switches to
    /// the CPU and redoes these batches there. Batches of sentences longer than the GPU's
    /// attention kernel takes (ModernBERT and nomic-bert read up to 8,192 tokens) run on the
    /// CPU, with a notice, and the GPU goes on with the rest.
    pub async fn encode_batches(&self, batches: &[TokenBatch]) -> Result<Vec<Vec<Vec<f32>>>> {
        let fits = |b: &TokenBatch| b.seq_len <= kernels::ATTENTION_MAX_SEQ;
        if self.gpu.borrow().is_none() || batches.iter().all(fits) {
            return self.encode_runs(batches).await;
        }
        let mut out = Vec::with_capacity(batches.len());
        let mut rest = batches;
        while let Some(first) = rest.first() {
            let on_gpu = fits(first);
            let run = rest.iter().take_while(|b| fits(b) == on_gpu).count();
            let (this, next) = rest.split_at(run);
            if on_gpu {
                out.extend(self.encode_runs(this).await?);
            } else {
                let note = format!(
                    "sentences longer than {} tokens run on the CPU (the GPU attention kernel's \
                     limit)",
                    kernels::ATTENTION_MAX_SEQ
                );
                if !self.status.borrow().notices.contains(&note) {
                    self.notice(note);
                }
                out.extend(self.cpu()?.encode_many(this)?);
            }
            rest = next;
        }
        Ok(out)
    }

    async fn encode_runs(&self, batches: &[TokenBatch]) -> Result<Vec<Vec<Vec<f32>>>> {
        if let Some(gpu) = self.gpu() {
            match gpu.encode_many_async(batches).await {
                Ok(v) => return Ok(v),
                Err(EncodeError::Busy) => bail!("{}", EncodeError::Busy),
                Err(EncodeError::Gpu(e)) => self.fall_back(format!(
                    "the GPU failed ({e:#}); this batch was redone and the rest run on the CPU"
                )),
            }
        }
        self.cpu()?.encode_many(batches)
    }

    /// One batch, as [`Self::encode_batches`].
    pub async fn encode_batch(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        let mut out = self.encode_batches(std::slice::from_ref(batch)).await?;
        Ok(out.pop().unwrap_or_default())
    }
}

impl EncoderBackend for Rc<GpuWithCpuFallback> {
    fn encode(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            pollster::block_on(self.encode_batch(batch))
        }
        #[cfg(target_arch = "wasm32")]
        {
            // The browser cannot block on a GPU readback: synchronous calls run on the CPU.
            if self.gpu.borrow().is_some() {
                let note = "a synchronous call ran on the CPU (the GPU is used by the async \
                            methods: embed_async, similarity_async)";
                if !self.status.borrow().notices.iter().any(|n| n == note) {
                    self.notice(note.into());
                }
            }
            self.cpu()?.encode(batch)
        }
    }

    fn encode_async<'a>(&'a self, batch: &'a TokenBatch) -> EncodeFuture<'a> {
        Box::pin(self.encode_batch(batch))
    }

    fn encode_many(&self, batches: &[TokenBatch]) -> Result<Vec<Vec<Vec<f32>>>> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            pollster::block_on(self.encode_batches(batches))
        }
        #[cfg(target_arch = "wasm32")]
        {
            batches.iter().map(|b| self.encode(b)).collect()
        }
    }

    fn encode_many_async<'a>(&'a self, batches: &'a [TokenBatch]) -> EncodeManyFuture<'a> {
        Box::pin(self.encode_batches(batches))
    }

    fn name(&self) -> &'static str {
        self.active()
    }

    fn max_sentences(&self) -> Option<usize> {
        self.gpu().map(|g| g.max_sentences())
    }

    // The explainers run on the CPU behind the GPU (the GPU kernels pool in place).
    fn token_states(&self, batch: &TokenBatch) -> Result<Vec<Vec<Vec<f32>>>> {
        self.cpu()?.token_states(batch)
    }

    fn encode_layers(&self, batch: &TokenBatch) -> Result<Vec<Vec<Vec<f32>>>> {
        self.cpu()?.encode_layers(batch)
    }
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
