//! Running batches on the [`GpuEncoder`]: each batch split into submits that fit one binding,
//! its word rows gathered (and prepared as the architecture needs) on the CPU, recorded into
//! one of two graphs and submitted before the previous one is read back.

use std::future::Future;
use std::pin::Pin;

use anyhow::{ensure, Result};
use candle_core::{Device, Tensor};

use super::super::buffers::{read_f32, ErrorScopes, Held};
use super::super::graph::Graph;
use super::super::kernels::Shape;
use super::super::weights::Input;
use super::{EncodeError, GpuEncoder};
use crate::model::TokenBatch;

/// A graph and the GPU memory its buffers hold (given back when it is replaced).
pub(super) struct Slot {
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

impl GpuEncoder {
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
