//! The parts encoders share beyond BERT's own: scaled dot-product attention over an additive
//! mask (padding, a sliding window, causal), grouped-query heads, rotary positions (RoPE) and
//! the gated feed-forward.
//! Written once, used by every architecture that has them.

use anyhow::Result;
use candle_core::{DType, Device, Tensor};

use super::activation::{gate_in_place, softmax_last_dim, GateActivation};
use super::weights::{Linear, RmsNorm, Weights};
use super::LayerVisitor;
use crate::model::tensor_names::DecoderLayerNames;
use crate::model::EncoderConfig;

/// `softmax(q·kᵀ/√d + bias)·v` over heads: `q`, `k`, `v` are `[batch, heads, seq, head_dim]`,
/// `bias` broadcasts to the scores (`[batch, 1, 1, seq]`: 0 for tokens, −10⁹ for padding).
/// Returns `[batch, seq, heads·head_dim]`.
pub fn attention(q: &Tensor, k: &Tensor, v: &Tensor, bias: &Tensor) -> Result<Tensor> {
    let d = q.dim(3)?;
    attention_scaled(q, k, v, bias, (d as f64).sqrt())
}

/// [`attention`] with the scores divided by `divisor` instead of √d (T5's 1: its query
/// weights carry the 1/√d).
pub fn attention_scaled(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    bias: &Tensor,
    divisor: f64,
) -> Result<Tensor> {
    let (b, heads, t, d) = q.dims4()?;
    let scores = (q.matmul(&k.t()?)? / divisor)?.broadcast_add(bias)?;
    let probs = softmax_last_dim(&scores)?;
    drop(scores);
    Ok(probs
        .matmul(v)?
        .transpose(1, 2)?
        .reshape((b, t, heads * d))?)
}

/// Self-attention from one fused projection's output `qkv` (`[batch, seq, 3·hidden]`: the
/// queries', keys' and values' columns in that order), queries and keys turned by `rope`
/// (nomic-bert, ModernBERT). Returns the context `[batch, seq, hidden]`.
pub fn rotary_attention(
    qkv: &Tensor,
    heads: usize,
    rope: &RopeTables,
    bias: &Tensor,
) -> Result<Tensor> {
    let h = qkv.dim(2)? / 3;
    let part = |i: usize| split_heads(&qkv.narrow(2, i * h, h)?, heads);
    attention(
        &rope.apply(&part(0)?)?,
        &rope.apply(&part(1)?)?,
        &part(2)?,
        bias,
    )
}

/// The attention mask `[batch, seq]` (1 token, 0 padding) as the additive bias
/// [`attention`] takes: `[batch, 1, 1, seq]`, 0 for tokens, a large negative for padding.
pub fn padding_bias(mask: &Tensor) -> Result<Tensor> {
    let (b, t) = mask.dims2()?;
    Ok(((mask.to_dtype(DType::F32)? - 1.0)? * 1e9)?.reshape((b, 1, 1, t))?)
}

/// The additive mask of a symmetric sliding window (ModernBERT's local layers), `[1, 1, seq,
/// seq]`: token `i` sees token `j` when `|i − j| ≤ half` (0), else not (a large negative).
/// Added to [`padding_bias`] it masks both.
pub fn sliding_window_bias(seq: usize, half: usize) -> Result<Tensor> {
    let values: Vec<f32> = (0..seq)
        .flat_map(|i| (0..seq).map(move |j| if i.abs_diff(j) <= half { 0.0 } else { -1e9 }))
        .collect();
    Ok(Tensor::from_vec(values, (1, 1, seq, seq), &Device::Cpu)?)
}

/// The local layers' mask (ModernBERT's, Gemma's): the padding's `padding` plus the window of
/// `half` tokens either side; `None` when the batch is too short for the window to mask
/// anything (the padding's alone then does).
pub fn local_bias(padding: &Tensor, seq: usize, half: usize) -> Result<Option<Tensor>> {
    if seq <= half + 1 {
        return Ok(None);
    }
    Ok(Some(
        padding.broadcast_add(&sliding_window_bias(seq, half)?)?,
    ))
}

