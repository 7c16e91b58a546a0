//! Single-kernel runs on host data: the kernel tests' entry points, as [`GpuContext`]
//! methods. Each call uploads its inputs, records one [`Step`] of the same [`Op`] the encoder
//! records, submits it and reads the output back.

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};

use super::buffers::{
    f32_bytes, params_bytes, read_values, record, staging, storage, u32_bytes, uniform,
    upload_weights, ErrorScopes, GpuDevice, Step, Use,
};
use super::context::GpuContext;
use super::kernels::{
    check_attention_shape, Activations, Op, Shape, WeightFormat, ATTENTION_MAX_SEQ,
};
use super::params::{FLAG_GELU, FLAG_RESIDUAL};
use crate::backend::cpu::relative_bias_by_distance;
use crate::model::Pooling;

impl GpuContext {
    /// Runs `op` once over `shape` with `buffers` bound after its parameter block and
    /// returns the first `output_len` values of `output` (one of `buffers`), stored as
    /// `stored`.
    async fn run_one(
        &self,
        op: Op,
        shape: Shape,
        buffers: &[&wgpu::Buffer],
        output: &wgpu::Buffer,
        (output_len, stored): (usize, Activations),
    ) -> Result<Vec<f32>> {
        self.check()?;
        let d = &self.device;
        let scopes = ErrorScopes::open(d);
        let params = uniform(d, "params", op.params(shape).as_bytes().len() as u64);
        let steps = [Step::new(d, &self.kernels, op, (&params, 0), buffers)];
        self.queue
            .write_buffer(&params, 0, &params_bytes(&steps, shape, params.size()));
        let bytes = (output_len.max(1) * stored.bytes()).next_multiple_of(4) as u64;
        let readback = staging(d, bytes);
        let mut encoder = d.create_command_encoder(&Default::default());
        record(&mut encoder, &self.kernels, &steps, shape);
        encoder.copy_buffer_to_buffer(output, 0, &readback, 0, bytes);
        self.queue.submit([encoder.finish()]);
        scopes.close("in a kernel run").await?;
        read_values(d, &readback, (output_len, stored), None).await
    }

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
        let op = Op::Matmul {
            n,
            k,
            flags,
            format,
        };
        let buffers = [&xb, wb, &bb, &rb, &y];
        self.run_one(op, Shape::rows(m), &buffers, &y, (m * n, out))
            .await
    }

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
        let op = Op::LayerNorm { cols, eps };
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

    /// Masked multi-head attention. `qkv`: `[batch·seq, 3·heads·head_dim]` (q | k | v per
    /// token), `mask`: `[batch·seq]` (1 = token); `relative`: MPNet's bias table
    /// `[buckets, heads]` and its bucket count. Returns the context `[batch·seq, hidden]`;
    /// qkv and the context are stored as the activations are.
    pub async fn run_attention(
        &self,
        qkv: &[f32],
        mask: &[u32],
        (batch, seq, heads, head_dim): (usize, usize, usize, usize),
        relative: Option<(&[f32], usize)>,
    ) -> Result<Vec<f32>> {
        let masks = AttentionMasks {
            relative,
            ..Default::default()
        };
        self.run_grouped_attention(qkv, mask, (batch, seq, heads, heads, head_dim), masks)
            .await
    }

    /// [`run_attention`](Self::run_attention) with `kv_heads` key/value heads shared by the
    /// `heads` query heads: `qkv` `[batch·seq, (heads + 2·kv_heads)·head_dim]`; causal or
    /// windowed when `masks` says so. Returns the context `[batch·seq, heads·head_dim]`.
    pub async fn run_grouped_attention(
        &self,
        qkv: &[f32],
        mask: &[u32],
        (batch, seq, heads, kv_heads, head_dim): (usize, usize, usize, usize, usize),
        masks: AttentionMasks<'_>,
    ) -> Result<Vec<f32>> {
        let AttentionMasks {
            relative,
            window,
            causal,
        } = masks;
        let hidden = heads * head_dim;
        check_attention_shape(seq, head_dim, (heads, kv_heads))?;
        check_len("qkv", qkv, batch * seq * (heads + 2 * kv_heads) * head_dim)?;
        if mask.len() != batch * seq {
            bail!("mask: expected {} values, got {}", batch * seq, mask.len());
        }
        let d = &self.device;
        let act = self.activations();
        let (qkv, mask) = (
            upload_values(d, "qkv", act, qkv),
            upload_u32(d, "mask", mask),
        );
        let bias = match relative {
            Some((table, buckets)) => {
                check_len("relative bias", table, buckets * heads)?;
                relative_bias_by_distance(table, buckets, heads, ATTENTION_MAX_SEQ)
            }
            None => vec![0.0],
        };
        let bias = upload_f32(d, "relative bias", &bias);
        let ctx = storage(d, "ctx", (batch * seq * hidden * act.bytes()) as u64);
        let op = Op::Attention {
            heads,
            kv_heads,
            head_dim,
            relative_bias: relative.is_some(),
            window,
            causal,
        };
        let shape = Shape::batch(batch, seq);
        let buffers = [&qkv, &mask, &bias, &ctx];
        self.run_one(op, shape, &buffers, &ctx, (batch * seq * hidden, act))
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
        let op = Op::RmsNorm {
            cols,
            eps,
            residual: residual.is_some(),
        };
        let out = (rows * cols, Activations::F32);
        self.run_one(op, Shape::rows(rows), &[&xb, &gb, &rb, &y], &y, out)
            .await
    }

    /// Per-head RMSNorm and rotary positions on the queries and keys of `qkv` `[batch·seq,
    /// (heads + 2·kv_heads)·head_dim]` (stored as the activations are; the values pass
    /// unchanged), with the query and key norms' `[head_dim]` weights and the tables `cos`,
    /// `sin` `[seq, head_dim / 2]`. Returns the whole buffer.
    #[allow(clippy::too_many_arguments)]
    pub async fn run_head_norm_rope(
        &self,
        qkv: &[f32],
        (query_norm, key_norm): (&[f32], &[f32]),
        (cos, sin): (&[f32], &[f32]),
        (batch, seq, heads, kv_heads, head_dim): (usize, usize, usize, usize, usize),
        eps: f32,
    ) -> Result<Vec<f32>> {
        let half = head_dim / 2;
        check_len("qkv", qkv, batch * seq * (heads + 2 * kv_heads) * head_dim)?;
        check_len("query norm", query_norm, head_dim)?;
        check_len("key norm", key_norm, head_dim)?;
        check_len("cos", cos, seq * half)?;
        check_len("sin", sin, seq * half)?;
        let d = &self.device;
        let act = self.activations();
        let buffer = upload_values(d, "qkv", act, qkv);
        let inputs = [query_norm, key_norm, cos, sin].map(|v| upload_f32(d, "input", v));
        let [qn, kn, cb, sb] = &inputs;
        let op = Op::HeadNormRope {
            heads,
            kv_heads,
            half,
            eps,
        };
        let shape = Shape::batch(batch, seq);
        let out = (qkv.len(), act);
        self.run_one(op, shape, &[&buffer, qn, kn, cb, sb], &buffer, out)
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
            Op::PoolL2 { dim, pooling },
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
        self.run_one(Op::Gelu, shape, &[&buffer], &buffer, out)
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
        let op = Op::EmbedAdd { cols };
        let out = (x.len(), Activations::F32);
        self.run_one(op, shape, &[&buffer, &pb, &tb], &buffer, out)
            .await
    }
}

