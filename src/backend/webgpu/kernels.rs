//! The WGSL kernels (built from the `.wgsl` files next to this one), their pipelines, and the
//! small helpers every dispatch needs: uniform parameter blocks, storage buffers, workgroup
//! grids, asynchronous readback. [`GpuContext`]'s `run_*` methods run one kernel on host
//! data (the kernel tests use them; the encoder records the same pipelines into one pass).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use anyhow::{anyhow, bail, Result};
use wgpu::util::DeviceExt;

use super::context::GpuContext;

const COMMON: &str = include_str!("wgsl/common.wgsl");
const MATMUL: &str = include_str!("wgsl/matmul.wgsl");
const LAYERNORM: &str = include_str!("wgsl/layernorm.wgsl");
const ATTENTION: &str = include_str!("wgsl/attention.wgsl");
const POOL: &str = include_str!("wgsl/pool.wgsl");
const ELEMENTWISE: &str = include_str!("wgsl/elementwise.wgsl");

/// Output tile of the matmul kernel (rows and columns per workgroup).
pub(crate) const MATMUL_TILE: u32 = 64;
/// Threads per workgroup of the attention kernel; `head_dim` must divide it.
pub(crate) const ATTENTION_THREADS: usize = 64;
/// Longest sequence the attention kernel holds in workgroup memory.
pub(crate) const ATTENTION_MAX_SEQ: usize = 512;
/// Matmul epilogue flags.
pub(crate) const FLAG_GELU: u32 = 1;
pub(crate) const FLAG_RESIDUAL: u32 = 2;

/// The compiled compute pipelines (one per kernel entry point).
pub(crate) struct Kernels {
    pub matmul: wgpu::ComputePipeline,
    pub layer_norm: wgpu::ComputePipeline,
    pub attention: wgpu::ComputePipeline,
    pub pool: wgpu::ComputePipeline,
    pub embed_add: wgpu::ComputePipeline,
    pub gelu: wgpu::ComputePipeline,
}

impl Kernels {
    pub fn new(device: &wgpu::Device) -> Self {
        let module = |label: &str, parts: &[&str]| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(parts.concat().into()),
            })
        };
        let pipeline = |label: &str, module: &wgpu::ShaderModule, entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let matmul = module("matmul", &[COMMON, MATMUL]);
        let layer_norm = module("layer_norm", &[LAYERNORM]);
        let attention = module("attention", &[ATTENTION]);
        let pool = module("pool", &[POOL]);
        let elementwise = module("elementwise", &[COMMON, ELEMENTWISE]);
        Self {
            matmul: pipeline("matmul", &matmul, "main"),
            layer_norm: pipeline("layer_norm", &layer_norm, "main"),
            attention: pipeline("attention", &attention, "main"),
            pool: pipeline("pool", &pool, "main"),
            embed_add: pipeline("embed_add", &elementwise, "embed_add"),
            gelu: pipeline("gelu", &elementwise, "gelu_inplace"),
        }
    }
}

/// A uniform parameter block: 32-bit words (u32, or f32 bits), padded to 16 bytes.
pub(crate) fn param_bytes(words: &[u32]) -> Vec<u8> {
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes.resize(bytes.len().div_ceil(16).max(1) * 16, 0);
    bytes
}

