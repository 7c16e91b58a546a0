//! Buffers and what every submit needs around the kernels: storage, uniform and readback
//! buffers, bind groups, recorded [`Step`]s into one compute pass, asynchronous readback and
//! error scopes.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use wgpu::util::DeviceExt;

use crate::error::{coded, ErrorCode};

use super::kernels::{Activations, Kernels, Op, Shape};

pub(crate) fn f32_bytes(data: &[f32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub(crate) fn u32_bytes(data: &[u32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// What a buffer holds, for the memory report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    Weights,
    Activations,
    Params,
    Readback,
}

/// GPU memory held by a model: the bytes of the buffers created through this module (the
/// sizes passed to `create_buffer`), by what they hold. What `backend_status` reports.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct GpuMemory {
    pub weights: u64,
    pub activations: u64,
    pub params: u64,
    pub readback: u64,
    pub total: u64,
    /// The largest single buffer created (what `maxBufferSize` and
    /// `maxStorageBufferBindingSize` bound).
    pub largest_buffer: u64,
    pub buffers: u64,
}

impl GpuMemory {
    fn add(&mut self, use_: Use, bytes: u64) {
        *self.of(use_) += bytes;
        self.total += bytes;
        self.largest_buffer = self.largest_buffer.max(bytes);
        self.buffers += 1;
    }

    /// Both sets of buffers together (the largest of either).
    pub(crate) fn add_all(&mut self, other: &Self) {
        self.weights += other.weights;
        self.activations += other.activations;
        self.params += other.params;
        self.readback += other.readback;
        self.total += other.total;
        self.largest_buffer = self.largest_buffer.max(other.largest_buffer);
        self.buffers += other.buffers;
    }

    fn of(&mut self, use_: Use) -> &mut u64 {
        match use_ {
            Use::Weights => &mut self.weights,
            Use::Activations => &mut self.activations,
            Use::Params => &mut self.params,
            Use::Readback => &mut self.readback,
        }
    }

    /// Held minus `other` (what a set of buffers created in between holds).
    pub(crate) fn since(&self, before: &Self) -> Self {
        Self {
            weights: self.weights - before.weights,
            activations: self.activations - before.activations,
            params: self.params - before.params,
            readback: self.readback - before.readback,
            total: self.total - before.total,
            largest_buffer: self.largest_buffer,
            buffers: self.buffers - before.buffers,
        }
    }

    fn release(&mut self, freed: &Self) {
        self.weights -= freed.weights;
        self.activations -= freed.activations;
        self.params -= freed.params;
        self.readback -= freed.readback;
        self.total -= freed.total;
        self.buffers -= freed.buffers;
    }
}

/// What a plan must fit: the device's buffer limits and an optional total.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemoryLimits {
    pub max_buffer_size: u64,
    pub max_storage_binding: u64,
    /// `GpuOptions::memory_budget` (WebGPU does not report a device's memory size).
    pub budget: Option<u64>,
}

/// The bytes held and, while planning, the bytes a set of buffers would take.
#[derive(Default)]
struct Ledger {
    held: GpuMemory,
    /// `Some` while planning: buffers are recorded here and not really allocated.
    plan: Option<GpuMemory>,
}

/// The device, with the bytes of every buffer created through this module. Every buffer
/// the backend creates goes through the functions below, so the memory report and the
/// refusal of a model that would not fit both read the sizes the buffers are created with.
pub(crate) struct GpuDevice {
    raw: wgpu::Device,
    ledger: Arc<Mutex<Ledger>>,
    pub limits: MemoryLimits,
}

impl std::ops::Deref for GpuDevice {
    type Target = wgpu::Device;
    fn deref(&self) -> &wgpu::Device {
        &self.raw
    }
}

impl GpuDevice {
    pub fn new(raw: wgpu::Device, limits: MemoryLimits) -> Self {
        Self {
            raw,
            ledger: Arc::default(),
            limits,
        }
    }

    /// The bytes held now.
    pub fn memory(&self) -> GpuMemory {
        self.ledger.lock().unwrap().held
    }

    /// A handle that gives `memory` back to the ledger when dropped (a graph's buffers).
    pub fn hold(&self, memory: GpuMemory) -> Held {
        Held {
            ledger: self.ledger.clone(),
            memory,
        }
    }

    /// Runs `build` without allocating (every buffer it creates is a 16-byte placeholder,
    /// nothing is written, weights are not read: [`upload_weights`]) and returns the bytes its
    /// buffers would take: the same code sizes the plan and the real buffers. `build`'s placeholders must never be bound by the caller;
    /// [`Self::check_fits`] then refuses a plan that would not fit.
    pub async fn plan<T, F: std::future::Future<Output = Result<T>>>(
        &self,
        build: impl FnOnce() -> F,
    ) -> Result<GpuMemory> {
        self.ledger.lock().unwrap().plan = Some(GpuMemory::default());
        // Placeholder bindings may fail validation: captured here, never reported.
        let scopes = ErrorScopes::open(self);
        let built = build().await.map(drop);
        let _ = scopes.close("planning").await;
        let planned = self.ledger.lock().unwrap().plan.take().unwrap_or_default();
        built?;
        Ok(planned)
    }

    /// Whether [`Self::plan`] is running (buffers are sized, not created).
    pub fn planning(&self) -> bool {
        self.ledger.lock().unwrap().plan.is_some()
    }

    /// Refuses, with the figures, `what` needing `planned` beside what is held: its largest
    /// buffer over the adapter's limits, or the total over the memory budget.
    pub fn check_fits(&self, what: &str, planned: &GpuMemory) -> Result<()> {
        let l = &self.limits;
        let mb = |b: u64| b as f64 / 1e6;
        let largest_limit = l.max_buffer_size.min(l.max_storage_binding);
        if planned.largest_buffer > largest_limit {
            return Err(coded(
                ErrorCode::OutOfMemory,
                format!(
                    "{what} does not fit this GPU: its largest buffer takes {:.1} MB, the \
                     adapter allows {:.1} MB per buffer (maxBufferSize {:.1} MB, \
                     maxStorageBufferBindingSize {:.1} MB)",
                    mb(planned.largest_buffer),
                    mb(largest_limit),
                    mb(l.max_buffer_size),
                    mb(l.max_storage_binding)
                ),
            ));
        }
        if let Some(budget) = l.budget {
            let held = self.memory().total;
            if held + planned.total > budget {
                return Err(coded(
                    ErrorCode::OutOfMemory,
                    format!(
                        "{what} does not fit this GPU: it needs {:.1} MB in {} buffers, with \
                         {:.1} MB already held the total would be {:.1} MB, over the {:.1} MB \
                         GPU memory budget",
                        mb(planned.total),
                        planned.buffers,
                        mb(held),
                        mb(held + planned.total),
                        mb(budget)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Creates a buffer (or, while planning, records its size and creates a placeholder).
    fn create(
        &self,
        label: &str,
        use_: Use,
        size: u64,
        usage: wgpu::BufferUsages,
        contents: Option<&[u8]>,
    ) -> wgpu::Buffer {
        let mut ledger = self.ledger.lock().unwrap();
        if let Some(plan) = ledger.plan.as_mut() {
            plan.add(use_, size);
            return self.raw.create_buffer(&wgpu::BufferDescriptor {
                label: Some("planned"),
                size: 16,
                usage,
                mapped_at_creation: false,
            });
        }
        ledger.held.add(use_, size);
        drop(ledger);
        match contents {
            Some(contents) => self
                .raw
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents,
                    usage,
                }),
            None => self.raw.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            }),
        }
    }
}

/// Memory given back to the ledger when dropped.
pub(crate) struct Held {
    ledger: Arc<Mutex<Ledger>>,
    memory: GpuMemory,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.ledger.lock().unwrap().held.release(&self.memory);
    }
}

/// A storage buffer initialised from f32 data: weights.
pub(crate) fn upload_f32(device: &GpuDevice, label: &str, data: &[f32]) -> wgpu::Buffer {
    upload_bytes(device, label, f32_bytes(data))
}

/// A storage buffer initialised from `data` stored as `stored` (the kernel runs' inputs).
pub(crate) fn upload_values(
    device: &GpuDevice,
    label: &str,
    stored: Activations,
    data: &[f32],
) -> wgpu::Buffer {
    upload_bytes(device, label, stored.encode(data))
}

/// A storage buffer of weights initialised from raw bytes (quantized blocks as the file
/// stores them).
pub(crate) fn upload_bytes(device: &GpuDevice, label: &str, bytes: Vec<u8>) -> wgpu::Buffer {
    let len = bytes.len() as u64;
    upload_weights(device, label, len, || Ok(bytes)).expect("the bytes are the size given")
}

/// A storage buffer of `len` bytes of weights, filled by `read`; zero-padded to whole u32
/// words, at least one (WGSL reads `array<u32>`; bindings need ≥ 4 bytes). While planning,
/// `read` is not called: the plan is the size alone, so planning a model reads none of its
/// weights. Else `read` must give exactly `len` bytes (the plan and the upload cannot
/// disagree).
pub(crate) fn upload_weights(
    device: &GpuDevice,
    label: &str,
    len: u64,
    read: impl FnOnce() -> Result<Vec<u8>>,
) -> Result<wgpu::Buffer> {
    let size = len.max(4).next_multiple_of(4);
    if device.planning() {
        return Ok(device.create(label, Use::Weights, size, STORAGE, None));
    }
    let mut bytes = read()?;
    if bytes.len() as u64 != len {
        bail!(
            "uploading '{label}': {} bytes read where the plan has {len}",
            bytes.len()
        );
    }
    bytes.resize(size as usize, 0);
    Ok(device.create(label, Use::Weights, size, STORAGE, Some(&bytes)))
}

/// A read-only storage buffer initialised from u32 data (the attention mask).
pub(crate) fn upload_u32(device: &GpuDevice, label: &str, data: &[u32]) -> wgpu::Buffer {
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

/// An uninitialised storage buffer of `bytes` (rounded up to 4, at least 4): activations.
pub(crate) fn storage(device: &GpuDevice, label: &str, bytes: u64) -> wgpu::Buffer {
    let size = bytes.max(4).div_ceil(4) * 4;
    device.create(label, Use::Activations, size, STORAGE, None)
}

/// A uniform buffer of `bytes` for parameter blocks, written before each submit.
pub(crate) fn uniform(device: &GpuDevice, label: &str, bytes: u64) -> wgpu::Buffer {
    let size = bytes.max(16).div_ceil(16) * 16;
    let usage = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
    device.create(label, Use::Params, size, usage, None)
}

pub(crate) fn staging(device: &GpuDevice, bytes: u64) -> wgpu::Buffer {
    let size = bytes.max(4).div_ceil(4) * 4;
    let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
    device.create("readback", Use::Readback, size, usage, None)
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

/// Reads the first `len` f32 values of a MAP_READ buffer once submission `after` is done
/// (`None`: all the work submitted so far). Never blocks in the browser; natively it waits in
/// `device.poll` for that submission only, so a later one keeps the GPU busy meanwhile.
pub(crate) async fn read_f32(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    len: usize,
    after: Option<wgpu::SubmissionIndex>,
) -> Result<Vec<f32>> {
    read_values(device, buffer, (len, Activations::F32), after).await
}

/// [`read_f32`] for `len` values stored as `stored` (f32 or f16).
pub(crate) async fn read_values(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    (len, stored): (usize, Activations),
    after: Option<wgpu::SubmissionIndex>,
) -> Result<Vec<f32>> {
    let bytes = ((len.max(1) * stored.bytes()).next_multiple_of(4)) as u64;
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
        .poll(wgpu::PollType::Wait {
            submission_index: after,
            timeout: None,
        })
        .map_err(|e| anyhow!("waiting for the GPU failed: {e}"))?;
    #[cfg(target_arch = "wasm32")]
    let _ = (device, after);
    MapFuture { state }
        .await
        .map_err(|e| anyhow!("reading results back from the GPU failed: {e}"))?;
    let out = {
        let view = buffer
            .slice(..bytes)
            .get_mapped_range()
            .map_err(|e| anyhow!("reading results back from the GPU failed: {e:?}"))?;
        let mut values = stored.decode(&view);
        values.truncate(len);
        values
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
