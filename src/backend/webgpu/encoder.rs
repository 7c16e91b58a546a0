//! The encoder (BERT, MPNet) on the GPU: weights uploaded once ([`GpuWeights`]), the batch graph
//! (activation buffers, bind groups, steps) reused across batches ([`Graph`]), one command
//! buffer (one compute pass, 3 + 7·layers dispatches) and one readback per batch.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;

use anyhow::{ensure, Result};
use candle_core::quantized::QMatMul;
use candle_core::{Device, Tensor};

use super::buffers::{read_f32, ErrorScopes, GpuMemory, Held};
use super::context::GpuContext;
use super::graph::Graph;
use super::kernels::{Activations, Shape, ATTENTION_MAX_SEQ};
use super::weights::{Ffn, GpuWeights, Input, Stack};
use crate::backend::cpu::PooledHead;
use crate::error::{coded, ErrorCode};
use crate::model::{Batching, ModelFile, TokenBatch};

/// A BERT-family encoder (all-MiniLM-L6-v2, all-mpnet-base-v2 and the like) on a WebGPU device.
pub struct GpuBert {
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
    /// Sentences per batch the embedder forms for this GPU ([`GpuBert::max_sentences`]).
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

/// A graph and the GPU memory its buffers hold (given back when it is replaced).
struct Slot {
    graph: Graph,
    _memory: Held,
}

/// A submitted batch: where its `len` pooled values will be, once submission `index` is done.
struct Pending {
    readback: wgpu::Buffer,
    len: usize,
    index: wgpu::SubmissionIndex,
    /// The error scopes' verdict on the submit, awaited with the readback (off the hot path:
    /// the next batch is submitted before it is known).
    verdict: Pin<Box<dyn Future<Output = Result<()>>>>,
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

impl GpuBert {
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

    /// Pooled, L2-normalised embeddings of a padded batch. Batches with more tokens than one
    /// binding holds are run in several submits.
    pub async fn encode_async(
        &self,
        batch: &TokenBatch,
    ) -> std::result::Result<Vec<Vec<f32>>, EncodeError> {
        let mut out = self.encode_many_async(std::slice::from_ref(batch)).await?;
        Ok(out.pop().unwrap_or_default())
    }

    /// [`Self::encode_async`] for several batches, two in flight.
    pub async fn encode_many_async(
        &self,
        batches: &[TokenBatch],
    ) -> std::result::Result<Vec<Vec<Vec<f32>>>, EncodeError> {
        if self.busy.replace(true) {
            return Err(EncodeError::Busy);
        }
        let result = self.encode_all(batches).await.map_err(EncodeError::Gpu);
        self.busy.set(false);
        result
    }

    async fn encode_all(&self, batches: &[TokenBatch]) -> Result<Vec<Vec<Vec<f32>>>> {
        self.ctx.check()?;
        // Each batch as submits of at most `max_rows` tokens: (batch index, part).
        let mut parts = Vec::new();
        let mut out: Vec<Vec<Vec<f32>>> = Vec::with_capacity(batches.len());
        for (i, batch) in batches.iter().enumerate() {
            let t = batch.seq_len;
            out.push(Vec::with_capacity(batch.batch));
            if batch.batch == 0 || t == 0 {
                out[i] = vec![vec![0.0; self.weights.dims.hidden]; batch.batch];
                continue;
            }
            ensure!(
                t <= self.weights.dims.max_positions,
                "a batch of {t} tokens exceeds the {} positions of the model",
                self.weights.dims.max_positions
            );
            let rows_per_submit = (self.max_rows / t).max(1);
            for start in (0..batch.batch).step_by(rows_per_submit) {
                let end = (start + rows_per_submit).min(batch.batch);
                let part = TokenBatch {
                    ids: batch.ids[start * t..end * t].to_vec(),
                    mask: batch.mask[start * t..end * t].to_vec(),
                    batch: end - start,
                    seq_len: t,
                };
                parts.push((i, part));
            }
        }
        // Part k goes to slot k % 2; it is submitted before part k - 1 is read back, and
        // slot k % 2 is free by then (part k - 2 was read back).
        let hidden = self.weights.dims.hidden;
        let mut in_flight: Option<(usize, Pending)> = None;
        for (k, (i, part)) in parts.iter().enumerate() {
            let pending = self.submit(k % 2, part).await?;
            if let Some((j, previous)) = in_flight.replace((*i, pending)) {
                out[j].extend(self.read(previous, hidden).await?);
            }
            if self.ctx.in_flight == 1 {
                let (j, this) = in_flight.take().expect("just submitted");
                out[j].extend(self.read(this, hidden).await?);
            }
        }
        if let Some((j, last)) = in_flight {
            out[j].extend(self.read(last, hidden).await?);
        }
        Ok(out)
    }

