//! The encoder's weights on the GPU, uploaded once per model with the sizes the graph needs.
//! One upload per architecture (BERT, MPNet: the same layer, different names, position
//! handling and MPNet's relative-position bias); building the graph of a batch (`graph.rs`)
//! only reads them. Linear weights stay as the file stores them: f32, or q8_0 / q4_0 blocks
//! that the matmul kernel dequantizes (f16 files are widened to f32).

use anyhow::{ensure, Context as _, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::buffers::{upload_bytes, upload_f32, ErrorScopes, GpuDevice};
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
/// the bytes).
struct Host<'a> {
    file: &'a ModelFile,
    device: &'a GpuDevice,
}

impl Host<'_> {
    fn bert(&self) -> Result<GpuWeights> {
        let token_type0 = self
            .tensor(names::TOKEN_TYPE_EMBEDDINGS)?
            .get(0)?
            .to_vec1::<f32>()?;
        self.encoder(0, &token_type0, None)
    }

    /// MPNet: the i-th token of a sentence has position `pad + 1 + i` (padding is on the right
    /// and never attended to, so its rows need no position of their own), no token types, and
    /// every layer adds the relative-position bias.
    fn mpnet(&self) -> Result<GpuWeights> {
        let cfg = &self.file.config;
        let heads = cfg.num_attention_heads;
        let table = self.tensor(names::RELATIVE_ATTENTION_BIAS)?;
        let buckets = relative_buckets(cfg);
        ensure!(
            table.dims() == [buckets, heads],
            "relative_attention_bias has shape {:?}, expected [{buckets}, {heads}]",
            table.dims()
        );
        let table = table.flatten_all()?.to_vec1::<f32>()?;
        let bias = relative_bias_by_distance(&table, buckets, heads, ATTENTION_MAX_SEQ);
        let relative_bias = self.upload_f32("relative_bias", &bias);
        self.encoder(
            cfg.pad_token_id + 1,
            &vec![0.0; cfg.hidden_size],
            Some(relative_bias),
        )
    }

    /// The parts BERT and MPNet share; positions start at row `first_position` of the table.
    fn encoder(
        &self,
        first_position: usize,
        token_type0: &[f32],
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
        let table = self.tensor(names::POSITION_EMBEDDINGS)?;
        let rows = table.dim(0)?;
        ensure!(
            rows > first_position,
            "the position table has {rows} rows; positions start at row {first_position}"
        );
        let positions = table
            .narrow(0, first_position, rows - first_position)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        Ok(GpuWeights {
            dims: Dims {
                hidden: h,
                heads: cfg.num_attention_heads,
                head_dim: cfg.head_dim(),
                inter: i,
                eps: cfg.layer_norm_eps as f32,
                max_positions: rows - first_position,
            },
            positions: self.upload_f32("positions", &positions),
            token_type0: self.upload_f32("token_type0", token_type0),
            embed_norm: self.norm(names::EMBEDDINGS_NORM)?,
            layers,
            relative_bias,
            pooling: self.file.info.pooling_mode(),
        })
    }

    fn upload_f32(&self, label: &str, data: &[f32]) -> wgpu::Buffer {
        upload_f32(self.device, label, data)
    }

    fn tensor(&self, name: &str) -> Result<Tensor> {
        Ok(self.file.tensor(name)?.dequantize(&Device::Cpu)?)
    }

    fn vec(&self, name: &str) -> Result<Vec<f32>> {
        Ok(self.tensor(name)?.flatten_all()?.to_vec1::<f32>()?)
    }

    /// The linear layers `prefixes` (each `[out, inp]`, checked) stacked into one
    /// `[parts·out, inp]` matrix, and their biases. q8_0 and q4_0 weights are uploaded as the
    /// file's blocks (a matrix's blocks run along its rows, so stacking is concatenation) when
    /// every part has the same format; anything else is uploaded as f32.
    fn linear(&self, label: &str, prefixes: &[&str], out: usize, inp: usize) -> Result<Linear> {
        let parts = prefixes
            .iter()
            .map(|prefix| {
                let w = self.file.tensor(&names::weight(prefix))?;
                ensure!(
                    w.shape().dims() == [out, inp],
                    "{prefix}.weight has shape {:?}, expected [{out}, {inp}]",
                    w.shape().dims()
                );
                Ok(w)
            })
            .collect::<Result<Vec<QTensor>>>()?;
        let format = match parts[0].dtype() {
            GgmlDType::Q8_0 => WeightFormat::Q8_0,
            GgmlDType::Q4_0 => WeightFormat::Q4_0,
            _ => WeightFormat::F32,
        };
        let same = parts.iter().all(|p| p.dtype() == parts[0].dtype());
        let (format, bytes) = if format != WeightFormat::F32 && same && inp % 32 == 0 {
            let mut bytes = Vec::with_capacity(parts.len() * out * inp / 32 * format.block_bytes());
            for p in &parts {
                bytes.extend_from_slice(&p.data()?);
            }
            (format, bytes)
        } else {
            let mut values = Vec::with_capacity(parts.len() * out * inp);
            for p in &parts {
                values.extend(
                    p.dequantize(&Device::Cpu)?
                        .flatten_all()?
                        .to_vec1::<f32>()?,
                );
            }
            (WeightFormat::F32, super::buffers::f32_bytes(&values))
        };
        let mut bias = Vec::with_capacity(parts.len() * out);
        for prefix in prefixes {
            bias.extend(self.vec(&names::bias(prefix))?);
        }
        Ok(Linear {
            w: upload_bytes(self.device, label, bytes),
            format,
            b: self.upload_f32(label, &bias),
        })
    }

    fn norm(&self, prefix: &str) -> Result<Norm> {
        Ok(Norm {
            g: self.upload_f32(prefix, &self.vec(&names::weight(prefix))?),
            b: self.upload_f32(prefix, &self.vec(&names::bias(prefix))?),
        })
    }
}
