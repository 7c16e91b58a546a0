//! The encoder's weights on the GPU, uploaded once per model with the sizes the graph needs.
//! One upload per architecture (BERT, MPNet: the same layer, different names, position
//! handling and MPNet's relative-position bias; nomic-bert: BERT's post-norm layer with rotary
//! positions and a gated feed-forward; ModernBERT: pre-norm layers, local and global; Qwen3 and
//! Gemma 3: the decoder-built embedders' RMSNorm layers of grouped-query heads);
//! building the graph of a batch (`graph/`) only reads them. Linear weights stay as the file
//! stores them: f32, or q8_0 / q4_0 blocks that the matmul kernel dequantizes (f16 files are
//! widened to f32).
//!
//! This file holds the uploaded weights' types and the dispatch to each architecture's recipe:
//! the encoders' in `encoders.rs`, the decoder-built embedders' in `decoders.rs`, both reading
//! the file through `host.rs`.

mod decoders;
mod encoders;
mod host;
mod t5;

use anyhow::{Context as _, Result};

use super::buffers::ErrorScopes;
use super::context::GpuContext;
use super::kernels::{check_attention_shape, WeightFormat, ATTENTION_MAX_SEQ};
use crate::backend::cpu::{GateActivation, Rope};
use crate::model::{Architecture, ModelFile, Pooling};
use host::Host;

pub(crate) struct Linear {
    pub w: wgpu::Buffer,
    pub format: WeightFormat,
    pub b: wgpu::Buffer,
}

pub(crate) struct Norm {
    pub g: wgpu::Buffer,
    pub b: wgpu::Buffer,
}

pub(crate) struct Layer {
    /// Query, key and value fused into one `[3·hidden, hidden]` matrix: one matmul, not three.
    pub qkv: Linear,
    pub attention_out: Linear,
    /// Post-norm: after the attention's residual sum; pre-norm: before the attention (none in
    /// ModernBERT's first layer, whose input is normed already).
    pub attention_norm: Option<Norm>,
    pub ffn: Ffn,
    pub output: Linear,
    /// Post-norm: after the feed-forward's residual sum; pre-norm: before the feed-forward.
    pub output_norm: Norm,
    /// Rotary positions: the index of the table in [`GpuWeights::rotary`] (global or local).
    pub rotary: Option<usize>,
    /// ModernBERT's local layers: keys with `|key − query| < window` (0: all).
    pub window: usize,
}

/// The feed-forward's input projection.
pub(crate) enum Ffn {
    /// `gelu(x·W + b)` (BERT, MPNet): GELU fused into the matmul.
    Gelu(Linear),
    /// `act(x·Wg) ⊙ x·Wu` from one `[2·inter, hidden]` matrix, the gate's rows first
    /// (ModernBERT's `Wi` as stored, nomic-bert's gate and up matrices stacked).
    Gated {
        up_gate: Linear,
        act: GateActivation,
    },
}

/// A layer of the decoder-built embedders (Qwen3, Gemma 3) and of T5's encoder, built the
/// same way: pre-RMSNorm blocks (Gemma also norms each block's output before its residual
/// sum), no biases. The norms are their weights (f32).
pub(crate) struct DecoderLayer {
    pub attention_norm: wgpu::Buffer,
    /// Queries, keys and values stacked into one `[(heads + 2·kv_heads)·head_dim, hidden]`
    /// matrix (with Qwen2's biases stacked the same way; zeros elsewhere).
    pub qkv: Linear,
    /// The per-head RMSNorms of the queries and keys (`[head_dim]` each; Qwen2 has none).
    pub qk_norms: Option<[wgpu::Buffer; 2]>,
    pub attention_out: Linear,
    /// Gemma's norm of the attention's output before its residual sum.
    pub post_attention_norm: Option<wgpu::Buffer>,
    pub ffn_norm: wgpu::Buffer,
    /// Gate and up stacked into one `[2·inter, hidden]` matrix, the gate's rows first (T5
    /// 1.0's ReLU feed-forward: up alone, `[inter, hidden]`).
    pub up_gate: Linear,
    pub down: Linear,
    /// Gemma's norm of the feed-forward's output before its residual sum.
    pub post_ffn_norm: Option<wgpu::Buffer>,
    /// The index of the layer's rotary table in [`GpuWeights::rotary`] (global or local);
    /// `None`: no rotary positions (T5's relative-position bias instead).
    pub rotary: Option<usize>,
    /// Gemma's local layers: keys with `|key − query| < window` (0: all).
    pub window: usize,
}

/// The layers of a model.
pub(crate) enum Stack {
    /// BERT, MPNet and nomic-bert (post-norm), ModernBERT (pre-norm, with a norm after the
    /// last layer).
    Encoder {
        layers: Vec<Layer>,
        final_norm: Option<Norm>,
    },
    /// Qwen3 (causal), Gemma 3 (bidirectional), T5's encoder: how their layers attend and
    /// feed forward, and the RMSNorm after the last layer.
    Decoder {
        layers: Vec<DecoderLayer>,
        kind: DecoderKind,
        final_norm: wgpu::Buffer,
    },
}

