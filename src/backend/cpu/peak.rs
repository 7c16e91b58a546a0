//! Ceilings to measure our kernels against (benchmarks only, behind the `bench` feature): the
//! machine's wasm simd128 multiply-add peaks (f32 and the 16-bit integer dot), and our matrix
//! products' speed on a given shape.

use anyhow::Result;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::gemm::PackedWeight;
use super::qgemm::Int16PackedWeight;

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

/// Integer giga-operations per second (multiply-adds × 2) of a register-only loop of 12
/// independent `i32x4.dot_i16x8_s + i32x4.add` chains (8 multiply-adds each): the 16-bit
/// kernel's ceiling, since it issues one dot + add per 8 multiply-adds. NaN without simd128.
pub fn int_dot_gops(iterations: u64, now_ms: impl Fn() -> f64) -> f64 {
    let Some(chains) = INT16_DOT_CHAINS else {
        return f64::NAN;
    };
    let start = now_ms();
    std::hint::black_box(chains(iterations));
    let seconds = ((now_ms() - start) / 1e3).max(1e-9);
    (iterations * 12 * 8 * 2) as f64 / seconds / 1e9
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
const INT16_DOT_CHAINS: Option<fn(u64) -> i32> = Some(|iterations| {
    use core::arch::wasm32::*;
    // The accumulator is also an operand, so the dot cannot be hoisted out of the loop.
    let m = i16x8_splat(3);
    int_chains(iterations, |c| i32x4_add(c, i32x4_dot_i16x8(c, m)))
});
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
const INT16_DOT_CHAINS: Option<fn(u64) -> i32> = None;

/// `iterations` steps of 12 independent i32x4 chains (enough to hide a dot's latency).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn int_chains(
    iterations: u64,
    step: impl Fn(core::arch::wasm32::v128) -> core::arch::wasm32::v128,
) -> i32 {
    use core::arch::wasm32::*;
    let mut c: [v128; 12] = std::array::from_fn(|i| i32x4_splat(i as i32));
    for _ in 0..iterations {
        for c in c.iter_mut() {
            *c = step(*c);
        }
    }
    c.iter().map(|&v| i32x4_extract_lane::<0>(v)).sum()
}

/// GFLOP/s (multiply-adds × 2) of the CPU backend's products on an `m × k` by `k × n` shape,
/// the fastest of 5 rounds of `repeats / 5` (a clock of 1 ms needs ≥ 10 ms per round):
/// `[f32 kernel, 16-bit integer kernel on the same weights as q8_0]`.
pub fn matmul_gflops(
    m: usize,
    n: usize,
    k: usize,
    repeats: usize,
    now_ms: impl Fn() -> f64,
) -> Result<[f64; 2]> {
    let w: Vec<f32> = (0..n * k).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
    let x: Vec<f32> = (0..m * k).map(|i| ((i % 13) as f32 - 6.0) / 6.0).collect();
    let bias = vec![0.0; n];
    let dense = PackedWeight::pack(&w, n, k);
    let weight = Tensor::from_vec(w, (n, k), &Device::Cpu)?;
    let q8_0 = QTensor::quantize(&weight, GgmlDType::Q8_0)?;
    let int16 = Int16PackedWeight::from_qtensor(&q8_0)?;
    // The fastest of 5 rounds of repeats / 5 products: on a shared machine the other
    // processes only ever slow a round down.
    let fastest_ms = |product: &dyn Fn() -> Vec<f32>| {
        std::hint::black_box(product()); // warm-up
        let per_round = repeats.div_ceil(5).max(1);
        (0..5)
            .map(|_| {
                let start = now_ms();
                for _ in 0..per_round {
                    std::hint::black_box(product());
                }
                (now_ms() - start) / per_round as f64
            })
            .fold(f64::INFINITY, f64::min)
    };
    let gflops = |ms: f64| (2 * m * n * k) as f64 / (ms / 1e3).max(1e-9) / 1e9;
    Ok([
        gflops(fastest_ms(&|| dense.matmul_bias(&x, m, &bias))),
        gflops(fastest_ms(&|| int16.matmul_bias(&x, m, &bias))),
    ])
}
