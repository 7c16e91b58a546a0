//! BERT encoder (all-MiniLM-L6-v2) on candle: `load` from a model file + `forward`,
//! then mean pooling over the attention mask and L2 normalisation.

use anyhow::Result;
use candle_core::quantized::QMatMul;
use candle_core::Tensor;

use super::blocks::{attention, padding_bias, run_layers, split_heads};
use super::weights::{LayerNorm, Linear, Weights};
use super::LayerVisitor;
use crate::model::tensor_names::{self as names, LayerNames};
use crate::model::EncoderConfig;

struct Embeddings {
    words: QMatMul,
    positions: Tensor,
    token_type0: Tensor,
    norm: LayerNorm,
}

/// One encoder layer's weights (BERT and MPNet have the same parts, named differently).
pub(super) struct Layer {
    pub query: Linear,
    pub key: Linear,
    pub value: Linear,
    pub attention_out: Linear,
    pub attention_norm: LayerNorm,
    pub intermediate: Linear,
    pub output: Linear,
    pub output_norm: LayerNorm,
}

impl Layer {
    pub fn load(w: &Weights, n: &LayerNames, eps: f64) -> Result<Self> {
        Ok(Self {
            query: w.linear(&n.query)?,
            key: w.linear(&n.key)?,
            value: w.linear(&n.value)?,
            attention_out: w.linear(&n.attention_out)?,
            attention_norm: w.layer_norm(&n.attention_norm, eps)?,
            intermediate: w.linear(&n.intermediate)?,
            output: w.linear(&n.output)?,
            output_norm: w.layer_norm(&n.output_norm, eps)?,
        })
    }
}

pub struct Bert {
    embeddings: Embeddings,
    layers: Vec<Layer>,
    heads: usize,
}

impl Bert {
    pub fn load(w: &Weights, cfg: &EncoderConfig, words: QMatMul) -> Result<Self> {
        let eps = cfg.layer_norm_eps;
        // Single-segment input: every token has type id 0.
        let token_type0 = w.tensor(names::TOKEN_TYPE_EMBEDDINGS)?.get(0)?;
        let embeddings = Embeddings {
            words,
            positions: w.tensor(names::POSITION_EMBEDDINGS)?,
            token_type0,
            norm: w.layer_norm(names::EMBEDDINGS_NORM, eps)?,
        };
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Layer::load(w, &LayerNames::bert(i), eps))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            embeddings,
            layers,
            heads: cfg.num_attention_heads,
        })
    }

    /// Last hidden states `[batch, seq, hidden]`; `visit` sees every layer's (0 = embeddings).
    pub fn forward(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        let t = ids.dim(1)?;
        let e = &self.embeddings;
        let x = e.words.embedding(ids)?;
        let x = x
            .broadcast_add(&e.positions.narrow(0, 0, t)?)?
            .broadcast_add(&e.token_type0)?;
        let x = e.norm.forward(&x)?;
        run_layers(
            x,
            &padding_bias(mask)?,
            &self.layers,
            visit,
            |l, x, bias| self.layer_forward(l, x, bias),
        )
    }

    fn layer_forward(&self, l: &Layer, x: &Tensor, bias: &Tensor) -> Result<Tensor> {
        let heads = |y: Tensor| split_heads(&y, self.heads);
        let q = heads(l.query.forward(x)?)?;
        let k = heads(l.key.forward(x)?)?;
        let v = heads(l.value.forward(x)?)?;
        let context = attention(&q, &k, &v, bias)?;
        let x = l
            .attention_norm
            .forward(&(l.attention_out.forward(&context)? + x)?)?;
        let inner = l.intermediate.forward_gelu(&x)?;
        l.output_norm.forward(&(l.output.forward(&inner)? + x)?)
    }
}

impl super::Transformer for Bert {
    fn visit_layers(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        self.forward(ids, mask, visit)
    }
}
