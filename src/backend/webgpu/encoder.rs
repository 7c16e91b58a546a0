//! The encoder (BERT, MPNet) on the GPU: weights uploaded once ([`GpuWeights`]), the batch graph
//! (activation buffers, bind groups, steps) reused across batches ([`Graph`]), one command
//! buffer (one compute pass, 3 + 7·layers dispatches) and one readback per batch.

use std::cell::{Cell, RefCell};

use anyhow::{ensure, Result};
use candle_core::quantized::QMatMul;
use candle_core::{Device, Tensor};

use super::buffers::{read_f32, ErrorScopes};
use super::context::GpuContext;
use super::graph::Graph;
use super::kernels::Shape;
use super::weights::GpuWeights;
use crate::model::{ModelFile, TokenBatch};

/// A BERT-family encoder (all-MiniLM-L6-v2, all-mpnet-base-v2 and the like) on a WebGPU device.
pub struct GpuBert {
    pub(crate) ctx: GpuContext,
    /// The token table stays on the CPU: a batch's rows are gathered there (dequantized as
    /// the CPU backend does) and uploaded; the table itself never occupies GPU memory.
    words: QMatMul,
    weights: GpuWeights,
    graph: RefCell<Option<Graph>>,
    busy: Cell<bool>,
    /// Largest token count per submit (the biggest activation must fit one binding).
    max_rows: usize,
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
    /// Uploads the encoder's weights (f32, or the file's q8_0 / q4_0 blocks) to `ctx`'s device.
    pub async fn new(ctx: GpuContext, file: &ModelFile, words: QMatMul) -> Result<Self> {
        let weights = GpuWeights::upload(&ctx, file).await?;
        // The widest activation is [rows, max(3·hidden, intermediate)] f32.
        let widest = (3 * weights.dims.hidden).max(weights.dims.inter) as u64 * 4;
        let max_binding = ctx
            .limits
            .max_storage_buffer_binding_size
            .min(ctx.limits.max_buffer_size);
        let max_rows = (max_binding / widest) as usize;
        ensure!(
            max_rows >= file.info.max_seq_length,
            "the GPU's buffers are too small for one {}-token sentence",
            file.info.max_seq_length
        );
        Ok(Self {
            ctx,
            words,
            weights,
            graph: RefCell::new(None),
            busy: Cell::new(false),
            max_rows,
        })
    }

    /// Pooled, L2-normalised embeddings of a padded batch. Batches with more tokens than one
    /// binding holds are run in several submits.
    pub async fn encode_async(
        &self,
        batch: &TokenBatch,
    ) -> std::result::Result<Vec<Vec<f32>>, EncodeError> {
        if self.busy.replace(true) {
            return Err(EncodeError::Busy);
        }
        let result = self.encode_all(batch).await.map_err(EncodeError::Gpu);
        self.busy.set(false);
        result
    }

    async fn encode_all(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        self.ctx.check()?;
        let t = batch.seq_len;
        if batch.batch == 0 || t == 0 {
            return Ok(vec![vec![0.0; self.weights.dims.hidden]; batch.batch]);
        }
        ensure!(
            t <= self.weights.dims.max_positions,
            "a batch of {t} tokens exceeds the {} positions of the model",
            self.weights.dims.max_positions
        );
        let rows_per_submit = (self.max_rows / t).max(1);
        let mut out = Vec::with_capacity(batch.batch);
        for start in (0..batch.batch).step_by(rows_per_submit) {
            let end = (start + rows_per_submit).min(batch.batch);
            let part = TokenBatch {
                ids: batch.ids[start * t..end * t].to_vec(),
                mask: batch.mask[start * t..end * t].to_vec(),
                batch: end - start,
                seq_len: t,
            };
            out.extend(self.encode_one(&part).await?);
        }
        Ok(out)
    }

    async fn encode_one(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        let shape = Shape::batch(batch.batch, batch.seq_len);
        let (b, m) = (shape.batch, shape.rows);
        // The word rows, gathered on the CPU from the (possibly quantized) table.
        let ids = Tensor::from_slice(&batch.ids, m, &Device::Cpu)?;
        let words = self
            .words
            .embedding(&ids)?
            .flatten_all()?
            .to_vec1::<f32>()?;

        let scopes = ErrorScopes::open(&self.ctx.device);
        // The graph is borrowed only while recording (never across an await).
        let readback = {
            let mut graph = self.graph.borrow_mut();
            if graph.as_ref().is_none_or(|g| g.rows < m || g.batch < b) {
                let rows = m.next_power_of_two().min(self.max_rows).max(m);
                let batch_cap = b
                    .next_power_of_two()
                    .max(graph.as_ref().map_or(0, |g| g.batch));
                *graph = Some(Graph::encoder(&self.ctx, &self.weights, rows, batch_cap));
            }
            let g = graph.as_ref().expect("the graph was just built");
            g.submit(&self.ctx, shape, &words, &batch.mask)
        };
        scopes.close("encoding a batch").await?;
        let hidden = self.weights.dims.hidden;
        let flat = read_f32(&self.ctx.device, &readback, b * hidden).await?;
        self.ctx.check()?;
        Ok(flat.chunks(hidden).map(<[f32]>::to_vec).collect())
    }

    /// Bytes of the model's weights on the GPU (every buffer the upload created).
    pub fn weight_bytes(&self) -> u64 {
        self.weights.bytes
    }

    /// Dispatches per batch: embeddings (2), 7 per layer, pooling (1).
    pub fn dispatches_per_batch(&self) -> usize {
        3 + 7 * self.weights.layers.len()
    }
}
