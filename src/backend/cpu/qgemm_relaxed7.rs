//! The integer product the relaxed-SIMD build runs: one `i32x4.relaxed_dot_i8x16_i7x16_add_s`
//! (16 multiply-adds, accumulated) per 16 multiply-adds, where the 16-bit kernel needs a
//! `dot_i16x8` + add pair per 8. In Chromium on an AVX-VNNI EPYC the relaxed dot's peak is 2.2×
//! the i16 pair's in multiply-adds/s (`bench/kernels.mjs`).
//!
//! The dot is defined alike on every engine only when one operand lies in 0..127, so the weights
//! (the file's q8_0 / q4_0 integers, signed) are the 8-bit operand and the activations become
//! **7-bit codes**, asymmetric per 16 values: with `lo = min(0, x…)`, `hi = max(0, x…)`,
//! `s = (hi − lo) / 127` and the zero point `z = round(−lo / s)`,
//! `q = clamp(round(x / s) + z, 0, 127)` and `x ≈ s·(q − z)`; per column and 16 depths
//! `Σ w·x ≈ s·(Σ w·q − z·Σ w)`, `Σ w` precomputed when the weight is packed.
//!
//! Why that precision keeps parity (measured natively by rounding candle's inputs the same way,
//! min cosine over the 82 reference texts against sentence-transformers, q8_0 files):
//! - 8-bit symmetric per 32 (candle's q8_0 activations): MiniLM 0.99826;
//! - 7-bit asymmetric per 32: MiniLM 0.99796; almost all of the loss is in Q/K/V, whose input
//!   (a LayerNorm output) has a few outlier features that set their block's step;
//! - the same with each row's 2 largest-magnitude inputs taken out of the codes and multiplied
//!   exactly in f32, per 16: MiniLM 0.99919, MPNet 0.99932 (the bound is 0.999; the file's own
//!   rounding gives 0.99946 / 0.99946). That is this kernel.
//!
//! Overflow cannot happen: per lane and 16 depths `|Σ w·q| ≤ 16·128·127 = 260,096` and
//! `|z·Σ w| ≤ 127·16·128`, far below 2³¹.
//!
//! [`portable_kernel`] is the same integer arithmetic lane by lane (natively, and the reference
//! the browser test compares the engine's relaxed dot against, bit for bit).

use std::collections::HashMap;

use anyhow::Result;
use candle_core::quantized::QTensor;

use super::qgemm::{for_each_block, tiled_product, IntegerProduct, BLOCK, MR, NR};
use super::qgemm_relaxed::{relaxed_dot_lane, GROUP};

/// Values per activation scale: half a weight block.
pub const HALF: usize = BLOCK / 2;
/// The largest code.
const CODE_MAX: f32 = 127.0;
/// Inputs per row multiplied exactly in f32 instead of coded (the largest magnitudes; the scan in
/// `largest_magnitudes` keeps two).
pub const OUTLIERS: usize = 2;

/// A q8_0 / q4_0 weight `[n, k]` in panels of [`NR`] columns: per group of 4 depths, columns
/// 0..4 then 4..8, each column's 4 values side by side (one relaxed-dot operand per 4 columns);
/// each column's block scales and its sums per 16 depths.
pub struct Relaxed7Weight {
    values: Vec<i8>,
    scales: Vec<f32>,
    sums: Vec<i32>,
    n: usize,
    k: usize,
}

impl Relaxed7Weight {
    /// From a q8_0 or q4_0 tensor of shape `[n, k]`; other dtypes are refused.
    pub fn from_qtensor(w: &QTensor) -> Result<Self> {
        let (n, k) = w.shape().dims2()?;
        let (blocks, panels) = (k / BLOCK, n.div_ceil(NR));
        let mut values = vec![0i8; panels * k * NR];
        let mut scales = vec![0f32; panels * blocks * NR];
        let mut sums = vec![0i32; panels * 2 * blocks * NR];
        for_each_block(w, |row, b, scale, block| {
            let (panel, c) = (row / NR, row % NR);
            scales[(panel * blocks + b) * NR + c] = scale;
            for (half, part) in block.chunks_exact(HALF).enumerate() {
                sums[(panel * 2 * blocks + 2 * b + half) * NR + c] =
                    part.iter().map(|&v| v as i32).sum();
            }
            for (j, &v) in block.iter().enumerate() {
                let kk = b * BLOCK + j;
                values[panel * k * NR + (kk / GROUP) * GROUP * NR + c * GROUP + kk % GROUP] = v;
            }
        })?;
        Ok(Self {
            values,
            scales,
            sums,
            n,
            k,
        })
    }

