//! Typed access to a model file's tensors as candle layers.

use anyhow::Result;
use candle_core::quantized::QMatMul;
use candle_core::{Device, Module, Tensor};

use crate::backend::MatmulMode;
use crate::model::ModelFile;

/// Reads layers out of a [`ModelFile`] by Hugging Face tensor-name prefix.
pub struct Weights<'a> {
    file: &'a ModelFile,
    matmul: MatmulMode,
}

impl<'a> Weights<'a> {
    pub fn new(file: &'a ModelFile, matmul: MatmulMode) -> Self {
        Self { file, matmul }
    }

    /// A plain f32 tensor (quantized ones are dequantized).
    pub fn tensor(&self, name: &str) -> Result<Tensor> {
        Ok(self.file.tensor(name)?.dequantize(&Device::Cpu)?)
    }

    pub fn linear(&self, prefix: &str) -> Result<Linear> {
        let weight = self.file.tensor(&format!("{prefix}.weight"))?;
        let weight = match self.matmul {
            MatmulMode::F32 => QMatMul::Tensor(weight.dequantize(&Device::Cpu)?),
            MatmulMode::Quantized => QMatMul::from_qtensor(weight)?,
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

/// `y = x·Wᵀ + b`; W quantized (q8_0, q4_0) or f32.
pub struct Linear {
    weight: QMatMul,
    bias: Tensor,
}

impl Linear {
    /// `x`: `[batch, seq, in]` → `[batch, seq, out]`, computed as one 2-D product.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, k) = x.dims3()?;
        let y = self.weight.forward(&x.reshape((b * t, k))?)?;
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
