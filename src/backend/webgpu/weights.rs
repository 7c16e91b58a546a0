//! The encoder's weights on the GPU: dequantized to f32 and uploaded once per model, per
//! layer, with the sizes the graph needs. Building the graph of a batch (`graph.rs`) only
//! reads them; another architecture adds an upload function here.

use anyhow::{bail, ensure, Context as _, Result};
use candle_core::{Device, Tensor};

use super::buffers::{upload_f32, ErrorScopes, GpuDevice};
use super::context::GpuContext;
use super::kernels::check_attention_shape;
use crate::model::tensor_names::{self as names, LayerNames};
use crate::model::ModelFile;

pub(crate) struct Linear {
    pub w: wgpu::Buffer,
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
    pub max_positions: usize,
}

impl Dims {
    fn of(file: &ModelFile) -> Self {
        let cfg = &file.config;
        Self {
            hidden: cfg.hidden_size,
            heads: cfg.num_attention_heads,
            head_dim: cfg.head_dim(),
            inter: cfg.intermediate_size,
            eps: cfg.layer_norm_eps as f32,
            max_positions: cfg.max_position_embeddings,
        }
    }
}

/// Uploaded weights of one model.
pub(crate) struct GpuWeights {
    pub dims: Dims,
    pub positions: wgpu::Buffer,
    /// Row 0 of the token-type table (single-segment input).
    pub token_type0: wgpu::Buffer,
    pub embed_norm: Norm,
    pub layers: Vec<Layer>,
}

impl GpuWeights {
    /// Uploads the weights of `file` to `ctx`'s device; fails for architectures the GPU
    /// backend does not run and when the device reports an error.
    pub async fn upload(ctx: &GpuContext, file: &ModelFile) -> Result<Self> {
        if file.info.architecture != "bert" {
            bail!(
                "the GPU backend runs BERT encoders; this file is '{}'",
                file.info.architecture
            );
        }
        let dims = Dims::of(file);
        check_attention_shape(file.info.max_seq_length, dims.head_dim)?;
        let scopes = ErrorScopes::open(&ctx.device);
        let weights = Self::bert(&ctx.device, file, dims)?;
        scopes
            .close("uploading the weights")
            .await
            .context("cannot load the model on the GPU")?;
        Ok(weights)
    }

    fn bert(device: &GpuDevice, file: &ModelFile, dims: Dims) -> Result<Self> {
        let cfg = &file.config;
        let host = Host { file, device };
        let (h, i) = (dims.hidden, dims.inter);
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let n = LayerNames::bert(l);
                let (mut w, mut b) = host.linear(&n.query, h, h)?;
                for part in [&n.key, &n.value] {
                    let (pw, pb) = host.linear(part, h, h)?;
                    w.extend(pw);
                    b.extend(pb);
                }
                Ok(Layer {
                    qkv: host.upload_linear("qkv", (w, b)),
                    attention_out: host
                        .upload_linear("attention_out", host.linear(&n.attention_out, h, h)?),
                    attention_norm: host.norm(&n.attention_norm)?,
                    intermediate: host
                        .upload_linear("intermediate", host.linear(&n.intermediate, i, h)?),
                    output: host.upload_linear("output", host.linear(&n.output, h, i)?),
                    output_norm: host.norm(&n.output_norm)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let positions = upload_f32(device, "positions", &host.vec(names::POSITION_EMBEDDINGS)?);
        let token_type0 = host
            .tensor(names::TOKEN_TYPE_EMBEDDINGS)?
            .get(0)?
            .to_vec1::<f32>()?;
        Ok(Self {
            dims,
            positions,
            token_type0: upload_f32(device, "token_type0", &token_type0),
            embed_norm: host.norm(names::EMBEDDINGS_NORM)?,
            layers,
        })
    }
}

/// Reads tensors of a model file as f32 on the host and uploads them.
struct Host<'a> {
    file: &'a ModelFile,
    device: &'a GpuDevice,
}

impl Host<'_> {
    fn tensor(&self, name: &str) -> Result<Tensor> {
        Ok(self.file.tensor(name)?.dequantize(&Device::Cpu)?)
    }

    fn vec(&self, name: &str) -> Result<Vec<f32>> {
        Ok(self.tensor(name)?.flatten_all()?.to_vec1::<f32>()?)
    }

    /// A linear layer's weight `[out, inp]` (checked) and bias, flattened.
    fn linear(&self, prefix: &str, out: usize, inp: usize) -> Result<(Vec<f32>, Vec<f32>)> {
        let w = self.tensor(&names::weight(prefix))?;
        ensure!(
            w.dims() == [out, inp],
            "{prefix}.weight has shape {:?}, expected [{out}, {inp}]",
            w.dims()
        );
        Ok((
            w.flatten_all()?.to_vec1::<f32>()?,
            self.vec(&names::bias(prefix))?,
        ))
    }

    fn upload_linear(&self, label: &str, (w, b): (Vec<f32>, Vec<f32>)) -> Linear {
        Linear {
            w: upload_f32(self.device, label, &w),
            b: upload_f32(self.device, label, &b),
        }
    }

    fn norm(&self, prefix: &str) -> Result<Norm> {
        Ok(Norm {
            g: upload_f32(self.device, prefix, &self.vec(&names::weight(prefix))?),
            b: upload_f32(self.device, prefix, &self.vec(&names::bias(prefix))?),
        })
    }
}