pub(crate) fn f32_bytes(data: &[f32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub(crate) fn u32_bytes(data: &[u32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A storage buffer initialised from f32 data (never empty: bindings need ≥ 4 bytes).
pub(crate) fn upload_f32(device: &wgpu::Device, label: &str, data: &[f32]) -> wgpu::Buffer {
    let mut bytes = f32_bytes(data);
    if bytes.is_empty() {
        bytes.resize(4, 0);
    }
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &bytes,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
    })
}

/// An uninitialised storage buffer of `bytes` (rounded up to 4, at least 4).
pub(crate) fn storage(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(4).div_ceil(4) * 4,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

pub(crate) fn uniform(device: &wgpu::Device, label: &str, words: &[u32]) -> wgpu::Buffer {
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &param_bytes(words),
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    })
}

pub(crate) fn staging(device: &wgpu::Device, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size: bytes.max(4).div_ceil(4) * 4,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// A bind group for `pipeline`'s group 0 with `buffers` at bindings 0, 1, 2, …
pub(crate) fn bind(
    device: &wgpu::Device,
    pipeline: &wgpu::ComputePipeline,
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

/// Workgroups for `n` independent items as (x, y): x at most 65535, as the kernels expect
/// (`index = x + y · 65535`).
pub(crate) fn grid(n: u32) -> (u32, u32) {
    if n <= 65535 {
        (n.max(1), 1)
    } else {
        (65535, n.div_ceil(65535))
    }
}

pub(crate) fn matmul_groups(m: u32, n: u32) -> (u32, u32, u32) {
    (n.div_ceil(MATMUL_TILE), m.div_ceil(MATMUL_TILE), 1)
}

/// One recorded dispatch: pipeline, bind group, workgroups.
pub(crate) struct Dispatch<'a> {
    pub pipeline: &'a wgpu::ComputePipeline,
    pub bind_group: &'a wgpu::BindGroup,
    pub groups: (u32, u32, u32),
}

pub(crate) fn record(encoder: &mut wgpu::CommandEncoder, dispatches: &[Dispatch<'_>]) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("sr-bench"),
        timestamp_writes: None,
    });
    for d in dispatches {
        pass.set_pipeline(d.pipeline);
        pass.set_bind_group(0, d.bind_group, &[]);
        pass.dispatch_workgroups(d.groups.0, d.groups.1, d.groups.2);
    }
}

/// Resolves when a `map_async` callback fires (natively after `device.poll`, in the browser
/// when the JS promise settles).
struct MapFuture {
    state: Arc<Mutex<MapState>>,
}

#[derive(Default)]
struct MapState {
    result: Option<std::result::Result<(), wgpu::BufferAsyncError>>,
    waker: Option<Waker>,
}

impl Future for MapFuture {
    type Output = std::result::Result<(), wgpu::BufferAsyncError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.state.lock().unwrap();
        match state.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Reads the first `len` f32 values of a MAP_READ buffer after the work submitted so far.
/// Never blocks in the browser; natively it waits in `device.poll`.
pub(crate) async fn read_f32(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    len: usize,
) -> Result<Vec<f32>> {
    let bytes = (len.max(1) * 4) as u64;
    let state = Arc::new(Mutex::new(MapState::default()));
    let callback_state = state.clone();
    buffer
        .slice(..bytes)
        .map_async(wgpu::MapMode::Read, move |result| {
            let mut s = callback_state.lock().unwrap();
            s.result = Some(result);
            if let Some(w) = s.waker.take() {
                w.wake();
            }
        });
    #[cfg(not(target_arch = "wasm32"))]
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| anyhow!("waiting for the GPU failed: {e}"))?;
    #[cfg(target_arch = "wasm32")]
    let _ = device;
    MapFuture { state }
        .await
        .map_err(|e| anyhow!("reading results back from the GPU failed: {e}"))?;
    let out = {
        let view = buffer
            .slice(..bytes)
            .get_mapped_range()
            .map_err(|e| anyhow!("reading results back from the GPU failed: {e:?}"))?;
        view.chunks_exact(4)
            .take(len)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    buffer.unmap();
    Ok(out)
}

/// Captures out-of-memory and validation errors of the work issued while it is open.
pub(crate) struct ErrorScopes {
    oom: wgpu::ErrorScopeGuard,
    validation: wgpu::ErrorScopeGuard,
}

impl ErrorScopes {
    pub fn open(device: &wgpu::Device) -> Self {
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        Self { oom, validation }
    }

    /// Closes both scopes; an error names what went wrong ("out of memory", a validation message).
    pub async fn close(self, what: &str) -> Result<()> {
        let validation = self.validation.pop();
        let oom = self.oom.pop();
        if let Some(e) = oom.await {
            bail!("the GPU ran out of memory {what}: {e}");
        }
        if let Some(e) = validation.await {
            bail!("GPU validation error {what}: {e}");
        }
        Ok(())
    }
}

/// Single-kernel runs on host data: the kernel tests' entry points (same pipelines as the
/// encoder). Each call uploads its inputs, dispatches once and reads the output back.
impl GpuContext {
    async fn run_one(
        &self,
        pipeline: &wgpu::ComputePipeline,
        params: &[u32],
        inputs: &[&wgpu::Buffer],
        output: &wgpu::Buffer,
        output_len: usize,
        groups: (u32, u32, u32),
    ) -> Result<Vec<f32>> {
        self.check()?;
        let scopes = ErrorScopes::open(&self.device);
        let params = uniform(&self.device, "params", params);
        let mut buffers = vec![&params];
        buffers.extend_from_slice(inputs);
        buffers.push(output);
        let bind_group = bind(&self.device, pipeline, &buffers);
        let readback = staging(&self.device, (output_len * 4) as u64);
        let mut encoder = self.device.create_command_encoder(&Default::default());
        record(
            &mut encoder,
            &[Dispatch {
                pipeline,
                bind_group: &bind_group,
                groups,
            }],
        );
        encoder.copy_buffer_to_buffer(output, 0, &readback, 0, (output_len.max(1) * 4) as u64);
        self.queue.submit([encoder.finish()]);
        scopes.close("in a kernel run").await?;
        read_f32(&self.device, &readback, output_len).await
    }

    /// `act(x·wᵀ + bias) (+ residual)`: x `[m, k]`, w `[n, k]`, bias `[n]`, residual `[m, n]`.
    #[allow(clippy::too_many_arguments)]
    pub async fn run_matmul(
        &self,
        x: &[f32],
        w: &[f32],
        bias: &[f32],
        residual: Option<&[f32]>,
        (m, n, k): (usize, usize, usize),
        gelu: bool,
    ) -> Result<Vec<f32>> {
        check_len("x", x, m * k)?;
        check_len("w", w, n * k)?;
        check_len("bias", bias, n)?;
        let d = &self.device;
        let (xb, wb, bb) = (
            upload_f32(d, "x", x),
            upload_f32(d, "w", w),
            upload_f32(d, "b", bias),
        );
        let rb = match residual {
            Some(r) => {
                check_len("residual", r, m * n)?;
                upload_f32(d, "residual", r)
            }
            None => xb.clone(),
        };
        let flags =
            if gelu { FLAG_GELU } else { 0 } | if residual.is_some() { FLAG_RESIDUAL } else { 0 };
        let y = storage(d, "y", (m * n * 4) as u64);
        self.run_one(
            &self.kernels.matmul,
            &[m as u32, n as u32, k as u32, flags],
            &[&xb, &wb, &bb, &rb],
            &y,
            m * n,
            matmul_groups(m as u32, n as u32),
        )
        .await
    }

    /// Row-wise LayerNorm of x `[rows, cols]`.
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
        let y = storage(d, "y", (rows * cols * 4) as u64);
        let (gx, gy) = grid(rows as u32);
        self.run_one(
            &self.kernels.layer_norm,
            &[rows as u32, cols as u32, eps.to_bits(), 0],
            &[
                &upload_f32(d, "x", x),
                &upload_f32(d, "gamma", gamma),
                &upload_f32(d, "beta", beta),
            ],
            &y,
            rows * cols,
            (gx, gy, 1),
        )
        .await
    }

    /// Masked multi-head attention. `qkv`: `[batch·seq, 3·heads·head_dim]` (q | k | v per
    /// token), `mask`: `[batch·seq]` (1 = token). Returns the context `[batch·seq, hidden]`.
    pub async fn run_attention(
        &self,
        qkv: &[f32],
        mask: &[u32],
        (batch, seq, heads, head_dim): (usize, usize, usize, usize),
    ) -> Result<Vec<f32>> {
        let hidden = heads * head_dim;
        check_len("qkv", qkv, batch * seq * 3 * hidden)?;
        if mask.len() != batch * seq {
            bail!("mask: expected {} values, got {}", batch * seq, mask.len());
        }
        check_attention_shape(seq, head_dim)?;
        let d = &self.device;
        let mask_buffer = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("mask"),
            contents: &u32_bytes(mask),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let ctx = storage(d, "ctx", (batch * seq * hidden * 4) as u64);
        self.run_one(
            &self.kernels.attention,
            &attention_params(batch, seq, heads, head_dim),
            &[&upload_f32(d, "qkv", qkv), &mask_buffer],
            &ctx,
            batch * seq * hidden,
            (seq as u32, heads as u32, batch as u32),
        )
        .await
    }

    /// Mean over the mask, then L2 normalisation: x `[batch·seq, dim]` → `[batch, dim]`.
    pub async fn run_mean_pool_l2(
        &self,
        x: &[f32],
        mask: &[u32],
        (batch, seq, dim): (usize, usize, usize),
    ) -> Result<Vec<f32>> {
        check_len("x", x, batch * seq * dim)?;
        let d = &self.device;
        let mask_buffer = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("mask"),
            contents: &u32_bytes(mask),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let out = storage(d, "pooled", (batch * dim * 4) as u64);
        self.run_one(
            &self.kernels.pool,
            &[batch as u32, seq as u32, dim as u32, 0],
            &[&upload_f32(d, "x", x), &mask_buffer],
            &out,
            batch * dim,
            (batch as u32, 1, 1),
        )
        .await
    }

    /// Element-wise exact-erf GELU (the WGSL approximation the matmul epilogue uses).
    pub async fn run_gelu(&self, x: &[f32]) -> Result<Vec<f32>> {
        self.check()?;
        let d = &self.device;
        let scopes = ErrorScopes::open(d);
        let buffer = upload_f32(d, "x", x);
        let params = uniform(d, "params", &[x.len() as u32, 1, 1, 0]);
        let bind_group = bind(d, &self.kernels.gelu, &[&params, &buffer]);
        let readback = staging(d, (x.len() * 4) as u64);
        let (gx, gy) = grid((x.len() as u32).div_ceil(256));
        let mut encoder = d.create_command_encoder(&Default::default());
        record(
            &mut encoder,
            &[Dispatch {
                pipeline: &self.kernels.gelu,
                bind_group: &bind_group,
                groups: (gx, gy, 1),
            }],
        );
        encoder.copy_buffer_to_buffer(&buffer, 0, &readback, 0, (x.len().max(1) * 4) as u64);
        self.queue.submit([encoder.finish()]);
        scopes.close("in a kernel run").await?;
        read_f32(d, &readback, x.len()).await
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
        self.check()?;
        let d = &self.device;
        let scopes = ErrorScopes::open(d);
        let buffer = upload_f32(d, "x", x);
        let params = uniform(
            d,
            "params",
            &[(rows * cols) as u32, seq as u32, cols as u32, 0],
        );
        let (pb, tb) = (upload_f32(d, "pos", pos), upload_f32(d, "type0", type0));
        let bind_group = bind(d, &self.kernels.embed_add, &[&params, &buffer, &pb, &tb]);
        let readback = staging(d, (x.len() * 4) as u64);
        let (gx, gy) = grid((x.len() as u32).div_ceil(256));
        let mut encoder = d.create_command_encoder(&Default::default());
        record(
            &mut encoder,
            &[Dispatch {
                pipeline: &self.kernels.embed_add,
                bind_group: &bind_group,
                groups: (gx, gy, 1),
            }],
        );
        encoder.copy_buffer_to_buffer(&buffer, 0, &readback, 0, (x.len().max(1) * 4) as u64);
        self.queue.submit([encoder.finish()]);
        scopes.close("in a kernel run").await?;
        read_f32(d, &readback, x.len()).await
    }
}

pub(crate) fn attention_params(
    batch: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> [u32; 8] {
    let scale = 1.0 / (head_dim as f32).sqrt();
    [
        batch as u32,
        seq as u32,
        heads as u32,
        head_dim as u32,
        (heads * head_dim) as u32,
        scale.to_bits(),
        0,
        0,
    ]
}

pub(crate) fn check_attention_shape(seq: usize, head_dim: usize) -> Result<()> {
    if seq > ATTENTION_MAX_SEQ {
        bail!("the GPU attention kernel handles up to {ATTENTION_MAX_SEQ} tokens, got {seq}");
    }
    if head_dim == 0 || head_dim > ATTENTION_THREADS || ATTENTION_THREADS % head_dim != 0 {
        bail!("the GPU attention kernel needs a head size dividing {ATTENTION_THREADS}, got {head_dim}");
    }
    Ok(())
}

fn check_len(name: &str, data: &[f32], expected: usize) -> Result<()> {
    if data.len() != expected {
        bail!("{name}: expected {expected} values, got {}", data.len());
    }
    Ok(())
}
