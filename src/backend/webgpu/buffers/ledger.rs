//! GPU memory accounting: every buffer is created through [`GpuDevice::create`], which books
//! its size, so the memory report and the refusal of a model that would not fit read the sizes
//! the buffers are created with.

use std::sync::{Arc, Mutex};

use anyhow::Result;
use serde::Serialize;
use wgpu::util::DeviceExt;

use super::scopes::ErrorScopes;
use crate::error::{coded, ErrorCode};

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
    pub(crate) fn create(
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
