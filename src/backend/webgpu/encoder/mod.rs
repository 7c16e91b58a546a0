//! The encoder on the GPU, for every architecture the GPU backend runs (BERT, MPNet,
//! nomic-bert, ModernBERT, Qwen3, EmbeddingGemma): weights uploaded once ([`GpuWeights`]),
//! the batch graph (activation buffers, bind groups, steps) reused across batches ([`Graph`]),
//! one command buffer (one compute pass, [`GpuEncoder::dispatches_per_batch`] dispatches) and
//! one readback per batch. This file loads it and sizes its batches against the memory
//! ledger; `run.rs` runs batches on it, two in flight.

mod run;

use std::cell::{Cell, RefCell};

use anyhow::{ensure, Result};
use candle_core::quantized::QMatMul;

use super::buffers::GpuMemory;
use super::context::GpuContext;
use super::graph::Graph;
use super::kernels::{Activations, ATTENTION_MAX_SEQ};
use super::weights::{Ffn, GpuWeights, Input, Stack};
use crate::backend::cpu::PooledHead;
use crate::error::{coded, ErrorCode};
use crate::model::{Batching, ModelFile};
use run::Slot;

/// An encoder of any architecture the GPU backend runs (BERT-family files such as
/// all-MiniLM-L6-v2 and all-mpnet-base-v2, nomic-bert, ModernBERT, Qwen3-Embedding,
/// EmbeddingGemma) on a WebGPU device.
pub struct GpuEncoder {
    pub(crate) ctx: GpuContext,
    /// The token table stays on the CPU: a batch's rows are gathered there (dequantized as
    /// the CPU backend does) and uploaded; the table itself never occupies GPU memory.
    words: QMatMul,
    weights: GpuWeights,
    /// EmbeddingGemma's Dense head, run on the CPU on the pooled vectors read back (a few
    /// MFLOP a sentence).
    head: Option<PooledHead>,
    /// What the weights were planned to take before they were uploaded (equal to what the
    /// upload created: checked at load).
    weight_plan: GpuMemory,
    /// Two graphs, so that two batches are in flight: batch i+1 is written, recorded and
    /// submitted into one while batch i is read back from the other.
    slots: [RefCell<Option<Slot>>; 2],
    busy: Cell<bool>,
    /// Largest token count per submit (the biggest activation must fit one binding).
    max_rows: usize,
    /// Sentences per batch the embedder forms for this GPU ([`GpuEncoder::max_sentences`]).
    max_sentences: usize,
}

/// The sentence caps tried, largest first, for a batch on a hardware GPU: the token budget per
/// submit stays the CPU's (`Batching::max_tokens`), so on short sentences these fill it — SR's
/// ~20-token sentences give ~100 per submit at 2,048 tokens instead of 32 — and the matmul's
/// grid grows with them. A software adapter keeps the CPU's 32: measured on lavapipe, 256
/// per submit gave no gain (its cores are already full at 32) and more padding.
const GPU_BATCH_SENTENCES: [usize; 3] = [256, 128, 64];

/// The sentence caps to try, largest first, ending with the CPU's `default` (the one whose
/// refusal is the error).
fn batch_candidates(software: bool, default: usize) -> Vec<usize> {
    let larger = match software {
        true => &[][..],
        false => &GPU_BATCH_SENTENCES[..],
    };
    larger
        .iter()
        .copied()
        .filter(|&n| n > default)
        .chain([default])
        .collect()
}

