//! T5's encoder (Sentence-T5, GTR; llama.cpp's `t5encoder` files) on candle: `load` + `forward`.
//!
//! What differs from the other encoders (transformers' `T5EncoderModel`):
//! - no positions in the input: every layer adds to its scores one learned bias per head and
//!   relative-position bucket — the first layer's table, used by all (the bucket function is
//!   MPNet's: bidirectional log buckets, max distance 128);
//! - the scores are not scaled by 1/√head_dim (T5 folds it into the query weights' scale);
//! - pre-RMSNorm layers without biases, a final RMSNorm;
//! - the feed-forward is `down(relu(up(x)))` (T5 1.0: Sentence-T5, GTR) or, where the file
//!   has a gate, `down(gelu_tanh(gate(x)) ⊙ up(x))` (T5 1.1).

use anyhow::{bail, Result};
use candle_core::quantized::QMatMul;
use candle_core::Tensor;

use super::activation::GateActivation;
use super::blocks::{attention_scaled, padding_bias, run_layers_then, split_heads, GatedFfn};
use super::mpnet::{position_bias, relative_buckets};
use super::weights::{Linear, RmsNorm, Weights};
use super::LayerVisitor;
use crate::model::tensor_names::{self as names, T5LayerNames};
use crate::model::EncoderConfig;

enum Ffn {
    Relu { up: Linear, down: Linear },
    Gated(GatedFfn),
}

impl Ffn {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Self::Relu { up, down } => down.forward(&up.forward(x)?.relu()?),
            Self::Gated(ffn) => ffn.forward(x),
        }
    }
}

struct Layer {
    attention_norm: RmsNorm,
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
    ffn_norm: RmsNorm,
    ffn: Ffn,
}

impl Layer {
    fn load(w: &Weights, cfg: &EncoderConfig, i: usize) -> Result<Self> {
        let (n, eps) = (T5LayerNames::of(i), cfg.layer_norm_eps);
        let ffn = match cfg.hidden_act.as_str() {
            "relu" => Ffn::Relu {
                up: w.linear_no_bias(&n.up)?,
                down: w.linear_no_bias(&n.down)?,
            },
            "geglu_tanh" => Ffn::Gated(GatedFfn::separate(
                w,
                [&n.up, &n.gate, &n.down],
                GateActivation::GeluTanh,
            )?),
            other => bail!(
                "model config: a T5 encoder has a relu or geglu_tanh feed-forward, not {other}"
            ),
        };
        Ok(Self {
            attention_norm: w.rms_norm(&n.attention_norm, eps)?,
            query: w.linear_no_bias(&n.query)?,
            key: w.linear_no_bias(&n.key)?,
            value: w.linear_no_bias(&n.value)?,
            out: w.linear_no_bias(&n.attention_out)?,
            ffn_norm: w.rms_norm(&n.ffn_norm, eps)?,
            ffn,
        })
    }
}

pub struct T5Encoder {
    words: QMatMul,
    layers: Vec<Layer>,
    final_norm: RmsNorm,
    /// `[buckets, heads]`.
    relative_bias: Tensor,
    buckets: usize,
    heads: usize,
}

impl T5Encoder {
    pub fn load(w: &Weights, cfg: &EncoderConfig, words: QMatMul) -> Result<Self> {
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Layer::load(w, cfg, i))
            .collect::<Result<Vec<_>>>()?;
        let relative_bias = w.tensor(names::T5_RELATIVE_BIAS)?;
        let buckets = relative_buckets(cfg);
        let heads = cfg.num_attention_heads;
        if relative_bias.dims2()? != (buckets, heads) {
            bail!(
                "model file: the relative-position table is {:?}, expected {buckets}×{heads}",
                relative_bias.dims()
            );
        }
        Ok(Self {
            words,
            layers,
            final_norm: w.rms_norm(names::T5_OUTPUT_NORM, cfg.layer_norm_eps)?,
            relative_bias,
            buckets,
            heads,
        })
    }

    /// Last hidden states `[batch, seq, hidden]` (after the final norm); `visit` sees every
    /// layer's (0 = the token embeddings).
    pub fn forward(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        let seq = ids.dim(1)?;
        // The relative-position bias plus the padding's, `[batch, heads, seq, seq]`, once for
        // all layers.
        let bias = position_bias(&self.relative_bias, seq, self.buckets, self.heads)?
            .broadcast_add(&padding_bias(mask)?)?;
        run_layers_then(
            self.words.embedding(ids)?,
            &bias,
            &self.layers,
            visit,
            |l, x, bias| self.layer_forward(l, x, bias),
            |y| self.final_norm.forward(y),
        )
    }

    fn layer_forward(&self, l: &Layer, x: &Tensor, bias: &Tensor) -> Result<Tensor> {
        let h = l.attention_norm.forward(x)?;
        let heads = |proj: &Linear| split_heads(&proj.forward(&h)?, self.heads);
        let (q, k, v) = (heads(&l.query)?, heads(&l.key)?, heads(&l.value)?);
        // Unscaled scores: T5's query weights carry the 1/√d.
        let context = attention_scaled(&q, &k, &v, bias, 1.0)?;
        let x = (l.out.forward(&context)? + x)?;
        Ok((l.ffn.forward(&l.ffn_norm.forward(&x)?)? + x)?)
    }
}

impl super::Transformer for T5Encoder {
    fn visit_layers(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        self.forward(ids, mask, visit)
    }
}
