//! MPNet encoder (all-mpnet-base-v2) on candle: `load` from a model file + `forward`,
//! then mean pooling over the attention mask and L2 normalisation.
//!
//! What differs from BERT (Hugging Face `MPNetModel` semantics):
//! - position ids count only non-padding tokens and start after the padding index
//!   (`create_position_ids_from_input_ids`: `cumsum(not_pad) * not_pad + padding_idx`),
//!   and there are no token-type embeddings;
//! - every attention layer adds a learned relative-position bias to its scores: T5-style
//!   bidirectional log buckets (32 buckets, max distance 128) looked up in one `[buckets, heads]`
//!   table, computed once per forward pass and shared by all layers;
//! - LayerNorm eps 1e-5 (from the config), attention projections named `attn.{q,k,v,o}`.

use anyhow::{bail, Result};
use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Tensor};

use super::bert::Layer;
use super::weights::{LayerNorm, Weights};
use super::LayerVisitor;
use crate::model::tensor_names::{self as names, LayerNames};
use crate::model::EncoderConfig;

/// `relative_position_bucket`'s `max_distance` in Hugging Face's MPNet (not in the config).
const MAX_DISTANCE: usize = 128;
/// Buckets when the config does not say (Hugging Face's default).
const DEFAULT_BUCKETS: usize = 32;

struct Embeddings {
    words: QMatMul,
    positions: Tensor,
    norm: LayerNorm,
}

pub struct MpNet {
    embeddings: Embeddings,
    layers: Vec<Layer>,
    /// `[buckets, heads]`.
    relative_attention_bias: Tensor,
    buckets: usize,
    padding_idx: u32,
    max_positions: usize,
    heads: usize,
    head_dim: usize,
}

/// Hugging Face's `relative_position_bucket` for one `relative_position = key - query`:
/// half the buckets for each direction; within one, the first half are exact distances and the
/// rest are log-spaced up to `max_distance` (farther ones share the last bucket).
pub fn relative_position_bucket(
    relative_position: i64,
    num_buckets: usize,
    max_distance: usize,
) -> usize {
    let half = num_buckets / 2;
    let n = -relative_position;
    let mut bucket = if n < 0 { half } else { 0 };
    let n = n.unsigned_abs() as usize;
    let max_exact = half / 2;
    bucket += if n < max_exact {
        n
    } else {
        // In f32 as torch computes it (the same buckets as f64 for every distance up to 600).
        let log_ratio =
            (n as f32 / max_exact as f32).ln() / (max_distance as f32 / max_exact as f32).ln();
        let large = max_exact + (log_ratio * (half - max_exact) as f32) as usize;
        large.min(half - 1)
    };
    bucket
}

/// Position ids `[batch, seq]`: the i-th non-padding token gets `padding_idx + i` (from 1),
/// padding gets `padding_idx`; an id past the table's `max_positions` rows is an error.
pub fn position_ids(ids: &Tensor, padding_idx: u32, max_positions: usize) -> Result<Tensor> {
    let rows = ids.to_vec2::<u32>()?;
    let (b, t) = (rows.len(), rows.first().map_or(0, Vec::len));
    let mut out = Vec::with_capacity(b * t);
    for row in &rows {
        let mut count = 0u32;
        for &id in row {
            if id == padding_idx {
                out.push(padding_idx);
            } else {
                count += 1;
                out.push(padding_idx + count);
            }
        }
    }
    if let Some(&max) = out.iter().max() {
        if max as usize >= max_positions {
            bail!("a sequence of {t} tokens needs position {max}; the model has {max_positions}");
        }
    }
    Ok(Tensor::from_vec(out, (b, t), &Device::Cpu)?)
}

/// The relative-position bias per head for every distance `key − query` in
/// `−(span − 1)..=span − 1`: `[heads, 2·span − 1]`, from the `[buckets, heads]` table (what the GPU
/// attention kernel adds; the CPU resolves the same buckets in `position_bias`).
pub(crate) fn relative_bias_by_distance(
    table: &[f32],
    buckets: usize,
    heads: usize,
    span: usize,
) -> Vec<f32> {
    let width = 2 * span - 1;
    let mut out = vec![0f32; heads * width];
    for (i, distance) in (-(span as i64 - 1)..span as i64).enumerate() {
        let bucket = relative_position_bucket(distance, buckets, MAX_DISTANCE);
        for h in 0..heads {
            out[h * width + i] = table[bucket * heads + h];
        }
    }
    out
}

/// Buckets of an MPNet config (Hugging Face's default when it does not say).
pub(crate) fn relative_buckets(cfg: &EncoderConfig) -> usize {
    cfg.relative_attention_num_buckets
        .unwrap_or(DEFAULT_BUCKETS)
}

/// The relative-position bias `[1, heads, seq, seq]` of a `seq`-token input, looked up in
/// the shared `[buckets, heads]` table (an index_select, so training differentiates it too).
pub fn position_bias(table: &Tensor, t: usize, buckets: usize, heads: usize) -> Result<Tensor> {
    let mut ids = Vec::with_capacity(t * t);
    for query in 0..t as i64 {
        for key in 0..t as i64 {
            ids.push(relative_position_bucket(key - query, buckets, MAX_DISTANCE) as u32);
        }
    }
    let ids = Tensor::from_vec(ids, t * t, &Device::Cpu)?;
    Ok(table
        .index_select(&ids, 0)? // [t*t, heads]
        .reshape((t, t, heads))?
        .permute((2, 0, 1))?
        .contiguous()?
        .unsqueeze(0)?)
}

