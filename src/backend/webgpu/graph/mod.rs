//! A batch's graph: the activation buffers for up to `rows` tokens and `batch` sentences, and
//! the list of [`Step`]s (kernel launch + bind group + parameter slot) of the forward pass,
//! bound once to them and to the uploaded [`GpuWeights`]. Each batch then writes its inputs
//! and parameter blocks and records the same steps into one compute pass.
//!
//! BERT and MPNet record the same steps; what differs lives in their [`GpuWeights`] (MPNet's
//! relative-position bias, the weights' formats, the pooling mode). nomic-bert adds rotary
//! positions and a gated feed-forward to the same post-norm layer; ModernBERT's pre-norm
//! layers are recorded in their own order (`encoder.rs`); the decoder-built embedders' (Qwen3,
//! Gemma 3) RMSNorm layers in theirs ([`Graph::decoder`], `decoder.rs`). This file holds what
//! every graph shares: its inputs and output, the per-batch submit, and the binding of steps.

mod decoder;
mod encoder;

use super::buffers::{f32_bytes, params_bytes, record, staging, storage, u32_bytes, uniform, Step};
use super::context::GpuContext;
use super::kernels::{Op, Shape};
use super::weights::{GpuWeights, Stack};

/// Activation buffers and the steps bound to them; grown (rebuilt) when a batch does not fit.
pub(crate) struct Graph {
    /// Token rows and sentences the buffers hold.
    pub rows: usize,
    pub batch: usize,
    /// Input: the gathered word rows `[rows, hidden]`.
    x: wgpu::Buffer,
    /// Input: the attention mask `[rows]`.
    mask: wgpu::Buffer,
    /// Output: `[batch, width]`, copied to `readback`.
    pooled: wgpu::Buffer,
    width: usize,
    readback: wgpu::Buffer,
    /// Input: the rotary tables' cosines and sines (one pair per table).
    tables: Vec<(wgpu::Buffer, wgpu::Buffer)>,
    /// Every step's parameter block, one aligned slot each.
    params: wgpu::Buffer,
    steps: Vec<Step>,
}

/// The buffers every graph has: the inputs written per batch and the pooled output.
struct Io {
    x: wgpu::Buffer,
    mask: wgpu::Buffer,
    pooled: wgpu::Buffer,
    tables: Vec<(wgpu::Buffer, wgpu::Buffer)>,
}

impl Io {
    fn new(ctx: &GpuContext, w: &GpuWeights, rows: usize, batch: usize) -> Self {
        let d = &ctx.device;
        let hidden = w.dims.hidden;
        // The rotary tables' cosines and sines, `[seq, head_dim / 2]` each (seq ≤ rows).
        let half = w.dims.head_dim / 2;
        let tables = w
            .rotary
            .iter()
            .map(|_| {
                let table = |label| storage(d, label, (rows * half * 4).max(4) as u64);
                (table("rope cos"), table("rope sin"))
            })
            .collect();
        Self {
            x: storage(d, "x", (rows * hidden * 4) as u64),
            mask: storage(d, "mask", (rows * 4) as u64),
            pooled: storage(d, "pooled", (batch * hidden * 4) as u64),
            tables,
        }
    }
}

impl Graph {
    /// The steps of `w`'s layers for up to `rows` tokens and `batch` sentences.
    pub fn new(ctx: &GpuContext, w: &GpuWeights, rows: usize, batch: usize) -> Self {
        let io = Io::new(ctx, w, rows, batch);
        let (params, steps) = match &w.stack {
            Stack::Encoder { layers, final_norm } => {
                Self::encoder(ctx, w, (layers, final_norm.as_ref()), &io, rows)
            }
            Stack::Decoder {
                layers,
                kind,
                final_norm,
            } => Self::decoder(ctx, w, (layers, *kind, final_norm), &io, rows),
        };
        let hidden = w.dims.hidden;
        Self {
            rows,
            batch,
            readback: staging(&ctx.device, (batch * hidden * 4) as u64),
            x: io.x,
            mask: io.mask,
            pooled: io.pooled,
            width: hidden,
            tables: io.tables,
            params,
            steps,
        }
    }

    /// Writes a batch of `shape` (its word rows `[rows, hidden]` and mask), records the steps
    /// and the copy of the pooled output, submits, and returns the buffer to read
    /// `batch × width` values from once the GPU is done with the returned submission.
    /// `tables`: each rotary table's cosines and sines for positions `0..seq`.
    pub fn submit(
        &self,
        ctx: &GpuContext,
        shape: Shape,
        words: &[f32],
        mask: &[u32],
        tables: &[(Vec<f32>, Vec<f32>)],
    ) -> (wgpu::Buffer, wgpu::SubmissionIndex) {
        let q = &ctx.queue;
        q.write_buffer(
            &self.params,
            0,
            &params_bytes(&self.steps, shape, self.params.size()),
        );
        q.write_buffer(&self.x, 0, &f32_bytes(words));
        q.write_buffer(&self.mask, 0, &u32_bytes(mask));
        for ((cos, sin), (cos_values, sin_values)) in self.tables.iter().zip(tables) {
            q.write_buffer(cos, 0, &f32_bytes(cos_values));
            q.write_buffer(sin, 0, &f32_bytes(sin_values));
        }
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("encode batch"),
            });
        record(&mut encoder, &ctx.kernels, &self.steps, shape);
        let out_bytes = (shape.batch * self.width * 4) as u64;
        encoder.copy_buffer_to_buffer(&self.pooled, 0, &self.readback, 0, out_bytes);
        let index = q.submit([encoder.finish()]);
        (self.readback.clone(), index)
    }
}

/// A maker of activation buffers of `rows` rows of a width, stored as `ctx.activations()`.
fn activation_buffers(ctx: &GpuContext, rows: usize) -> impl Fn(&str, usize) -> wgpu::Buffer + '_ {
    let value_bytes = ctx.activations().bytes();
    move |label, width| storage(&ctx.device, label, (rows * width * value_bytes) as u64)
}

/// One uniform buffer with an aligned parameter slot per op, and the ops bound to it.
fn bind_steps(ctx: &GpuContext, ops: &[(Op, Vec<&wgpu::Buffer>)]) -> (wgpu::Buffer, Vec<Step>) {
    let align = u64::from(ctx.limits.min_uniform_buffer_offset_alignment);
    // The largest parameter block (the attention's) is 48 bytes.
    let stride = 48u64.next_multiple_of(align);
    let params = uniform(&ctx.device, "params", stride * ops.len() as u64);
    let steps = ops
        .iter()
        .enumerate()
        .map(|(i, (op, buffers))| {
            Step::new(
                &ctx.device,
                &ctx.kernels,
                *op,
                (&params, i as u64 * stride),
                buffers,
            )
        })
        .collect();
    (params, steps)
}
