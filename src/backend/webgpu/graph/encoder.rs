//! The encoders' steps (BERT, MPNet, nomic-bert post-norm; ModernBERT pre-norm): the
//! embedding sum and its LayerNorm where the GPU makes them, each layer's attention and
//! feed-forward in its order, pooling.

use super::super::buffers::{storage, Step};
use super::super::context::GpuContext;
use super::super::kernels::{
    Attention, EmbedAdd, Glu, LayerNorm, Matmul, Op, PoolL2, Rope, FLAG_GELU, FLAG_RESIDUAL,
};
use super::super::weights::{Dims, Ffn, GpuWeights, Input, Layer, Linear, Norm};
use super::{activation_buffers, bind_steps, Graph, Io};

impl Graph {
    /// The encoder's steps. Post-norm (BERT, MPNet, nomic-bert): the embedding sum and its
    /// LayerNorm (nomic-bert's sum is made on the CPU), then per layer QKV matmul, rotary
    /// positions (nomic-bert), attention (+ MPNet's relative bias), output projection +
    /// residual, LayerNorm, FFN-in (+ GELU, or the gated middle), FFN-out + residual,
    /// LayerNorm. Pre-norm (ModernBERT, input normed on the CPU): per layer LayerNorm (not in
    /// layer 0), QKV matmul, rotary positions, attention (in the window on local layers),
    /// output projection + residual, LayerNorm, FFN-in, gated middle, FFN-out + residual; then
    /// the final LayerNorm. Then pooling + L2.
    pub(super) fn encoder(
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
        let attention = |window| {
            Op::Attention(Attention {
                heads,
                kv_heads: heads,
                head_dim,
                relative_bias: relative_bias.is_some(),
                window,
                causal: false,
                scaled: true,
            })
        };
        let relative_bias = relative_bias.unwrap_or(&no_bias);

        let norm = Op::LayerNorm(LayerNorm { cols: hidden, eps });
        let matmul = |n, k, flags, linear: &Linear| {
            Op::Matmul(Matmul {
                n,
                k,
                flags,
                format: linear.format,
            })
        };
        let rope = Op::Rope(Rope { heads, half });
        let mut ops: Vec<(Op, Vec<&wgpu::Buffer>)> = Vec::new();
        match &w.input {
            Input::Table {
                positions,
                token_type0,
                norm: n,
            } => ops.extend([
                (
                    Op::EmbedAdd(EmbedAdd { cols: hidden }),
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
        let pool = Op::PoolL2(PoolL2 {
            dim: hidden,
            pooling: w.pooling,
        });
        ops.push((pool, vec![&h, mask, pooled]));
        bind_steps(ctx, &ops)
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
    let matmul = |n, flags, linear: &Linear| {
        Op::Matmul(Matmul {
            n,
            k: hidden,
            flags,
            format: linear.format,
        })
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
            (Op::Glu(Glu { inter, act: *act }), vec![gate_up, ffn]),
        ],
        (Ffn::Gated { .. }, None) => unreachable!("a graph with gated layers has the buffer"),
    }
}
