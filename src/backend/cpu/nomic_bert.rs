//! nomic-bert (nomic-embed-text v1/v1.5, from llama.cpp's files): BERT's post-norm layers with
//! rotary positions instead of a position table, one fused QKV projection and a SwiGLU
//! feed-forward, none of them with a bias.

use anyhow::Result;
use candle_core::quantized::QMatMul;
use candle_core::Tensor;

use super::blocks::{padding_bias, rotary_attention, run_layers, GatedFfn, Rope, RopeTables};
use super::weights::{LayerNorm, Linear, Weights};
use super::LayerVisitor;
use crate::model::tensor_names::{self as names, GatedLayerNames};
use crate::model::EncoderConfig;

struct Layer {
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    ffn: GatedFfn,
    output_norm: LayerNorm,
}

impl Layer {
    fn load(w: &Weights, n: &GatedLayerNames, eps: f64) -> Result<Self> {
        Ok(Self {
            qkv: w.linear_no_bias(&n.qkv)?,
            attention_out: w.linear_no_bias(&n.attention_out)?,
            attention_norm: w.layer_norm(&n.attention_norm, eps)?,
            ffn: GatedFfn::swiglu(w, &n.up, &n.gate, &n.down)?,
            output_norm: w.layer_norm(&n.output_norm, eps)?,
        })
    }
}

pub struct NomicBert {
    words: QMatMul,
    token_type0: Tensor,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
    rope: Rope,
    heads: usize,
}

impl NomicBert {
    pub fn load(w: &Weights, cfg: &EncoderConfig, words: QMatMul) -> Result<Self> {
        let eps = cfg.layer_norm_eps;
        let theta = cfg
            .rope_theta
            .ok_or_else(|| anyhow::anyhow!("model config: nomic-bert needs a rotary base"))?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Layer::load(w, &GatedLayerNames::nomic_bert(i), eps))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            words,
            // Single-segment input: every token has type id 0.
            token_type0: w.tensor(names::TOKEN_TYPE_EMBEDDINGS)?.get(0)?,
            embeddings_norm: w.layer_norm(names::EMBEDDINGS_NORM, eps)?,
            layers,
            rope: Rope::new(cfg.head_dim(), theta),
            heads: cfg.num_attention_heads,
        })
    }

    /// Last hidden states `[batch, seq, hidden]`; `visit` sees every layer's (0 = embeddings).
    pub fn forward(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        let x = self
            .words
            .embedding(ids)?
            .broadcast_add(&self.token_type0)?;
        let x = self.embeddings_norm.forward(&x)?;
        let rope = self.rope.tables(ids.dim(1)?)?;
        run_layers(
            x,
            &padding_bias(mask)?,
            &self.layers,
            visit,
            |l, x, bias| self.layer_forward(l, x, bias, &rope),
        )
    }

    fn layer_forward(
        &self,
        l: &Layer,
        x: &Tensor,
        bias: &Tensor,
        rope: &RopeTables,
    ) -> Result<Tensor> {
        let context = rotary_attention(&l.qkv.forward(x)?, self.heads, rope, bias)?;
        let x = l
            .attention_norm
            .forward(&(l.attention_out.forward(&context)? + x)?)?;
        l.output_norm.forward(&(l.ffn.forward(&x)? + x)?)
    }
}

impl super::Transformer for NomicBert {
    fn visit_layers(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        self.forward(ids, mask, visit)
    }
}
