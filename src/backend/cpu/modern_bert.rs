//! ModernBERT (modernbert-embed-base, gte-modernbert-base, granite-embedding-*-r2, from
//! llama.cpp's files): pre-norm layers with LayerNorms without bias, one fused QKV projection,
//! rotary positions with one base for the global layers and another for the local ones, a
//! sliding window on the local layers, a GeGLU feed-forward (SwiGLU in Granite R2) from one
//! fused matrix, no biases, and a final norm.

use anyhow::{anyhow, Result};
use candle_core::quantized::QMatMul;
use candle_core::Tensor;

use super::activation::GateActivation;
use super::blocks::{
    local_bias, padding_bias, rotary_attention, run_layers_then, GateProjection, GatedFfn, Rope,
    RopeTables,
};
use super::weights::{LayerNorm, Linear, Weights};
use super::LayerVisitor;
use crate::model::tensor_names::{self as names, PreNormLayerNames};
use crate::model::EncoderConfig;

struct Layer {
    /// None in layer 0 (its input is the normed embeddings).
    attention_norm: Option<LayerNorm>,
    qkv: Linear,
    attention_out: Linear,
    ffn_norm: LayerNorm,
    ffn: GatedFfn,
    /// Global attention (all tokens, the global rotary base) or local (the window).
    global: bool,
}

impl Layer {
    fn load(w: &Weights, n: &PreNormLayerNames, eps: f64, act: GateActivation) -> Result<Self> {
        Ok(Self {
            attention_norm: n
                .attention_norm
                .as_ref()
                .map(|p| w.layer_norm_no_bias(p, eps))
                .transpose()?,
            qkv: w.linear_no_bias(&n.qkv)?,
            attention_out: w.linear_no_bias(&n.attention_out)?,
            ffn_norm: w.layer_norm_no_bias(&n.ffn_norm, eps)?,
            ffn: GatedFfn {
                projection: GateProjection::Fused(w.linear_no_bias(&n.up_gate)?),
                down: w.linear_no_bias(&n.down)?,
                act,
            },
            global: true,
        })
    }
}

pub struct ModernBert {
    words: QMatMul,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
    final_norm: LayerNorm,
    global_rope: Rope,
    local_rope: Rope,
    /// How far a local layer's token sees either side.
    half_window: usize,
    heads: usize,
}

impl ModernBert {
    pub fn load(w: &Weights, cfg: &EncoderConfig, words: QMatMul) -> Result<Self> {
        let eps = cfg.layer_norm_eps;
        let missing = |what: &str| anyhow!("model config: modern-bert needs {what}");
        let global_theta = cfg.rope_theta.ok_or_else(|| missing("a rotary base"))?;
        let local_theta = cfg.local_rope_theta.unwrap_or(global_theta);
        let window = cfg
            .local_attention
            .ok_or_else(|| missing("an attention window"))?;
        let act = if cfg.hidden_act == "swiglu" {
            GateActivation::Silu
        } else {
            GateActivation::Gelu
        };
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                let layer = Layer::load(w, &PreNormLayerNames::modern_bert(i), eps, act)?;
                Ok(Layer {
                    global: cfg.is_global_layer(i),
                    ..layer
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            words,
            embeddings_norm: w.layer_norm_no_bias(names::EMBEDDINGS_NORM, eps)?,
            layers,
            final_norm: w.layer_norm_no_bias(names::OUTPUT_NORM, eps)?,
            global_rope: Rope::new(cfg.head_dim(), global_theta),
            local_rope: Rope::new(cfg.head_dim(), local_theta),
            half_window: window / 2,
            heads: cfg.num_attention_heads,
        })
    }

    /// Last hidden states `[batch, seq, hidden]` (after the final norm); `visit` sees every
    /// layer's (0 = the normed embeddings; the last one after the final norm, as transformers
    /// returns it).
    pub fn forward(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        let x = self.embeddings_norm.forward(&self.words.embedding(ids)?)?;
        let seq = ids.dim(1)?;
        let global = self.global_rope.tables(seq)?;
        let local = self.local_rope.tables(seq)?;
        let padding = padding_bias(mask)?;
        let local_bias = local_bias(&padding, seq, self.half_window)?;
        run_layers_then(
            x,
            &padding,
            &self.layers,
            visit,
            |l, x, padding| {
                let (rope, bias) = match (l.global, &local_bias) {
                    (true, _) => (&global, padding),
                    (false, window) => (&local, window.as_ref().unwrap_or(padding)),
                };
                self.layer_forward(l, x, bias, rope)
            },
            |y| self.final_norm.forward(y),
        )
    }

    fn layer_forward(
        &self,
        l: &Layer,
        x: &Tensor,
        bias: &Tensor,
        rope: &RopeTables,
    ) -> Result<Tensor> {
        let normed = match &l.attention_norm {
            Some(norm) => norm.forward(x)?,
            None => x.clone(),
        };
        let context = rotary_attention(&l.qkv.forward(&normed)?, self.heads, rope, bias)?;
        let x = (l.attention_out.forward(&context)? + x)?;
        Ok((l.ffn.forward(&l.ffn_norm.forward(&x)?)? + x)?)
    }
}

impl super::Transformer for ModernBert {
    fn visit_layers(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        self.forward(ids, mask, visit)
    }
}
