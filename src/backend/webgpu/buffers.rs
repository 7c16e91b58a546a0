//! Buffers and what every submit needs around the kernels: storage, uniform and readback
//! buffers, bind groups, recorded [`Step`]s into one compute pass, asynchronous readback and
//! error scopes.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use anyhow::{anyhow, bail, Result};
use wgpu::util::DeviceExt;

use super::kernels::{Kernels, Op, Shape};

pub(crate) fn f32_bytes(data: &[f32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub(crate) fn u32_bytes(data: &[u32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// A storage buffer initialised from f32 data (never empty: bindings need ≥ 4 bytes).
pub(crate) fn upload_f32(device: &wgpu::Device, label: &str, data: &[f32]) -> wgpu::Buffer {
    upload_bytes(device, label, f32_bytes(data))
}

/// A storage buffer initialised from raw bytes (quantized weight blocks as the file stores
/// them), zero-padded to whole u32 words, at least one (WGSL reads `array<u32>`).
pub(crate) fn upload_bytes(device: &wgpu::Device, label: &str, mut bytes: Vec<u8>) -> wgpu::Buffer {
    bytes.resize(bytes.len().max(4).next_multiple_of(4), 0);
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &bytes,
        usage: STORAGE,
    })
}

/// A read-only storage buffer initialised from u32 data (the attention mask).
pub(crate) fn upload_u32(device: &wgpu::Device, label: &str, data: &[u32]) -> wgpu::Buffer {
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &u32_bytes(data),
        usage: wgpu::BufferUsages::STORAGE,
    })
}

/// An uninitialised storage buffer of `bytes` (rounded up to 4, at least 4).
pub(crate) fn storage(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(4).div_ceil(4) * 4,
        usage: STORAGE,
        mapped_at_creation: false,
    })
}

/// A uniform buffer of `bytes` for parameter blocks, written before each submit.
pub(crate) fn uniform(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16).div_ceil(16) * 16,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
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

/// One dispatch of a recorded graph: the kernel launch, its bindings (the parameter block at
/// `params_offset` of the graph's uniform buffer, then the buffers the op names).
pub(crate) struct Step {
    pub op: Op,
    pub bind_group: wgpu::BindGroup,
    pub params_offset: u64,
}

impl Step {
    /// Binds `params` (its slot at `params_offset`, sized for `op`'s block) and `buffers` at
    /// bindings 0, 1, 2, … of `op`'s pipeline.
    pub fn new(
        device: &wgpu::Device,
        kernels: &Kernels,
        op: Op,
        (params, params_offset): (&wgpu::Buffer, u64),
        buffers: &[&wgpu::Buffer],
    ) -> Self {
        let size = op.params(Shape::rows(0)).as_bytes().len() as u64;
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: params,
                offset: params_offset,
                size: wgpu::BufferSize::new(size),
            }),
        }];
        entries.extend(
            buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32 + 1,
                    resource: b.as_entire_binding(),
                }),
        );
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &kernels.pipeline(&op).get_bind_group_layout(0),
            entries: &entries,
        });
        Self {
            op,
            bind_group,
            params_offset,
        }
    }
}

/// The parameter blocks of `steps` for a batch of `shape`, each at its offset: the contents
/// of the graph's uniform buffer (`len` bytes).
pub(crate) fn params_bytes(steps: &[Step], shape: Shape, len: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; len as usize];
    for s in steps {
        let params = s.op.params(shape);
        let block = params.as_bytes();
        let at = s.params_offset as usize;
        bytes[at..at + block.len()].copy_from_slice(block);
    }
    bytes
}

/// Records `steps` for a batch of `shape` into one compute pass.
pub(crate) fn record(
    encoder: &mut wgpu::CommandEncoder,
    kernels: &Kernels,
    steps: &[Step],
    shape: Shape,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("sr-bench"),
        timestamp_writes: None,
    });
    for s in steps {
        let (x, y, z) = s.op.workgroups(shape);
        pass.set_pipeline(kernels.pipeline(&s.op));
        pass.set_bind_group(0, &s.bind_group, &[]);
        pass.dispatch_workgroups(x, y, z);
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
