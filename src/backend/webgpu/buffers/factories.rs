//! The buffers the backend creates, each through the ledger: weights, activations, parameter
//! blocks and readback.

use anyhow::{bail, Result};

use super::ledger::{GpuDevice, Use};

pub(crate) fn f32_bytes(data: &[f32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub(crate) fn u32_bytes(data: &[u32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub(super) const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

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