    pub fn out_features(&self) -> usize {
        self.n
    }

    /// `x`: `m × k` row-major → `m × n` row-major, plus `bias` (length n) on every row.
    pub fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.product(x, m, bias, micro_kernel)
    }

    /// [`Self::matmul_bias`] with the portable kernel whatever the build: the reference the
    /// relaxed-SIMD one must equal bit for bit (tests/browser_relaxed_kernels.rs).
    pub fn matmul_bias_reference(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.product(x, m, bias, portable_kernel)
    }

    fn product(&self, x: &[f32], m: usize, bias: &[f32], kernel: Kernel) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        assert_eq!(x.len(), m * k, "input is not {m}×{k}");
        let halves = k / HALF;
        let codes = Codes::of(x, k);
        // Tiles start at multiples of MR: tile r0 / MR of the packed codes.
        let mut y = tiled_product(m, n, bias, |tile, panel, r0, _rows| {
            let tile_at = r0 / MR;
            let rows = Rows {
                codes: &codes.packed[tile_at * k * MR..][..k * MR],
                zero_points: &codes.zero_points[tile_at * halves * MR..][..halves * MR],
                scales: &codes.scales[tile_at * halves * MR..][..halves * MR],
                k,
            };
            let blocks = k / BLOCK;
            let panel_weight = Panel {
                values: &self.values[panel * k * NR..][..k * NR],
                scales: &self.scales[panel * blocks * NR..][..blocks * NR],
                sums: &self.sums[panel * halves * NR..][..halves * NR],
            };
            kernel(tile, &rows, &panel_weight);
        });
        self.add_outliers(&codes, &mut y);
        y
    }

    /// `y[r] += x[r][i] · W[·][i]` for each row's uncoded inputs, each column of W dequantized
    /// once per product (rows share their outlier features).
    fn add_outliers(&self, codes: &Codes, y: &mut [f32]) {
        let mut columns: HashMap<usize, Vec<f32>> = HashMap::new();
        for (row, outliers) in y
            .chunks_exact_mut(self.n)
            .zip(codes.outliers.chunks_exact(OUTLIERS))
        {
            for &(feature, value) in outliers {
                let column = columns
                    .entry(feature as usize)
                    .or_insert_with(|| self.column(feature as usize));
                for (o, &w) in row.iter_mut().zip(column.iter()) {
                    *o += value * w;
                }
            }
        }
    }

    /// Column `kk` of the dequantized weight: `W[c][kk]` for every output c.
    fn column(&self, kk: usize) -> Vec<f32> {
        let (k, blocks) = (self.k, self.k / BLOCK);
        (0..self.n)
            .map(|c| {
                let (panel, cc) = (c / NR, c % NR);
                let value = self.values
                    [panel * k * NR + (kk / GROUP) * GROUP * NR + cc * GROUP + kk % GROUP];
                value as f32 * self.scales[(panel * blocks + kk / BLOCK) * NR + cc]
            })
            .collect()
    }
}

