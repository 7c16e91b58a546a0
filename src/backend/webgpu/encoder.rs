//! The BERT encoder on the GPU: weights uploaded once, activation buffers and bind groups
//! pooled across batches, one command buffer (one compute pass, 3 + 7·layers dispatches)
//! and one readback per batch.

use std::cell::{Cell, RefCell};

use anyhow::{bail, ensure, Context as _, Result};
use candle_core::quantized::QMatMul;
use candle_core::{Device, Tensor};

use super::context::GpuContext;
use super::kernels::{
    attention_params, bind, check_attention_shape, f32_bytes, grid, matmul_groups, param_bytes,
    read_f32, record, staging, storage, u32_bytes, uniform, upload_f32, Dispatch, ErrorScopes,
    FLAG_GELU, FLAG_RESIDUAL,
};
use crate::model::{ModelFile, TokenBatch};

struct Linear {
    w: wgpu::Buffer,
    b: wgpu::Buffer,
}

struct Norm {
    g: wgpu::Buffer,
    b: wgpu::Buffer,
}

struct Layer {
    /// Query, key and value fused into one `[3·hidden, hidden]` matrix: one matmul, not three.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

#[derive(Clone, Copy)]
struct Dims {
    hidden: usize,
    heads: usize,
    head_dim: usize,
    inter: usize,
    eps: f32,
    max_positions: usize,
}

/// One parameter block per kind of dispatch; rewritten (a few bytes) at every batch.
struct Uniforms {
    embed: wgpu::Buffer,
    norm: wgpu::Buffer,
    qkv: wgpu::Buffer,
    attention: wgpu::Buffer,
    attention_out: wgpu::Buffer,
    intermediate: wgpu::Buffer,
    output: wgpu::Buffer,
    pool: wgpu::Buffer,
}

/// Activation buffers for up to `rows` tokens and `batch` sentences, with their bind groups.
/// Grown (to the next power of two) when a batch does not fit; otherwise reused.
struct Pool {
    rows: usize,
    batch: usize,
    x: wgpu::Buffer,
    mask: wgpu::Buffer,
    pooled: wgpu::Buffer,
    readback: wgpu::Buffer,
    embed: wgpu::BindGroup,
    embed_norm: wgpu::BindGroup,
    layers: Vec<[wgpu::BindGroup; 7]>,
    pool: wgpu::BindGroup,
}

/// BERT (all-MiniLM-L6-v2 and the like) on a WebGPU device.
pub struct GpuBert {
    pub(crate) ctx: GpuContext,
    dims: Dims,
    /// The token table stays on the CPU: a batch's rows are gathered there (dequantized as
    /// the CPU backend does) and uploaded; the table itself never occupies GPU memory.
    words: QMatMul,
    positions: wgpu::Buffer,
    token_type0: wgpu::Buffer,
    embed_norm: Norm,
    layers: Vec<Layer>,
    uniforms: Uniforms,
    pool: RefCell<Option<Pool>>,
    busy: Cell<bool>,
    /// Largest token count per submit (the biggest activation must fit one binding).
    max_rows: usize,
}

/// Why a GPU batch failed: `Busy` is a caller error (another batch is in flight), `Gpu` is
/// the device failing (the caller falls back to the CPU).
#[derive(Debug)]
pub enum EncodeError {
    Busy,
    Gpu(anyhow::Error),
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Busy => write!(
                f,
                "the GPU encoder is busy with another batch: await the previous call first"
            ),
            Self::Gpu(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for EncodeError {}

fn host_tensor(file: &ModelFile, name: &str) -> Result<Tensor> {
    Ok(file.tensor(name)?.dequantize(&Device::Cpu)?)
}

fn host_vec(file: &ModelFile, name: &str) -> Result<Vec<f32>> {
    Ok(host_tensor(file, name)?.flatten_all()?.to_vec1::<f32>()?)
}

impl GpuBert {
    /// Uploads the encoder's weights (dequantized to f32) to `ctx`'s device.
    pub async fn new(ctx: GpuContext, file: &ModelFile, words: QMatMul) -> Result<Self> {
        if file.info.architecture != "bert" {
            bail!(
                "the GPU backend runs BERT encoders; this file is '{}'",
                file.info.architecture
            );
        }
        let cfg = &file.config;
        let dims = Dims {
            hidden: cfg.hidden_size,
            heads: cfg.num_attention_heads,
            head_dim: cfg.head_dim(),
            inter: cfg.intermediate_size,
            eps: cfg.layer_norm_eps as f32,
            max_positions: cfg.max_position_embeddings,
        };
        check_attention_shape(file.info.max_seq_length, dims.head_dim)?;
        let scopes = ErrorScopes::open(&ctx.device);
        let d = &ctx.device;
        let linear = |prefix: &str, out: usize, inp: usize| -> Result<(Vec<f32>, Vec<f32>)> {
            let w = host_tensor(file, &format!("{prefix}.weight"))?;
            ensure!(
                w.dims() == [out, inp],
                "{prefix}.weight has shape {:?}, expected [{out}, {inp}]",
                w.dims()
            );
            Ok((
                w.flatten_all()?.to_vec1::<f32>()?,
                host_vec(file, &format!("{prefix}.bias"))?,
            ))
        };
        let upload_linear = |label: &str, (w, b): (Vec<f32>, Vec<f32>)| Linear {
            w: upload_f32(d, label, &w),
            b: upload_f32(d, label, &b),
        };
        let norm = |prefix: &str| -> Result<Norm> {
            Ok(Norm {
                g: upload_f32(d, prefix, &host_vec(file, &format!("{prefix}.weight"))?),
                b: upload_f32(d, prefix, &host_vec(file, &format!("{prefix}.bias"))?),
            })
        };
        let (h, i) = (dims.hidden, dims.inter);
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let (mut w, mut b) = linear(&format!("{p}.attention.self.query"), h, h)?;
            for part in ["key", "value"] {
                let (pw, pb) = linear(&format!("{p}.attention.self.{part}"), h, h)?;
                w.extend(pw);
                b.extend(pb);
            }
            layers.push(Layer {
                qkv: upload_linear("qkv", (w, b)),
                attention_out: upload_linear(
                    "attention_out",
                    linear(&format!("{p}.attention.output.dense"), h, h)?,
                ),
                attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                intermediate: upload_linear(
                    "intermediate",
                    linear(&format!("{p}.intermediate.dense"), i, h)?,
                ),
                output: upload_linear("output", linear(&format!("{p}.output.dense"), h, i)?),
                output_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let positions = upload_f32(
            d,
            "positions",
            &host_vec(file, "embeddings.position_embeddings.weight")?,
        );
        let token_type0 = host_tensor(file, "embeddings.token_type_embeddings.weight")?
            .get(0)?
            .to_vec1::<f32>()?;
        let token_type0 = upload_f32(d, "token_type0", &token_type0);
        let embed_norm = norm("embeddings.LayerNorm")?;
        let uniforms = Uniforms {
            embed: uniform(d, "embed", &[0; 4]),
            norm: uniform(d, "norm", &[0; 4]),
            qkv: uniform(d, "qkv", &[0; 4]),
            attention: uniform(d, "attention", &[0; 8]),
            attention_out: uniform(d, "attention_out", &[0; 4]),
            intermediate: uniform(d, "intermediate", &[0; 4]),
            output: uniform(d, "output", &[0; 4]),
            pool: uniform(d, "pool", &[0; 4]),
        };
        scopes
            .close("uploading the weights")
            .await
            .context("cannot load the model on the GPU")?;
        // The widest activation is [rows, max(3·hidden, intermediate)] f32.
        let widest = (3 * h).max(i) as u64 * 4;
        let max_binding = ctx
            .limits
            .max_storage_buffer_binding_size
            .min(ctx.limits.max_buffer_size);
        let max_rows = (max_binding / widest) as usize;
        ensure!(
            max_rows >= file.info.max_seq_length,
            "the GPU's buffers are too small for one {}-token sentence",
            file.info.max_seq_length
        );
        Ok(Self {
            ctx,
            dims,
            words,
            positions,
            token_type0,
            embed_norm,
            layers,
            uniforms,
            pool: RefCell::new(None),
            busy: Cell::new(false),
            max_rows,
        })
    }

    fn make_pool(&self, rows: usize, batch: usize) -> Pool {
        let d = &self.ctx.device;
        let k = &self.ctx.kernels;
        let Dims { hidden, inter, .. } = self.dims;
        let act = |label: &str, width: usize| storage(d, label, (rows * width * 4) as u64);
        let x = act("x", hidden);
        let h = act("h", hidden);
        let h2 = act("h2", hidden);
        let ctx = act("context", hidden);
        let qkv = act("qkv", 3 * hidden);
        let ffn = act("intermediate", inter);
        let mask = storage(d, "mask", (rows * 4) as u64);
        let pooled = storage(d, "pooled", (batch * hidden * 4) as u64);
        let readback = staging(d, (batch * hidden * 4) as u64);
        let u = &self.uniforms;
        let layers = self
            .layers
            .iter()
            .map(|l| {
                [
                    // x·Wqkv (the residual binding is unused: the input stands in).
                    bind(d, &k.matmul, &[&u.qkv, &h, &l.qkv.w, &l.qkv.b, &h, &qkv]),
                    bind(d, &k.attention, &[&u.attention, &qkv, &mask, &ctx]),
                    bind(
                        d,
                        &k.matmul,
                        &[
                            &u.attention_out,
                            &ctx,
                            &l.attention_out.w,
                            &l.attention_out.b,
                            &h,
                            &x,
                        ],
                    ),
                    bind(
                        d,
                        &k.layer_norm,
                        &[&u.norm, &x, &l.attention_norm.g, &l.attention_norm.b, &h2],
                    ),
                    bind(
                        d,
                        &k.matmul,
                        &[
                            &u.intermediate,
                            &h2,
                            &l.intermediate.w,
                            &l.intermediate.b,
                            &h2,
                            &ffn,
                        ],
                    ),
                    bind(
                        d,
                        &k.matmul,
                        &[&u.output, &ffn, &l.output.w, &l.output.b, &h2, &x],
                    ),
                    bind(
                        d,
                        &k.layer_norm,
                        &[&u.norm, &x, &l.output_norm.g, &l.output_norm.b, &h],
                    ),
                ]
            })
            .collect();
        Pool {
            rows,
            batch,
            embed: bind(
                d,
                &k.embed_add,
                &[&u.embed, &x, &self.positions, &self.token_type0],
            ),
            embed_norm: bind(
                d,
                &k.layer_norm,
                &[&u.norm, &x, &self.embed_norm.g, &self.embed_norm.b, &h],
            ),
            pool: bind(d, &k.pool, &[&u.pool, &h, &mask, &pooled]),
            layers,
            x,
            mask,
            pooled,
            readback,
        }
    }

    /// Pooled, L2-normalised embeddings of a padded batch. Batches with more tokens than one
    /// binding holds are run in several submits.
    pub async fn encode_async(
        &self,
        batch: &TokenBatch,
    ) -> std::result::Result<Vec<Vec<f32>>, EncodeError> {
        if self.busy.replace(true) {
            return Err(EncodeError::Busy);
        }
        let result = self.encode_all(batch).await.map_err(EncodeError::Gpu);
        self.busy.set(false);
        result
    }

    async fn encode_all(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        self.ctx.check()?;
        let t = batch.seq_len;
        if batch.batch == 0 || t == 0 {
            return Ok(vec![vec![0.0; self.dims.hidden]; batch.batch]);
        }
        ensure!(
            t <= self.dims.max_positions,
            "a batch of {t} tokens exceeds the {} positions of the model",
            self.dims.max_positions
        );
        let rows_per_submit = (self.max_rows / t).max(1);
        let mut out = Vec::with_capacity(batch.batch);
        for start in (0..batch.batch).step_by(rows_per_submit) {
            let end = (start + rows_per_submit).min(batch.batch);
            let part = TokenBatch {
                ids: batch.ids[start * t..end * t].to_vec(),
                mask: batch.mask[start * t..end * t].to_vec(),
                batch: end - start,
                seq_len: t,
            };
            out.extend(self.encode_one(&part).await?);
        }
        Ok(out)
    }

    async fn encode_one(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        let (b, t) = (batch.batch, batch.seq_len);
        let Dims {
            hidden,
            heads,
            head_dim,
            inter,
            eps,
            ..
        } = self.dims;
        let m = b * t;
        // The word rows, gathered on the CPU from the (possibly quantized) table.
        let ids = Tensor::from_slice(&batch.ids, m, &Device::Cpu)?;
        let words = self
            .words
            .embedding(&ids)?
            .flatten_all()?
            .to_vec1::<f32>()?;

        let scopes = ErrorScopes::open(&self.ctx.device);
        // The pool is borrowed only while recording (never across an await).
        let readback = {
            let mut pool = self.pool.borrow_mut();
            if pool.as_ref().is_none_or(|p| p.rows < m || p.batch < b) {
                let rows = m.next_power_of_two().min(self.max_rows).max(m);
                let batch_cap = b
                    .next_power_of_two()
                    .max(pool.as_ref().map_or(0, |p| p.batch));
                *pool = Some(self.make_pool(rows, batch_cap));
            }
            let p = pool.as_ref().expect("pool was just made");
            let q = &self.ctx.queue;
            let u = &self.uniforms;
            let (m32, h32, i32_) = (m as u32, hidden as u32, inter as u32);
            q.write_buffer(&u.embed, 0, &param_bytes(&[m32 * h32, t as u32, h32, 0]));
            q.write_buffer(&u.norm, 0, &param_bytes(&[m32, h32, eps.to_bits(), 0]));
            q.write_buffer(&u.qkv, 0, &param_bytes(&[m32, 3 * h32, h32, 0]));
            q.write_buffer(
                &u.attention,
                0,
                &param_bytes(&attention_params(b, t, heads, head_dim)),
            );
            q.write_buffer(
                &u.attention_out,
                0,
                &param_bytes(&[m32, h32, h32, FLAG_RESIDUAL]),
            );
            q.write_buffer(
                &u.intermediate,
                0,
                &param_bytes(&[m32, i32_, h32, FLAG_GELU]),
            );
            q.write_buffer(&u.output, 0, &param_bytes(&[m32, h32, i32_, FLAG_RESIDUAL]));
            q.write_buffer(&u.pool, 0, &param_bytes(&[b as u32, t as u32, h32, 0]));
            q.write_buffer(&p.x, 0, &f32_bytes(&words));
            q.write_buffer(&p.mask, 0, &u32_bytes(&batch.mask));

            let k = &self.ctx.kernels;
            let (ex, ey) = grid((m * hidden).div_ceil(256) as u32);
            let (rx, ry) = grid(m32);
            let mut dispatches = vec![
                Dispatch {
                    pipeline: &k.embed_add,
                    bind_group: &p.embed,
                    groups: (ex, ey, 1),
                },
                Dispatch {
                    pipeline: &k.layer_norm,
                    bind_group: &p.embed_norm,
                    groups: (rx, ry, 1),
                },
            ];
            for groups in &p.layers {
                let sizes = [
                    matmul_groups(m32, 3 * h32),
                    (t as u32, heads as u32, b as u32),
                    matmul_groups(m32, h32),
                    (rx, ry, 1),
                    matmul_groups(m32, i32_),
                    matmul_groups(m32, h32),
                    (rx, ry, 1),
                ];
                let pipelines = [
                    &k.matmul,
                    &k.attention,
                    &k.matmul,
                    &k.layer_norm,
                    &k.matmul,
                    &k.matmul,
                    &k.layer_norm,
                ];
                for ((bind_group, pipeline), groups) in groups.iter().zip(pipelines).zip(sizes) {
                    dispatches.push(Dispatch {
                        pipeline,
                        bind_group,
                        groups,
                    });
                }
            }
            dispatches.push(Dispatch {
                pipeline: &k.pool,
                bind_group: &p.pool,
                groups: (b as u32, 1, 1),
            });
            let mut encoder =
                self.ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("encode batch"),
                    });
            record(&mut encoder, &dispatches);
            encoder.copy_buffer_to_buffer(&p.pooled, 0, &p.readback, 0, (b * hidden * 4) as u64);
            q.submit([encoder.finish()]);
            p.readback.clone()
        };
        scopes.close("encoding a batch").await?;
        let flat = read_f32(&self.ctx.device, &readback, b * hidden).await?;
        self.ctx.check()?;
        Ok(flat.chunks(hidden).map(<[f32]>::to_vec).collect())
    }

    /// Dispatches per batch: embeddings (2), 7 per layer, pooling (1).
    pub fn dispatches_per_batch(&self) -> usize {
        3 + 7 * self.layers.len()
    }
}
