//! The matmul on matrix units, natively: wgpu's experimental cooperative matrices (tensor
//! cores through Vulkan's `VK_KHR_cooperative_matrix`). Whether the adapter offers the
//! blocks `wgsl/matmul_coop.wgsl` is written for, and the self-check that compares that
//! kernel with the tiled one on the device before any model uses it — an experimental
//! feature on an untested driver falls back to the tiled matmul instead of giving wrong
//! figures.

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::buffers::{
    f32_bytes, params_bytes, read_values, record, staging, storage, uniform, upload_weights,
    ErrorScopes, GpuDevice, Step,
};
use super::kernels::{
    Activations, Kernels, Matmul, Op, Shape, WeightFormat, FLAG_GELU, FLAG_RESIDUAL,
};

/// Matrix units the matmul runs on: blocks of 16 × 16 × 16 f16 operands with f32 sums, in
/// subgroups of 32 (NVIDIA's tensor cores, AMD's WMMA in wave32, through Vulkan). Apple's
/// simdgroup matrices, which wgpu offers as 8 × 8 blocks only, would need a 32×32 tile of
/// their own: not written, as no machine here could run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MatrixUnits;

impl MatrixUnits {
    /// The matrix units the adapter offers the kernel: the cooperative-matrix feature with
    /// f16 × f16 → f32 blocks of 16, and subgroups of exactly 32 (the kernel's 128 threads are
    /// its 4 subgroups). The caller also needs `shader-f16` and `subgroups` on the device.
    pub fn offered(adapter: &wgpu::Adapter) -> Option<Self> {
        if !adapter
            .features()
            .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        {
            return None;
        }
        let info = adapter.get_info();
        if info.subgroup_min_size != 32 || info.subgroup_max_size != 32 {
            return None;
        }
        adapter
            .cooperative_matrix_properties()
            .iter()
            .any(|c| {
                (c.m_size, c.n_size, c.k_size) == (16, 16, 16)
                    && c.ab_type == wgpu::CooperativeScalarType::F16
                    && c.cr_type == wgpu::CooperativeScalarType::F32
            })
            .then_some(Self)
    }

    /// In words, for users.
    pub fn describe(self) -> String {
        "16×16 f16 blocks, f32 sums (cooperative matrices)".into()
    }
}

/// The kernels with the matmul on `units`, once they give the tiled matmul's values on this
/// device; else why not. Compile errors of the experimental shaders are caught here too
/// (error scopes), never reported as device errors.
pub(crate) async fn kernels_on_units(
    device: &GpuDevice,
    queue: &wgpu::Queue,
    tiled: &Kernels,
    (units, act, trusted): (MatrixUnits, Activations, bool),
) -> Result<Kernels> {
    let scopes = ErrorScopes::open(device);
    let coop = tiled.with_matrix_units(device, act, trusted);
    scopes.close("compiling the matmul on matrix units").await?;
    let what = format!("the matmul on matrix units ({})", units.describe());
    compare_matmuls(device, queue, (tiled, &coop), act, &what).await?;
    Ok(coop)
}

/// Fails unless `candidate`'s matmul gives `reference`'s values: every weight format, both
/// outputs (an activation after GELU, the f32 residual stream), a shape off the tiles in m,
/// n and k and a single row, on pseudo-random inputs.
pub(crate) async fn compare_matmuls(
    device: &GpuDevice,
    queue: &wgpu::Queue,
    (reference, candidate): (&Kernels, &Kernels),
    act: Activations,
    what: &str,
) -> Result<()> {
    for format in WeightFormat::ALL {
        for flags in [FLAG_GELU, FLAG_RESIDUAL] {
            for shape in [(70, 100, 96), (1, 36, 64)] {
                let probe = Probe::new(format, flags, shape)?;
                let want = probe.run(device, queue, reference, act).await?;
                let got = probe.run(device, queue, candidate, act).await?;
                let (err, rms) = deviation(&got, &want);
                // The operands are rounded to f16 on the matrix units (the tiled kernel
                // multiplies f32 weights): ~1e-3 of the RMS; a wrong layout gives ~1.
                let close = err.is_finite() && rms.is_finite() && err <= 1e-2 * rms;
                if !close {
                    bail!(
                        "{what} differs from the tiled one on {format:?}, flags {flags}, \
                         (m, n, k) {shape:?}: max error {err:.3e}, output RMS {rms:.3e}"
                    );
                }
            }
        }
    }
    Ok(())
}

/// The largest absolute difference (infinite where either value is not a number) and the
/// RMS of `want`.
fn deviation(got: &[f32], want: &[f32]) -> (f32, f32) {
    let err = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .map(|d| if d.is_nan() { f32::INFINITY } else { d })
        .fold(0.0, f32::max);
    let rms = (want.iter().map(|v| v * v).sum::<f32>() / want.len().max(1) as f32).sqrt();
    // A length mismatch is a failure too.
    if got.len() != want.len() {
        return (f32::INFINITY, rms);
    }
    (err, rms)
}