/// The additive mask of causal attention (decoder-built embedders), `[1, 1, seq, seq]`: token
/// `i` sees tokens `j ≤ i` (0), never later ones (a large negative). With padding on the right
/// a token never sees padding through it, and every row keeps its first token.
pub fn causal_bias(seq: usize) -> Result<Tensor> {
    let values: Vec<f32> = (0..seq)
        .flat_map(|i| (0..seq).map(move |j| if j <= i { 0.0 } else { -1e9 }))
        .collect();
    Ok(Tensor::from_vec(values, (1, 1, seq, seq), &Device::Cpu)?)
}

/// Self-attention of the decoder-built embedders (Qwen3's, Gemma 3's): separate Q, K, V
/// projections, grouped-query heads, an RMSNorm over each query and key head before the rotary
/// positions, the output projection; no biases.
pub struct GroupedAttention {
    query: Linear,
    key: Linear,
    value: Linear,
    /// Per-head norms before the rotary positions (Qwen3's, Gemma's; not Qwen2's).
    query_norm: Option<RmsNorm>,
    key_norm: Option<RmsNorm>,
    out: Linear,
    heads: usize,
    kv_heads: usize,
}

impl GroupedAttention {
    pub fn load(w: &Weights, n: &DecoderLayerNames, cfg: &EncoderConfig) -> Result<Self> {
        let eps = cfg.layer_norm_eps;
        let projection = |prefix: &str| match n.qkv_biases {
            true => w.linear(prefix),
            false => w.linear_no_bias(prefix),
        };
        let norm = |name: &Option<String>| name.as_deref().map(|n| w.rms_norm(n, eps)).transpose();
        Ok(Self {
            query: projection(&n.query)?,
            key: projection(&n.key)?,
            value: projection(&n.value)?,
            query_norm: norm(&n.query_norm)?,
            key_norm: norm(&n.key_norm)?,
            out: w.linear_no_bias(&n.attention_out)?,
            heads: cfg.num_attention_heads,
            kv_heads: cfg.kv_heads(),
        })
    }

    /// `h`: the normalised states `[batch, seq, hidden]` → the output projection's.
    pub fn forward(&self, h: &Tensor, rope: &RopeTables, bias: &Tensor) -> Result<Tensor> {
        let heads = |proj: &Linear, n: usize, norm: &Option<RmsNorm>| {
            let x = split_heads(&proj.forward(h)?, n)?;
            match norm {
                Some(norm) => norm.forward(&x),
                None => Ok(x),
            }
        };
        let q = rope.apply(&heads(&self.query, self.heads, &self.query_norm)?)?;
        let k = rope.apply(&heads(&self.key, self.kv_heads, &self.key_norm)?)?;
        let v = heads(&self.value, self.kv_heads, &None)?;
        let group = self.heads / self.kv_heads;
        let context = attention(&q, &repeat_kv(k, group)?, &repeat_kv(v, group)?, bias)?;
        self.out.forward(&context)
    }
}

/// Grouped-query attention's keys or values for every query head: `[batch, kv_heads, seq, d]`
/// → `[batch, kv_heads · n, seq, d]`, query head `h` reading key/value head `h / n` (as
/// transformers' `repeat_kv`).
pub fn repeat_kv(x: Tensor, n: usize) -> Result<Tensor> {
    if n == 1 {
        return Ok(x);
    }
    let (b, kv, t, d) = x.dims4()?;
    Ok(x.unsqueeze(2)?
        .broadcast_as((b, kv, n, t, d))?
        .reshape((b, kv * n, t, d))?)
}

