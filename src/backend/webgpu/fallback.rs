//! [`GpuWithCpuFallback`]: the GPU encoder with the CPU backend behind it, as the embedder's
//! backend — the choice at load, the batches too long for the attention kernel, and the switch
//! to the CPU (redoing the failed batch) when the device fails during a run.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use anyhow::{bail, Result};
use candle_core::quantized::QMatMul;

use super::super::{cpu, BackendKind, BackendStatus, GpuFallback, MatmulMode};
#[cfg(target_arch = "wasm32")]
use super::browser;
use super::{kernels, AdapterReport, EncodeError, GpuContext, GpuEncoder, GpuOptions};
use crate::error::{with_code, ErrorCode};
use crate::model::architecture::Gpu;
use crate::model::{EncodeFuture, EncodeManyFuture, EncoderBackend, ModelFile, TokenBatch};

/// request allows it) and during a run (a failed batch is redone on the CPU, and the rest of
/// the run stays there).
///
/// Shared (`Rc`): the [`Embedder`] holds one handle as its backend, the caller another for the
/// status and the fallback tests.
pub struct GpuWithCpuFallback {
    gpu: RefCell<Option<Rc<GpuEncoder>>>,
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
        let mut options = options.clone();
        options.no_f16 |= match file.info.architecture.spec().gpu {
            Gpu::F16Activations => false,
            Gpu::F32Activations => true,
        };
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
                GpuEncoder::new(ctx, &file, words.clone()).await
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
    pub fn gpu(&self) -> Option<Rc<GpuEncoder>> {
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