impl IntegerProduct for Relaxed7Weight {
    const ACTIVATION_MAX: f32 = CODE_MAX;
    fn from_qtensor(w: &QTensor) -> Result<Self> {
        Self::from_qtensor(w)
    }
    fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.matmul_bias(x, m, bias)
    }
    fn rounding_bounds(row: &[f32]) -> Vec<f64> {
        let outliers = largest_magnitudes(row).map(|(at, _)| at);
        let mut coded = row.to_vec();
        outliers.iter().for_each(|&at| coded[at] = 0.0);
        let mut bounds = Vec::with_capacity(row.len());
        for (h, part) in coded.chunks_exact(HALF).enumerate() {
            let lo = part.iter().fold(0f32, |a, &v| a.min(v)) as f64;
            let hi = part.iter().fold(0f32, |a, &v| a.max(v)) as f64;
            let half_step = (hi - lo) / (2.0 * CODE_MAX as f64) * (1.0 + 1e-5);
            bounds.extend((0..HALF).map(|j| {
                if outliers.contains(&(h * HALF + j)) {
                    0.0
                } else {
                    half_step
                }
            }));
        }
        bounds
    }
}

/// A row's [`OUTLIERS`] largest-magnitude inputs `(index, value)`, the first on ties.
fn largest_magnitudes(row: &[f32]) -> [(usize, f32); OUTLIERS] {
    let (mut first, mut second) = ((0, -1f32), (0, -1f32));
    for (i, v) in row.iter().map(|v| v.abs()).enumerate() {
        if v > first.1 {
            (second, first) = (first, (i, v));
        } else if v > second.1 {
            second = (i, v);
        }
    }
    [first.0, second.0].map(|i| (i, row[i]))
}

/// The activations as 7-bit codes with one scale and zero point per 16 values, packed per tile
/// of [`MR`] rows so the kernel reads one stream at fixed offsets: per group of 4 depths, the MR
/// rows' 4 codes; per 16 depths, the MR rows' zero points and scales. Each row's [`OUTLIERS`]
/// largest inputs are coded as 0 and kept as `(feature, value)`. Rows past `m` in the last tile
/// are zeros (computed, never copied out).
pub struct Codes {
    packed: Vec<u8>,
    zero_points: Vec<i32>,
    scales: Vec<f32>,
    outliers: Vec<(u32, f32)>,
    k: usize,
}

impl Codes {
    /// Rounds half to even (wasm's `nearest`, one instruction), the same code in every build.
    pub fn of(x: &[f32], k: usize) -> Self {
        assert_eq!(k % BLOCK, 0);
        assert_eq!(x.len() % k, 0);
        let m = x.len() / k;
        let (tiles, halves) = (m.div_ceil(MR), k / HALF);
        let mut codes = Self {
            packed: vec![0; tiles * k * MR],
            zero_points: vec![0; tiles * halves * MR],
            scales: vec![0.0; tiles * halves * MR],
            outliers: Vec::with_capacity(m * OUTLIERS),
            k,
        };
        let mut coded = vec![0f32; k];
        let mut q = [0u8; HALF];
        for (i, row) in x.chunks_exact(k).enumerate() {
            coded.copy_from_slice(row);
            for (at, value) in largest_magnitudes(row) {
                coded[at] = 0.0;
                codes.outliers.push((at as u32, value));
            }
            let (tile, r) = (i / MR, i % MR);
            for (h, values) in coded.chunks_exact(HALF).enumerate() {
                let (scale, zero) = code_half(values, &mut q);
                codes.scales[(tile * halves + h) * MR + r] = scale;
                codes.zero_points[(tile * halves + h) * MR + r] = zero;
                for j in (0..HALF).step_by(GROUP) {
                    let at = codes.at(i, h * HALF + j);
                    codes.packed[at..at + GROUP].copy_from_slice(&q[j..j + GROUP]);
                }
            }
        }
        codes
    }

    /// Where row `i`'s code at depth `kk` is.
    fn at(&self, i: usize, kk: usize) -> usize {
        let (tile, r) = (i / MR, i % MR);
        tile * self.k * MR + kk / GROUP * MR * GROUP + r * GROUP + kk % GROUP
    }

    /// Row `i`'s input at depth `kk` as coded: `(code, zero point, scale)`.
    pub fn value(&self, i: usize, kk: usize) -> (u8, i32, f32) {
        let halves = self.k / HALF;
        let at = (i / MR * halves + kk / HALF) * MR + i % MR;
        (
            self.packed[self.at(i, kk)],
            self.zero_points[at],
            self.scales[at],
        )
    }
}

