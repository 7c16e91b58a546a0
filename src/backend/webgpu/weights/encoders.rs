//! The encoders' recipes: BERT and MPNet (post-norm layers, a position table), nomic-bert
//! (BERT's layer with rotary positions and a SwiGLU), ModernBERT (pre-norm layers, local and
//! global).

use anyhow::{anyhow, ensure, Result};
use candle_core::Device;

use super::super::buffers::f32_bytes;
use super::super::kernels::ATTENTION_MAX_SEQ;
use super::host::Host;
use super::{Ffn, GpuWeights, Input, Layer, Stack};
use crate::backend::cpu::{relative_bias_by_distance, relative_buckets};
use crate::backend::cpu::{GateActivation, Rope};
use crate::model::tensor_names::{self as names, GatedLayerNames, LayerNames, PreNormLayerNames};

impl Host<'_> {
    pub(super) fn bert(&self) -> Result<GpuWeights> {
        let name = names::TOKEN_TYPE_EMBEDDINGS;
        let [_, hidden] = self.matrix(name)?;
        let token_type0 = self.upload("token_type0", hidden as u64 * 4, || {
            Ok(self.f32_data(name)?[..hidden * 4].to_vec())
        })?;
        self.encoder(LayerNames::bert, 0, token_type0, None)
    }

    /// MPNet: the i-th token of a sentence has position `pad + 1 + i` (padding is on the right
    /// and never attended to, so its rows need no position of their own), no token types, and
    /// every layer adds the relative-position bias.
    pub(super) fn mpnet(&self) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let relative_bias = self.relative_bias(names::RELATIVE_ATTENTION_BIAS)?;
        let hidden = cfg.hidden_size;
        let token_type0 =
            self.upload("token_type0", hidden as u64 * 4, || Ok(vec![0; hidden * 4]))?;
        self.encoder(
            LayerNames::mpnet,
            cfg.pad_token_id + 1,
            token_type0,
            Some(relative_bias),
        )
    }

    /// The `[buckets, heads]` relative-position table `name` (MPNet's, T5's) as the attention
    /// kernel reads it: a bias per head and distance, `[heads, 2·ATTENTION_MAX_SEQ − 1]`.
    pub(super) fn relative_bias(&self, name: &str) -> Result<wgpu::Buffer> {
        let cfg = &self.file.config;
        let heads = cfg.num_attention_heads;
        let buckets = relative_buckets(cfg);
        let dims = self.matrix(name)?;
        ensure!(
            dims == [buckets, heads],
            "{name} has shape {dims:?}, expected [{buckets}, {heads}]",
        );
        let len = heads * (2 * ATTENTION_MAX_SEQ - 1);
        self.upload("relative_bias", len as u64 * 4, || {
            let table = self.file.tensor(name)?.dequantize(&Device::Cpu)?;
            let table = table.flatten_all()?.to_vec1::<f32>()?;
            let bias = relative_bias_by_distance(&table, buckets, heads, ATTENTION_MAX_SEQ);
            Ok(f32_bytes(&bias))
        })
    }

    /// The parts BERT and MPNet share; positions start at row `first_position` of the table.
    fn encoder(
        &self,
        names: fn(usize) -> LayerNames,
        first_position: usize,
        token_type0: wgpu::Buffer,
        relative_bias: Option<wgpu::Buffer>,
    ) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let n = names(l);
                Ok(Layer {
                    qkv: self.linear("qkv", &[&n.query, &n.key, &n.value], h, h)?,
                    attention_out: self.linear("attention_out", &[&n.attention_out], h, h)?,
                    attention_norm: Some(self.norm(&n.attention_norm)?),
                    ffn: Ffn::Gelu(self.linear("intermediate", &[&n.intermediate], i, h)?),
                    output: self.linear("output", &[&n.output], h, i)?,
                    output_norm: self.norm(&n.output_norm)?,
                    rotary: None,
                    window: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let name = names::POSITION_EMBEDDINGS;
        let [rows, width] = self.matrix(name)?;
        ensure!(
            rows > first_position,
            "the position table has {rows} rows; positions start at row {first_position}"
        );
        let skipped = first_position * width * 4;
        let len = ((rows - first_position) * width * 4) as u64;
        let positions = self.upload("positions", len, || {
            Ok(self.f32_data(name)?[skipped..].to_vec())
        })?;
        let input = Input::Table {
            positions,
            token_type0,
            norm: self.norm(names::EMBEDDINGS_NORM)?,
        };
        let stack = Stack::Encoder {
            layers,
            final_norm: None,
        };
        Ok(self.weights(
            input,
            stack,
            Vec::new(),
            relative_bias,
            rows - first_position,
        ))
    }

    /// nomic-bert: BERT's post-norm layers without biases, rotary positions (one base), a
    /// SwiGLU feed-forward whose gate and up matrices are stacked into one.
    pub(super) fn nomic_bert(&self) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let n = GatedLayerNames::nomic_bert(l);
                Ok(Layer {
                    qkv: self.linear_no_bias("qkv", &[&n.qkv], 3 * h, h)?,
                    attention_out: self.linear_no_bias(
                        "attention_out",
                        &[&n.attention_out],
                        h,
                        h,
                    )?,
                    attention_norm: Some(self.norm(&n.attention_norm)?),
                    ffn: Ffn::Gated {
                        up_gate: self.linear_no_bias("up_gate", &[&n.gate, &n.up], i, h)?,
                        act: GateActivation::Silu,
                    },
                    output: self.linear_no_bias("output", &[&n.down], h, i)?,
                    output_norm: self.norm(&n.output_norm)?,
                    rotary: Some(0),
                    window: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let type0 = self
            .file
            .tensor(names::TOKEN_TYPE_EMBEDDINGS)?
            .dequantize(&Device::Cpu)?;
        let input = Input::TypeRow {
            token_type0: type0.get(0)?.to_vec1()?,
            norm: self.norm(names::EMBEDDINGS_NORM)?,
        };
        let theta = cfg
            .rope_theta
            .ok_or_else(|| anyhow!("nomic-bert needs a rotary base"))?;
        let rotary = vec![Rope::new(cfg.head_dim(), theta)];
        let positions = cfg.max_position_embeddings;
        let stack = Stack::Encoder {
            layers,
            final_norm: None,
        };
        Ok(self.weights(input, stack, rotary, None, positions))
    }

    /// ModernBERT: pre-norm layers of fused, bias-free projections and LayerNorms, global
    /// layers (every key, the global rotary base) and local ones (the window, the local base),
    /// a GeGLU (or SwiGLU) feed-forward from one matrix, a final norm.
    pub(super) fn modern_bert(&self) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let missing = |what: &str| anyhow!("modern-bert needs {what}");
        let global = cfg.rope_theta.ok_or_else(|| missing("a rotary base"))?;
        let local = cfg.local_rope_theta.unwrap_or(global);
        let window = cfg
            .local_attention
            .ok_or_else(|| missing("an attention window"))?
            / 2
            + 1;
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let n = PreNormLayerNames::modern_bert(l);
                let is_global = cfg.is_global_layer(l);
                Ok(Layer {
                    qkv: self.linear_no_bias("qkv", &[&n.qkv], 3 * h, h)?,
                    attention_out: self.linear_no_bias(
                        "attention_out",
                        &[&n.attention_out],
                        h,
                        h,
                    )?,
                    attention_norm: n
                        .attention_norm
                        .as_deref()
                        .map(|p| self.norm_no_bias(p))
                        .transpose()?,
                    ffn: Ffn::Gated {
                        up_gate: self.linear_no_bias("up_gate", &[&n.up_gate], 2 * i, h)?,
                        act: if cfg.hidden_act == "swiglu" {
                            GateActivation::Silu
                        } else {
                            GateActivation::Gelu
                        },
                    },
                    output: self.linear_no_bias("output", &[&n.down], h, i)?,
                    output_norm: self.norm_no_bias(&n.ffn_norm)?,
                    rotary: Some(usize::from(!is_global)),
                    window: if is_global { 0 } else { window },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let gamma = self.file.tensor(&names::weight(names::EMBEDDINGS_NORM))?;
        let input = Input::Normed {
            gamma: gamma.dequantize(&Device::Cpu)?.to_vec1()?,
            eps: cfg.layer_norm_eps as f32,
        };
        let rotary = vec![
            Rope::new(cfg.head_dim(), global),
            Rope::new(cfg.head_dim(), local),
        ];
        let stack = Stack::Encoder {
            layers,
            final_norm: Some(self.norm_no_bias(names::OUTPUT_NORM)?),
        };
        let positions = cfg.max_position_embeddings;
        Ok(self.weights(input, stack, rotary, None, positions))
    }
}