impl MpNet {
    pub fn load(w: &Weights, cfg: &EncoderConfig, words: QMatMul) -> Result<Self> {
        let eps = cfg.layer_norm_eps;
        let positions = w.tensor(names::POSITION_EMBEDDINGS)?;
        let embeddings = Embeddings {
            words,
            norm: w.layer_norm(names::EMBEDDINGS_NORM, eps)?,
            positions,
        };
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Layer::load(w, &LayerNames::mpnet(i), eps))
            .collect::<Result<Vec<_>>>()?;
        let relative_attention_bias = w.tensor(names::RELATIVE_ATTENTION_BIAS)?;
        let buckets = relative_buckets(cfg);
        let (rows, heads) = relative_attention_bias.dims2()?;
        if rows != buckets || heads != cfg.num_attention_heads {
            bail!(
                "model file: relative_attention_bias is {rows}×{heads}, expected {buckets}×{}",
                cfg.num_attention_heads
            );
        }
        let max_positions = embeddings.positions.dim(0)?;
        Ok(Self {
            embeddings,
            layers,
            relative_attention_bias,
            buckets,
            padding_idx: cfg.pad_token_id as u32,
            max_positions,
            heads: cfg.num_attention_heads,
            head_dim: cfg.head_dim(),
        })
    }

    fn position_ids(&self, ids: &Tensor) -> Result<Tensor> {
        position_ids(ids, self.padding_idx, self.max_positions)
    }

    /// The relative-position bias `[1, heads, seq, seq]` (shared by the batch and all layers).
    fn position_bias(&self, t: usize) -> Result<Tensor> {
        position_bias(&self.relative_attention_bias, t, self.buckets, self.heads)
    }

    /// Last hidden states `[batch, seq, hidden]`; `visit` sees every layer's (0 = embeddings).
    pub fn forward(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let e = &self.embeddings;
        let positions = self.position_ids(ids)?.flatten_all()?;
        let x = (e.words.embedding(ids)?
            + e.positions
                .index_select(&positions, 0)?
                .reshape((b, t, ()))?)?;
        let mut x = e.norm.forward(&x)?;
        visit(0, &x)?;
        // Relative-position bias plus the additive padding mask (0 for tokens, a large negative
        // for padding): `[batch, heads, seq, seq]`, once for all layers.
        let padding = ((mask.to_dtype(DType::F32)? - 1.0)? * 1e9)?.reshape((b, 1, 1, t))?;
        let bias = self.position_bias(t)?.broadcast_add(&padding)?;
        for (i, layer) in self.layers.iter().enumerate() {
            x = self.layer_forward(layer, &x, &bias)?;
            visit(i + 1, &x)?;
        }
        Ok(x)
    }

    fn layer_forward(&self, l: &Layer, x: &Tensor, bias: &Tensor) -> Result<Tensor> {
        let (b, t, h) = x.dims3()?;
        let split_heads = |y: Tensor| -> Result<Tensor> {
            Ok(y.reshape((b, t, self.heads, self.head_dim))?
                .transpose(1, 2)?
                .contiguous()?)
        };
        // Scaling q by 1/√d (= 1/8, a power of two: exact) instead of the scores saves one
        // `[batch, heads, seq, seq]` temporary.
        let q = split_heads((l.query.forward(x)? / (self.head_dim as f64).sqrt())?)?;
        let k = split_heads(l.key.forward(x)?)?;
        let v = split_heads(l.value.forward(x)?)?;
        let scores = (q.matmul(&k.t()?)? + bias)?;
        let probs = super::activation::softmax_last_dim(&scores)?;
        drop(scores);
        let context = probs.matmul(&v)?.transpose(1, 2)?.reshape((b, t, h))?;
        drop(probs);
        let x = l
            .attention_norm
            .forward(&(l.attention_out.forward(&context)? + x)?)?;
        let inner = l.intermediate.forward_gelu(&x)?;
        l.output_norm.forward(&(l.output.forward(&inner)? + x)?)
    }
}

impl super::Transformer for MpNet {
    fn visit_layers(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        self.forward(ids, mask, visit)
    }
}

#[cfg(test)]
mod tests {
    use super::relative_position_bucket;

    #[test]
    fn buckets_match_hugging_face() {
        // Values of transformers' MPNet `relative_position_bucket` (32 buckets, max distance 128)
        // for relative positions -140, -133, …, 140.
        let expected = [
            15, 15, 15, 15, 15, 15, 15, 15, 14, 14, 14, 13, 13, 13, 12, 12, 11, 10, 9, 7, 0, 23,
            25, 26, 27, 28, 28, 29, 29, 29, 30, 30, 30, 31, 31, 31, 31, 31, 31, 31, 31,
        ];
        let got: Vec<usize> = (-140..=140)
            .step_by(7)
            .map(|r| relative_position_bucket(r, 32, 128))
            .collect();
        assert_eq!(got, expected);
        // Exact near the diagonal: keys before the query in 0..8, after it in 16..24.
        assert_eq!(relative_position_bucket(0, 32, 128), 0);
        assert_eq!(relative_position_bucket(-1, 32, 128), 1);
        assert_eq!(relative_position_bucket(1, 32, 128), 17);
        assert_eq!(relative_position_bucket(-7, 32, 128), 7);
        assert_eq!(relative_position_bucket(-8, 32, 128), 8);
        assert_eq!(relative_position_bucket(-16, 32, 128), 10);
        assert_eq!(relative_position_bucket(-383, 32, 128), 15);
        assert_eq!(relative_position_bucket(383, 32, 128), 31);
    }
}
