//! Reading a model file's tensors on the host and uploading them: the shape checks, f32 or
//! the file's blocks, stacked matrices, zero biases, norms; and the [`GpuWeights`] a recipe
//! ends with.

use std::borrow::Cow;

use anyhow::{anyhow, ensure, Result};
use candle_core::quantized::GgmlDType;
use candle_core::Device;

use super::super::buffers::{f32_bytes, upload_weights, GpuDevice};
use super::super::kernels::WeightFormat;
use super::{Dims, GpuWeights, Input, Linear, Norm, Stack};
use crate::backend::cpu::Rope;
use crate::model::tensor_names as names;
use crate::model::ModelFile;

/// Reads tensors of a model file on the host and uploads them (the device's ledger counts
/// the bytes). Every buffer's size comes from the tensors' shapes and dtypes alone; their
/// data is read (and f16 widened) only when really uploading, not while planning.
pub(super) struct Host<'a> {
    pub file: &'a ModelFile,
    pub device: &'a GpuDevice,
}

impl Host<'_> {
    pub(super) fn weights(
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
    pub(super) fn upload(
        &self,
        label: &str,
        len: u64,
        read: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<wgpu::Buffer> {
        upload_weights(self.device, label, len, read)
    }

    /// The shape of 2-D tensor `name` (from the file's header).
    pub(super) fn matrix(&self, name: &str) -> Result<[usize; 2]> {
        let (dims, _) = self.file.tensor_layout(name)?;
        <[usize; 2]>::try_from(dims.as_slice())
            .map_err(|_| anyhow!("{name} has shape {dims:?}, expected a matrix"))
    }

    /// Tensor `name`'s values as little-endian f32 bytes: the file's own bytes when it stores
    /// f32, else dequantized (f16 widened).
    pub(super) fn f32_data(&self, name: &str) -> Result<Cow<'_, [u8]>> {
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
    pub(super) fn linear(
        &self,
        label: &str,
        prefixes: &[&str],
        out: usize,
        inp: usize,
    ) -> Result<Linear> {
        self.linear_with(label, prefixes, out, inp, true)
    }

    /// [`Self::linear`] of layers without biases (a zero bias is bound: the kernel adds it).
    pub(super) fn linear_no_bias(
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
    pub(super) fn linear_stack(
        &self,
        label: &str,
        parts: &[(&str, usize)],
        inp: usize,
    ) -> Result<Linear> {
        self.stacked(label, parts, inp, false)
    }

    pub(super) fn stacked(
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
    pub(super) fn norm_no_bias(&self, prefix: &str) -> Result<Norm> {
        let [width] = <[usize; 1]>::try_from(self.file.tensor_layout(&names::weight(prefix))?.0)
            .map_err(|_| anyhow!("{prefix}.weight is not a vector"))?;
        Ok(Norm {
            g: self.f32_vectors(prefix, &[names::weight(prefix)])?,
            b: self.zeros(prefix, width)?,
        })
    }

    /// An RMSNorm's `[width]` weights (checked) as f32.
    pub(super) fn rms_norm(&self, prefix: &str, width: usize) -> Result<wgpu::Buffer> {
        let name = names::weight(prefix);
        let (dims, _) = self.file.tensor_layout(&name)?;
        ensure!(
            dims == [width],
            "{name} has shape {dims:?}, expected [{width}]"
        );
        self.f32_vectors(prefix, &[name])
    }

    pub(super) fn norm(&self, prefix: &str) -> Result<Norm> {
        Ok(Norm {
            g: self.f32_vectors(prefix, &[names::weight(prefix)])?,
            b: self.f32_vectors(prefix, &[names::bias(prefix)])?,
        })
    }
}
