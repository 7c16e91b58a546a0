//! Typed access to a model file's tensors as candle layers.

use std::sync::Arc;

use anyhow::Result;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};

use crate::backend::MatmulMode;
use crate::model::ModelFile;

/// Reads layers out of a [`ModelFile`] by Hugging Face tensor-name prefix.
pub struct Weights<'a> {
    file: &'a ModelFile,
    /// The same file, shared: `Streaming` weights then stay in the file's bytes instead of
    /// being copied out as quantized tensors (the model's memory once, not twice).
    shared: Option<Arc<ModelFile>>,
    matmul: MatmulMode,
}

impl<'a> Weights<'a> {
    pub fn new(file: &'a ModelFile, matmul: MatmulMode) -> Self {
        Self {
            file,
            shared: None,
            matmul,
        }
    }

    /// Weights whose `Streaming` layers read the shared file at each product.
    pub fn shared(file: &'a Arc<ModelFile>, matmul: MatmulMode) -> Self {
        Self {
            file,
            shared: Some(file.clone()),
            matmul,
        }
    }

    /// A plain f32 tensor (quantized ones are dequantized).
    pub fn tensor(&self, name: &str) -> Result<Tensor> {
        Ok(self.file.tensor(name)?.dequantize(&Device::Cpu)?)
    }

    pub fn linear(&self, prefix: &str) -> Result<Linear> {
        let name = format!("{prefix}.weight");
        let weight = self.file.tensor(&name)?;
        let weight = match (self.matmul, &self.shared) {
            // Whatever its dtype, the weight then takes no memory beyond the file's bytes.
            (MatmulMode::Streaming, Some(file)) => LinearWeight::InFile {
                file: file.clone(),
                name,
            },
            // A weight stored in f32 would only be copied per product: keep it dense.
            (MatmulMode::Streaming, None) if weight.dtype() != GgmlDType::F32 => {
                LinearWeight::Streaming(Arc::new(weight))
            }
            (MatmulMode::Quantized, _) => LinearWeight::Ready(QMatMul::from_qtensor(weight)?),
            (MatmulMode::F32 | MatmulMode::Streaming, _) => {
                LinearWeight::Ready(QMatMul::Tensor(weight.dequantize(&Device::Cpu)?))
            }
        };
        let bias = self.tensor(&format!("{prefix}.bias"))?;
        Ok(Linear { weight, bias })
    }

    pub fn layer_norm(&self, prefix: &str, eps: f64) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: self.tensor(&format!("{prefix}.weight"))?,
            bias: self.tensor(&format!("{prefix}.bias"))?,
            eps: eps as f32,
        })
    }
}

/// A linear layer's weight as [`MatmulMode`] keeps it.
enum LinearWeight {
    /// Dense f32 (`MatmulMode::F32`) or quantized for candle's int8 matmul (`Quantized`).
    Ready(QMatMul),
    /// `MatmulMode::Streaming`: quantized at rest, dequantized to f32 for each product and
    /// dropped after it.
    Streaming(Arc<QTensor>),
    /// `Streaming` with the weight left in the model file's bytes, read out for each product.
    InFile { file: Arc<ModelFile>, name: String },
}

/// `y = x·Wᵀ + b`; W quantized (q8_0, q4_0) or f32.
pub struct Linear {
    weight: LinearWeight,
    bias: Tensor,
}

impl Linear {
    /// `x`: `[batch, seq, in]` → `[batch, seq, out]`, computed as one 2-D product.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, k) = x.dims3()?;
        let x = x.reshape((b * t, k))?;
        let y = match &self.weight {
            LinearWeight::Ready(w) => w.forward(&x)?,
            // The same f32 product as `Ready(QMatMul::Tensor)`: identical numbers.
            LinearWeight::Streaming(q) => {
                QMatMul::Tensor(q.dequantize(&Device::Cpu)?).forward(&x)?
            }
            LinearWeight::InFile { file, name } => {
                QMatMul::Tensor(file.tensor(name)?.dequantize(&Device::Cpu)?).forward(&x)?
            }
        };
        let n = y.dim(1)?;
        Ok(y.broadcast_add(&self.bias)?.reshape((b, t, n))?)
    }
}

pub struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f32,
}

impl LayerNorm {
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(candle_nn::ops::layer_norm(
            &x.contiguous()?,
            &self.weight,
            &self.bias,
            self.eps,
        )?)
    }
}
