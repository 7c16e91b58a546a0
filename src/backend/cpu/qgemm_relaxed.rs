//! The integer product with relaxed SIMD's `i32x4.relaxed_dot_i8x16_i7x16_add_s`: 16 signed-8-bit
//! × 7-bit multiply-adds, accumulated, per instruction (`i32x4.dot_i16x8_s` does 8, plus an add).
//!
//! One operand must lie in 0..127 for the result to be the same on every engine (x86 engines use
//! `pmaddubsw`/`vpdpbusd`, which read it as unsigned). So the weights (the file's q8_0 / q4_0
//! integers, signed) are the 8-bit operand and each activation, rounded to **14 bits** per block
//! of 32 (`q` in −8191..8191, relative error ≤ 2⁻¹⁴ of the block's largest value, where the
//! simd128 kernel keeps 16 bits), is written in two 7-bit digits:
//! `q + 8192 = hi·128 + lo` with `hi, lo` in 0..127. Per block and column:
//!
//! `Σ w·q = 128·Σ w·hi + Σ w·lo − 8192·Σ w`
//!
//! the last term precomputed per column and block when the weight is packed. Two dots per pair of
//! vectors (hi, then lo into the same accumulators after a shift by 7) = 32 multiply-adds per two
//! instructions; one i32 → f32 conversion and one scale per block.
//!
//! Overflow cannot happen: per lane and block `|Σ w·hi| ≤ 32·128·127 = 520,192`, shifted
//! `≤ 6.7·10⁷`; `|Σ w·lo| ≤ 520,192`; `|8192·Σ w| ≤ 8192·32·128 = 3.4·10⁷`: every partial sum
//! stays below 1.1·10⁸ < 2³¹, and the block's value equals `Σ w·q` exactly.
//!
//! [`portable_kernel`] is the same integer arithmetic lane by lane (used natively and as the
//! reference the browser test compares the engine's relaxed dot against, bit for bit).

use anyhow::Result;
use candle_core::quantized::QTensor;

use super::qgemm::{block_scale, for_each_block, tiled_product, IntegerProduct, BLOCK, MR, NR};

/// Largest 14-bit magnitude used (symmetric).
const X_MAX: f32 = 8191.0;
/// Added to `q` so that both base-128 digits are in 0..127.
const OFFSET: i32 = 8192;
/// Depths per relaxed dot lane.
const GROUP: usize = 4;

/// A q8_0 / q4_0 weight `[n, k]` in panels of [`NR`] columns: per group of 4 depths, columns
/// 0..4 then 4..8, each column's 4 values side by side (one relaxed-dot operand per 4 columns);
/// each column's block scales and zero-point corrections `−8192·Σ w`.
pub struct Relaxed14Weight {
    values: Vec<i8>,
    scales: Vec<f32>,
    corrections: Vec<i32>,
    n: usize,
    k: usize,
}

impl Relaxed14Weight {
    /// From a q8_0 or q4_0 tensor of shape `[n, k]`; other dtypes are refused.
    pub fn from_qtensor(w: &QTensor) -> Result<Self> {
        let (n, k) = w.shape().dims2()?;
        let (blocks, panels) = (k / BLOCK, n.div_ceil(NR));
        let mut values = vec![0i8; panels * k * NR];
        let mut scales = vec![0f32; panels * blocks * NR];
        let mut corrections = vec![0i32; panels * blocks * NR];
        for_each_block(w, |row, b, scale, block| {
            let (panel, c) = (row / NR, row % NR);
            let at = (panel * blocks + b) * NR + c;
            scales[at] = scale;
            corrections[at] = -OFFSET * block.iter().map(|&v| v as i32).sum::<i32>();
            for (j, &v) in block.iter().enumerate() {
                let kk = b * BLOCK + j;
                values[panel * k * NR + (kk / GROUP) * GROUP * NR + c * GROUP + kk % GROUP] = v;
            }
        })?;
        Ok(Self {
            values,
            scales,
            corrections,
            n,
            k,
        })
    }

    pub fn out_features(&self) -> usize {
        self.n
    }

