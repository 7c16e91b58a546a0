//! A batch's graph: the activation buffers for up to `rows` tokens and `batch` sentences, and
//! the list of [`Step`]s (kernel launch + bind group + parameter slot) of the forward pass,
//! bound once to them and to the uploaded [`GpuWeights`]. Each batch then writes its inputs
//! and parameter blocks and records the same steps into one compute pass.
//!
//! BERT and MPNet record the same steps; what differs lives in their [`GpuWeights`] (MPNet's
//! relative-position bias, the weights' formats, the pooling mode).

use super::buffers::{f32_bytes, params_bytes, record, staging, storage, u32_bytes, uniform, Step};
use super::context::GpuContext;
use super::kernels::{Op, Shape};
use super::params::{FLAG_GELU, FLAG_RESIDUAL};
use super::weights::{Dims, GpuWeights, Linear};

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
    /// Every step's parameter block, one aligned slot each.
    params: wgpu::Buffer,
    steps: Vec<Step>,
}

impl Graph {
    /// The encoder (BERT or MPNet): embedding sum and its LayerNorm, 7 steps per layer (QKV
    /// matmul, attention (+ MPNet's relative bias), output projection + residual, LayerNorm,
    /// FFN-in + GELU, FFN-out + residual, LayerNorm), pooling + L2.
    pub fn encoder(ctx: &GpuContext, w: &GpuWeights, rows: usize, batch: usize) -> Self {
        let d = &ctx.device;
        let Dims {
            hidden,
            heads,
            head_dim,
            inter,
            eps,
            ..
        } = w.dims;
        // The residual stream `x` (the word rows, then each sum LayerNorm reads) stays f32;
        // the other activations are stored as `ctx.activations()` (f16: half the bytes).
        let value_bytes = ctx.activations().bytes();
        let act =
            |label: &str, width: usize| storage(d, label, (rows * width * value_bytes) as u64);
        let x = storage(d, "x", (rows * hidden * 4) as u64);
        let h = act("h", hidden);
        let h2 = act("h2", hidden);
        let context = act("context", hidden);
        let qkv = act("qkv", 3 * hidden);
        let ffn = act("intermediate", inter);
        let mask = storage(d, "mask", (rows * 4) as u64);
        let pooled = storage(d, "pooled", (batch * hidden * 4) as u64);
        // BERT binds a placeholder where MPNet's bias table goes (the kernel does not read it).
        let no_bias = storage(d, "no relative bias", 4);
        let relative_bias = w.relative_bias.as_ref();
        let attention = Op::Attention {
            heads,
            head_dim,
            relative_bias: relative_bias.is_some(),
        };
        let relative_bias = relative_bias.unwrap_or(&no_bias);

        let norm = Op::LayerNorm { cols: hidden, eps };
        let matmul = |n, k, flags, linear: &Linear| Op::Matmul {
            n,
            k,
            flags,
            format: linear.format,
        };
        let mut ops: Vec<(Op, Vec<&wgpu::Buffer>)> = vec![
            (
                Op::EmbedAdd { cols: hidden },
                vec![&x, &w.positions, &w.token_type0],
            ),
            (norm, vec![&x, &w.embed_norm.g, &w.embed_norm.b, &h]),
        ];
        for l in &w.layers {
            ops.extend([
                // h·Wqkv (the residual binding is unused: the input stands in).
                (
                    matmul(3 * hidden, hidden, 0, &l.qkv),
                    vec![&h, &l.qkv.w, &l.qkv.b, &h, &qkv],
                ),
                (attention, vec![&qkv, &mask, relative_bias, &context]),
                (
                    matmul(hidden, hidden, FLAG_RESIDUAL, &l.attention_out),
                    vec![&context, &l.attention_out.w, &l.attention_out.b, &h, &x],
                ),
                (
                    norm,
                    vec![&x, &l.attention_norm.g, &l.attention_norm.b, &h2],
                ),
                (
                    matmul(inter, hidden, FLAG_GELU, &l.intermediate),
                    vec![&h2, &l.intermediate.w, &l.intermediate.b, &h2, &ffn],
                ),
                (
                    matmul(hidden, inter, FLAG_RESIDUAL, &l.output),
                    vec![&ffn, &l.output.w, &l.output.b, &h2, &x],
                ),
                (norm, vec![&x, &l.output_norm.g, &l.output_norm.b, &h]),
            ]);
        }
        let pool = Op::PoolL2 {
            dim: hidden,
            pooling: w.pooling,
        };
        ops.push((pool, vec![&h, &mask, &pooled]));
        let (params, steps) = bind_steps(ctx, &ops);
        Self {
            rows,
            batch,
            readback: staging(d, (batch * hidden * 4) as u64),
            x,
            mask,
            pooled,
            width: hidden,
            params,
            steps,
        }
    }

    /// Writes a batch of `shape` (its word rows `[rows, hidden]` and mask), records the steps
    /// and the copy of the pooled output, submits, and returns the buffer to read
    /// `batch × width` values from once the GPU is done with the returned submission.
    pub fn submit(
        &self,
        ctx: &GpuContext,
        shape: Shape,
        words: &[f32],
        mask: &[u32],
    ) -> (wgpu::Buffer, wgpu::SubmissionIndex) {
        let q = &ctx.queue;
        q.write_buffer(
            &self.params,
            0,
            &params_bytes(&self.steps, shape, self.params.size()),
        );
        q.write_buffer(&self.x, 0, &f32_bytes(words));
        q.write_buffer(&self.mask, 0, &u32_bytes(mask));
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

/// One uniform buffer with an aligned parameter slot per op, and the ops bound to it.
fn bind_steps(ctx: &GpuContext, ops: &[(Op, Vec<&wgpu::Buffer>)]) -> (wgpu::Buffer, Vec<Step>) {
    let align = u64::from(ctx.limits.min_uniform_buffer_offset_alignment);
    // The largest parameter block is 32 bytes.
    let stride = 32u64.next_multiple_of(align);
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
