//! A batch's graph: the activation buffers for up to `rows` tokens and `batch` sentences, and
//! the list of [`Step`]s (kernel launch + bind group + parameter slot) of the forward pass,
//! bound once to them and to the uploaded [`GpuWeights`]. Each batch then writes its inputs
//! and parameter blocks and records the same steps into one compute pass.
//!
//! BERT and MPNet record the same steps; what differs lives in their [`GpuWeights`] (MPNet's
//! relative-position bias, the weights' formats, the pooling mode). nomic-bert adds rotary
//! positions and a gated feed-forward to the same post-norm layer; ModernBERT's pre-norm
//! layers are recorded in their own order; the decoder-built embedders' (Qwen3, Gemma 3)
//! RMSNorm layers in theirs ([`Graph::decoder`]).

use super::buffers::{f32_bytes, params_bytes, record, staging, storage, u32_bytes, uniform, Step};
use super::context::GpuContext;
use super::kernels::{Op, Shape};
use super::params::{FLAG_GELU, FLAG_RESIDUAL};
use super::weights::{DecoderLayer, Dims, Ffn, GpuWeights, Input, Layer, Linear, Norm, Stack};
use crate::backend::cpu::GateActivation;

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
                act,
                causal,
                final_norm,
            } => Self::decoder(ctx, w, (layers, *act, *causal, final_norm), &io, rows),
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

    /// The encoder's steps. Post-norm (BERT, MPNet, nomic-bert): the embedding sum and its
    /// LayerNorm (nomic-bert's sum is made on the CPU), then per layer QKV matmul, rotary
    /// positions (nomic-bert), attention (+ MPNet's relative bias), output projection +
    /// residual, LayerNorm, FFN-in (+ GELU, or the gated middle), FFN-out + residual,
    /// LayerNorm. Pre-norm (ModernBERT, input normed on the CPU): per layer LayerNorm (not in
    /// layer 0), QKV matmul, rotary positions, attention (in the window on local layers),
    /// output projection + residual, LayerNorm, FFN-in, gated middle, FFN-out + residual; then
    /// the final LayerNorm. Then pooling + L2.
    fn encoder(
        ctx: &GpuContext,
        w: &GpuWeights,
        (layers, final_norm): (&[Layer], Option<&Norm>),
        io: &Io,
        rows: usize,
    ) -> (wgpu::Buffer, Vec<Step>) {
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
        let act = activation_buffers(ctx, rows);
        let pre_norm = final_norm.is_some();
        let gated = layers.iter().any(|l| matches!(l.ffn, Ffn::Gated { .. }));
        let x = &io.x;
        // Pre-norm layers add both residuals to the f32 stream: it alternates between x and x2.
        let x2 = pre_norm.then(|| storage(d, "x2", (rows * hidden * 4) as u64));
        let h = act("h", hidden);
        let h2 = act("h2", hidden);
        let context = act("context", hidden);
        let qkv = act("qkv", 3 * hidden);
        let ffn = act("intermediate", inter);
        let gate_up = gated.then(|| act("gate and up", 2 * inter));
        let (mask, pooled, tables) = (&io.mask, &io.pooled, &io.tables);
        let half = head_dim / 2;
        // BERT binds a placeholder where MPNet's bias table goes (the kernel does not read it).
        let no_bias = storage(d, "no relative bias", 4);
        let relative_bias = w.relative_bias.as_ref();
        let attention = |window| Op::Attention {
            heads,
            kv_heads: heads,
            head_dim,
            relative_bias: relative_bias.is_some(),
            window,
            causal: false,
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
                    vec![x, positions, token_type0],
                ),
                (norm, vec![x, &n.g, &n.b, &h]),
            ]),
            Input::TypeRow { norm: n, .. } => ops.push((norm, vec![x, &n.g, &n.b, &h])),
            Input::Normed { .. } | Input::Scaled(_) => {}
        }
        for l in layers {
            // What the QKV matmul reads: post-norm the normed stream h; pre-norm the stream
            // normed here (or, in ModernBERT's layer 0, the normed input itself).
            let qkv_input = match (pre_norm, &l.attention_norm) {
                (true, Some(n)) => {
                    ops.push((norm, vec![x, &n.g, &n.b, &h]));
                    &h
                }
                (true, None) => x,
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
                vec![&qkv, mask, relative_bias, &context],
            ));
            if let Some(x2) = &x2 {
                // x2 = x + out(context); x = x2 + down(ffn(norm(x2))).
                ops.push((
                    matmul(hidden, hidden, FLAG_RESIDUAL, &l.attention_out),
                    vec![&context, &l.attention_out.w, &l.attention_out.b, x, x2],
                ));
                let n = &l.output_norm;
                ops.push((norm, vec![x2, &n.g, &n.b, &h2]));
                ops.extend(ffn_in(l, &h2, gate_up.as_ref(), &ffn, (hidden, inter)));
                ops.push((
                    matmul(hidden, inter, FLAG_RESIDUAL, &l.output),
                    vec![&ffn, &l.output.w, &l.output.b, x2, x],
                ));
                continue;
            }
            let attention_norm = l.attention_norm.as_ref().expect("post-norm layers have it");
            ops.extend([
                (
                    matmul(hidden, hidden, FLAG_RESIDUAL, &l.attention_out),
                    vec![&context, &l.attention_out.w, &l.attention_out.b, &h, x],
                ),
                (norm, vec![x, &attention_norm.g, &attention_norm.b, &h2]),
            ]);
            ops.extend(ffn_in(l, &h2, gate_up.as_ref(), &ffn, (hidden, inter)));
            ops.extend([
                (
                    matmul(hidden, inter, FLAG_RESIDUAL, &l.output),
                    vec![&ffn, &l.output.w, &l.output.b, &h2, x],
                ),
                (norm, vec![x, &l.output_norm.g, &l.output_norm.b, &h]),
            ]);
        }
        if let Some(n) = final_norm {
            ops.push((norm, vec![x, &n.g, &n.b, &h]));
        }
        let pool = Op::PoolL2 {
            dim: hidden,
            pooling: w.pooling,
        };
        ops.push((pool, vec![&h, mask, pooled]));
        bind_steps(ctx, &ops)
    }

    /// The decoder-built embedders' steps (Qwen3, Gemma 3; the input rows scaled on the
    /// CPU). Per layer: RMSNorm, QKV matmul, the per-head norms and rotary positions,
    /// attention (causal, or in the window on Gemma's local layers), the output projection
    /// added to the stream (Gemma: normed first, then added), RMSNorm, the gate-and-up matmul,
    /// its gated middle, the down projection added as the attention's. Then the final RMSNorm
    /// and pooling + L2. The stream alternates between `x` and `x2`, as ModernBERT's.
    fn decoder(
        ctx: &GpuContext,
        w: &GpuWeights,
        (layers, act, causal, final_norm): (&[DecoderLayer], GateActivation, bool, &wgpu::Buffer),
        io: &Io,
        rows: usize,
    ) -> (wgpu::Buffer, Vec<Step>) {
        let d = &ctx.device;
        let Dims {
            hidden,
            heads,
            kv_heads,
            head_dim,
            inter,
            eps,
            ..
        } = w.dims;
        let act_buffer = activation_buffers(ctx, rows);
        let (q_width, qkv_width) = (heads * head_dim, (heads + 2 * kv_heads) * head_dim);
        let x = &io.x;
        let x2 = storage(d, "x2", (rows * hidden * 4) as u64);
        let h = act_buffer("h", hidden);
        let qkv = act_buffer("qkv", qkv_width);
        let context = act_buffer("context", q_width);
        let gate_up = act_buffer("gate and up", 2 * inter);
        let ffn = act_buffer("intermediate", inter);
        // Gemma's blocks' outputs before their norms.
        let post_norms = layers
            .iter()
            .any(|l| l.post_attention_norm.is_some() || l.post_ffn_norm.is_some());
        let block = post_norms.then(|| act_buffer("block output", hidden));
        let no_bias = storage(d, "no relative bias", 4);
        let norm = |residual| Op::RmsNorm {
            cols: hidden,
            eps,
            residual,
        };
        let mut ops: Vec<(Op, Vec<&wgpu::Buffer>)> = Vec::new();
        for l in layers {
            // The norms without a residual bind their input where it would go (unread).
            ops.push((norm(false), vec![x, &l.attention_norm, x, &h]));
            ops.push((
                Op::Matmul {
                    n: qkv_width,
                    k: hidden,
                    flags: 0,
                    format: l.qkv.format,
                },
                vec![&h, &l.qkv.w, &l.qkv.b, &h, &qkv],
            ));
            let (cos, sin) = &io.tables[l.rotary];
            ops.push((
                Op::HeadNormRope {
                    heads,
                    kv_heads,
                    half: head_dim / 2,
                    eps,
                },
                vec![&qkv, &l.query_norm, &l.key_norm, cos, sin],
            ));
            ops.push((
                Op::Attention {
                    heads,
                    kv_heads,
                    head_dim,
                    relative_bias: false,
                    window: l.window,
                    causal,
                },
                vec![&qkv, &io.mask, &no_bias, &context],
            ));
            let post = l.post_attention_norm.as_ref();
            let io_of = |input, k, from, to| Block {
                input,
                k,
                n: hidden,
                from,
                to,
                scratch: block.as_ref(),
            };
            add_block(
                &mut ops,
                io_of(&context, q_width, x, &x2),
                &l.attention_out,
                post,
                eps,
            );
            ops.push((norm(false), vec![&x2, &l.ffn_norm, &x2, &h]));
            ops.push((
                Op::Matmul {
                    n: 2 * inter,
                    k: hidden,
                    flags: 0,
                    format: l.up_gate.format,
                },
                vec![&h, &l.up_gate.w, &l.up_gate.b, &h, &gate_up],
            ));
            ops.push((Op::Glu { inter, act }, vec![&gate_up, &ffn]));
            let post = l.post_ffn_norm.as_ref();
            add_block(&mut ops, io_of(&ffn, inter, &x2, x), &l.down, post, eps);
        }
        ops.push((norm(false), vec![x, final_norm, x, &h]));
        let pool = Op::PoolL2 {
            dim: hidden,
            pooling: w.pooling,
        };
        ops.push((pool, vec![&h, &io.mask, &io.pooled]));
        bind_steps(ctx, &ops)
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
        (Ffn::Gated { up_gate, act }, Some(gate_up)) => vec![
            (
                matmul(2 * inter, 0, up_gate),
                vec![input, &up_gate.w, &up_gate.b, input, gate_up],
            ),
            (Op::Glu { inter, act: *act }, vec![gate_up, ffn]),
        ],
        (Ffn::Gated { .. }, None) => unreachable!("a graph with gated layers has the buffer"),
    }
}