    /// `x`: `m × k` row-major → `m × n` row-major, plus `bias` (length n) on every row.
    pub fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.product(x, m, bias, split_block, micro_kernel)
    }

    /// [`Self::matmul_bias`] with the portable digits and kernel whatever the build: the
    /// reference the relaxed-SIMD one must equal bit for bit (tests/browser_relaxed_kernels.rs).
    pub fn matmul_bias_reference(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.product(x, m, bias, split_block_portable, portable_kernel)
    }

    fn product(
        &self,
        x: &[f32],
        m: usize,
        bias: &[f32],
        split: BlockSplitter,
        kernel: fn(&mut [[f32; NR]; MR], &Rows, &Panel),
    ) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        assert_eq!(x.len(), m * k, "input is not {m}×{k}");
        let blocks = k / BLOCK;
        let digits = Digits::with(x, k, split);
        tiled_product(m, n, bias, |tile, panel, r0, rows| {
            let rows = Rows {
                hi: &digits.hi[r0 * k..],
                lo: &digits.lo[r0 * k..],
                x_scales: &digits.scales[r0 * blocks..],
                k,
                rows,
            };
            let per_block = panel * blocks * NR..(panel + 1) * blocks * NR;
            let panel_weight = Panel {
                values: &self.values[panel * k * NR..][..k * NR],
                scales: &self.scales[per_block.clone()],
                corrections: &self.corrections[per_block],
            };
            kernel(tile, &rows, &panel_weight);
        })
    }
}

impl IntegerProduct for Relaxed14Weight {
    const ACTIVATION_MAX: f32 = X_MAX;
    fn from_qtensor(w: &QTensor) -> Result<Self> {
        Self::from_qtensor(w)
    }
    fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.matmul_bias(x, m, bias)
    }
}

/// Every row's activations as two base-128 digits (`q + 8192 = hi·128 + lo`) and one f32 scale
/// per block of 32 (`x ≈ q · scale`).
pub struct Digits {
    pub hi: Vec<u8>,
    pub lo: Vec<u8>,
    pub scales: Vec<f32>,
}

/// Writes one block's digits: `(values, 1 / scale, hi, lo)`.
type BlockSplitter = fn(&[f32], f32, &mut [u8], &mut [u8]);

impl Digits {
    /// Rounds half to even, as wasm's `nearest` does.
    pub fn of(x: &[f32], k: usize) -> Self {
        Self::with(x, k, split_block)
    }

