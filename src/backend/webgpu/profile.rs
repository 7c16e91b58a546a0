//! Kernel timings for the GPU kernel benchmark (`bench` feature, native only; bench/gpu.sh
//! runs it): one matmul of the encoder's, uploaded once and dispatched many times, each
//! dispatch in its own compute pass with a timestamp pair where the device has timestamp
//! queries, and the wall time per dispatch of one submit of them all. Nothing here ships.

use anyhow::{anyhow, bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::buffers::{
    f32_bytes, params_bytes, storage, uniform, upload_weights, ErrorScopes, Step,
};
use super::context::GpuContext;
use super::kernels::{Activations, Matmul, Op, Shape, WeightFormat, FLAG_GELU, FLAG_RESIDUAL};

/// The fused epilogue of a timed matmul, as the encoder records it for that layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Epilogue {
    /// Bias only (the attention projections).
    Bias,
    /// Bias, then GELU (the FFN's first layer).
    Gelu,
    /// Bias, then the residual added, into the f32 residual stream (the attention output and
    /// the FFN's second layer).
    Residual,
}

/// One matmul's timing.
#[derive(Debug, Clone, Copy)]
pub struct MatmulTiming {
    /// Dispatches timed (after one untimed warm-up dispatch).
    pub dispatches: usize,
    /// The median of the dispatches' GPU times (end minus beginning of each one's compute
    /// pass, from timestamp queries), in ms; `None` where the device has no timestamp queries.
    pub gpu_ms: Option<f64>,
    /// The wall time of one submit of all the dispatches, from submit to completion, per
    /// dispatch, in ms (includes the passes' fixed costs).
    pub wall_ms: f64,
}

/// Timestamp pairs per query set: wgpu's limit is 4,096 queries.
const MAX_DISPATCHES: usize = 2048;

/// One matmul's buffers and recorded dispatch, uploaded once and timed as often as asked.
pub struct TimedMatmul<'a> {
    gpu: &'a GpuContext,
    step: Step,
    shape: Shape,
    /// Room for `MAX_DISPATCHES` timestamp pairs, where the device has timestamp queries.
    queries: Option<wgpu::QuerySet>,
    /// The buffers `step` binds (x, w, bias, residual, y, params), kept for its lifetime.
    _buffers: Vec<wgpu::Buffer>,
}

impl GpuContext {
    /// The device was opened with timestamp queries (`GpuOptions::timestamps` and the
    /// adapter offers them).
    pub fn has_timestamps(&self) -> bool {
        self.timestamps
    }

    /// Uploads `x·wᵀ` with x `[m, k]` and w `[n, k]` stored as `format` (f32, q8_0 or q4_0:
    /// the weight formats of the GPU matmul), with `epilogue`, and runs it once untimed (the
    /// pipeline's first use and the buffers' first touch stay out of the figures). The weights
    /// are pseudo-random values quantized as a file's are (the kernel's time does not depend
    /// on them), x is zeros.
    pub fn prepare_matmul(
        &self,
        format: GgmlDType,
        (m, n, k): (usize, usize, usize),
        epilogue: Epilogue,
    ) -> Result<TimedMatmul<'_>> {
        self.check()?;
        let d = &self.device;
        let (weights, format) = weight_bytes(format, n, k)?;
        let act = self.activations();
        let scopes = ErrorScopes::open(d);
        let w = upload_weights(d, "w", weights.len() as u64, || Ok(weights))?;
        let x = storage(d, "x", (m * k * act.bytes()) as u64);
        let bias = storage(d, "bias", (n * 4) as u64);
        let (flags, out) = match epilogue {
            Epilogue::Bias => (0, act),
            Epilogue::Gelu => (FLAG_GELU, act),
            Epilogue::Residual => (FLAG_RESIDUAL, Activations::F32),
        };
        let residual = storage(d, "residual", (m * n * act.bytes()) as u64);
        let y = storage(d, "y", (m * n * out.bytes()) as u64);
        let op = Op::Matmul(Matmul {
            n,
            k,
            flags,
            format,
        });
        let shape = Shape::rows(m);
        let params = uniform(d, "params", op.params(shape).as_bytes().len() as u64);
        let step = Step::new(
            d,
            &self.kernels,
            op,
            (&params, 0),
            &[&x, &w, &bias, &residual, &y],
        );
        self.queue.write_buffer(
            &params,
            0,
            &params_bytes(std::slice::from_ref(&step), shape, params.size()),
        );
        let queries = self.timestamps.then(|| {
            d.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("dispatch timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * MAX_DISPATCHES as u32,
            })
        });
        let timed = TimedMatmul {
            gpu: self,
            step,
            shape,
            queries,
            _buffers: vec![x, w, bias, residual, y, params],
        };
        timed.submit(1, false)?;
        pollster::block_on(scopes.close("preparing the timed matmul"))?;
        Ok(timed)
    }
}

