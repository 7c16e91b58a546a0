//! A batch's graph: the activation buffers for up to `rows` tokens and `batch` sentences, and
//! the list of [`Step`]s (kernel launch + bind group + parameter slot) of the forward pass,
//! bound once to them and to the uploaded [`GpuWeights`]. Each batch then writes its inputs
//! and parameter blocks and records the same steps into one compute pass.
//!
//! BERT and MPNet record the same steps; what differs lives in their [`GpuWeights`] (MPNet's
//! relative-position bias, the weights' formats, the pooling mode). nomic-bert adds rotary
//! positions and a gated feed-forward to the same post-norm layer; ModernBERT's pre-norm
//! layers are recorded in their own order.

use super::buffers::{f32_bytes, params_bytes, record, staging, storage, u32_bytes, uniform, Step};
use super::context::GpuContext;
use super::kernels::{Op, Shape};
use super::params::{FLAG_GELU, FLAG_RESIDUAL};
use super::weights::{Dims, Ffn, GpuWeights, Input, Layer, Linear};

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

impl Graph {
    /// The encoder's steps. Post-norm (BERT, MPNet, nomic-bert): the embedding sum and its
    /// LayerNorm (nomic-bert's sum is made on the CPU), then per layer QKV matmul, rotary
    /// positions (nomic-bert), attention (+ MPNet's relative bias), output projection +
    /// residual, LayerNorm, FFN-in (+ GELU, or the gated middle), FFN-out + residual,
    /// LayerNorm. Pre-norm (ModernBERT, input normed on the CPU): per layer LayerNorm (not in
    /// layer 0), QKV matmul, rotary positions, attention (in the window on local layers),
    /// output projection + residual, LayerNorm, FFN-in, gated middle, FFN-out + residual; then
    /// the final LayerNorm. Then pooling + L2.
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
        let pre_norm = w.final_norm.is_some();
        let gated = w.layers.iter().any(|l| matches!(l.ffn, Ffn::Gated { .. }));
        let x = storage(d, "x", (rows * hidden * 4) as u64);
        // Pre-norm layers add both residuals to the f32 stream: it alternates between x and x2.
        let x2 = pre_norm.then(|| storage(d, "x2", (rows * hidden * 4) as u64));
        let h = act("h", hidden);
        let h2 = act("h2", hidden);
        let context = act("context", hidden);
        let qkv = act("qkv", 3 * hidden);
        let ffn = act("intermediate", inter);
        let gate_up = gated.then(|| act("gate and up", 2 * inter));
        let mask = storage(d, "mask", (rows * 4) as u64);
        let pooled = storage(d, "pooled", (batch * hidden * 4) as u64);
        // The rotary tables' cosines and sines, `[seq, head_dim / 2]` each (seq ≤ rows).
        let half = head_dim / 2;
        let tables: Vec<(wgpu::Buffer, wgpu::Buffer)> = w
            .rotary
            .iter()
            .map(|_| {
                let table = |label| storage(d, label, (rows * half * 4).max(4) as u64);
                (table("rope cos"), table("rope sin"))
            })
            .collect();
        // BERT binds a placeholder where MPNet's bias table goes (the kernel does not read it).
        let no_bias = storage(d, "no relative bias", 4);
        let relative_bias = w.relative_bias.as_ref();
        let attention = |window| Op::Attention {
            heads,
            head_dim,
            relative_bias: relative_bias.is_some(),
            window,
        };
        let relative_bias = relative_bias.unwrap_or(&no_bias);