/// The attention's masks beyond the padding: MPNet's relative bias table `[buckets, heads]`
/// and its bucket count, a window (keys with `|key − query| < window`; 0: none), causal.
#[derive(Debug, Clone, Copy, Default)]
pub struct AttentionMasks<'a> {
    pub relative: Option<(&'a [f32], usize)>,
    pub window: usize,
    pub causal: bool,
}

fn check_len(name: &str, data: &[f32], expected: usize) -> Result<()> {
    if data.len() != expected {
        bail!("{name}: expected {expected} values, got {}", data.len());
    }
    Ok(())
}

/// A storage buffer initialised from f32 data: weights.
fn upload_f32(device: &GpuDevice, label: &str, data: &[f32]) -> wgpu::Buffer {
    upload_bytes(device, label, f32_bytes(data))
}

/// A storage buffer initialised from `data` stored as `stored` (the kernel runs' inputs).
fn upload_values(
    device: &GpuDevice,
    label: &str,
    stored: Activations,
    data: &[f32],
) -> wgpu::Buffer {
    upload_bytes(device, label, stored.encode(data))
}

/// A storage buffer of weights initialised from raw bytes (quantized blocks as the file
/// stores them).
fn upload_bytes(device: &GpuDevice, label: &str, bytes: Vec<u8>) -> wgpu::Buffer {
    let len = bytes.len() as u64;
    upload_weights(device, label, len, || Ok(bytes)).expect("the bytes are the size given")
}

/// A read-only storage buffer initialised from u32 data (the attention mask).
fn upload_u32(device: &GpuDevice, label: &str, data: &[u32]) -> wgpu::Buffer {
    let bytes = u32_bytes(data);
    let usage = wgpu::BufferUsages::STORAGE;
    device.create(
        label,
        Use::Activations,
        bytes.len() as u64,
        usage,
        Some(&bytes),
    )
}
