//! Single-kernel runs on host data: the kernel tests' entry points, as [`GpuContext`]
//! methods. Each call uploads its inputs, records one [`Step`] of the same [`Op`] the encoder
//! records, submits it and reads the output back. This file holds the run itself and the
//! uploads; the entry points are grouped as the kernels are: `matmul.rs`, `attention.rs`
//! (attention and the per-head norms with rotary positions), `rows.rs` (the norms, pooling,
//! the element-wise kernels).

mod attention;
mod matmul;
mod rows;

use anyhow::{bail, Result};

use super::buffers::{
    f32_bytes, params_bytes, read_values, record, staging, u32_bytes, uniform, upload_weights,
    ErrorScopes, GpuDevice, Step, Use,
};
use super::context::GpuContext;
use super::kernels::{Activations, Op, Shape};

pub use attention::AttentionMasks;

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
