//! EmbeddingGemma (300m, from llama.cpp's `gemma-embedding` files): Gemma 3's decoder blocks
//! read both ways. Token embeddings scaled by √hidden; per layer an RMSNorm before and after
//! the attention and the feed-forward each (the converter has folded Gemma's `1 + w` into the
//! weights), grouped-query heads with an RMSNorm over each query and key head before the rotary
//! positions, a tanh-GELU gated feed-forward, no biases. Five local layers (a symmetric window,
//! their own rotary base) before each global one; a final norm. The sentence vector is the
//! mean of the token states through sentence-transformers' Dense head ([`super::DenseHead`]).

use anyhow::{anyhow, Result};
use candle_core::quantized::QMatMul;
use candle_core::Tensor;

use super::activation::GateActivation;
use super::blocks::{
    local_bias, padding_bias, run_layers_then, GatedFfn, GroupedAttention, Rope, RopeTables,
};
use super::weights::{RmsNorm, Weights};
use super::LayerVisitor;
use crate::model::architecture::DecoderParts;
use crate::model::tensor_names::{self as names, DecoderLayerNames};
use crate::model::EncoderConfig;

struct Layer {
    attention_norm: RmsNorm,
    attention: GroupedAttention,
    post_attention_norm: RmsNorm,
    ffn_norm: RmsNorm,
    ffn: GatedFfn,
    post_ffn_norm: RmsNorm,
    /// A global layer (full attention, the global rotary base); else a local one.
    global: bool,
}

impl Layer {
    fn load(w: &Weights, cfg: &EncoderConfig, parts: DecoderParts, i: usize) -> Result<Self> {
        let n = DecoderLayerNames::of(parts, i);
        let eps = cfg.layer_norm_eps;
        let norm = |name: &Option<String>| {
            let name = name
                .as_deref()
                .ok_or_else(|| anyhow!("model config: Gemma's layers have post-norms"))?;
            w.rms_norm(name, eps)
        };
        Ok(Self {
            attention_norm: w.rms_norm(&n.attention_norm, eps)?,
            attention: GroupedAttention::load(w, &n, cfg)?,
            post_attention_norm: norm(&n.post_attention_norm)?,
            ffn_norm: w.rms_norm(&n.ffn_norm, eps)?,
            ffn: GatedFfn::separate(w, [&n.up, &n.gate, &n.down], GateActivation::GeluTanh)?,
            post_ffn_norm: norm(&n.post_ffn_norm)?,
            global: cfg.is_global_layer(i),
        })
    }
}

pub struct Gemma {
    words: QMatMul,
    /// √hidden, as transformers rounds it (an f64 square root stored in f32).
    embedding_scale: f64,
    layers: Vec<Layer>,
    final_norm: RmsNorm,
    global_rope: Rope,
    local_rope: Rope,
    /// Tokens a local layer sees either side.
    half_window: usize,
}

impl Gemma {
    pub fn load(
        w: &Weights,
        cfg: &EncoderConfig,
        words: QMatMul,
        parts: DecoderParts,
    ) -> Result<Self> {
        let missing = |what: &str| anyhow!("model config: gemma-embedding needs {what}");
        let theta = cfg.rope_theta.ok_or_else(|| missing("a rotary base"))?;
        let local_theta = cfg
            .local_rope_theta
            .ok_or_else(|| missing("a local rotary base"))?;
        let window = cfg
            .local_attention
            .ok_or_else(|| missing("a sliding window"))?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Layer::load(w, cfg, parts, i))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            words,
            embedding_scale: (cfg.hidden_size as f64).sqrt() as f32 as f64,
            layers,
            final_norm: w.rms_norm(names::OUTPUT_NORM, cfg.layer_norm_eps)?,
            global_rope: Rope::new(cfg.head_dim(), theta),
            local_rope: Rope::new(cfg.head_dim(), local_theta),
            half_window: window / 2,
        })
    }

    /// Last hidden states `[batch, seq, hidden]` (after the final norm); `visit` sees every
    /// layer's (0 = the scaled token embeddings; the last one after the final norm, as
    /// transformers returns it).
    pub fn forward(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        let seq = ids.dim(1)?;
        let (global_rope, local_rope) =
            (self.global_rope.tables(seq)?, self.local_rope.tables(seq)?);
        let padding = padding_bias(mask)?;
        let local_bias = local_bias(&padding, seq, self.half_window)?;
        let x = (self.words.embedding(ids)? * self.embedding_scale)?;
        run_layers_then(
            x,
            &padding,
            &self.layers,
            visit,
            |l, x, padding| {
                let (bias, rope) = match l.global {
                    true => (padding, &global_rope),
                    false => (local_bias.as_ref().unwrap_or(padding), &local_rope),
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
        let attended = l
            .attention
            .forward(&l.attention_norm.forward(x)?, rope, bias)?;
        let attended = l.post_attention_norm.forward(&attended)?;
        let x = (attended + x)?;
        let fed = l
            .post_ffn_norm
            .forward(&l.ffn.forward(&l.ffn_norm.forward(&x)?)?)?;
        Ok((fed + x)?)
    }
}

impl super::Transformer for Gemma {
    fn visit_layers(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        self.forward(ids, mask, visit)
    }
}
