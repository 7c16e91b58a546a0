//! Typed access to a model file's tensors as candle layers.

use std::cell::OnceCell;
use std::sync::Arc;

use anyhow::Result;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};

use super::activation::gelu_erf_in_place;
use super::gemm::PackedWeight;
use super::qgemm::{has_simd_kernel, QuantPackedWeight};
use crate::backend::MatmulMode;
use crate::model::ModelFile;

/// Reads layers out of a [`ModelFile`] by Hugging Face tensor-name prefix.
pub struct Weights<'a> {
    file: &'a ModelFile,
    /// The same file, shared: `UnpackPerProduct` weights then stay in the file's bytes instead of
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

    /// Weights whose `UnpackPerProduct` layers read the shared file at each product.
    pub fn shared(file: &'a Arc<ModelFile>, matmul: MatmulMode) -> Self {
        Self {
            file,
            shared: Some(file.clone()),
            matmul,
        }
    }

    /// Whether `weight` runs on our 16-bit integer kernel: q8_0/q4_0, in wasm or natively when
    /// the user asked for it, where the kernel has SIMD (natively candle's f32 gemm on the
    /// dequantized weight stays the default: the recorded native figures are its numbers).
    fn integer(&self, weight: &QTensor) -> bool {
        matches!(weight.dtype(), GgmlDType::Q8_0 | GgmlDType::Q4_0)
            && (cfg!(target_arch = "wasm32") || self.file.integer_matmul)
            && has_simd_kernel()
    }

    /// A plain f32 tensor (quantized ones are dequantized).
    pub fn tensor(&self, name: &str) -> Result<Tensor> {
        Ok(self.file.tensor(name)?.dequantize(&Device::Cpu)?)
    }

    /// `<prefix>.weight` and `<prefix>.bias`.
    pub fn linear(&self, prefix: &str) -> Result<Linear> {
        self.linear_with(prefix, true)
    }

    /// `<prefix>.weight` alone (nomic-bert's layers have no biases).
    pub fn linear_no_bias(&self, prefix: &str) -> Result<Linear> {
        self.linear_with(prefix, false)
    }

    fn linear_with(&self, prefix: &str, has_bias: bool) -> Result<Linear> {
        let name = format!("{prefix}.weight");
        let weight = self.file.tensor(&name)?;
        let rows = weight.shape().dims()[0];
        let integer = self.integer(&weight);
        let weight = match (self.matmul, &self.shared) {
            // Whatever its dtype, the weight then takes no memory beyond the file's bytes.
            (MatmulMode::UnpackPerProduct, Some(file)) => LinearWeight::InFile {
                file: file.clone(),
                name,
            },
            // A weight stored in f32 would only be copied per product: keep it dense.
            (MatmulMode::UnpackPerProduct, None) if weight.dtype() != GgmlDType::F32 => {
                LinearWeight::PerProduct(Arc::new(weight))
            }
            // q8_0/q4_0 keep their integers for our 16-bit kernel in wasm (half f32's memory,
            // up to 2× its speed), and natively when asked (`--integer-matmul`, with SIMD).
            (MatmulMode::UnpackAtLoad, _) if integer => {
                LinearWeight::Quant(QuantPackedWeight::from_qtensor(&weight)?)
            }
            // Other dtypes: in wasm our simd128 f32 kernel beats candle's gemm; natively
            // candle's is threaded and uses AVX.
            (MatmulMode::UnpackAtLoad, _) if cfg!(target_arch = "wasm32") => {
                let dense = weight.dequantize(&Device::Cpu)?;
                let (n, k) = dense.dims2()?;
                LinearWeight::Packed(PackedWeight::pack(&dense.flatten_all()?.to_vec1()?, n, k))
            }
            (MatmulMode::UnpackAtLoad | MatmulMode::UnpackPerProduct, _) => {
                LinearWeight::Dense(QMatMul::Tensor(weight.dequantize(&Device::Cpu)?))
            }
        };
        let (bias, bias_values) = if has_bias {
            let bias = self.tensor(&format!("{prefix}.bias"))?;
            let values = bias.to_vec1()?;
            (Some(bias), values)
        } else {
            // Our kernels add a bias as they store each row: zeros cost nothing there.
            (None, vec![0.0; rows])
        };
        Ok(Linear {
            weight,
            integer,
            bias,
            bias_values,
        })
    }

    pub fn layer_norm(&self, prefix: &str, eps: f64) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: self.tensor(&format!("{prefix}.weight"))?,
            bias: self.tensor(&format!("{prefix}.bias"))?,
            eps: eps as f32,
        })
    }

    /// `<prefix>.weight` as an RMSNorm's scale (Qwen3's norms).
    pub fn rms_norm(&self, prefix: &str, eps: f64) -> Result<RmsNorm> {
        Ok(RmsNorm {
            weight: self.tensor(&format!("{prefix}.weight"))?,
            eps: eps as f32,
        })
    }

    /// `<prefix>.weight` alone: a LayerNorm without bias (ModernBERT's), run with a zero one.
    pub fn layer_norm_no_bias(&self, prefix: &str, eps: f64) -> Result<LayerNorm> {
        let weight = self.tensor(&format!("{prefix}.weight"))?;
        Ok(LayerNorm {
            bias: weight.zeros_like()?,
            weight,
            eps: eps as f32,
        })
    }
}

