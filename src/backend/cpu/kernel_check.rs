//! The CPU kernels against an f64 reference on seeded random inputs. One implementation for two
//! callers: the unit tests (natively: the portable kernels) and tests/browser_kernels.rs (in
//! Chromium: the simd128 kernels the page runs).

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::gemm::PackedWeight;
use super::qgemm::{QuantPackedWeight, BLOCK};
use anyhow::Result;

/// Deterministic values in [-1, 1).
pub fn random_values(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = crate::eval::rng::SplitMix64::new(seed);
    (0..len)
        .map(|_| (rng.next_u64() >> 40) as f32 / (1u32 << 23) as f32 - 1.0)
        .collect()
}

/// The packed f32 kernel's `x·Wᵀ + b` (m × k by n × k) against f64: `(max error, bound)`, the
/// bound being f32 accumulation over k terms of magnitude ≤ 1 (1e-6 · k).
pub fn f32_kernel_error(m: usize, n: usize, k: usize) -> (f64, f64) {
    let x = random_values(m * k, 1);
    let w = random_values(n * k, 2);
    let b = random_values(n, 3);
    let y = PackedWeight::pack(&w, n, k).matmul_bias(&x, m, &b);
    assert_eq!(y.len(), m * n, "{m}×{n}×{k}: output size");
    let mut worst = 0f64;
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k)
                .map(|kk| x[i * k + kk] as f64 * w[j * k + kk] as f64)
                .sum();
            worst = worst.max((y[i * n + j] as f64 - dot - b[j] as f64).abs());
        }
    }
    (worst, 1e-6 * k as f64)
}

/// The integer kernel (activations rounded to 16 bits per block of 32, weights `dtype`) against
/// `x · dequantize(W)ᵀ + b` in f64, element by element: its only extra error is `x`'s rounding,
/// at most half a step of (block max / 32767) per input, plus f32 accumulation. Returns the
/// largest error/bound ratio (≤ 1), or the first element over its bound.
pub fn quantized_kernel_check(dtype: GgmlDType, m: usize, n: usize, k: usize) -> Result<f64> {
    let w = Tensor::from_vec(random_values(n * k, 2), (n, k), &Device::Cpu)?;
    let q = QTensor::quantize(&w, dtype)?;
    let dense: Vec<f32> = q.dequantize(&Device::Cpu)?.flatten_all()?.to_vec1()?;
    let mut x = random_values(m * k, 1);
    // An outlier feature, as transformer activations have: its block keeps 16 bits.
    x[0] = 40.0;
    let b = random_values(n, 3);
    let y = QuantPackedWeight::from_qtensor(&q)?.matmul_bias(&x, m, &b);
    if y.len() != m * n {
        anyhow::bail!(
            "{dtype:?} {m}×{n}×{k}: {} outputs, expected {}",
            y.len(),
            m * n
        );
    }
    let mut worst_ratio = 0f64;
    for i in 0..m {
        for j in 0..n {
            let (mut dot, mut bound) = (0f64, 1e-5);
            for blk in 0..k / BLOCK {
                let range = i * k + blk * BLOCK..i * k + (blk + 1) * BLOCK;
                let max = x[range.clone()].iter().fold(0f32, |a, v| a.max(v.abs())) as f64;
                for kk in range.map(|at| at - i * k) {
                    let wv = dense[j * k + kk] as f64;
                    dot += x[i * k + kk] as f64 * wv;
                    bound +=
                        max / (2.0 * 32767.0) * wv.abs() + 1e-7 * (x[i * k + kk] as f64 * wv).abs();
                }
            }
            let error = (y[i * n + j] as f64 - dot - b[j] as f64).abs();
            if error > bound {
                anyhow::bail!("{dtype:?} {m}×{n}×{k} [{i},{j}]: error {error} > bound {bound}");
            }
            worst_ratio = worst_ratio.max(error / bound);
        }
    }
    Ok(worst_ratio)
}
