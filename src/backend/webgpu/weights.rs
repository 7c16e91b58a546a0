//! The encoder's weights on the GPU, uploaded once per model with the sizes the graph needs.
//! One upload per architecture (BERT, MPNet: the same layer, different names, position
//! handling and MPNet's relative-position bias; nomic-bert: BERT's post-norm layer with rotary
//! positions and a gated feed-forward; ModernBERT: pre-norm layers, local and global; Qwen3 and
//! Gemma 3: the decoder-built embedders' RMSNorm layers of grouped-query heads);
//! building the graph of a batch (`graph.rs`) only reads them. Linear weights stay as the file
//! stores them: f32, or q8_0 / q4_0 blocks that the matmul kernel dequantizes (f16 files are
//! widened to f32).

use std::borrow::Cow;

use anyhow::{anyhow, ensure, Context as _, Result};
use candle_core::quantized::GgmlDType;
use candle_core::Device;

use super::buffers::{f32_bytes, upload_weights, ErrorScopes, GpuDevice};
use super::context::GpuContext;
use super::kernels::{check_attention_shape, WeightFormat, ATTENTION_MAX_SEQ};
use crate::backend::cpu::{relative_bias_by_distance, relative_buckets};
use crate::backend::cpu::{GateActivation, Rope};
use crate::error::{coded, ErrorCode};
use crate::model::tensor_names::{
    self as names, DecoderLayerNames, GatedLayerNames, LayerNames, PreNormLayerNames,
};
use crate::model::{ModelFile, Pooling};

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

/// A layer of the decoder-built embedders (Qwen3, Gemma 3): pre-RMSNorm blocks (Gemma also
/// norms each block's output before its residual sum), no biases. The norms are their
/// weights (f32).
pub(crate) struct DecoderLayer {
    pub attention_norm: wgpu::Buffer,
    /// Queries, keys and values stacked into one `[(heads + 2·kv_heads)·head_dim, hidden]`
    /// matrix.
    pub qkv: Linear,
    /// The per-head RMSNorms of the queries and keys (`[head_dim]` each).
    pub query_norm: wgpu::Buffer,
    pub key_norm: wgpu::Buffer,
    pub attention_out: Linear,
    /// Gemma's norm of the attention's output before its residual sum.
    pub post_attention_norm: Option<wgpu::Buffer>,
    pub ffn_norm: wgpu::Buffer,
    /// Gate and up stacked into one `[2·inter, hidden]` matrix, the gate's rows first.
    pub up_gate: Linear,
    pub down: Linear,
    /// Gemma's norm of the feed-forward's output before its residual sum.
    pub post_ffn_norm: Option<wgpu::Buffer>,
    /// The index of the layer's rotary table in [`GpuWeights::rotary`] (global or local).
    pub rotary: usize,
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
    /// Qwen3 (causal), Gemma 3 (bidirectional): their gate's activation and the RMSNorm
    /// after the last layer.
    Decoder {
        layers: Vec<DecoderLayer>,
        act: GateActivation,
        causal: bool,
        final_norm: wgpu::Buffer,
    },
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
    /// MPNet's relative-position bias per head and distance, `[heads, 2·ATTENTION_MAX_SEQ − 1]`.
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
            Stack::Decoder { .. } => true,
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

    /// Uploads the weights of `file` to `ctx`'s device; fails for architectures the GPU
    /// backend does not run and when the device reports an error.
    pub async fn upload(ctx: &GpuContext, file: &ModelFile) -> Result<Self> {
        let architecture = file.info.architecture.as_str();
        if !matches!(
            architecture,
            "bert" | "mpnet" | "nomic-bert" | "modern-bert" | "qwen3" | "gemma-embedding"
        ) {
            return Err(coded(
                ErrorCode::UnsupportedArchitecture,
                format!(
                    "the GPU backend runs BERT, MPNet, nomic-bert, ModernBERT, Qwen3 and \
                     EmbeddingGemma models; this file is '{architecture}'"
                ),
            ));
        }
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
        let weights = match architecture {
            "mpnet" => host.mpnet(),
            "nomic-bert" => host.nomic_bert(),
            "modern-bert" => host.modern_bert(),
            "qwen3" => host.decoder(false),
            "gemma-embedding" => host.decoder(true),
            _ => host.bert(),
        };
        scopes
            .close("uploading the weights")
            .await
            .context("cannot load the model on the GPU")?;
        weights
    }
}