    /// Gathers a part's word rows, writes its inputs and records and submits it into
    /// `slot`'s graph (built or grown first when it does not fit).
    async fn submit(&self, slot: usize, batch: &TokenBatch) -> Result<Pending> {
        let shape = Shape::batch(batch.batch, batch.seq_len);
        let (b, m) = (shape.batch, shape.rows);
        // The word rows, gathered on the CPU from the (possibly quantized) table.
        let ids = Tensor::from_slice(&batch.ids, m, &Device::Cpu)?;
        let mut words = self
            .words
            .embedding(&ids)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        // nomic-bert's type row and ModernBERT's norm are applied here, on the rows gathered.
        let hidden = self.weights.dims.hidden;
        match &self.weights.input {
            Input::Table { .. } => {}
            Input::TypeRow { token_type0, .. } => {
                for row in words.chunks_exact_mut(hidden) {
                    row.iter_mut().zip(token_type0).for_each(|(v, t)| *v += t);
                }
            }
            Input::Normed { gamma, eps } => {
                for row in words.chunks_exact_mut(hidden) {
                    layer_norm_no_bias(row, gamma, *eps);
                }
            }
            // As the CPU backend scales them (f32 products).
            Input::Scaled(scale) => {
                if *scale != 1.0 {
                    words.iter_mut().for_each(|v| *v *= scale);
                }
            }
        }
        let tables: Vec<(Vec<f32>, Vec<f32>)> = self
            .weights
            .rotary
            .iter()
            .map(|rope| rope.cos_sin(batch.seq_len))
            .collect();

        // A bigger graph than the one planned at load (a larger batch size was asked for):
        // refused with the figures when it would not fit, before it is allocated.
        let grow = {
            let cell = self.slots[slot].borrow();
            cell.as_ref()
                .is_none_or(|s| s.graph.rows < m || s.graph.batch < b)
                .then(|| {
                    let held = cell.as_ref().map_or(0, |s| s.graph.batch);
                    (self.graph_size(m, b).0, b.next_power_of_two().max(held))
                })
        };
        if let Some((rows, batch_cap)) = grow {
            // The old graph's buffers are given back first (nothing of it is in flight).
            *self.slots[slot].borrow_mut() = None;
            let device = &self.ctx.device;
            let need = device
                .plan(|| async { Ok(Graph::new(&self.ctx, &self.weights, rows, batch_cap)) })
                .await?;
            let what = format!("a batch of {batch_cap} sentences ({rows} tokens)");
            device.check_fits(&what, &need)?;
        }
        let scopes = ErrorScopes::open(&self.ctx.device);
        // The graph is borrowed only while recording (never across an await).
        let (readback, index) = {
            let mut cell = self.slots[slot].borrow_mut();
            if let Some((rows, batch_cap)) = grow {
                let device = &self.ctx.device;
                let before = device.memory();
                let graph = Graph::new(&self.ctx, &self.weights, rows, batch_cap);
                let _memory = device.hold(device.memory().since(&before));
                *cell = Some(Slot { graph, _memory });
            }
            let g = &cell.as_ref().expect("the graph was just built").graph;
            g.submit(&self.ctx, shape, &words, &batch.mask, &tables)
        };
        Ok(Pending {
            readback,
            len: b * self.weights.dims.hidden,
            index,
            verdict: Box::pin(scopes.close("encoding a batch")),
        })
    }

    async fn read(&self, pending: Pending, hidden: usize) -> Result<Vec<Vec<f32>>> {
        // A failed submit is reported as such, never read back as values.
        pending.verdict.await?;
        let flat = read_f32(
            &self.ctx.device,
            &pending.readback,
            pending.len,
            Some(pending.index),
        )
        .await?;
        self.ctx.check()?;
        let pooled = flat.chunks(hidden).map(<[f32]>::to_vec).collect();
        match &self.head {
            Some(head) => head.apply(pooled),
            None => Ok(pooled),
        }
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
            // 9 a layer, 2 more for Gemma's post-norms.
            Stack::Decoder { layers, .. } => (
                layers
                    .iter()
                    .map(|l| {
                        9 + usize::from(l.post_attention_norm.is_some())
                            + usize::from(l.post_ffn_norm.is_some())
                    })
                    .sum(),
                true,
            ),
        };
        input + layers + usize::from(final_norm) + 1
    }
}

/// ModernBERT's embedding LayerNorm (no bias), in place on one row, as candle's `layer_norm`
/// computes it on the CPU (mean, then the mean of squared deviations, in f32).
fn layer_norm_no_bias(row: &mut [f32], gamma: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    let scale = 1.0 / (var + eps).sqrt();
    row.iter_mut()
        .zip(gamma)
        .for_each(|(v, g)| *v = (*v - mean) * scale * g);
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