/// Runs `layers` (each through `forward(layer, states, bias)`) over the embedding output `x`
/// with the attention mask `bias` (the padding's, [`padding_bias`], or that plus a causal or
/// windowed one), showing `visit` every layer's states (0 = the embeddings); the last layer's
/// are returned.
pub fn run_layers<L>(
    x: Tensor,
    bias: &Tensor,
    layers: &[L],
    visit: LayerVisitor,
    forward: impl Fn(&L, &Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    run_layers_then(x, bias, layers, visit, forward, |y| Ok(y.clone()))
}

/// [`run_layers`] for the stacks that end with a norm (the pre-norm ones: ModernBERT, Qwen3,
/// Gemma): `final_norm` is applied to the last layer's output before `visit` sees it, as
/// transformers returns it.
pub fn run_layers_then<L>(
    mut x: Tensor,
    bias: &Tensor,
    layers: &[L],
    visit: LayerVisitor,
    forward: impl Fn(&L, &Tensor, &Tensor) -> Result<Tensor>,
    final_norm: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    visit(0, &x)?;
    for (i, layer) in layers.iter().enumerate() {
        x = forward(layer, &x, bias)?;
        if i + 1 == layers.len() {
            x = final_norm(&x)?;
        }
        visit(i + 1, &x)?;
    }
    Ok(x)
}

/// `[batch, seq, heads·head_dim]` → `[batch, heads, seq, head_dim]` (contiguous).
pub fn split_heads(x: &Tensor, heads: usize) -> Result<Tensor> {
    let (b, t, h) = x.dims3()?;
    Ok(x.reshape((b, t, heads, h / heads))?
        .transpose(1, 2)?
        .contiguous()?)
}

/// Rotary position embedding, the "rotate half" form (GPT-NeoX's, transformers'
/// `rotate_half`): dimension `i` of the first half turns with `i + d/2` by position × θᵢ,
/// θᵢ = base^(−2i/d). The angle tables are made per forward pass for the batch's length only:
/// a file's position count never sizes an allocation.
pub struct Rope {
    /// θᵢ, computed in f32 as transformers does (its `inv_freq` and angles are f32), so long
    /// positions round as the reference's do.
    inv_freq: Vec<f32>,
}

/// The cosines and sines of positions `0..seq` (`[seq, head_dim / 2]` each).
pub struct RopeTables {
    cos: Tensor,
    sin: Tensor,
}

impl Rope {
    pub fn new(head_dim: usize, base: f64) -> Self {
        let inv_freq = (0..head_dim / 2)
            .map(|i| 1.0 / (base as f32).powf((2 * i) as f32 / head_dim as f32))
            .collect();
        Self { inv_freq }
    }

    pub fn tables(&self, seq: usize) -> Result<RopeTables> {
        let half = self.inv_freq.len();
        let (cos, sin) = self.cos_sin(seq);
        Ok(RopeTables {
            cos: Tensor::from_vec(cos, (seq, half), &Device::Cpu)?,
            sin: Tensor::from_vec(sin, (seq, half), &Device::Cpu)?,
        })
    }

    /// The cosines and sines of positions `0..seq`, row-major `[seq, head_dim / 2]` (what
    /// the GPU's rotary kernel reads too, so both backends turn by the same angles).
    pub fn cos_sin(&self, seq: usize) -> (Vec<f32>, Vec<f32>) {
        let angles: Vec<f32> = (0..seq)
            .flat_map(|p| self.inv_freq.iter().map(move |f| p as f32 * f))
            .collect();
        (
            angles.iter().map(|a| a.cos()).collect(),
            angles.iter().map(|a| a.sin()).collect(),
        )
    }
}

impl RopeTables {
    /// `x`: `[batch, heads, seq, head_dim]`, rotated by each token's position.
    pub fn apply(&self, x: &Tensor) -> Result<Tensor> {
        Ok(candle_nn::rotary_emb::rope(
            &x.contiguous()?,
            &self.cos,
            &self.sin,
        )?)
    }
}

/// `down(act(gate(x)) ⊙ up(x))` (SwiGLU, GeGLU, Gemma's tanh GeGLU).
pub struct GatedFfn {
    pub projection: GateProjection,
    pub down: Linear,
    pub act: GateActivation,
}

/// How a gated feed-forward's two halves are stored.
pub enum GateProjection {
    /// Two matrices (nomic-bert's `ffn_up` and `ffn_gate`).
    Separate { up: Linear, gate: Linear },
    /// One matrix of twice the width, the gate's rows first (ModernBERT's `Wi`, whose output
    /// transformers splits with `chunk(2)` into the activated input and its multiplier).
    Fused(Linear),
}

impl GatedFfn {
    /// A SwiGLU feed-forward of separate up, gate and down matrices without biases
    /// (nomic-bert's, Qwen3's).
    pub fn swiglu(w: &Weights, up: &str, gate: &str, down: &str) -> Result<Self> {
        Self::separate(w, [up, gate, down], GateActivation::Silu)
    }

    /// A gated feed-forward of separate `[up, gate, down]` matrices without biases.
    pub fn separate(w: &Weights, [up, gate, down]: [&str; 3], act: GateActivation) -> Result<Self> {
        Ok(Self {
            projection: GateProjection::Separate {
                up: w.linear_no_bias(up)?,
                gate: w.linear_no_bias(gate)?,
            },
            down: w.linear_no_bias(down)?,
            act,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let values = match &self.projection {
            GateProjection::Separate { up, gate } => {
                // The input's values (where our kernels need them) once for both products.
                let x_values = std::cell::OnceCell::new();
                let mut values = up.forward_values(x, &x_values)?;
                gate_in_place(&mut values, &gate.forward_values(x, &x_values)?, self.act);
                values
            }
            GateProjection::Fused(both) => {
                let y = both.forward(x)?;
                let n = y.dim(2)? / 2;
                let y = y.flatten_all()?.to_vec1::<f32>()?;
                let mut values = Vec::with_capacity(y.len() / 2);
                for row in y.chunks_exact(2 * n) {
                    let (gate, up) = row.split_at(n);
                    let start = values.len();
                    values.extend_from_slice(up);
                    gate_in_place(&mut values[start..], gate, self.act);
                }
                values
            }
        };
        let n = values.len() / (b * t).max(1);
        self.down
            .forward(&Tensor::from_vec(values, (b, t, n), &Device::Cpu)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causal_mask_sees_only_earlier_tokens() {
        let bias: Vec<Vec<f32>> = causal_bias(4)
            .unwrap()
            .reshape((4, 4))
            .unwrap()
            .to_vec2()
            .unwrap();
        for (i, row) in bias.iter().enumerate() {
            for (j, &b) in row.iter().enumerate() {
                assert_eq!(b == 0.0, j <= i, "({i}, {j}): {b}");
            }
        }
    }

    #[test]
    fn each_query_head_reads_its_group_s_key_head() {
        // 2 key heads of one position, d = 1: [10] and [20]; 3 query heads per key head.
        let k = Tensor::new(&[10f32, 20.], &Device::Cpu)
            .unwrap()
            .reshape((1, 2, 1, 1))
            .unwrap();
        let heads: Vec<f32> = repeat_kv(k, 3)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert_eq!(heads, [10., 10., 10., 20., 20., 20.]);
    }

    #[test]
    fn sliding_window_sees_half_a_window_either_side() {
        let bias: Vec<Vec<f32>> = sliding_window_bias(5, 1)
            .unwrap()
            .reshape((5, 5))
            .unwrap()
            .to_vec2()
            .unwrap();
        for (i, row) in bias.iter().enumerate() {
            for (j, &b) in row.iter().enumerate() {
                assert_eq!(b == 0.0, i.abs_diff(j) <= 1, "({i}, {j}): {b}");
            }
        }
    }

    /// Position 0 leaves a vector as it is; position p turns the pair (i, i + d/2) by p·θᵢ.
    #[test]
    fn rope_turns_each_half_pair_by_its_angle() {
        let (d, base) = (4, 100.0);
        let rope = Rope::new(d, base).tables(3).unwrap();
        let x = Tensor::new(&[1f32, 2., 3., 4.], &Device::Cpu)
            .unwrap()
            .reshape((1, 1, 1, d))
            .unwrap();
        let x3 = x.repeat((1, 1, 3, 1)).unwrap();
        let y: Vec<Vec<f32>> = rope
            .apply(&x3)
            .unwrap()
            .squeeze(0)
            .unwrap()
            .squeeze(0)
            .unwrap()
            .to_vec2()
            .unwrap();
        assert_eq!(y[0], [1., 2., 3., 4.]);
        for (p, row) in y.iter().enumerate() {
            for i in 0..d / 2 {
                let theta = p as f64 * base.powf(-(2.0 * i as f64) / d as f64);
                let (a, b) = ([1., 2.][i], [3., 4.][i]);
                let want = [
                    a * theta.cos() - b * theta.sin(),
                    b * theta.cos() + a * theta.sin(),
                ];
                assert!(
                    (row[i] as f64 - want[0]).abs() < 1e-5,
                    "p {p} i {i}: {row:?}"
                );
                assert!(
                    (row[i + d / 2] as f64 - want[1]).abs() < 1e-5,
                    "p {p} i {i}: {row:?}"
                );
            }
        }
    }
}
