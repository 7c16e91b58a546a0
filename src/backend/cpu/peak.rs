//! Ceilings to measure our kernels against (benchmarks only): the machine's wasm simd128
//! multiply-add peak, and our matrix product's speed on a given shape.

use anyhow::Result;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::gemm::PackedWeight;
use super::qgemm::QuantPackedWeight;

/// GFLOP/s of a register-only loop of independent f32x4 `mul` + `add` pairs (8 flops each):
/// what one core can do in wasm simd128 without fused multiply-add.
pub fn simd_mul_add_gflops(iterations: u64, now_ms: impl Fn() -> f64) -> f64 {
    let start = now_ms();
    let checksum = mul_add_loop(iterations);
    let seconds = ((now_ms() - start) / 1e3).max(1e-9);
    // 12 accumulators × 4 lanes × 2 flops per iteration; the checksum keeps the loop alive.
    std::hint::black_box(checksum);
    (iterations * 12 * 8) as f64 / seconds / 1e9
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn mul_add_loop(iterations: u64) -> f32 {
    use core::arch::wasm32::*;
    // 12 independent chains hide the add latency; the operands stay in registers.
    let m = f32x4_splat(0.999_999);
    let a = f32x4_splat(1e-7);
    let mut c = [f32x4_splat(0.0); 12];
    for (i, c) in c.iter_mut().enumerate() {
        *c = f32x4_splat(i as f32);
    }
    for _ in 0..iterations {
        for c in c.iter_mut() {
            *c = f32x4_add(f32x4_mul(*c, m), a);
        }
    }
    c.iter().map(|&v| f32x4_extract_lane::<0>(v)).sum()
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn mul_add_loop(iterations: u64) -> f32 {
    let mut c = [[0.0f32; 4]; 12];
    for _ in 0..iterations {
        for lanes in c.iter_mut() {
            for v in lanes.iter_mut() {
                *v = *v * 0.999_999 + 1e-7;
            }
        }
    }
    c.iter().map(|l| l[0]).sum()
}

/// GFLOP/s (multiply-adds × 2) of the CPU backend's products on an `m × k` by `k × n` shape,
/// averaged over `repeats` (a clock of 1 ms needs ≥ 50 ms in all): the f32 kernel, and the
/// integer one on the same weights as q8_0.
pub fn matmul_gflops(
    m: usize,
    n: usize,
    k: usize,
    repeats: usize,
    now_ms: impl Fn() -> f64,
) -> Result<(f64, f64)> {
    let w: Vec<f32> = (0..n * k).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
    let x: Vec<f32> = (0..m * k).map(|i| ((i % 13) as f32 - 6.0) / 6.0).collect();
    let bias = vec![0.0; n];
    let dense = PackedWeight::pack(&w, n, k);
    let weight = Tensor::from_vec(w, (n, k), &Device::Cpu)?;
    let quant = QuantPackedWeight::from_qtensor(&QTensor::quantize(&weight, GgmlDType::Q8_0)?)?;
    let mean_ms = |product: &dyn Fn() -> Vec<f32>| {
        std::hint::black_box(product()); // warm-up
        let start = now_ms();
        for _ in 0..repeats.max(1) {
            std::hint::black_box(product());
        }
        (now_ms() - start) / repeats.max(1) as f64
    };
    let gflops = |ms: f64| (2 * m * n * k) as f64 / (ms / 1e3).max(1e-9) / 1e9;
    Ok((
        gflops(mean_ms(&|| dense.matmul_bias(&x, m, &bias))),
        gflops(mean_ms(&|| quant.matmul_bias(&x, m, &bias))),
    ))
}
