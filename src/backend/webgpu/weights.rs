//! The encoder's weights on the GPU, uploaded once per model with the sizes the graph needs.
//! One upload per architecture (BERT, MPNet: the same layer, different names, position
//! handling and MPNet's relative-position bias); building the graph of a batch (`graph.rs`)
//! only reads them. Linear weights stay as the file stores them: f32, or q8_0 / q4_0 blocks
//! that the matmul kernel dequantizes (f16 files are widened to f32).

use std::borrow::Cow;

use anyhow::{anyhow, ensure, Context as _, Result};
use candle_core::quantized::GgmlDType;
use candle_core::Device;

use super::buffers::{f32_bytes, upload_weights, ErrorScopes, GpuDevice};
use super::context::GpuContext;
use super::kernels::{check_attention_shape, WeightFormat, ATTENTION_MAX_SEQ};
use crate::backend::cpu::{relative_bias_by_distance, relative_buckets};
use crate::error::{coded, ErrorCode};
use crate::model::tensor_names::{self as names, LayerNames};
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
    pub attention_norm: Norm,
    pub intermediate: Linear,
    pub output: Linear,
    pub output_norm: Norm,
}

/// The model's sizes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    pub hidden: usize,
    pub heads: usize,
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
    /// The position rows of tokens 0, 1, 2, … of a sentence.
    pub positions: wgpu::Buffer,
    /// Row 0 of the token-type table (single-segment input); zeros for MPNet, which has none.
    pub token_type0: wgpu::Buffer,
    pub embed_norm: Norm,
    pub layers: Vec<Layer>,
    /// MPNet's relative-position bias per head and distance, `[heads, 2·ATTENTION_MAX_SEQ − 1]`.
    pub relative_bias: Option<wgpu::Buffer>,
    pub pooling: Pooling,
}

impl GpuWeights {
    /// Uploads the weights of `file` to `ctx`'s device; fails for architectures the GPU
    /// backend does not run and when the device reports an error.
    pub async fn upload(ctx: &GpuContext, file: &ModelFile) -> Result<Self> {
        let architecture = file.info.architecture.as_str();
        if !matches!(architecture, "bert" | "mpnet") {
            return Err(coded(
                ErrorCode::UnsupportedArchitecture,
                format!(
                    "the GPU backend runs BERT and MPNet encoders; this file is '{architecture}'"
                ),
            ));
        }
        let cfg = &file.config;
        check_attention_shape(file.info.max_seq_length, cfg.head_dim())?;
        let scopes = ErrorScopes::open(&ctx.device);
        let host = Host {
            file,
            device: &ctx.device,
        };
        let weights = if architecture == "mpnet" {
            host.mpnet()
        } else {
            host.bert()
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
                    attention_norm: self.norm(&n.attention_norm)?,
                    intermediate: self.linear("intermediate", &[&n.intermediate], i, h)?,
                    output: self.linear("output", &[&n.output], h, i)?,
                    output_norm: self.norm(&n.output_norm)?,
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
        Ok(GpuWeights {
            dims: Dims {
                hidden: h,
                heads: cfg.num_attention_heads,
                head_dim: cfg.head_dim(),
                inter: i,
                eps: cfg.layer_norm_eps as f32,
                max_positions: rows - first_position,
            },
            positions,
            token_type0,
            embed_norm: self.norm(names::EMBEDDINGS_NORM)?,
            layers,
            relative_bias,
            pooling: self.file.info.pooling_mode(),
        })
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
        let weights: Vec<String> = prefixes.iter().map(|p| names::weight(p)).collect();
        let mut dtypes = Vec::with_capacity(weights.len());
        for name in &weights {
            let (dims, dtype) = self.file.tensor_layout(name)?;
            ensure!(
                dims == [out, inp],
                "{name} has shape {dims:?}, expected [{out}, {inp}]"
            );
            dtypes.push(dtype);
        }
        let same = dtypes.iter().all(|d| *d == dtypes[0]);
        let blocks = inp.is_multiple_of(32);
        let format = match dtypes[0] {
            GgmlDType::Q8_0 if same && blocks => WeightFormat::Q8_0,
            GgmlDType::Q4_0 if same && blocks => WeightFormat::Q4_0,
            _ => WeightFormat::F32,
        };
        let values = (weights.len() * out * inp) as u64;
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
        let biases: Vec<String> = prefixes.iter().map(|p| names::bias(p)).collect();
        Ok(Linear {
            w,
            format,
            b: self.f32_vectors(label, &biases)?,
        })
    }

    fn norm(&self, prefix: &str) -> Result<Norm> {
        Ok(Norm {
            g: self.f32_vectors(prefix, &[names::weight(prefix)])?,
            b: self.f32_vectors(prefix, &[names::bias(prefix)])?,
        })
    }
}