    fn with(x: &[f32], k: usize, split: BlockSplitter) -> Self {
        assert_eq!(x.len() % k, 0);
        assert_eq!(k % BLOCK, 0);
        let mut digits = Self {
            hi: vec![0; x.len()],
            lo: vec![0; x.len()],
            scales: Vec::with_capacity(x.len() / BLOCK),
        };
        let blocks = x
            .chunks_exact(BLOCK)
            .zip(digits.hi.chunks_exact_mut(BLOCK))
            .zip(digits.lo.chunks_exact_mut(BLOCK));
        for ((values, hi), lo) in blocks {
            let (scale, inverse) = block_scale(values, X_MAX);
            split(values, inverse, hi, lo);
            digits.scales.push(scale);
        }
        digits
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn split_block(values: &[f32], inverse: f32, hi: &mut [u8], lo: &mut [u8]) {
    use core::arch::wasm32::*;
    assert!(values.len() == BLOCK && hi.len() == BLOCK && lo.len() == BLOCK);
    let (inverse, offset, low_bits) = (f32x4_splat(inverse), i32x4_splat(OFFSET), i32x4_splat(127));
    // SAFETY: 32 values read and 32 bytes written to each of hi and lo, as asserted; unaligned
    // v128 access is allowed.
    unsafe {
        let src = values.as_ptr() as *const v128;
        for half in 0..2 {
            // |v · inverse| ≤ 8191: q + 8192 is in 1..16383, its digits in 0..127.
            let q: [v128; 4] = std::array::from_fn(|i| {
                let v = f32x4_mul(v128_load(src.add(4 * half + i)), inverse);
                i32x4_add(i32x4_trunc_sat_f32x4(f32x4_nearest(v)), offset)
            });
            let bytes = |d: [v128; 4]| {
                u8x16_narrow_i16x8(
                    i16x8_narrow_i32x4(d[0], d[1]),
                    i16x8_narrow_i32x4(d[2], d[3]),
                )
            };
            let high = bytes(q.map(|u| i32x4_shr(u, 7)));
            let low = bytes(q.map(|u| v128_and(u, low_bits)));
            v128_store(hi.as_mut_ptr().add(16 * half) as *mut v128, high);
            v128_store(lo.as_mut_ptr().add(16 * half) as *mut v128, low);
        }
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
use split_block_portable as split_block;

fn split_block_portable(values: &[f32], inverse: f32, hi: &mut [u8], lo: &mut [u8]) {
    for ((&v, h), l) in values.iter().zip(hi.iter_mut()).zip(lo.iter_mut()) {
        let u = (v * inverse).round_ties_even() as i32 + OFFSET;
        (*h, *l) = ((u >> 7) as u8, (u & 127) as u8);
    }
}

/// Up to [`MR`] consecutive rows of the digits with their block scales.
struct Rows<'a> {
    hi: &'a [u8],
    lo: &'a [u8],
    x_scales: &'a [f32],
    k: usize,
    rows: usize,
}

/// One panel's packed values, block scales and corrections.
struct Panel<'a> {
    values: &'a [i8],
    scales: &'a [f32],
    corrections: &'a [i32],
}

/// `tile[r][c] += Σ_blocks (Σ_kk q[r][kk] · w[c][kk]) · (w_scale[c] · x_scale[r])`.
fn micro_kernel(tile: &mut [[f32; NR]; MR], rows: &Rows, panel: &Panel) {
    #[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
    return relaxed_kernel(tile, rows, panel);
    #[allow(unreachable_code)]
    portable_kernel(tile, rows, panel)
}

/// [`micro_kernel`] with relaxed SIMD. A partial tile (rows < MR) repeats its last row in the
/// missing ones: the extra results are computed and never copied out.
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
fn relaxed_kernel(tile: &mut [[f32; NR]; MR], rows: &Rows, panel: &Panel) {
    use core::arch::wasm32::*;
    let (k, blocks) = (rows.k, rows.k / BLOCK);
    let row = |r: usize| r.min(rows.rows - 1);
    assert!(rows.rows >= 1 && panel.values.len() >= k * NR);
    assert!(panel.scales.len() >= blocks * NR && panel.corrections.len() >= blocks * NR);
    assert!(rows.hi.len() >= rows.rows * k && rows.lo.len() >= rows.rows * k);
    assert!(rows.x_scales.len() >= rows.rows * blocks);
    // SAFETY: the asserts bound every read: values[0 .. k·NR), scales and corrections
    // [0 .. blocks·NR), hi / lo[row(r)·k + 0 .. k) and x_scales[row(r)·blocks + b]
    // (row(r) < rows); the tile is [[f32; NR]; MR]. Unaligned loads are allowed in wasm.
    unsafe {
        let t = tile.as_mut_ptr() as *mut v128;
        let hi: [*const u8; MR] = std::array::from_fn(|r| rows.hi.as_ptr().add(row(r) * k));
        let lo: [*const u8; MR] = std::array::from_fn(|r| rows.lo.as_ptr().add(row(r) * k));
        let xs: [*const f32; MR] =
            std::array::from_fn(|r| rows.x_scales.as_ptr().add(row(r) * blocks));
        let wp = panel.values.as_ptr();
        for b in 0..blocks {
            // Row r's columns 0..4 and 4..8; 8 accumulators leave registers for the operands
            // (16 for separate hi and lo sums would spill on x86's 16 vector registers).
            let mut acc = [i32x4_splat(0); 2 * MR];
            for (pass, digits) in [hi, lo].iter().enumerate() {
                if pass == 1 {
                    for a in acc.iter_mut() {
                        *a = i32x4_shl(*a, 7);
                    }
                }
                for g in b * BLOCK / GROUP..(b + 1) * BLOCK / GROUP {
                    let w0 = v128_load(wp.add(g * GROUP * NR) as *const v128);
                    let w1 = v128_load(wp.add(g * GROUP * NR + 16) as *const v128);
                    for r in 0..MR {
                        // The row's 4 digits at depths 4g..4g+4, in every 32-bit lane.
                        let d = v128_load32_splat(digits[r].add(GROUP * g) as *const u32);
                        acc[2 * r] = i32x4_relaxed_dot_i8x16_i7x16_add(w0, d, acc[2 * r]);
                        acc[2 * r + 1] = i32x4_relaxed_dot_i8x16_i7x16_add(w1, d, acc[2 * r + 1]);
                    }
                }
            }
            let at = b * NR;
            let cs =
                [0, 4].map(|h| v128_load(panel.corrections.as_ptr().add(at + h) as *const v128));
            let ws = [0, 4].map(|h| v128_load(panel.scales.as_ptr().add(at + h) as *const v128));
            for (r, row_scales) in xs.iter().enumerate() {
                let x_scale = f32x4_splat(*row_scales.add(b));
                for half in 0..2 {
                    let i = 2 * r + half;
                    let exact = f32x4_convert_i32x4(i32x4_add(acc[i], cs[half]));
                    let scaled = f32x4_mul(exact, f32x4_mul(ws[half], x_scale));
                    v128_store(t.add(i), f32x4_add(v128_load(t.add(i)), scaled));
                }
            }
        }
    }
}

/// The same integer arithmetic, lane by lane, in plain Rust (identical results: integer sums are
/// exact and the f32 steps run in the same order).
fn portable_kernel(tile: &mut [[f32; NR]; MR], rows: &Rows, panel: &Panel) {
    let (k, blocks) = (rows.k, rows.k / BLOCK);
    for b in 0..blocks {
        for (r, out) in tile.iter_mut().enumerate().take(rows.rows) {
            let (hi, lo) = (&rows.hi[r * k..], &rows.lo[r * k..]);
            let x_scale = rows.x_scales[r * blocks + b];
            for (c, o) in out.iter_mut().enumerate() {
                let column_dot = |digits: &[u8]| -> i32 {
                    (b * BLOCK / GROUP..(b + 1) * BLOCK / GROUP)
                        .map(|g| {
                            relaxed_dot_lane(
                                &panel.values[(g * NR + c) * GROUP..],
                                &digits[g * GROUP..],
                            )
                        })
                        .sum()
                };
                let exact = column_dot(hi) * 128 + column_dot(lo) + panel.corrections[b * NR + c];
                *o += exact as f32 * (panel.scales[b * NR + c] * x_scale);
            }
        }
    }
}

/// One lane of `i32x4.relaxed_dot_i8x16_i7x16_add_s` without the addend: `Σ_{j<4} a[j]·b[j]`,
/// `a` signed 8-bit, `b` in 0..127 (the range where every engine agrees).
pub fn relaxed_dot_lane(a: &[i8], b: &[u8]) -> i32 {
    (0..GROUP).map(|j| a[j] as i32 * b[j] as i32).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::GgmlDType;

    use crate::backend::cpu::kernel_check::{
        extreme_activations, extreme_q8_0_weight, quantized_kernel_check, QUANT_EDGE_SHAPES,
    };

    #[test]
    fn q8_0_and_q4_0_products_match_the_dequantized_weight() {
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
            for &(m, n, k) in QUANT_EDGE_SHAPES.iter().chain(&[(14, 384, 384)]) {
                quantized_kernel_check::<Relaxed14Weight>(dtype, m, n, k).unwrap();
            }
        }
    }

    #[test]
    fn digits_are_seven_bit_and_rebuild_the_rounded_value() {
        let x = crate::backend::cpu::kernel_check::random_values(4 * 32, 7);
        let mut x: Vec<f32> = x.iter().map(|v| v * 3.0).collect();
        x[5] = -10.0; // the block's extreme: −8191
        x[40] = 10.0; // +8191
        let d = Digits::of(&x, 64);
        assert!(d.hi.iter().chain(&d.lo).all(|&v| v <= 127));
        for (i, &v) in x.iter().enumerate() {
            let q = d.hi[i] as i32 * 128 + d.lo[i] as i32 - OFFSET;
            let expected = (v / d.scales[i / BLOCK]).round_ties_even() as i32;
            assert!(
                (q - expected).abs() <= 1 && q.abs() <= 8191,
                "{i}: {q} vs {expected}"
            );
        }
        assert_eq!(d.hi[5] as i32 * 128 + d.lo[5] as i32 - OFFSET, -8191);
        assert_eq!(d.hi[40] as i32 * 128 + d.lo[40] as i32 - OFFSET, 8191);
    }

    /// Weights at −128 / 127 (q8_0 stores −128 only in crafted bytes; quantizing gives
    /// −127..127) against activations at the digits' extremes (q = ±8191, 0, −1): the kernel's
    /// value is the exact integer sum, scaled per block as the kernel does, bit for bit.
    #[test]
    fn extreme_weights_and_activations_are_exact() {
        let (m, n, k) = (6, 9, 64);
        let w = Relaxed14Weight::from_qtensor(&extreme_q8_0_weight(n, k).unwrap()).unwrap();
        let x = extreme_activations(m * k);
        let y = w.matmul_bias(&x, m, &[0.0; 9]);
        let d = Digits::of(&x, k);
        for r in 0..m {
            for c in 0..n {
                let mut expected = 0f32;
                for b in 0..k / BLOCK {
                    let exact: i32 = (b * BLOCK..(b + 1) * BLOCK)
                        .map(|kk| {
                            let wv = if (c + kk % BLOCK) % 3 == 0 { 127 } else { -128 };
                            let q = d.hi[r * k + kk] as i32 * 128 + d.lo[r * k + kk] as i32;
                            wv * (q - OFFSET)
                        })
                        .sum();
                    expected += exact as f32 * (1.0 * d.scales[r * k / BLOCK + b]);
                }
                assert_eq!(y[r * n + c].to_bits(), expected.to_bits(), "[{r},{c}]");
            }
        }
    }
}
