//! Qwen3-Embedding (0.6B, 4B, 8B, from llama.cpp's `qwen3` files) and gte-Qwen2-*-instruct
//! (`qwen2` files): a decoder LLM's stack read as an embedder. Pre-RMSNorm layers of causal
//! attention with grouped-query heads (several query heads share one key/value head) — Qwen3's
//! with an RMSNorm over each query and key head before the rotary positions, Qwen2's with
//! biases on the query, key and value projections instead — a SwiGLU feed-forward, no other
//! biases, a final norm; the sentence vector is the last token's (the `<|endoftext|>` the
//! tokenizer appends), which alone has seen the whole text.

use anyhow::{anyhow, Result};
use candle_core::quantized::QMatMul;
use candle_core::Tensor;

use super::blocks::{
    causal_bias, padding_bias, run_layers_then, GatedFfn, GroupedAttention, Rope, RopeTables,
};
use super::weights::{RmsNorm, Weights};
use super::LayerVisitor;
use crate::model::architecture::DecoderParts;
use crate::model::tensor_names::{self as names, DecoderLayerNames};
use crate::model::EncoderConfig;

struct Layer {
    attention_norm: RmsNorm,
    attention: GroupedAttention,
    ffn_norm: RmsNorm,
    ffn: GatedFfn,
}

impl Layer {
    fn load(w: &Weights, cfg: &EncoderConfig, parts: DecoderParts, i: usize) -> Result<Self> {
        let (n, eps) = (DecoderLayerNames::of(parts, i), cfg.layer_norm_eps);
        Ok(Self {
            attention_norm: w.rms_norm(&n.attention_norm, eps)?,
            attention: GroupedAttention::load(w, &n, cfg)?,
            ffn_norm: w.rms_norm(&n.ffn_norm, eps)?,
            ffn: GatedFfn::swiglu(w, &n.up, &n.gate, &n.down)?,
        })
    }
}

pub struct Qwen {
    words: QMatMul,
    layers: Vec<Layer>,
    final_norm: RmsNorm,
    rope: Rope,
}

impl Qwen {
    pub fn load(
        w: &Weights,
        cfg: &EncoderConfig,
        words: QMatMul,
        parts: DecoderParts,
    ) -> Result<Self> {
        let eps = cfg.layer_norm_eps;
        let theta = cfg
            .rope_theta
            .ok_or_else(|| anyhow!("model config: a Qwen model needs a rotary base"))?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Layer::load(w, cfg, parts, i))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            words,
            layers,
            final_norm: w.rms_norm(names::OUTPUT_NORM, eps)?,
            rope: Rope::new(cfg.head_dim(), theta),
        })
    }

    /// Last hidden states `[batch, seq, hidden]` (after the final norm); `visit` sees every
    /// layer's (0 = the token embeddings; the last one after the final norm, as transformers
    /// returns it).
    pub fn forward(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        let seq = ids.dim(1)?;
        let rope = self.rope.tables(seq)?;
        let bias = padding_bias(mask)?.broadcast_add(&causal_bias(seq)?)?;
        let x = self.words.embedding(ids)?;
        run_layers_then(
            x,
            &bias,
            &self.layers,
            visit,
            |l, x, bias| self.layer_forward(l, x, bias, &rope),
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
        let x = (attended + x)?;
        Ok((l.ffn.forward(&l.ffn_norm.forward(&x)?)? + x)?)
    }
}

impl super::Transformer for Qwen {
    fn visit_layers(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        self.forward(ids, mask, visit)
    }
}