/// Why a GPU batch failed: `Busy` is a caller error (another batch is in flight), `Gpu` is
/// the device failing (the caller falls back to the CPU).
#[derive(Debug)]
pub enum EncodeError {
    Busy,
    Gpu(anyhow::Error),
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Busy => write!(
                f,
                "the GPU encoder is busy with another batch: await the previous call first"
            ),
            Self::Gpu(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for EncodeError {}

impl GpuEncoder {
    /// Uploads the encoder's weights (f32, or the file's q8_0 / q4_0 blocks) to `ctx`'s device,
    /// after checking that they and the buffers of two full batches fit the adapter (else a
    /// coded out-of-memory error quoting the figures, before anything is uploaded).
    pub async fn new(ctx: GpuContext, file: &ModelFile, words: QMatMul) -> Result<Self> {
        let what = format!("the model '{}'", file.info.name);
        // Sized from the tensors' shapes and dtypes, no weight read (`upload_weights`).
        let planned = ctx.device.plan(|| GpuWeights::upload(&ctx, file)).await?;
        ctx.device.check_fits(&what, &planned)?;
        let weights = GpuWeights::upload(&ctx, file).await?;
        // The context is new: everything it holds is the weights.
        let uploaded = ctx.device.memory();
        ensure!(
            uploaded == planned,
            "uploading {what}: the buffers created ({uploaded:?}) differ from the plan \
             ({planned:?})"
        );
        // The widest activation row: the fused QKV or feed-forward projection's, or the f32
        // residual stream's.
        let widest = weights.widest_row_bytes(ctx.activations().bytes()) as u64;
        ensure!(
            !weights.needs_f32_activations() || ctx.activations() == Activations::F32,
            "pre-norm layers need f32 activations on the GPU"
        );
        let max_binding = ctx
            .limits
            .max_storage_buffer_binding_size
            .min(ctx.limits.max_buffer_size);
        let max_rows = (max_binding / widest) as usize;
        // The longest sentence the GPU runs (longer ones run on the CPU).
        let longest = file.info.max_seq_length.min(ATTENTION_MAX_SEQ);
        if max_rows < longest {
            return Err(coded(
                ErrorCode::OutOfMemory,
                format!(
                    "{what} does not fit this GPU: one {longest}-token sentence needs a {:.1} MB \
                     activation buffer, the adapter allows {:.1} MB per buffer",
                    (widest * longest as u64) as f64 / 1e6,
                    max_binding as f64 / 1e6
                ),
            ));
        }
        let mut this = Self {
            ctx,
            words,
            weights,
            head: PooledHead::load(file)?,
            weight_plan: planned,
            slots: Default::default(),
            busy: Cell::new(false),
            max_rows,
            max_sentences: 0,
        };
        // Two graphs for the largest batch the embedder forms must fit beside the weights: on
        // a hardware GPU the largest sentence cap whose two graphs the ledger admits, else
        // the CPU's batching (whose refusal, with its figures, is the error).
        let batching = Batching::for_model(&file.info);
        let candidates = batch_candidates(this.ctx.adapter.software, batching.max_sentences);
        let (default, larger) = candidates.split_last().expect("the default is a candidate");
        for &sentences in larger {
            if this
                .two_graphs_fit(&what, batching.max_tokens, sentences)
                .await
                .is_ok()
            {
                this.max_sentences = sentences;
                return Ok(this);
            }
        }
        this.two_graphs_fit(&what, batching.max_tokens, *default)
            .await?;
        this.max_sentences = *default;
        Ok(this)
    }

    /// Refused with the figures unless two graphs of batches of `sentences` sentences and
    /// `tokens` tokens fit the adapter beside what is held.
    async fn two_graphs_fit(&self, what: &str, tokens: usize, sentences: usize) -> Result<()> {
        // A batch of more tokens than one binding holds runs as several submits of at most
        // `max_rows` (`encode_all`), so no graph is ever built larger: a 2,048-token context
        // (EmbeddingGemma's 8 × 2,048 tokens a batch) must not be refused for a size it never uses.
        let (rows, batch) = self.graph_size(tokens.min(self.max_rows), sentences);
        let full = format!("{what} with two batches of {batch} sentences ({rows} tokens)");
        let one = self
            .ctx
            .device
            .plan(|| async { Ok(Graph::new(&self.ctx, &self.weights, rows, batch)) })
            .await?;
        let mut two = one;
        two.add_all(&one);
        self.ctx.device.check_fits(&full, &two)
    }

    /// Sentences per batch for this GPU: up to 256 on a hardware adapter where the memory
    /// ledger admits two such graphs (the token budget per batch is unchanged), the CPU's 32
    /// on a software one.
    pub fn max_sentences(&self) -> usize {
        self.max_sentences
    }

    /// GPU memory held now: the weights, and the graphs of the batches run so far.
    pub fn memory(&self) -> GpuMemory {
        self.ctx.device.memory()
    }

    /// The weights' buffers as planned from the tensors' shapes and dtypes before upload.
    pub fn weight_plan(&self) -> GpuMemory {
        self.weight_plan
    }

    /// The device (the memory test compares the driver's allocations with [`Self::memory`]).
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// The buffer sizes a graph is built with for `rows` tokens and `batch` sentences.
    fn graph_size(&self, rows: usize, batch: usize) -> (usize, usize) {
        (
            rows.next_power_of_two().min(self.max_rows).max(rows),
            batch.next_power_of_two(),
        )
    }

    /// Bytes of the model's weights on the GPU (every buffer the upload created).
    pub fn weight_bytes(&self) -> u64 {
        self.ctx.device.memory().weights
    }

    /// Dispatches per batch: embeddings (2), 7 per layer, pooling (1) for BERT and MPNet;
    /// what the graph records for the others.
    pub fn dispatches_per_batch(&self) -> usize {
        let w = &self.weights;
        let input = match w.input {
            Input::Table { .. } => 2,
            Input::TypeRow { .. } => 1,
            Input::Normed { .. } | Input::Scaled(_) => 0,
        };
        let (layers, final_norm): (usize, bool) = match &w.stack {
            Stack::Encoder { layers, final_norm } => (
                layers
                    .iter()
                    .map(|l| {
                        let gated = usize::from(matches!(l.ffn, Ffn::Gated { .. }));
                        let pre_norm_without_first =
                            usize::from(final_norm.is_some() && l.attention_norm.is_none());
                        7 + usize::from(l.rotary.is_some()) + gated - pre_norm_without_first
                    })
                    .sum(),
                final_norm.is_some(),
            ),
            // 9 a layer, 2 more for Gemma's post-norms, one less without the per-head step
            // (T5: no rotary positions, no head norms) and one less without a gate (T5 1.0).
            Stack::Decoder { layers, kind, .. } => (
                layers
                    .iter()
                    .map(|l| {
                        let head_step = l.rotary.is_some() || l.qk_norms.is_some();
                        7 + usize::from(head_step)
                            + usize::from(kind.gate.is_some())
                            + usize::from(l.post_attention_norm.is_some())
                            + usize::from(l.post_ffn_norm.is_some())
                    })
                    .sum(),
                true,
            ),
        };
        input + layers + usize::from(final_norm) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hardware_gpu_tries_fuller_batches_first_a_software_one_keeps_the_cpus() {
        assert_eq!(batch_candidates(false, 32), [256, 128, 64, 32]);
        assert_eq!(batch_candidates(true, 32), [32]);
        // A default above the tried caps stays the only candidate.
        assert_eq!(batch_candidates(false, 300), [300]);
        assert_eq!(batch_candidates(false, 100), [256, 128, 100]);
    }
}