/// One matmul of pseudo-random inputs: x `[m, k]`, w `[n, k]` as the weight format stores
/// it, bias, residual.
struct Probe {
    op: Op,
    m: usize,
    x: Vec<f32>,
    w: Vec<u8>,
    bias: Vec<f32>,
    residual: Vec<f32>,
}

impl Probe {
    fn new(format: WeightFormat, flags: u32, (m, n, k): (usize, usize, usize)) -> Result<Self> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ (m * 31 + n * 7 + k) as u64;
        let mut values = |len: usize| -> Vec<f32> {
            (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
                })
                .collect()
        };
        let (x, weights, bias, residual) = (values(m * k), values(n * k), values(n), values(m * n));
        let w = match format {
            WeightFormat::F32 => f32_bytes(&weights),
            WeightFormat::Q8_0 | WeightFormat::Q4_0 => {
                let dtype = if format == WeightFormat::Q8_0 {
                    GgmlDType::Q8_0
                } else {
                    GgmlDType::Q4_0
                };
                let t = Tensor::from_vec(weights, (n, k), &Device::Cpu)?;
                QTensor::quantize(&t, dtype)?.data()?.into_owned()
            }
        };
        let op = Op::Matmul(Matmul {
            n,
            k,
            flags,
            format,
        });
        Ok(Self {
            op,
            m,
            x,
            w,
            bias,
            residual,
        })
    }

    /// The output with `kernels`' matmul.
    async fn run(
        &self,
        d: &GpuDevice,
        queue: &wgpu::Queue,
        kernels: &Kernels,
        act: Activations,
    ) -> Result<Vec<f32>> {
        let Op::Matmul(Matmul { n, flags, .. }) = self.op else {
            unreachable!("a probe is a matmul")
        };
        let out = if flags & FLAG_RESIDUAL != 0 {
            Activations::F32
        } else {
            act
        };
        let upload = |label: &str, bytes: Vec<u8>| {
            upload_weights(d, label, bytes.len() as u64, || Ok(bytes))
        };
        let encode = |v: &[f32]| act.encode(v);
        let x = upload("x", encode(&self.x))?;
        let w = upload("w", self.w.clone())?;
        let bias = upload("bias", f32_bytes(&self.bias))?;
        let residual = upload("residual", encode(&self.residual))?;
        let len = self.m * n;
        let y = storage(d, "y", (len * out.bytes()) as u64);
        let shape = Shape::rows(self.m);
        let params = uniform(d, "params", self.op.params(shape).as_bytes().len() as u64);
        let scopes = ErrorScopes::open(d);
        let steps = [Step::new(
            d,
            kernels,
            self.op,
            (&params, 0),
            &[&x, &w, &bias, &residual, &y],
        )];
        queue.write_buffer(&params, 0, &params_bytes(&steps, shape, params.size()));
        let bytes = (len * out.bytes()).next_multiple_of(4) as u64;
        let readback = staging(d, bytes);
        let mut encoder = d.create_command_encoder(&Default::default());
        record(&mut encoder, kernels, &steps, shape);
        encoder.copy_buffer_to_buffer(&y, 0, &readback, 0, bytes);
        queue.submit([encoder.finish()]);
        scopes.close("in the matrix units' self-check").await?;
        read_values(d, &readback, (len, out), None).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::context::{GpuContext, GpuOptions};
    use super::super::kernels::Kernels;
    use super::compare_matmuls;

    /// The self-check, where no matrix units exist (lavapipe): the matmul with wgpu's runtime
    /// checks passes against the one without; one writing each output in the other's type
    /// fails, with the figures.
    #[test]
    fn the_self_check_passes_the_same_values_and_fails_wrong_ones() {
        let gpu = pollster::block_on(GpuContext::new(&GpuOptions::default()))
            .expect("a WebGPU adapter (lavapipe: mesa-vulkan-drivers)");
        let act = gpu.activations();
        let checked = Kernels::new(&gpu.device, gpu.subgroups, act, false);
        let same = (&gpu.kernels, &checked);
        pollster::block_on(compare_matmuls(
            &gpu.device,
            &gpu.queue,
            same,
            act,
            "checked",
        ))
        .expect("the same matmul passes");
        let wrong = checked.with_outputs_swapped();
        let err = pollster::block_on(compare_matmuls(
            &gpu.device,
            &gpu.queue,
            (&gpu.kernels, &wrong),
            act,
            "swapped",
        ))
        .expect_err("a wrong matmul fails");
        let message = err.to_string();
        assert!(
            message.starts_with("swapped differs from the tiled one on F32"),
            "{message}"
        );
        assert!(message.contains("max error"), "{message}");
    }
}