/// What differs between the stacks of [`DecoderLayer`]s beyond their weights.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DecoderKind {
    /// The gate's activation; `None`: T5 1.0's `relu(up(x))`, no gate.
    pub gate: Option<GateActivation>,
    /// Keys after the query are not seen (the Qwens).
    pub causal: bool,
    /// Scores scaled by 1/√head_dim (all but T5, whose query weights carry it).
    pub scaled_scores: bool,
}

/// How a batch's gathered word rows become the first layer's input.
pub(crate) enum Input {
    /// BERT, MPNet: position rows and the type row added on the GPU, then the LayerNorm.
    Table {
        positions: wgpu::Buffer,
        token_type0: wgpu::Buffer,
        norm: Norm,
    },
    /// nomic-bert: the type row added on the CPU (no position table), the LayerNorm on the GPU.
    TypeRow { token_type0: Vec<f32>, norm: Norm },
    /// ModernBERT: the LayerNorm (no bias) on the CPU; the residual stream starts normed.
    Normed { gamma: Vec<f32>, eps: f32 },
    /// Qwen3 (1), Gemma 3 (√hidden): the word rows times a scale, on the CPU.
    Scaled(f32),
}

/// The model's sizes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    pub hidden: usize,
    pub heads: usize,
    /// Key/value heads (grouped-query attention); `heads` in the encoders.
    pub kv_heads: usize,
    pub head_dim: usize,
    pub inter: usize,
    pub eps: f32,
    /// Longest sequence the position table covers (MPNet: its first `pad + 1` rows are never
    /// used by a token, see [`GpuWeights::mpnet`]).
    pub max_positions: usize,
}

/// Uploaded weights of one model.
pub(crate) struct GpuWeights {
    pub dims: Dims,
    pub input: Input,
    pub stack: Stack,
    /// The rotary tables' angles (global, then local), made per batch on the CPU.
    pub rotary: Vec<Rope>,
    /// MPNet's and T5's relative-position bias per head and distance,
    /// `[heads, 2·ATTENTION_MAX_SEQ − 1]`.
    pub relative_bias: Option<wgpu::Buffer>,
    pub pooling: Pooling,
}

impl GpuWeights {
    /// The widest activation row, in stored values: the fused QKV or gated projection's
    /// output, or the f32 residual stream (`hidden` values of 4 bytes) when wider in bytes.
    pub fn widest_row_bytes(&self, activation_bytes: usize) -> usize {
        let Dims {
            hidden,
            heads,
            kv_heads,
            head_dim,
            inter,
            ..
        } = self.dims;
        let gated = match &self.stack {
            Stack::Encoder { layers, .. } => {
                layers.iter().any(|l| matches!(l.ffn, Ffn::Gated { .. }))
            }
            Stack::Decoder { kind, .. } => kind.gate.is_some(),
        };
        let ffn = if gated { 2 * inter } else { inter };
        let qkv = (heads + 2 * kv_heads) * head_dim;
        (qkv.max(ffn).max(hidden) * activation_bytes).max(hidden * 4)
    }

    /// Pre-norm stacks (ModernBERT, the decoders) add each residual to the f32 stream, which
    /// their kernels bind where activations are read: they need f32 activations.
    pub fn needs_f32_activations(&self) -> bool {
        match &self.stack {
            Stack::Encoder { final_norm, .. } => final_norm.is_some(),
            Stack::Decoder { .. } => true,
        }
    }

    /// Uploads the weights of `file` to `ctx`'s device (one recipe per architecture); fails
    /// when the device reports an error.
    pub async fn upload(ctx: &GpuContext, file: &ModelFile) -> Result<Self> {
        let cfg = &file.config;
        // Longer sentences run on the CPU (`GpuWithCpuFallback::encode_batches`).
        check_attention_shape(
            file.info.max_seq_length.min(ATTENTION_MAX_SEQ),
            cfg.head_dim(),
            (cfg.num_attention_heads, cfg.kv_heads()),
        )?;
        let scopes = ErrorScopes::open(&ctx.device);
        let host = Host {
            file,
            device: &ctx.device,
        };
        let weights = match file.info.architecture {
            Architecture::Bert => host.bert(),
            Architecture::MpNet => host.mpnet(),
            Architecture::NomicBert => host.nomic_bert(),
            Architecture::ModernBert => host.modern_bert(),
            Architecture::Qwen2 | Architecture::Qwen3 | Architecture::GemmaEmbedding => {
                host.decoder()
            }
            Architecture::T5Encoder => host.t5(),
        };
        scopes
            .close("uploading the weights")
            .await
            .context("cannot load the model on the GPU")?;
        weights
    }
}