/// Reads tensors of a model file on the host and uploads them (the device's ledger counts
/// the bytes). Every buffer's size comes from the tensors' shapes and dtypes alone; their
/// data is read (and f16 widened) only when really uploading, not while planning.
struct Host<'a> {
    file: &'a ModelFile,
    device: &'a GpuDevice,
}

impl Host<'_> {
    fn bert(&self) -> Result<GpuWeights> {
        let name = names::TOKEN_TYPE_EMBEDDINGS;
        let [_, hidden] = self.matrix(name)?;
        let token_type0 = self.upload("token_type0", hidden as u64 * 4, || {
            Ok(self.f32_data(name)?[..hidden * 4].to_vec())
        })?;
        self.encoder(0, token_type0, None)
    }

    /// MPNet: the i-th token of a sentence has position `pad + 1 + i` (padding is on the right
    /// and never attended to, so its rows need no position of their own), no token types, and
    /// every layer adds the relative-position bias.
    fn mpnet(&self) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let heads = cfg.num_attention_heads;
        let name = names::RELATIVE_ATTENTION_BIAS;
        let buckets = relative_buckets(cfg);
        let dims = self.matrix(name)?;
        ensure!(
            dims == [buckets, heads],
            "relative_attention_bias has shape {dims:?}, expected [{buckets}, {heads}]",
        );
        let len = heads * (2 * ATTENTION_MAX_SEQ - 1);
        let relative_bias = self.upload("relative_bias", len as u64 * 4, || {
            let table = self.file.tensor(name)?.dequantize(&Device::Cpu)?;
            let table = table.flatten_all()?.to_vec1::<f32>()?;
            let bias = relative_bias_by_distance(&table, buckets, heads, ATTENTION_MAX_SEQ);
            Ok(f32_bytes(&bias))
        })?;
        let hidden = cfg.hidden_size;
        let token_type0 =
            self.upload("token_type0", hidden as u64 * 4, || Ok(vec![0; hidden * 4]))?;
        self.encoder(cfg.pad_token_id + 1, token_type0, Some(relative_bias))
    }

    /// The parts BERT and MPNet share; positions start at row `first_position` of the table.
    fn encoder(
        &self,
        first_position: usize,
        token_type0: wgpu::Buffer,
        relative_bias: Option<wgpu::Buffer>,
    ) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let n = LayerNames::of(&self.file.info.architecture, l);
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
    fn nomic_bert(&self) -> Result<GpuWeights> {
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
    fn modern_bert(&self) -> Result<GpuWeights> {
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

    /// Qwen3 (`gemma` false) and EmbeddingGemma: pre-RMSNorm layers of grouped-query
    /// attention (queries, keys and values stacked into one matrix, per-head query and key
    /// norms) and a gated feed-forward (gate and up stacked), no biases, a final RMSNorm.
    /// Qwen3 is causal with one rotary base and a SwiGLU; Gemma adds a norm after each block,
    /// local layers (a window, their own base) before each global one, a tanh GeGLU and
    /// embeddings scaled by √hidden. The Dense head after Gemma's pooling runs on the CPU
    /// (`crate::backend::cpu::PooledHead`).
    fn decoder(&self, gemma: bool) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let arch = &self.file.info.architecture;
        let (h, i, d) = (cfg.hidden_size, cfg.intermediate_size, cfg.head_dim());
        let (q, kv) = (cfg.query_width(), cfg.kv_width());
        let missing = |what: &str| anyhow!("{arch} needs {what}");
        let global = cfg.rope_theta.ok_or_else(|| missing("a rotary base"))?;
        let (local, window) = if gemma {
            let local = cfg
                .local_rope_theta
                .ok_or_else(|| missing("a local rotary base"))?;
            let window = cfg
                .local_attention
                .ok_or_else(|| missing("a sliding window"))?;
            (local, window / 2 + 1)
        } else {
            (global, 0)
        };
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let n = if gemma {
                    DecoderLayerNames::gemma(l)
                } else {
                    DecoderLayerNames::qwen3(l)
                };
                let post = |name: &Option<String>| {
                    name.as_deref().map(|p| self.rms_norm(p, h)).transpose()
                };
                let local_layer = gemma && !cfg.is_global_layer(l);
                Ok(DecoderLayer {
                    attention_norm: self.rms_norm(n.attention_norm.as_str(), h)?,
                    qkv: self.linear_stack(
                        "qkv",
                        &[
                            (n.query.as_str(), q),
                            (n.key.as_str(), kv),
                            (n.value.as_str(), kv),
                        ],
                        h,
                    )?,
                    query_norm: self.rms_norm(n.query_norm.as_str(), d)?,
                    key_norm: self.rms_norm(n.key_norm.as_str(), d)?,
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
                    rotary: usize::from(local_layer),
                    window: if local_layer { window } else { 0 },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let stack = Stack::Decoder {
            layers,
            act: if gemma {
                GateActivation::GeluTanh
            } else {
                GateActivation::Silu
            },
            causal: !gemma,
            final_norm: self.rms_norm(names::OUTPUT_NORM, h)?,
        };
        // √hidden as transformers rounds it (an f64 square root stored in f32), as the CPU.
        let scale = if gemma { (h as f64).sqrt() as f32 } else { 1.0 };
        let rotary = vec![Rope::new(d, global), Rope::new(d, local)];
        let positions = cfg.max_position_embeddings;
        Ok(self.weights(Input::Scaled(scale), stack, rotary, None, positions))
    }

    fn weights(
        &self,
        input: Input,
        stack: Stack,
        rotary: Vec<Rope>,
        relative_bias: Option<wgpu::Buffer>,
        max_positions: usize,
    ) -> GpuWeights {
        let cfg = &self.file.config;
        GpuWeights {
            dims: Dims {
                hidden: cfg.hidden_size,
                heads: cfg.num_attention_heads,
                kv_heads: cfg.kv_heads(),
                head_dim: cfg.head_dim(),
                inter: cfg.intermediate_size,
                eps: cfg.layer_norm_eps as f32,
                max_positions,
            },
            input,
            stack,
            rotary,
            relative_bias,
            pooling: self.file.info.pooling_mode(),
        }
    }

    /// A weight buffer of `len` bytes; `read` is called only when really uploading.
    fn upload(
        &self,
        label: &str,
        len: u64,
        read: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<wgpu::Buffer> {
        upload_weights(self.device, label, len, read)
    }

    /// The shape of 2-D tensor `name` (from the file's header).
    fn matrix(&self, name: &str) -> Result<[usize; 2]> {
        let (dims, _) = self.file.tensor_layout(name)?;
        <[usize; 2]>::try_from(dims.as_slice())
            .map_err(|_| anyhow!("{name} has shape {dims:?}, expected a matrix"))
    }

    /// Tensor `name`'s values as little-endian f32 bytes: the file's own bytes when it stores
    /// f32, else dequantized (f16 widened).
    fn f32_data(&self, name: &str) -> Result<Cow<'_, [u8]>> {
        if self.file.tensor_layout(name)?.1 == GgmlDType::F32 {
            return Ok(Cow::Borrowed(self.file.tensor_bytes(name)?));
        }
        let values = self.file.tensor(name)?.dequantize(&Device::Cpu)?;
        Ok(Cow::Owned(f32_bytes(
            &values.flatten_all()?.to_vec1::<f32>()?,
        )))
    }

    /// The tensors `names` as f32, one after the other, in one buffer.
    fn f32_vectors(&self, label: &str, names: &[String]) -> Result<wgpu::Buffer> {
        let mut len = 0;
        for name in names {
            len += self.file.tensor_layout(name)?.0.iter().product::<usize>() as u64 * 4;
        }
        self.upload(label, len, || {
            let mut bytes = Vec::with_capacity(len as usize);
            for name in names {
                bytes.extend_from_slice(&self.f32_data(name)?);
            }
            Ok(bytes)
        })
    }

    /// The linear layers `prefixes` (each `[out, inp]`, checked) stacked into one
    /// `[parts·out, inp]` matrix, and their biases. f32, q8_0 and q4_0 weights are uploaded
    /// as the file's bytes (a matrix's blocks run along its rows, so stacking is
    /// concatenation) when every part has the same dtype; anything else as f32.
    fn linear(&self, label: &str, prefixes: &[&str], out: usize, inp: usize) -> Result<Linear> {
        self.linear_with(label, prefixes, out, inp, true)
    }

    /// [`Self::linear`] of layers without biases (a zero bias is bound: the kernel adds it).
    fn linear_no_bias(
        &self,
        label: &str,
        prefixes: &[&str],
        out: usize,
        inp: usize,
    ) -> Result<Linear> {
        self.linear_with(label, prefixes, out, inp, false)
    }

    fn linear_with(
        &self,
        label: &str,
        prefixes: &[&str],
        out: usize,
        inp: usize,
        has_bias: bool,
    ) -> Result<Linear> {
        let parts: Vec<(&str, usize)> = prefixes.iter().map(|p| (*p, out)).collect();
        self.stacked(label, &parts, inp, has_bias)
    }

    /// Bias-free linear layers of `(prefix, out)` rows each over `inp` columns, stacked (the
    /// decoders' queries, keys and values of different widths).
    fn linear_stack(&self, label: &str, parts: &[(&str, usize)], inp: usize) -> Result<Linear> {
        self.stacked(label, parts, inp, false)
    }

    fn stacked(
        &self,
        label: &str,
        parts: &[(&str, usize)],
        inp: usize,
        has_bias: bool,
    ) -> Result<Linear> {
        let weights: Vec<String> = parts.iter().map(|(p, _)| names::weight(p)).collect();
        let mut dtypes = Vec::with_capacity(weights.len());
        for (name, (_, out)) in weights.iter().zip(parts) {
            let (dims, dtype) = self.file.tensor_layout(name)?;
            ensure!(
                dims == [*out, inp],
                "{name} has shape {dims:?}, expected [{out}, {inp}]"
            );
            dtypes.push(dtype);
        }
        let rows: usize = parts.iter().map(|(_, out)| out).sum();
        let same = dtypes.iter().all(|d| *d == dtypes[0]);
        let blocks = inp.is_multiple_of(32);
        let format = match dtypes[0] {
            GgmlDType::Q8_0 if same && blocks => WeightFormat::Q8_0,
            GgmlDType::Q4_0 if same && blocks => WeightFormat::Q4_0,
            _ => WeightFormat::F32,
        };
        let values = (rows * inp) as u64;
        let w = if format == WeightFormat::F32 {
            self.f32_vectors(label, &weights)?
        } else {
            let len = values / 32 * format.block_bytes() as u64;
            self.upload(label, len, || {
                let mut bytes = Vec::with_capacity(len as usize);
                for name in &weights {
                    bytes.extend_from_slice(self.file.tensor_bytes(name)?);
                }
                Ok(bytes)
            })?
        };
        let b = if has_bias {
            let biases: Vec<String> = parts.iter().map(|(p, _)| names::bias(p)).collect();
            self.f32_vectors(label, &biases)?
        } else {
            self.zeros(label, rows)?
        };
        Ok(Linear { w, format, b })
    }

    /// A buffer of `len` f32 zeros (the bias of a layer without one).
    fn zeros(&self, label: &str, len: usize) -> Result<wgpu::Buffer> {
        self.upload(label, len as u64 * 4, || Ok(vec![0; len * 4]))
    }

    /// A LayerNorm without bias (ModernBERT's), run with a zero one.
    fn norm_no_bias(&self, prefix: &str) -> Result<Norm> {
        let [width] = <[usize; 1]>::try_from(self.file.tensor_layout(&names::weight(prefix))?.0)
            .map_err(|_| anyhow!("{prefix}.weight is not a vector"))?;
        Ok(Norm {
            g: self.f32_vectors(prefix, &[names::weight(prefix)])?,
            b: self.zeros(prefix, width)?,
        })
    }

    /// An RMSNorm's `[width]` weights (checked) as f32.
    fn rms_norm(&self, prefix: &str, width: usize) -> Result<wgpu::Buffer> {
        let name = names::weight(prefix);
        let (dims, _) = self.file.tensor_layout(&name)?;
        ensure!(
            dims == [width],
            "{name} has shape {dims:?}, expected [{width}]"
        );
        self.f32_vectors(prefix, &[name])
    }

    fn norm(&self, prefix: &str) -> Result<Norm> {
        Ok(Norm {
            g: self.f32_vectors(prefix, &[names::weight(prefix)])?,
            b: self.f32_vectors(prefix, &[names::bias(prefix)])?,
        })
    }
}