/// A linear layer's weight as [`MatmulMode`] keeps it.
enum LinearWeight {
    /// Dense f32 for candle's gemm (natively, `UnpackAtLoad`; also f32 weights everywhere
    /// outside wasm).
    Dense(QMatMul),
    /// `UnpackPerProduct` without the shared file: quantized at rest, unpacked for each
    /// product and dropped after it.
    PerProduct(Arc<QTensor>),
    /// `UnpackPerProduct` with the weight left in the model file's bytes, read out for each
    /// product.
    InFile { file: Arc<ModelFile>, name: String },
    /// `UnpackAtLoad` in wasm, f32 file: packed for [`PackedWeight::matmul_bias`] (bias fused).
    Packed(PackedWeight),
    /// `UnpackAtLoad`, q8_0/q4_0 file, where the integer kernel has SIMD: the file's integers
    /// for [`QuantPackedWeight::matmul_bias`].
    Quant(QuantPackedWeight),
}

/// `y = x·Wᵀ + b`; W quantized (q8_0, q4_0) or f32; no `b` for a layer without bias.
pub struct Linear {
    weight: LinearWeight,
    /// Products on our 16-bit integer kernel (`Weights::integer`), also when unpacked per product.
    integer: bool,
    bias: Option<Tensor>,
    /// The bias as a slice (zeros without one), for the packed kernel.
    bias_values: Vec<f32>,
}

impl Linear {
    /// `x`: `[batch, seq, in]` → `[batch, seq, out]`, computed as one 2-D product.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_with(x, false)
    }

    /// `gelu(x·Wᵀ + b)` (BERT's and MPNet's intermediate layer).
    pub fn forward_gelu(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_with(x, true)
    }

    fn forward_with(&self, x: &Tensor, gelu: bool) -> Result<Tensor> {
        match &self.weight {
            LinearWeight::Dense(w) => self.candle(w, x, gelu),
            LinearWeight::PerProduct(q) => self.streamed(q, x, gelu),
            LinearWeight::InFile { file, name } => self.streamed(&file.tensor(name)?, x, gelu),
            LinearWeight::Packed(w) => self.ours(x, w.out_features(), gelu, |x, m| {
                w.matmul_bias(x, m, &self.bias_values)
            }),
            LinearWeight::Quant(w) => self.ours(x, w.out_features(), gelu, |x, m| {
                w.matmul_bias(x, m, &self.bias_values)
            }),
        }
    }

    /// A weight kept quantized (`UnpackPerProduct`), unpacked for this product only: packed for
    /// the integer kernel where it runs (q8_0/q4_0: packing costs ~1/rows of the product), else
    /// to f32 (the same numbers as `Dense`).
    fn streamed(&self, q: &QTensor, x: &Tensor, gelu: bool) -> Result<Tensor> {
        if self.integer {
            let w = QuantPackedWeight::from_qtensor(q)?;
            return self.ours(x, w.out_features(), gelu, |x, m| {
                w.matmul_bias(x, m, &self.bias_values)
            });
        }
        self.candle(&QMatMul::Tensor(q.dequantize(&Device::Cpu)?), x, gelu)
    }

    fn candle(&self, w: &QMatMul, x: &Tensor, gelu: bool) -> Result<Tensor> {
        let (b, t, k) = x.dims3()?;
        let y = w.forward(&x.reshape((b * t, k))?)?;
        let n = y.dim(1)?;
        let y = match &self.bias {
            Some(bias) => y.broadcast_add(bias)?,
            None => y,
        }
        .reshape((b, t, n))?;
        if !gelu {
            return Ok(y);
        }
        let mut values = y.flatten_all()?.to_vec1::<f32>()?;
        gelu_erf_in_place(&mut values);
        Ok(Tensor::from_vec(values, (b, t, n), &Device::Cpu)?)
    }

    /// `x·Wᵀ + b` as values, for a caller that works on values (the gated feed-forward): no
    /// output tensor made and copied out again. Our kernels read `x`'s values, taken from the
    /// tensor at the first product that needs them and kept in `x_values` for the next one;
    /// candle's products read the tensor itself.
    pub fn forward_values(&self, x: &Tensor, x_values: &OnceCell<Vec<f32>>) -> Result<Vec<f32>> {
        let (b, t, _) = x.dims3()?;
        let values = || -> Result<&Vec<f32>> {
            if x_values.get().is_none() {
                let _ = x_values.set(x.flatten_all()?.to_vec1()?);
            }
            Ok(x_values.get().expect("set just above"))
        };
        match &self.weight {
            LinearWeight::Packed(w) => Ok(w.matmul_bias(values()?, b * t, &self.bias_values)),
            LinearWeight::Quant(w) => Ok(w.matmul_bias(values()?, b * t, &self.bias_values)),
            LinearWeight::Dense(_) | LinearWeight::PerProduct(_) | LinearWeight::InFile { .. } => {
                Ok(self.forward(x)?.flatten_all()?.to_vec1()?)
            }
        }
    }

    /// Runs one of our kernels (bias included) on `x`'s values as an `m × in` matrix, with
    /// GELU applied to its output before it becomes a tensor (no extra copy).
    fn ours(
        &self,
        x: &Tensor,
        n: usize,
        gelu: bool,
        product: impl Fn(&[f32], usize) -> Vec<f32>,
    ) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let mut y = product(&x.flatten_all()?.to_vec1::<f32>()?, b * t);
        if gelu {
            gelu_erf_in_place(&mut y);
        }
        Ok(Tensor::from_vec(y, (b, t, n), &Device::Cpu)?)
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

/// `x / √(mean(x²) + ε) · w` over the last dimension (no mean subtracted, no bias).
pub struct RmsNorm {
    weight: Tensor,
    eps: f32,
}

impl RmsNorm {
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(candle_nn::ops::rms_norm(
            &x.contiguous()?,
            &self.weight,
            self.eps,
        )?)
    }
}
