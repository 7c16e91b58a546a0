//! Qwen3-Embedding (0.6B, 4B, 8B, from llama.cpp's `qwen3` files): a decoder LLM's stack read
//! as an embedder. Pre-RMSNorm layers of causal attention with grouped-query heads (several
//! query heads share one key/value head), an RMSNorm over each query and key head before the
//! rotary positions, a SwiGLU feed-forward, no biases, a final norm; the sentence vector is
//! the last token's (the `<|endoftext|>` its tokenizer appends), which alone has seen the
//! whole text.

use anyhow::{anyhow, Result};
use candle_core::quantized::QMatMul;
use candle_core::Tensor;

use super::blocks::{
    attention, causal_bias, padding_bias, repeat_kv, run_layers, split_heads, GatedFfn, Rope,
    RopeTables,
};
use super::weights::{Linear, RmsNorm, Weights};
use super::LayerVisitor;
use crate::model::tensor_names::{self as names, DecoderLayerNames};
use crate::model::EncoderConfig;

struct Layer {
    attention_norm: RmsNorm,
    query: Linear,
    key: Linear,
    value: Linear,
    query_norm: RmsNorm,
    key_norm: RmsNorm,
    attention_out: Linear,
    ffn_norm: RmsNorm,
    ffn: GatedFfn,
    /// The final norm follows this layer.
    last: bool,
}

impl Layer {
    fn load(w: &Weights, n: &DecoderLayerNames, eps: f64, last: bool) -> Result<Self> {
        Ok(Self {
            attention_norm: w.rms_norm(&n.attention_norm, eps)?,
            query: w.linear_no_bias(&n.query)?,
            key: w.linear_no_bias(&n.key)?,
            value: w.linear_no_bias(&n.value)?,
            query_norm: w.rms_norm(&n.query_norm, eps)?,
            key_norm: w.rms_norm(&n.key_norm, eps)?,
            attention_out: w.linear_no_bias(&n.attention_out)?,
            ffn_norm: w.rms_norm(&n.ffn_norm, eps)?,
            ffn: GatedFfn::swiglu(w, &n.up, &n.gate, &n.down)?,
            last,
        })
    }
}

pub struct Qwen3 {
    words: QMatMul,
    layers: Vec<Layer>,
    final_norm: RmsNorm,
    rope: Rope,
    heads: usize,
    kv_heads: usize,
}

impl Qwen3 {
    pub fn load(w: &Weights, cfg: &EncoderConfig, words: QMatMul) -> Result<Self> {
        let eps = cfg.layer_norm_eps;
        let theta = cfg
            .rope_theta
            .ok_or_else(|| anyhow!("model config: qwen3 needs a rotary base"))?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                Layer::load(
                    w,
                    &DecoderLayerNames::qwen3(i),
                    eps,
                    i + 1 == cfg.num_hidden_layers,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            words,
            layers,
            final_norm: w.rms_norm(names::OUTPUT_NORM, eps)?,
            rope: Rope::new(cfg.head_dim(), theta),
            heads: cfg.num_attention_heads,
            kv_heads: cfg.kv_heads(),
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
        run_layers(x, &bias, &self.layers, visit, |l, x, bias| {
            let y = self.layer_forward(l, x, bias, &rope)?;
            match l.last {
                true => self.final_norm.forward(&y),
                false => Ok(y),
            }
        })
    }

    fn layer_forward(
        &self,
        l: &Layer,
        x: &Tensor,
        bias: &Tensor,
        rope: &RopeTables,
    ) -> Result<Tensor> {
        let h = l.attention_norm.forward(x)?;
        let heads = |proj: &Linear, n: usize| split_heads(&proj.forward(&h)?, n);
        let q = rope.apply(&l.query_norm.forward(&heads(&l.query, self.heads)?)?)?;
        let k = rope.apply(&l.key_norm.forward(&heads(&l.key, self.kv_heads)?)?)?;
        let v = heads(&l.value, self.kv_heads)?;
        let group = self.heads / self.kv_heads;
        let context = attention(&q, &repeat_kv(k, group)?, &repeat_kv(v, group)?, bias)?;
        let x = (l.attention_out.forward(&context)? + x)?;
        Ok((l.ffn.forward(&l.ffn_norm.forward(&x)?)? + x)?)
    }
}

impl super::Transformer for Qwen3 {
    fn visit_layers(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor> {
        self.forward(ids, mask, visit)
    }
}
