//! The WebGPU backend: the same BERT encoder as `backend::cpu`, as WGSL compute kernels on
//! wgpu (Vulkan/Metal/DX12 natively, the browser's WebGPU in wasm), with automatic CPU
//! fallback.
//!
//! # Design
//!
//! * **Weights.** Uploaded once, dequantized to f32 (q8_0 and q4_0 files alike): for
//!   all-MiniLM-L6-v2 the six layers are 10.6 M parameters = 42 MB, far inside any WebGPU
//!   device's limits (the largest matrix, 1536×384, is 2.4 MB). f32 keeps the GPU's maths
//!   identical to the CPU backend's default (`MatmulMode::F32`, which also dequantizes once),
//!   so parity is bounded by summation order only. The 4× larger weight traffic does not
//!   matter here: each weight is reused by every token of a batch (≈1,000 rows), so the
//!   matmuls are bound by arithmetic, not by weight bandwidth. Q, K and V are fused into one
//!   `[3·hidden, hidden]` matrix. The token table (30,522 rows) stays on the CPU: a batch's
//!   rows are gathered there exactly as the CPU backend does and uploaded (hidden·4 bytes a
//!   token), so the GPU never holds the 47 MB table.
//! * **Kernels** (`wgsl/`): a tiled matmul (64×64 output tile per 16×16 workgroup, 4×4 per
//!   thread, K in steps of 16 through workgroup memory; edges zero-padded, so any m, n, k)
//!   with a fused epilogue (bias, then exact-erf GELU or a residual add); LayerNorm (one
//!   workgroup per row, two-pass mean/variance); masked multi-head attention (one workgroup
//!   per query × head × sentence: scores in workgroup memory, max-subtracted softmax, masked
//!   keys excluded); the embedding sum (word + position + token type); mean pooling over the
//!   mask fused with L2 normalisation. GELU uses Numerical Recipes' `erfcc` (fractional error
//!   < 1.2e-7; the kernel test measures the GELU error on a dense grid).
//! * **Dispatches.** Per layer 7: QKV matmul, attention, output projection + residual,
//!   LayerNorm, FFN-in + GELU, FFN-out + residual, LayerNorm; plus 2 for the embeddings and 1
//!   for pooling: 45 for MiniLM, all in one compute pass, **one submit and one readback per
//!   batch** (`batch × hidden` floats).
//! * **Buffers.** Activations (`[rows, width]` f32), the mask and the readback buffer are
//!   pooled: allocated for the first batch, grown to the next power of two when a batch has
//!   more tokens, otherwise reused; their bind groups are built once with them. Per batch only
//!   eight 16–32-byte parameter blocks, the word rows and the mask are written.
//! * **Async.** Readback is asynchronous by nature ([`GpuBert::encode_async`]), while
//!   [`EncoderBackend::encode`] is synchronous. The smallest clean bridge: the GPU encoder's
//!   own API is `async`; natively the future is driven by `pollster` and the readback waits in
//!   `device.poll(wait)`, so `encode` (and the whole CLI) works unchanged; in the browser
//!   nothing ever blocks — the wasm layer exposes `Model.load_with_backend` and
//!   `Model.embed_async` (promises) and `Evaluation.next_chunk` / `accept_embeddings` around them.
//!   A synchronous `encode` in the browser runs on the CPU (and says so in the notices).
//! * **Fallback** ([`AutoEncoder`]). `auto` uses the GPU whenever an adapter exists and says
//!   when it is a software one (device type CPU / `isFallbackAdapter`: llvmpipe, SwiftShader).
//!   No WebGPU, no adapter, a refused device or a failed weight upload select the CPU with
//!   the reason; a device loss, an out-of-memory or validation error during a batch switches
//!   to the CPU for good and **redoes that batch on the CPU**, so no run is lost.

mod context;
mod encoder;
mod kernels;

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::{bail, Result};
use candle_core::quantized::QMatMul;
use serde::Serialize;

pub use context::{AdapterSummary, GpuContext, GpuOptions};
pub use encoder::{EncodeError, GpuBert};

use super::{BackendKind, MatmulMode};
use crate::model::{
    plan_batches, Batching, Embedder, EncoderBackend, ModelFile, TextTokenizer, TokenBatch,
};

/// Where the encoder runs and why: shown by the CLI on stderr and by the page.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BackendStatus {
    /// What was asked for: "gpu" or "auto".
    pub requested: String,
    /// Where batches run now: "gpu" or "cpu".
    pub active: String,
    /// The adapter in use (absent when none was found).
    pub adapter: Option<AdapterSummary>,
    /// The adapter is a software fallback (CPU emulation): GPU speed figures mean little.
    pub software_adapter: bool,
    /// Why the CPU runs instead of the GPU (absent while the GPU runs).
    pub fallback_reason: Option<String>,
    /// Messages for users, oldest first (adapter choice, fallbacks).
    pub notices: Vec<String>,
}

/// The GPU encoder with a CPU backend behind it.
///
/// Cheap to share (`Rc`): the [`Embedder`] holds one handle as its backend, the wasm layer
/// another for the async entry points and the status.
pub struct AutoEncoder {
    gpu: RefCell<Option<Rc<GpuBert>>>,
    cpu: RefCell<Option<Rc<dyn EncoderBackend>>>,
    /// Kept to build the CPU backend on a fallback (the model's bytes, not a copy of them).
    file: ModelFile,
    words: QMatMul,
    matmul: MatmulMode,
    status: RefCell<BackendStatus>,
}

