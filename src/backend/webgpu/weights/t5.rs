//! T5's encoder recipe (Sentence-T5, GTR): the decoder-built embedders' pre-RMSNorm layers
//! ([`super::DecoderLayer`]) without rotary positions or head norms, the first layer's
//! relative-position table as a bias per head and distance (MPNet's, in the attention
//! kernel), unscaled scores, a ReLU or tanh-GeGLU feed-forward.

use anyhow::{bail, Result};

use super::host::Host;
use super::{DecoderKind, DecoderLayer, GpuWeights, Input, Stack};
use crate::backend::cpu::GateActivation;
use crate::model::tensor_names::{self as names, T5LayerNames};

impl Host<'_> {
    pub(super) fn t5(&self) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let gate = match cfg.hidden_act.as_str() {
            "relu" => None,
            "geglu_tanh" => Some(GateActivation::GeluTanh),
            other => bail!("a T5 encoder has a relu or geglu_tanh feed-forward, not {other}"),
        };
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let n = T5LayerNames::of(l);
                let qkv = [
                    (n.query.as_str(), h),
                    (n.key.as_str(), h),
                    (n.value.as_str(), h),
                ];
                let up_gate = match gate {
                    Some(_) => vec![(n.gate.as_str(), i), (n.up.as_str(), i)],
                    None => vec![(n.up.as_str(), i)],
                };
                Ok(DecoderLayer {
                    attention_norm: self.rms_norm(&n.attention_norm, h)?,
                    qkv: self.linear_stack("qkv", &qkv, h)?,
                    qk_norms: None,
                    attention_out: self.linear_stack(
                        "attention_out",
                        &[(&n.attention_out, h)],
                        h,
                    )?,
                    post_attention_norm: None,
                    ffn_norm: self.rms_norm(&n.ffn_norm, h)?,
                    up_gate: self.linear_stack("up_gate", &up_gate, h)?,
                    down: self.linear_stack("down", &[(n.down.as_str(), h)], i)?,
                    post_ffn_norm: None,
                    rotary: None,
                    window: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let relative_bias = self.relative_bias(names::T5_RELATIVE_BIAS)?;
        let stack = Stack::Decoder {
            layers,
            kind: DecoderKind {
                gate,
                causal: false,
                scaled_scores: false,
            },
            final_norm: self.rms_norm(names::T5_OUTPUT_NORM, h)?,
        };
        let positions = cfg.max_position_embeddings;
        Ok(self.weights(
            Input::Scaled(1.0),
            stack,
            Vec::new(),
            Some(relative_bias),
            positions,
        ))
    }
}
