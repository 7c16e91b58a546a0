//! The row-wise kernels' runs: LayerNorm, RMSNorm, pooling with L2, and the element-wise
//! GELU and embedding sum.

use anyhow::{bail, Result};

use super::super::buffers::storage;
use super::super::context::GpuContext;
use super::super::kernels::{Activations, EmbedAdd, Gelu, LayerNorm, Op, PoolL2, RmsNorm, Shape};
use super::{check_len, upload_f32, upload_u32, upload_values};
use crate::model::Pooling;

impl GpuContext {
    /// Row-wise LayerNorm of x `[rows, cols]` (f32, the residual stream); the output is
    /// stored as the activations are.
    pub async fn run_layer_norm(
        &self,
        x: &[f32],
        gamma: &[f32],
        beta: &[f32],
        (rows, cols): (usize, usize),
        eps: f32,
    ) -> Result<Vec<f32>> {
        check_len("x", x, rows * cols)?;
        check_len("gamma", gamma, cols)?;
        check_len("beta", beta, cols)?;
        let d = &self.device;
        let act = self.activations();
        let y = storage(d, "y", (rows * cols * act.bytes()) as u64);
        let inputs = [
            upload_f32(d, "x", x),
            upload_f32(d, "gamma", gamma),
            upload_f32(d, "beta", beta),
        ];
        let op = Op::LayerNorm(LayerNorm { cols, eps });
        let [xb, gb, bb] = &inputs;
        self.run_one(
            op,
            Shape::rows(rows),
            &[xb, gb, bb, &y],
            &y,
            (rows * cols, act),
        )
        .await
    }

    /// Row-wise RMSNorm of x `[rows, cols]`, plus `residual` `[rows, cols]` when given (all
    /// f32, as the decoders run).
    pub async fn run_rms_norm(
        &self,
        x: &[f32],
        gamma: &[f32],
        residual: Option<&[f32]>,
        (rows, cols): (usize, usize),
        eps: f32,
    ) -> Result<Vec<f32>> {
        check_len("x", x, rows * cols)?;
        check_len("gamma", gamma, cols)?;
        let d = &self.device;
        let (xb, gb) = (upload_f32(d, "x", x), upload_f32(d, "gamma", gamma));
        let rb = match residual {
            Some(r) => {
                check_len("residual", r, rows * cols)?;
                upload_f32(d, "residual", r)
            }
            None => xb.clone(),
        };
        let y = storage(d, "y", (rows * cols * 4) as u64);
        let op = Op::RmsNorm(RmsNorm {
            cols,
            eps,
            residual: residual.is_some(),
        });
        let out = (rows * cols, Activations::F32);
        self.run_one(op, Shape::rows(rows), &[&xb, &gb, &rb, &y], &y, out)
            .await
    }

    /// Pooling over the mask, then L2 normalisation: x `[batch·seq, dim]` (stored as the
    /// activations are) → `[batch, dim]` f32.
    pub async fn run_pool_l2(
        &self,
        x: &[f32],
        mask: &[u32],
        (batch, seq, dim): (usize, usize, usize),
        pooling: Pooling,
    ) -> Result<Vec<f32>> {
        check_len("x", x, batch * seq * dim)?;
        let d = &self.device;
        let x = upload_values(d, "x", self.activations(), x);
        let mask = upload_u32(d, "mask", mask);
        let out = storage(d, "pooled", (batch * dim * 4) as u64);
        let shape = Shape::batch(batch, seq);
        self.run_one(
            Op::PoolL2(PoolL2 { dim, pooling }),
            shape,
            &[&x, &mask, &out],
            &out,
            (batch * dim, Activations::F32),
        )
        .await
    }

    /// Element-wise exact-erf GELU (the WGSL approximation the matmul epilogue uses).
    pub async fn run_gelu(&self, x: &[f32]) -> Result<Vec<f32>> {
        let buffer = upload_f32(&self.device, "x", x);
        let shape = Shape::rows(x.len());
        let out = (x.len(), Activations::F32);
        self.run_one(Op::Gelu(Gelu), shape, &[&buffer], &buffer, out)
            .await
    }

    /// `x[r, c] + pos[r mod seq, c] + type0[c]` (the embedding sum before its LayerNorm).
    pub async fn run_embed_add(
        &self,
        x: &[f32],
        pos: &[f32],
        type0: &[f32],
        (rows, seq, cols): (usize, usize, usize),
    ) -> Result<Vec<f32>> {
        check_len("x", x, rows * cols)?;
        check_len("type0", type0, cols)?;
        if pos.len() < seq * cols {
            bail!("pos: expected at least {} values", seq * cols);
        }
        let d = &self.device;
        let buffer = upload_f32(d, "x", x);
        let (pb, tb) = (upload_f32(d, "pos", pos), upload_f32(d, "type0", type0));
        let shape = Shape {
            rows,
            batch: rows / seq.max(1),
            seq,
        };
        let op = Op::EmbedAdd(EmbedAdd { cols });
        let out = (x.len(), Activations::F32);
        self.run_one(op, shape, &[&buffer, &pb, &tb], &buffer, out)
            .await
    }
}