/// Codes 16 values into `q`; returns `(scale, zero point)`. An all-zero part gets `(0, 0)`.
fn code_half(values: &[f32], q: &mut [u8; HALF]) -> (f32, i32) {
    let lo = values.iter().fold(0f32, |a, &v| a.min(v));
    let hi = values.iter().fold(0f32, |a, &v| a.max(v));
    let range = hi - lo;
    if range.is_nan() || range <= 0.0 {
        *q = [0; HALF];
        return (0.0, 0);
    }
    let inverse = CODE_MAX / range;
    // −lo · inverse lies in 0..=127 (−lo ≤ range).
    let zero = (-lo * inverse).round_ties_even();
    for (c, &v) in q.iter_mut().zip(values) {
        *c = ((v * inverse).round_ties_even() + zero).clamp(0.0, CODE_MAX) as u8;
    }
    (range / CODE_MAX, zero as i32)
}

type Kernel = fn(&mut [[f32; NR]; MR], &Rows, &Panel);

/// One tile of [`MR`] rows: its packed codes, zero points and scales ([`Codes`]).
struct Rows<'a> {
    codes: &'a [u8],
    zero_points: &'a [i32],
    scales: &'a [f32],
    k: usize,
}

/// One panel's packed values, block scales and sums per 16 depths.
struct Panel<'a> {
    values: &'a [i8],
    scales: &'a [f32],
    sums: &'a [i32],
}

/// `tile[r][c] += Σ_halves (Σ_kk q[r][kk]·w[c][kk] − z[r]·Σ w[c]) · (w_scale[c] · x_scale[r])`.
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
    let (k, halves) = (rows.k, rows.k / HALF);
    assert!(panel.values.len() >= k * NR && rows.codes.len() >= k * MR);
    assert!(panel.scales.len() >= k / BLOCK * NR && panel.sums.len() >= halves * NR);
    assert!(rows.zero_points.len() >= halves * MR && rows.scales.len() >= halves * MR);
    // SAFETY: the asserts bound every read: values[0 .. k·NR), codes[0 .. k·MR), scales
    // [0 .. blocks·NR), sums [0 .. halves·NR), zero points and x scales [0 .. halves·MR); the
    // tile is [[f32; NR]; MR]. Unaligned loads are allowed in wasm.
    unsafe {
        let t = tile.as_mut_ptr() as *mut v128;
        let (wp, cp) = (panel.values.as_ptr(), rows.codes.as_ptr());
        for h in 0..halves {
            // Row r's columns 0..4 and 4..8.
            let mut acc = [i32x4_splat(0); 2 * MR];
            for g in h * HALF / GROUP..(h + 1) * HALF / GROUP {
                let w0 = v128_load(wp.add(g * GROUP * NR) as *const v128);
                let w1 = v128_load(wp.add(g * GROUP * NR + 16) as *const v128);
                let c = cp.add(g * MR * GROUP);
                for r in 0..MR {
                    // The row's 4 codes at depths 4g..4g+4, in every 32-bit lane.
                    let x = v128_load32_splat(c.add(r * GROUP) as *const u32);
                    acc[2 * r] = i32x4_relaxed_dot_i8x16_i7x16_add(w0, x, acc[2 * r]);
                    acc[2 * r + 1] = i32x4_relaxed_dot_i8x16_i7x16_add(w1, x, acc[2 * r + 1]);
                }
            }
            let b = h / 2;
            let sums =
                [0, 4].map(|j| v128_load(panel.sums.as_ptr().add(h * NR + j) as *const v128));
            let ws =
                [0, 4].map(|j| v128_load(panel.scales.as_ptr().add(b * NR + j) as *const v128));
            for r in 0..MR {
                let zero = i32x4_splat(*rows.zero_points.get_unchecked(h * MR + r));
                let x_scale = f32x4_splat(*rows.scales.get_unchecked(h * MR + r));
                for j in 0..2 {
                    let i = 2 * r + j;
                    let exact = i32x4_sub(acc[i], i32x4_mul(zero, sums[j]));
                    let scaled = f32x4_mul(f32x4_convert_i32x4(exact), f32x4_mul(ws[j], x_scale));
                    v128_store(t.add(i), f32x4_add(v128_load(t.add(i)), scaled));
                }
            }
        }
    }
}

