//! The decoder-built embedders' recipe (Qwen2, Qwen3, EmbeddingGemma): pre-RMSNorm layers of
//! grouped-query heads, stacked projections, read from the architecture's spec.

use anyhow::{anyhow, bail, Result};

use super::host::Host;
use super::{DecoderKind, DecoderLayer, GpuWeights, Input, Stack};
use crate::backend::cpu::{GateActivation, Rope};
use crate::model::architecture::{Attention, FeedForward, Positions};
use crate::model::tensor_names::{self as names, DecoderLayerNames};

impl Host<'_> {
    /// Pre-RMSNorm layers of grouped-query attention (queries, keys and values stacked into
    /// one matrix, with Qwen2's biases; per-head query and key norms where the spec's
    /// `DecoderParts` has them) and a gated feed-forward (gate and up stacked), a final
    /// RMSNorm. From the spec: causal attention (the Qwens) or not (Gemma); one rotary base,
    /// or local layers (a window, their own base) before each global one (Gemma); a norm
    /// after each block (Gemma); SwiGLU or tanh GeGLU; embeddings scaled by √hidden (Gemma).
    /// The Dense head after Gemma's pooling runs on the CPU (`crate::backend::cpu::PooledHead`).
    pub(super) fn decoder(&self) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let arch = self.file.info.architecture;
        let spec = arch.spec();
        let (h, i, d) = (cfg.hidden_size, cfg.intermediate_size, cfg.head_dim());
        let (q, kv) = (cfg.query_width(), cfg.kv_width());
        let missing = |what: &str| anyhow!("{arch} needs {what}");
        let parts = spec
            .decoder_parts()
            .ok_or_else(|| missing("decoder layers"))?;
        let global = cfg.rope_theta.ok_or_else(|| missing("a rotary base"))?;
        let (local, window) = match spec.positions {
            Positions::LocalGlobal { .. } => {
                let local = cfg
                    .local_rope_theta
                    .ok_or_else(|| missing("a local rotary base"))?;
                let window = cfg
                    .local_attention
                    .ok_or_else(|| missing("a sliding window"))?;
                (local, Some(window / 2 + 1))
            }
            Positions::Rotary => (global, None),
            Positions::Table | Positions::RelativeBuckets => {
                bail!("the GPU's decoder layers have rotary positions; {arch} has others")
            }
        };
        let act = match spec.feed_forward {
            FeedForward::SwiGlu => GateActivation::Silu,
            FeedForward::GeGluTanh => GateActivation::GeluTanh,
            FeedForward::Gelu | FeedForward::GeGluOrSwiGlu | FeedForward::ReluOrGeGluTanh => {
                bail!("the GPU's decoder layers have a SwiGLU or tanh GeGLU feed-forward")
            }
        };
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let n = DecoderLayerNames::of(parts, l);
                let qk_norms = match (&n.query_norm, &n.key_norm) {
                    (Some(qn), Some(kn)) => Some([self.rms_norm(qn, d)?, self.rms_norm(kn, d)?]),
                    _ => None,
                };
                let post = |name: &Option<String>| {
                    name.as_deref().map(|p| self.rms_norm(p, h)).transpose()
                };
                let local_layer = window.filter(|_| !cfg.is_global_layer(l));
                let qkv = [
                    (n.query.as_str(), q),
                    (n.key.as_str(), kv),
                    (n.value.as_str(), kv),
                ];
                Ok(DecoderLayer {
                    attention_norm: self.rms_norm(n.attention_norm.as_str(), h)?,
                    qkv: self.stacked("qkv", &qkv, h, n.qkv_biases)?,
                    qk_norms,
                    attention_out: self.linear_stack(
                        "attention_out",
                        &[(n.attention_out.as_str(), h)],
                        q,
                    )?,
                    post_attention_norm: post(&n.post_attention_norm)?,
                    ffn_norm: self.rms_norm(n.ffn_norm.as_str(), h)?,
                    up_gate: self.linear_stack(
                        "up_gate",
                        &[(n.gate.as_str(), i), (n.up.as_str(), i)],
                        h,
                    )?,
                    down: self.linear_stack("down", &[(n.down.as_str(), h)], i)?,
                    post_ffn_norm: post(&n.post_ffn_norm)?,
                    rotary: Some(usize::from(local_layer.is_some())),
                    window: local_layer.unwrap_or(0),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let stack = Stack::Decoder {
            layers,
            kind: DecoderKind {
                gate: Some(act),
                causal: spec.attention == Attention::Causal,
                scaled_scores: true,
            },
            final_norm: self.rms_norm(names::OUTPUT_NORM, h)?,
        };
        // √hidden as transformers rounds it (an f64 square root stored in f32), as the CPU.
        let scale = match spec.scaled_embeddings {
            true => (h as f64).sqrt() as f32,
            false => 1.0,
        };
        let rotary = vec![Rope::new(d, global), Rope::new(d, local)];
        let positions = cfg.max_position_embeddings;
        Ok(self.weights(Input::Scaled(scale), stack, rotary, None, positions))
    }
}