impl TimedMatmul<'_> {
    /// Times `dispatches` runs (1 to 2,048) in one submit.
    pub fn time(&self, dispatches: usize) -> Result<MatmulTiming> {
        if !(1..=MAX_DISPATCHES).contains(&dispatches) {
            bail!("dispatches must be 1 to {MAX_DISPATCHES}, not {dispatches}");
        }
        let scopes = ErrorScopes::open(&self.gpu.device);
        let started = std::time::Instant::now();
        let ticks = self.submit(dispatches, true)?;
        let wall_ms = started.elapsed().as_secs_f64() * 1e3 / dispatches as f64;
        pollster::block_on(scopes.close("in the timed matmul"))?;
        let gpu_ms = ticks.map(|t| {
            let period_ns = f64::from(self.gpu.queue.get_timestamp_period());
            let mut each: Vec<f64> = t
                .chunks_exact(2)
                .map(|p| p[1].saturating_sub(p[0]) as f64 * period_ns / 1e6)
                .collect();
            each.sort_by(f64::total_cmp);
            each[each.len() / 2]
        });
        Ok(MatmulTiming {
            dispatches,
            gpu_ms,
            wall_ms,
        })
    }

    /// Submits `dispatches` runs, one compute pass each (with a timestamp pair each when
    /// `stamped` and the device has timestamp queries), waits for them, and returns the
    /// timestamps' ticks.
    fn submit(&self, dispatches: usize, stamped: bool) -> Result<Option<Vec<u64>>> {
        let (gpu, step, shape) = (self.gpu, &self.step, self.shape);
        let queries = self.queries.as_ref().filter(|_| stamped);
        let d = &gpu.device;
        let mut encoder = d.create_command_encoder(&Default::default());
        for i in 0..dispatches as u32 {
            let timestamp_writes = queries.map(|query_set| wgpu::ComputePassTimestampWrites {
                query_set,
                beginning_of_pass_write_index: Some(2 * i),
                end_of_pass_write_index: Some(2 * i + 1),
            });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("timed matmul"),
                timestamp_writes,
            });
            step.dispatch(&mut pass, &gpu.kernels, shape);
        }
        let readback = queries.map(|q| {
            let bytes = 2 * dispatches as u64 * 8;
            // Bench-only buffers, outside the ledger: the figures are times, not memory.
            let resolved = d.create_buffer(&wgpu::BufferDescriptor {
                label: Some("resolved timestamps"),
                size: bytes,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let staging = d.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps readback"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            encoder.resolve_query_set(q, 0..2 * dispatches as u32, &resolved, 0);
            encoder.copy_buffer_to_buffer(&resolved, 0, &staging, 0, bytes);
            staging
        });
        let submission = gpu.queue.submit([encoder.finish()]);
        d.poll(wgpu::PollType::Wait {
            submission_index: Some(submission),
            timeout: None,
        })
        .map_err(|e| anyhow!("waiting for the GPU failed: {e}"))?;
        gpu.check()?;
        let Some(staging) = readback else {
            return Ok(None);
        };
        let slice = staging.slice(..);
        let (sender, receiver) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = sender.send(r);
        });
        d.poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| anyhow!("waiting for the GPU failed: {e}"))?;
        receiver
            .recv()
            .map_err(|e| anyhow!("the timestamp readback was dropped: {e}"))?
            .map_err(|e| anyhow!("reading the timestamps failed: {e}"))?;
        let ticks = {
            let view = slice
                .get_mapped_range()
                .map_err(|e| anyhow!("reading the timestamps failed: {e:?}"))?;
            view.chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect()
        };
        staging.unmap();
        Ok(Some(ticks))
    }
}

/// A `[n, k]` weight of pseudo-random values in `format`'s bytes, as a file stores them.
fn weight_bytes(format: GgmlDType, n: usize, k: usize) -> Result<(Vec<u8>, WeightFormat)> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let values: Vec<f32> = (0..n * k)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 0.1 - 0.05
        })
        .collect();
    let kernel_format = match format {
        GgmlDType::F32 => return Ok((f32_bytes(&values), WeightFormat::F32)),
        GgmlDType::Q8_0 => WeightFormat::Q8_0,
        GgmlDType::Q4_0 => WeightFormat::Q4_0,
        other => bail!("the GPU matmul takes f32, q8_0 or q4_0 weights, not {other:?}"),
    };
    let w = Tensor::from_vec(values, (n, k), &Device::Cpu)?;
    let q = QTensor::quantize(&w, format)?;
    Ok((q.data()?.into_owned(), kernel_format))
}