/// The same integer arithmetic, lane by lane, in plain Rust (identical results: integer sums are
/// exact and the f32 steps run in the same order).
fn portable_kernel(tile: &mut [[f32; NR]; MR], rows: &Rows, panel: &Panel) {
    let halves = rows.k / HALF;
    for h in 0..halves {
        let b = h / 2;
        for (r, out) in tile.iter_mut().enumerate() {
            let (zero, x_scale) = (rows.zero_points[h * MR + r], rows.scales[h * MR + r]);
            for (c, o) in out.iter_mut().enumerate() {
                let dot: i32 = (h * HALF / GROUP..(h + 1) * HALF / GROUP)
                    .map(|g| {
                        let w = &panel.values[(g * NR + c) * GROUP..];
                        relaxed_dot_lane(w, &rows.codes[(g * MR + r) * GROUP..])
                    })
                    .sum();
                let exact = dot - zero * panel.sums[h * NR + c];
                *o += exact as f32 * (panel.scales[b * NR + c] * x_scale);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::GgmlDType;

    use crate::backend::cpu::kernel_check::{quantized_kernel_check, QUANT_EDGE_SHAPES};

    #[test]
    fn q8_0_and_q4_0_products_match_the_dequantized_weight() {
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
            for &(m, n, k) in QUANT_EDGE_SHAPES.iter().chain(&[(14, 384, 384)]) {
                quantized_kernel_check::<Relaxed7Weight>(dtype, m, n, k).unwrap();
            }
        }
    }

    #[test]
    fn codes_are_seven_bit_and_rebuild_the_input_within_half_a_step() {
        let mut x: Vec<f32> = crate::backend::cpu::kernel_check::random_values(3 * 64, 7);
        x[5] = 40.0; // an outlier: kept exact, out of its part's step
        x[64 + 20] = -0.001; // a part of tiny values next to large ones elsewhere in the row
        x[144..160].iter_mut().for_each(|v| *v = v.abs() + 0.5); // all positive: zero point 0
        x[160..176].iter_mut().for_each(|v| *v = 0.0); // all zero
        let codes = Codes::of(&x, 64);
        for (i, &v) in x.iter().enumerate() {
            let (row, kk) = (i / 64, i % 64);
            let (q, zero, scale) = codes.value(row, kk);
            assert!(
                q <= 127 && (0..=127).contains(&zero),
                "{i}: code {q}, zero point {zero}"
            );
            let outlier = largest_magnitudes(&x[row * 64..][..64])
                .iter()
                .any(|&(at, _)| at == kk);
            if outlier {
                assert_eq!(q as i32, zero, "{i}: an outlier is coded as 0");
                continue;
            }
            let rebuilt = scale * (q as i32 - zero) as f32;
            assert!(
                (rebuilt - v).abs() <= scale * 0.5 * (1.0 + 1e-5) + 1e-7,
                "{i}: {v} coded as {rebuilt} (step {scale})"
            );
        }
        assert_eq!(
            codes.value(2, 16).1,
            0,
            "an all-positive part has zero point 0"
        );
        assert_eq!(codes.value(2, 32), (0, 0, 0.0), "an all-zero part");
    }

    #[test]
    fn the_two_largest_magnitudes_are_the_outliers() {
        assert_eq!(
            largest_magnitudes(&[0.5, -3.0, 2.0, 3.0, -0.1]),
            [(1, -3.0), (3, 3.0)]
        );
        assert_eq!(largest_magnitudes(&[0.0; 32]), [(0, 0.0), (1, 0.0)]);
    }
}
