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
//!
//! Measured, not used by the page (`qgemm::QuantPackedWeight`): in Chromium 156 on an AMD EPYC
//! with AVX-VNNI one relaxed dot (16 multiply-adds of 7-bit digits) issues at about the rate of
//! one `dot_i16x8` + add pair (relaxed-dot peak ≈ 2.2× the i16 dot+add peak in multiply-adds/s),
//! so two dots per 16 multiply-adds of 14-bit values have the 16-bit kernel's ceiling; this
//! kernel ran at 0.7–0.9× of it on MiniLM's shapes. Only 8-bit activations (one dot) could double
//! the rate, and those lost parity (min cosine 0.9976).

use anyhow::Result;
use candle_core::quantized::QTensor;

use super::qgemm::{block_scale, for_each_block, tiled_product, IntegerProduct, BLOCK, MR, NR};

/// Largest 14-bit magnitude used (symmetric).
const X_MAX: f32 = 8191.0;
/// Added to `q` so that both base-128 digits are in 0..127.
const OFFSET: i32 = 8192;
/// Depths per relaxed dot lane.
pub(super) const GROUP: usize = 4;

/// Where column `c` (0..NR) of `panel` keeps its value at depth `kk` in the relaxed kernels'
/// packing: per group of 4 depths, the NR columns' 4 values side by side.
pub(super) fn grouped_at(panel: usize, k: usize, c: usize, kk: usize) -> usize {
    panel * k * NR + (kk / GROUP) * GROUP * NR + c * GROUP + kk % GROUP
}

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
                values[grouped_at(panel, k, c, kk)] = v;
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
        // Tiles start at multiples of MR: tile r0 / MR of the packed digits.
        tiled_product(m, n, bias, |tile, panel, r0, _rows| {
            let rows = Rows {
                digits: &digits.packed[r0 / MR * k * 2 * MR..][..k * 2 * MR],
                x_scales: &digits.scales[r0 / MR * blocks * MR..][..blocks * MR],
                k,
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

/// The activations as two base-128 digits (`q + 8192 = hi·128 + lo`) and one f32 scale per block
/// of 32 (`x ≈ q · scale`), packed per tile of [`MR`] rows so that the kernel reads one stream
/// at fixed offsets (few pointers: x86 has few registers): per group of 4 depths, the MR rows'
/// 4 hi digits, then their 4 lo digits; per block, the MR rows' scales. Rows past `m` in the last
/// tile are zeros (computed, never copied out).
pub struct Digits {
    packed: Vec<u8>,
    scales: Vec<f32>,
    k: usize,
}

/// Writes one block's digits: `(values, 1 / scale, hi, lo)`.
type BlockSplitter = fn(&[f32], f32, &mut [u8], &mut [u8]);

impl Digits {
    /// Rounds half to even, as wasm's `nearest` does.
    pub fn of(x: &[f32], k: usize) -> Self {
        Self::with(x, k, split_block)
    }

    fn with(x: &[f32], k: usize, split: BlockSplitter) -> Self {
        assert_eq!(k % BLOCK, 0);
        assert_eq!(x.len() % k, 0);
        let (tiles, blocks) = ((x.len() / k).div_ceil(MR), k / BLOCK);
        let mut digits = Self {
            packed: vec![0; tiles * k * 2 * MR],
            scales: vec![0.0; tiles * blocks * MR],
            k,
        };
        let (mut hi, mut lo) = ([0u8; BLOCK], [0u8; BLOCK]);
        for (i, row) in x.chunks_exact(k).enumerate() {
            for (b, values) in row.chunks_exact(BLOCK).enumerate() {
                let (scale, inverse) = block_scale(values, X_MAX);
                split(values, inverse, &mut hi, &mut lo);
                digits.scales[(i / MR * blocks + b) * MR + i % MR] = scale;
                for j in (0..BLOCK).step_by(GROUP) {
                    let at = digits.at(i, b * BLOCK + j);
                    digits.packed[at..at + GROUP].copy_from_slice(&hi[j..j + GROUP]);
                    digits.packed[at + MR * GROUP..][..GROUP].copy_from_slice(&lo[j..j + GROUP]);
                }
            }
        }
        digits
    }

    /// Where row `i`'s hi digit at depth `kk` is (its lo digit: MR·GROUP further).
    fn at(&self, i: usize, kk: usize) -> usize {
        let (tile, r) = (i / MR, i % MR);
        tile * self.k * 2 * MR + kk / GROUP * 2 * MR * GROUP + r * GROUP + kk % GROUP
    }

    /// Row `i`'s rounded activation at depth `kk`, rebuilt from its digits, and its block's scale.
    pub fn value(&self, i: usize, kk: usize) -> (i32, f32) {
        let at = self.at(i, kk);
        let (hi, lo) = (self.packed[at], self.packed[at + MR * GROUP]);
        assert!(hi <= 127 && lo <= 127, "digits {hi}, {lo} out of 0..127");
        let scale = self.scales[(i / MR * (self.k / BLOCK) + kk / BLOCK) * MR + i % MR];
        (hi as i32 * 128 + lo as i32 - OFFSET, scale)
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

/// One tile of [`MR`] rows: its packed digits and block scales ([`Digits`]).
struct Rows<'a> {
    digits: &'a [u8],
    x_scales: &'a [f32],
    k: usize,
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

/// [`micro_kernel`] with relaxed SIMD.
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
fn relaxed_kernel(tile: &mut [[f32; NR]; MR], rows: &Rows, panel: &Panel) {
    use core::arch::wasm32::*;
    let (k, blocks) = (rows.k, rows.k / BLOCK);
    assert!(panel.values.len() >= k * NR && rows.digits.len() >= k * 2 * MR);
    assert!(panel.scales.len() >= blocks * NR && panel.corrections.len() >= blocks * NR);
    assert!(rows.x_scales.len() >= blocks * MR);
    // SAFETY: the asserts bound every read: values[0 .. k·NR), digits[0 .. k·2·MR),
    // scales and corrections [0 .. blocks·NR), x_scales[0 .. blocks·MR); the tile is
    // [[f32; NR]; MR]. Unaligned loads are allowed in wasm.
    unsafe {
        let t = tile.as_mut_ptr() as *mut v128;
        let (wp, dp) = (panel.values.as_ptr(), rows.digits.as_ptr());
        for b in 0..blocks {
            // Row r's columns 0..4 and 4..8; 8 accumulators leave registers for the operands
            // (16 for separate hi and lo sums would spill on x86's 16 vector registers).
            let mut acc = [i32x4_splat(0); 2 * MR];
            for pass in 0..2 {
                if pass == 1 {
                    for a in acc.iter_mut() {
                        *a = i32x4_shl(*a, 7);
                    }
                }
                for g in b * BLOCK / GROUP..(b + 1) * BLOCK / GROUP {
                    let w0 = v128_load(wp.add(g * GROUP * NR) as *const v128);
                    let w1 = v128_load(wp.add(g * GROUP * NR + 16) as *const v128);
                    let d = dp.add((g * 2 + pass) * MR * GROUP);
                    for r in 0..MR {
                        // The row's 4 digits at depths 4g..4g+4, in every 32-bit lane.
                        let x = v128_load32_splat(d.add(r * GROUP) as *const u32);
                        acc[2 * r] = i32x4_relaxed_dot_i8x16_i7x16_add(w0, x, acc[2 * r]);
                        acc[2 * r + 1] = i32x4_relaxed_dot_i8x16_i7x16_add(w1, x, acc[2 * r + 1]);
                    }
                }
            }
            let at = b * NR;
            let cs =
                [0, 4].map(|h| v128_load(panel.corrections.as_ptr().add(at + h) as *const v128));
            let ws = [0, 4].map(|h| v128_load(panel.scales.as_ptr().add(at + h) as *const v128));
            for r in 0..MR {
                let x_scale = f32x4_splat(*rows.x_scales.get_unchecked(b * MR + r));
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
    let blocks = rows.k / BLOCK;
    for b in 0..blocks {
        for (r, out) in tile.iter_mut().enumerate() {
            let x_scale = rows.x_scales[b * MR + r];
            for (c, o) in out.iter_mut().enumerate() {
                let column_dot = |pass: usize| -> i32 {
                    (b * BLOCK / GROUP..(b + 1) * BLOCK / GROUP)
                        .map(|g| {
                            let w = &panel.values[(g * NR + c) * GROUP..];
                            relaxed_dot_lane(w, &rows.digits[((g * 2 + pass) * MR + r) * GROUP..])
                        })
                        .sum()
                };
                let exact = column_dot(0) * 128 + column_dot(1) + panel.corrections[b * NR + c];
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
        for (i, &v) in x.iter().enumerate() {
            let (q, scale) = d.value(i / 64, i % 64);
            let expected = (v / scale).round_ties_even() as i32;
            assert!(
                (q - expected).abs() <= 1 && q.abs() <= 8191,
                "{i}: {q} vs {expected}"
            );
        }
        assert_eq!(d.value(0, 5).0, -8191);
        assert_eq!(d.value(0, 40).0, 8191);
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
                            wv * d.value(r, kk).0
                        })
                        .sum();
                    expected += exact as f32 * (1.0 * d.value(r, b * BLOCK).1);
                }
                assert_eq!(y[r * n + c].to_bits(), expected.to_bits(), "[{r},{c}]");
            }
        }
    }
}
