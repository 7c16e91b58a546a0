//! The matmul's runs: f32 weights, or q8_0 / q4_0 blocks as the encoder uploads them.

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};

use super::super::buffers::storage;
use super::super::context::GpuContext;
use super::super::kernels::{
    Activations, Matmul, Op, Shape, WeightFormat, FLAG_GELU, FLAG_RESIDUAL,
};
use super::{check_len, upload_bytes, upload_f32, upload_values};

impl GpuContext {
    /// `act(x·wᵀ + bias) (+ residual)`: x `[m, k]`, w `[n, k]`, bias `[n]`, residual `[m, n]`.
    /// x and residual are stored as the activations are (f16 rounds them), as is the output
    /// unless a residual is added (then it is the f32 residual stream, as in the encoder).
    pub async fn run_matmul(
        &self,
        x: &[f32],
        w: &[f32],
        bias: &[f32],
        residual: Option<&[f32]>,
        (m, n, k): (usize, usize, usize),
        gelu: bool,
    ) -> Result<Vec<f32>> {
        check_len("w", w, n * k)?;
        let wb = upload_f32(&self.device, "w", w);
        self.run_matmul_on(x, (&wb, WeightFormat::F32), bias, residual, (m, n, k), gelu)
            .await
    }

    /// [`run_matmul`](Self::run_matmul) with a q8_0 or q4_0 weight `[n, k]` uploaded as its
    /// blocks (as the encoder uploads a quantized file's weights).
    pub async fn run_matmul_quantized(
        &self,
        x: &[f32],
        w: &QTensor,
        bias: &[f32],
        residual: Option<&[f32]>,
        (m, n, k): (usize, usize, usize),
        gelu: bool,
    ) -> Result<Vec<f32>> {
        let format = match w.dtype() {
            GgmlDType::Q8_0 => WeightFormat::Q8_0,
            GgmlDType::Q4_0 => WeightFormat::Q4_0,
            other => bail!("the quantized matmul takes q8_0 or q4_0 weights, not {other:?}"),
        };
        if w.shape().dims() != [n, k] {
            bail!("w: expected [{n}, {k}], got {:?}", w.shape().dims());
        }
        let wb = upload_bytes(&self.device, "w", w.data()?.into_owned());
        self.run_matmul_on(x, (&wb, format), bias, residual, (m, n, k), gelu)
            .await
    }

    async fn run_matmul_on(
        &self,
        x: &[f32],
        (wb, format): (&wgpu::Buffer, WeightFormat),
        bias: &[f32],
        residual: Option<&[f32]>,
        (m, n, k): (usize, usize, usize),
        gelu: bool,
    ) -> Result<Vec<f32>> {
        check_len("x", x, m * k)?;
        check_len("bias", bias, n)?;
        let d = &self.device;
        let act = self.activations();
        let (xb, bb) = (upload_values(d, "x", act, x), upload_f32(d, "b", bias));
        let rb = match residual {
            Some(r) => {
                check_len("residual", r, m * n)?;
                upload_values(d, "residual", act, r)
            }
            None => xb.clone(),
        };
        let out = if residual.is_some() {
            Activations::F32
        } else {
            act
        };
        let flags =
            if gelu { FLAG_GELU } else { 0 } | if residual.is_some() { FLAG_RESIDUAL } else { 0 };
        let y = storage(d, "y", (m * n * out.bytes()) as u64);
        let op = Op::Matmul(Matmul {
            n,
            k,
            flags,
            format,
        });
        let buffers = [&xb, wb, &bb, &rb, &y];
        self.run_one(op, Shape::rows(m), &buffers, &y, (m * n, out))
            .await
    }
}