/// A maker of activation buffers of `rows` rows of a width, stored as `ctx.activations()`.
fn activation_buffers(ctx: &GpuContext, rows: usize) -> impl Fn(&str, usize) -> wgpu::Buffer + '_ {
    let value_bytes = ctx.activations().bytes();
    move |label, width| storage(&ctx.device, label, (rows * width * value_bytes) as u64)
}

/// Where a decoder block's output goes: `to = from + post_norm(input·linearᵀ)`, through
/// `scratch` when there is a post-norm.
struct Block<'a> {
    input: &'a wgpu::Buffer,
    /// The projection's input and output widths.
    k: usize,
    n: usize,
    from: &'a wgpu::Buffer,
    to: &'a wgpu::Buffer,
    scratch: Option<&'a wgpu::Buffer>,
}

/// A decoder block's output projection added to the stream: by the matmul itself, or (Gemma)
/// into the scratch buffer, RMSNormed with `post_norm` and added by the norm.
fn add_block<'a>(
    ops: &mut Vec<(Op, Vec<&'a wgpu::Buffer>)>,
    b: Block<'a>,
    linear: &'a Linear,
    post_norm: Option<&'a wgpu::Buffer>,
    eps: f32,
) {
    let matmul = |flags| Op::Matmul {
        n: b.n,
        k: b.k,
        flags,
        format: linear.format,
    };
    match (post_norm, b.scratch) {
        (Some(gamma), Some(scratch)) => ops.extend([
            (
                matmul(0),
                vec![b.input, &linear.w, &linear.b, b.input, scratch],
            ),
            (
                Op::RmsNorm {
                    cols: b.n,
                    eps,
                    residual: true,
                },
                vec![scratch, gamma, b.from, b.to],
            ),
        ]),
        _ => ops.push((
            matmul(FLAG_RESIDUAL),
            vec![b.input, &linear.w, &linear.b, b.from, b.to],
        )),
    }
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
