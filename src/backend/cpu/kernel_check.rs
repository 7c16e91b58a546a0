//! The CPU kernels against an f64 reference on seeded random inputs. One implementation for two
//! callers: the unit tests (natively: the portable kernels) and tests/browser_kernels_full.rs (in
//! Chromium: the simd128 kernels the page runs).

use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::{Device, Tensor};

use super::gemm::PackedWeight;
use super::qgemm::{IntegerProduct, BLOCK};
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

/// An integer kernel `K` (activations rounded per block: 16, 14 or 7 bits; weights `dtype`)
/// against `x · dequantize(W)ᵀ + b` in f64, element by element: its only extra error is `x`'s
/// rounding, at most `K::rounding_bounds` per input, plus f32 accumulation. Returns the largest error/bound ratio (≤ 1), or the first element over
/// its bound.
pub fn quantized_kernel_check<K: IntegerProduct>(
    dtype: GgmlDType,
    m: usize,
    n: usize,
    k: usize,
) -> Result<f64> {
    let w = Tensor::from_vec(random_values(n * k, 2), (n, k), &Device::Cpu)?;
    let q = QTensor::quantize(&w, dtype)?;
    let dense: Vec<f32> = q.dequantize(&Device::Cpu)?.flatten_all()?.to_vec1()?;
    let mut x = random_values(m * k, 1);
    // An outlier feature, as transformer activations have: its block keeps its 16 (14) bits.
    x[0] = 40.0;
    let b = random_values(n, 3);
    let y = K::from_qtensor(&q)?.matmul_bias(&x, m, &b);
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
            let steps = K::rounding_bounds(&x[i * k..(i + 1) * k]);
            for (kk, step) in steps.iter().enumerate() {
                let wv = dense[j * k + kk] as f64;
                dot += x[i * k + kk] as f64 * wv;
                bound += step * wv.abs() + 1e-7 * (x[i * k + kk] as f64 * wv).abs();
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

/// `(m, n, k)` for the integer kernels: m, n, k off the 4 × 8 tile, k one block, n = 1, and
/// MiniLM's widest product.
pub const QUANT_EDGE_SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 32),
    (3, 7, 32),
    (5, 1, 64),
    (5, 9, 64),
    (70, 17, 96),
    (13, 40, 384),
    (9, 384, 1536),
];

/// A crafted q8_0 `[n, k]` weight of only −128 and 127 (quantizing gives −127..127; −128 needs
/// crafted bytes), scale 1: `w[c][kk] = 127 if (c + kk) % 3 == 0 else −128`.
pub fn extreme_q8_0_weight(n: usize, k: usize) -> Result<QTensor> {
    let mut bytes = Vec::new();
    for row in 0..n {
        for _ in 0..k / BLOCK {
            bytes.extend_from_slice(&half::f16::from_f32(1.0).to_le_bytes());
            bytes.extend((0..BLOCK).map(|j| if (row + j) % 3 == 0 { 127u8 } else { 0x80 }));
        }
    }
    let storage = QStorage::from_data(bytes.into(), &Device::Cpu, GgmlDType::Q8_0)?;
    Ok(QTensor::new(storage, (n, k))?)
}

/// Activations at a block's extremes (±max, 0, the smallest step, half).
pub fn extreme_activations(len: usize) -> Vec<f32> {
    let pattern = [1.0, -1.0, 0.0, -1.0 / 8191.0, 0.5];
    (0..len).map(|i| pattern[(i * 7 / 3) % 5]).collect()
}