        let norm = Op::LayerNorm { cols: hidden, eps };
        let matmul = |n, k, flags, linear: &Linear| Op::Matmul {
            n,
            k,
            flags,
            format: linear.format,
        };
        let rope = Op::Rope { heads, half };
        let mut ops: Vec<(Op, Vec<&wgpu::Buffer>)> = Vec::new();
        match &w.input {
            Input::Table {
                positions,
                token_type0,
                norm: n,
            } => ops.extend([
                (
                    Op::EmbedAdd { cols: hidden },
                    vec![&x, positions, token_type0],
                ),
                (norm, vec![&x, &n.g, &n.b, &h]),
            ]),
            Input::TypeRow { norm: n, .. } => ops.push((norm, vec![&x, &n.g, &n.b, &h])),
            Input::Normed { .. } => {}
        }
        for l in &w.layers {
            // What the QKV matmul reads: post-norm the normed stream h; pre-norm the stream
            // normed here (or, in ModernBERT's layer 0, the normed input itself).
            let qkv_input = match (pre_norm, &l.attention_norm) {
                (true, Some(n)) => {
                    ops.push((norm, vec![&x, &n.g, &n.b, &h]));
                    &h
                }
                (true, None) => &x,
                (false, _) => &h,
            };
            ops.push((
                matmul(3 * hidden, hidden, 0, &l.qkv),
                vec![qkv_input, &l.qkv.w, &l.qkv.b, qkv_input, &qkv],
            ));
            if let Some(t) = l.rotary {
                ops.push((rope, vec![&qkv, &tables[t].0, &tables[t].1]));
            }
            ops.push((
                attention(l.window),
                vec![&qkv, &mask, relative_bias, &context],
            ));
            if let Some(x2) = &x2 {
                // x2 = x + out(context); x = x2 + down(ffn(norm(x2))).
                ops.push((
                    matmul(hidden, hidden, FLAG_RESIDUAL, &l.attention_out),
                    vec![&context, &l.attention_out.w, &l.attention_out.b, &x, x2],
                ));
                let n = &l.output_norm;
                ops.push((norm, vec![x2, &n.g, &n.b, &h2]));
                ops.extend(ffn_in(l, &h2, gate_up.as_ref(), &ffn, (hidden, inter)));
                ops.push((
                    matmul(hidden, inter, FLAG_RESIDUAL, &l.output),
                    vec![&ffn, &l.output.w, &l.output.b, x2, &x],
                ));
                continue;
            }
            let attention_norm = l.attention_norm.as_ref().expect("post-norm layers have it");
            ops.extend([
                (
                    matmul(hidden, hidden, FLAG_RESIDUAL, &l.attention_out),
                    vec![&context, &l.attention_out.w, &l.attention_out.b, &h, &x],
                ),
                (norm, vec![&x, &attention_norm.g, &attention_norm.b, &h2]),
            ]);
            ops.extend(ffn_in(l, &h2, gate_up.as_ref(), &ffn, (hidden, inter)));
            ops.extend([
                (
                    matmul(hidden, inter, FLAG_RESIDUAL, &l.output),
                    vec![&ffn, &l.output.w, &l.output.b, &h2, &x],
                ),
                (norm, vec![&x, &l.output_norm.g, &l.output_norm.b, &h]),
            ]);
        }
        if let Some(n) = &w.final_norm {
            ops.push((norm, vec![&x, &n.g, &n.b, &h]));
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
            tables,
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

/// The feed-forward's input projection from `input` into `ffn`: GELU fused into the matmul, or
/// the gated matmul into `gate_up` and its middle.
fn ffn_in<'a>(
    l: &'a Layer,
    input: &'a wgpu::Buffer,
    gate_up: Option<&'a wgpu::Buffer>,
    ffn: &'a wgpu::Buffer,
    (hidden, inter): (usize, usize),
) -> Vec<(Op, Vec<&'a wgpu::Buffer>)> {
    let matmul = |n, flags, linear: &Linear| Op::Matmul {
        n,
        k: hidden,
        flags,
        format: linear.format,
    };
    match (&l.ffn, gate_up) {
        (Ffn::Gelu(linear), _) => vec![(
            matmul(inter, FLAG_GELU, linear),
            vec![input, &linear.w, &linear.b, input, ffn],
        )],
        (Ffn::Gated { up_gate, silu }, Some(gate_up)) => vec![
            (
                matmul(2 * inter, 0, up_gate),
                vec![input, &up_gate.w, &up_gate.b, input, gate_up],
            ),
            (Op::Glu { inter, silu: *silu }, vec![gate_up, ffn]),
        ],
        (Ffn::Gated { .. }, None) => unreachable!("a graph with gated layers has the buffer"),
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
