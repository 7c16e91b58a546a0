//! The decoder-built embedders' steps (Qwen3, Gemma 3) and T5's encoder's: pre-RMSNorm layers
//! of grouped-query attention with per-head norms fused with the rotary positions (T5: neither;
//! its relative-position bias in the attention), each block's output added to the stream
//! (Gemma's normed first), the final RMSNorm, pooling.

use super::super::buffers::{storage, Step};
use super::super::context::GpuContext;
use super::super::kernels::{
    Attention, Glu, HeadNormRope, Matmul, Op, PoolL2, RmsNorm, FLAG_RELU, FLAG_RESIDUAL,
};
use super::super::weights::{DecoderKind, DecoderLayer, Dims, GpuWeights, Linear};
use super::{activation_buffers, bind_steps, Graph, Io};

impl Graph {
    /// The decoder-built embedders' steps (Qwen3, Gemma 3; the input rows scaled on the
    /// CPU). Per layer: RMSNorm, QKV matmul, the per-head norms and rotary positions,
    /// attention (causal, or in the window on Gemma's local layers), the output projection
    /// added to the stream (Gemma: normed first, then added), RMSNorm, the gate-and-up matmul,
    /// its gated middle, the down projection added as the attention's. Then the final RMSNorm
    /// and pooling + L2. The stream alternates between `x` and `x2`, as ModernBERT's. T5: no
    /// per-head step, its relative-position bias and unscaled scores in the attention, the up
    /// matmul with ReLU and no gated middle where it has no gate.
    pub(super) fn decoder(
        ctx: &GpuContext,
        w: &GpuWeights,
        (layers, kind, final_norm): (&[DecoderLayer], DecoderKind, &wgpu::Buffer),
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
        // Both halves of a gated feed-forward (none without a gate: T5 1.0's ReLU).
        let gate_up = kind.gate.map(|_| act_buffer("gate and up", 2 * inter));
        let up_rows = match kind.gate {
            Some(_) => 2 * inter,
            None => inter,
        };
        let ffn = act_buffer("intermediate", inter);
        // Gemma's blocks' outputs before their norms.
        let post_norms = layers
            .iter()
            .any(|l| l.post_attention_norm.is_some() || l.post_ffn_norm.is_some());
        let block = post_norms.then(|| act_buffer("block output", hidden));
        let no_bias = storage(d, "no relative bias", 4);
        let relative_bias = w.relative_bias.as_ref();
        let norm = |residual| {
            Op::RmsNorm(RmsNorm {
                cols: hidden,
                eps,
                residual,
            })
        };
        let mut ops: Vec<(Op, Vec<&wgpu::Buffer>)> = Vec::new();
        for l in layers {
            // The norms without a residual bind their input where it would go (unread).
            ops.push((norm(false), vec![x, &l.attention_norm, x, &h]));
            ops.push((
                Op::Matmul(Matmul {
                    n: qkv_width,
                    k: hidden,
                    flags: 0,
                    format: l.qkv.format,
                }),
                vec![&h, &l.qkv.w, &l.qkv.b, &h, &qkv],
            ));
            if let Some(rotary) = l.rotary {
                let (cos, sin) = &io.tables[rotary];
                ops.push((
                    Op::HeadNormRope(HeadNormRope {
                        heads,
                        kv_heads,
                        half: head_dim / 2,
                        eps,
                        normalize: l.qk_norms.is_some(),
                    }),
                    // Without norms (Qwen2) the gammas are not read: any buffer is bound.
                    match &l.qk_norms {
                        Some([q_norm, k_norm]) => vec![&qkv, q_norm, k_norm, cos, sin],
                        None => vec![&qkv, &no_bias, &no_bias, cos, sin],
                    },
                ));
            }
            ops.push((
                Op::Attention(Attention {
                    heads,
                    kv_heads,
                    head_dim,
                    relative_bias: relative_bias.is_some(),
                    window: l.window,
                    causal: kind.causal,
                    scaled: kind.scaled_scores,
                }),
                vec![&qkv, &io.mask, relative_bias.unwrap_or(&no_bias), &context],
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
            // With a gate: both halves into `gate_up`, the gated middle into `ffn`; without
            // (T5 1.0): `relu(up)` straight into `ffn`.
            ops.push((
                Op::Matmul(Matmul {
                    n: up_rows,
                    k: hidden,
                    flags: if kind.gate.is_some() { 0 } else { FLAG_RELU },
                    format: l.up_gate.format,
                }),
                vec![
                    &h,
                    &l.up_gate.w,
                    &l.up_gate.b,
                    &h,
                    gate_up.as_ref().unwrap_or(&ffn),
                ],
            ));
            if let (Some(act), Some(gate_up)) = (kind.gate, &gate_up) {
                ops.push((Op::Glu(Glu { inter, act }), vec![gate_up, &ffn]));
            }
            let post = l.post_ffn_norm.as_ref();
            add_block(&mut ops, io_of(&ffn, inter, &x2, x), &l.down, post, eps);
        }
        ops.push((norm(false), vec![x, final_norm, x, &h]));
        let pool = Op::PoolL2(PoolL2 {
            dim: hidden,
            pooling: w.pooling,
        });
        ops.push((pool, vec![&h, &io.mask, &io.pooled]));
        bind_steps(ctx, &ops)
    }
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
    let matmul = |flags| {
        Op::Matmul(Matmul {
            n: b.n,
            k: b.k,
            flags,
            format: linear.format,
        })
    };
    match (post_norm, b.scratch) {
        (Some(gamma), Some(scratch)) => ops.extend([
            (
                matmul(0),
                vec![b.input, &linear.w, &linear.b, b.input, scratch],
            ),
            (
                Op::RmsNorm(RmsNorm {
                    cols: b.n,
                    eps,
                    residual: true,
                }),
                vec![scratch, gamma, b.from, b.to],
            ),
        ]),
        _ => ops.push((
            matmul(FLAG_RESIDUAL),
            vec![b.input, &linear.w, &linear.b, b.from, b.to],
        )),
    }
}