impl AutoEncoder {
    /// Opens the GPU (unless `options` disable it) and uploads the model; without a GPU,
    /// `Auto` selects the CPU with the reason and `Gpu` fails with it.
    pub async fn new(
        file: ModelFile,
        words: QMatMul,
        kind: BackendKind,
        matmul: MatmulMode,
        options: &GpuOptions,
    ) -> Result<Self> {
        let mut status = BackendStatus {
            requested: match kind {
                BackendKind::Gpu => "gpu",
                _ => "auto",
            }
            .into(),
            active: "cpu".into(),
            adapter: None,
            software_adapter: false,
            fallback_reason: None,
            notices: vec![],
        };
        let gpu = match GpuContext::new(options).await {
            Ok(ctx) => {
                let adapter = ctx.adapter.clone();
                status.software_adapter = adapter.software;
                status
                    .notices
                    .push(format!("WebGPU adapter: {}", adapter.describe()));
                status.adapter = Some(adapter);
                GpuBert::new(ctx, &file, words.clone()).await
            }
            Err(e) => Err(e),
        };
        let gpu = match gpu {
            Ok(g) => {
                status.active = "gpu".into();
                Some(Rc::new(g))
            }
            Err(e) if kind == BackendKind::Gpu => bail!("the GPU backend is unavailable: {e:#}"),
            Err(e) => {
                let reason = format!("{e:#}; running on the CPU");
                status.notices.push(reason.clone());
                status.fallback_reason = Some(reason);
                None
            }
        };
        let auto = Self {
            gpu: RefCell::new(gpu),
            cpu: RefCell::new(None),
            file,
            words,
            matmul,
            status: RefCell::new(status),
        };
        if auto.gpu.borrow().is_none() {
            auto.cpu()?;
        }
        Ok(auto)
    }

    pub fn status(&self) -> BackendStatus {
        self.status.borrow().clone()
    }

    /// "gpu" while the GPU runs, "cpu" after a fallback.
    pub fn active(&self) -> &'static str {
        if self.gpu.borrow().is_some() {
            "gpu"
        } else {
            "cpu"
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
            super::cpu::load(&self.file, self.words.clone(), self.matmul)?.into();
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
        status.active = "cpu".into();
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

    /// One batch: on the GPU while it works; a GPU failure switches to the CPU and redoes
    /// the batch there.
    pub async fn encode_async(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        let gpu = self.gpu();
        if let Some(gpu) = gpu {
            match gpu.encode_async(batch).await {
                Ok(v) => return Ok(v),
                Err(EncodeError::Busy) => bail!("{}", EncodeError::Busy),
                Err(EncodeError::Gpu(e)) => self.fall_back(format!(
                    "the GPU failed ({e:#}); this batch was redone and the rest run on the CPU"
                )),
            }
        }
        self.cpu()?.encode(batch)
    }

    /// Texts → embeddings as [`Embedder::embed`] does (same batches, input order restored),
    /// with every batch awaited instead of blocked on.
    pub async fn embed_async(
        &self,
        tokenizer: &TextTokenizer,
        texts: &[&str],
        batching: Batching,
    ) -> Result<Vec<Vec<f32>>> {
        let mut out = vec![Vec::new(); texts.len()];
        for (indices, batch) in plan_batches(tokenizer, texts, batching)? {
            for (i, v) in indices.into_iter().zip(self.encode_async(&batch).await?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

/// The [`EncoderBackend`] face of a shared [`AutoEncoder`].
pub struct SharedAuto(pub Rc<AutoEncoder>);

impl EncoderBackend for SharedAuto {
    fn encode(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            pollster::block_on(self.0.encode_async(batch))
        }
        #[cfg(target_arch = "wasm32")]
        {
            // The browser cannot block on a GPU readback: synchronous calls run on the CPU.
            let auto = &self.0;
            if auto.gpu.borrow().is_some() {
                let note = "a synchronous call ran on the CPU (the GPU is used by the async \
                            methods: embed_async, next_chunk/accept_embeddings)";
                if !auto.status.borrow().notices.iter().any(|n| n == note) {
                    auto.notice(note.into());
                }
            }
            auto.cpu()?.encode(batch)
        }
    }

    fn name(&self) -> &'static str {
        self.0.active()
    }
}

/// Parses a model file and builds an [`Embedder`] whose backend is the GPU (`Gpu`) or the
/// GPU when there is one (`Auto`), with the [`AutoEncoder`] handle for status and async use.
pub async fn load_embedder_async(
    bytes: Vec<u8>,
    kind: BackendKind,
    options: &GpuOptions,
) -> Result<(Embedder, Rc<AutoEncoder>)> {
    if kind == BackendKind::Cpu {
        bail!("load_embedder_async builds the gpu/auto backends; use load_embedder for cpu");
    }
    let file = ModelFile::from_bytes(bytes)?;
    let matmul = MatmulMode::for_model(&file.info, &file.config);
    embedder_from_file(file, kind, matmul, options).await
}

/// [`load_embedder_async`] on a parsed file; `matmul` is the CPU fallback's matmul mode.
pub async fn embedder_from_file(
    file: ModelFile,
    kind: BackendKind,
    matmul: MatmulMode,
    options: &GpuOptions,
) -> Result<(Embedder, Rc<AutoEncoder>)> {
    let words = Embedder::load_word_embeddings(&file)?;
    let auto = Rc::new(AutoEncoder::new(file, words.clone(), kind, matmul, options).await?);
    let embedder = Embedder::new(&auto.file, words, Box::new(SharedAuto(auto.clone())))?;
    Ok((embedder, auto))
}
