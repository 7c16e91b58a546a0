//! A 7-bit integer product for relaxed SIMD: one `i32x4.relaxed_dot_i8x16_i7x16_add_s`
//! (16 multiply-adds, accumulated) per 16 multiply-adds, where the 16-bit kernel (`qgemm.rs`)
//! needs a `dot_i16x8` + add pair per 8. In Chromium on an AVX-VNNI EPYC the relaxed dot's peak
//! is 2.2× the i16 pair's in multiply-adds/s (`bench/kernels.mjs URL relaxed`).
//!
//! Measured, not used by the page (`qgemm::QuantPackedWeight`). Wired into the relaxed build
//! (FFN-down inputs coded above GELU's floor), MiniLM q8_0 embedded the full SR set in 58 s
//! against the 16-bit kernel's 61 s (`bench/compare-transformersjs.sh`, 2 helpers): one scale per
//! 16 values costs an epilogue every 4 dots, and coding plus the outliers took ~23 % of the
//! time. It kept the 82 texts' min cosine at 0.99924 (bound 0.999), but the browser's vectors
//! moved from the native CLI's by up to 4.2·10⁻³ per component (16-bit: 3.4·10⁻⁵) and the full
//! SR split's cells by up to 0.60 from sentence-transformers' (16-bit: 0.23), past the ±0.5 the
//! q8_0 checks allow: not worth 5 %.
//!
//! The dot is defined alike on every engine only when one operand lies in 0..127, so the weights
//! (the file's q8_0 / q4_0 integers, signed) are the 8-bit operand and the activations become
//! **7-bit codes** `q` in 0..127 with one scale `s` per 16 values and one zero point `Z` for the
//! whole product, so that `Σ w·x ≈ s·(Σ w·q − Z·Σ w)` with `Σ w` (per column and 16 depths)
//! precomputed and `Z·Σ w` the accumulator's start: the epilogue per 16 depths is one conversion,
//! one multiply and one add per 4 columns.
//! - [`Coding::Symmetric`]: `q = round(x / s) + 64`, `s = max |x| / 63`.
//! - [`Coding::AtLeast`]: for inputs known to be ≥ `floor` (GELU's outputs are ≥ −0.16997):
//!   `q = round((x − floor) / s)`, `s = max (x − floor) / 127`, zero point 0; `floor · Σ w` is
//!   added to the bias. A GELU output spans [−0.17, max]: a symmetric code would waste a bit.
//!
//! Each row's [`OUTLIERS`] largest-magnitude inputs are left out of the codes (coded as exactly
//! 0, resp. `floor`) and multiplied exactly in f32: LayerNorm outputs have a few outlier
//! features that would otherwise set their part's step.
//!
//! Why this coding (measured natively with a temporary patch rounding candle's inputs the same
//! way: min cosine over the 82 reference texts against sentence-transformers, q8_0 files; the
//! bound is 0.999, the file's own rounding gives 0.99946):
//! - 8-bit symmetric per 32 (candle's q8_0 activations): MiniLM 0.99826;
//! - 7-bit asymmetric per 32: MiniLM 0.99796; this coding without the outliers: 0.99820;
//! - this coding (per 16, 4 outliers, GELU inputs shifted): MiniLM 0.99921, MPNet 0.99938;
//!   in Chromium, MiniLM 0.99924.
//!
//! Overflow cannot happen: per lane and 16 depths `|Σ w·q| ≤ 16·128·127 = 260,096` and
//! `|Z·Σ w| ≤ 64·16·128`, far below 2³¹.
//!
//! [`portable_kernel`] and the portable coding are the same arithmetic lane by lane (natively,
//! and the reference the browser test compares the relaxed-SIMD build against, bit for bit).

use anyhow::Result;
use candle_core::quantized::QTensor;

use super::qgemm::{for_each_block, tiled_product, IntegerProduct, BLOCK, MR, NR};
use super::qgemm_relaxed::{grouped_at, relaxed_dot_lane, GROUP};

/// Values per activation scale: half a weight block.
pub const PART: usize = BLOCK / 2;
/// Inputs per row multiplied exactly in f32 instead of coded (the largest magnitudes).
pub const OUTLIERS: usize = 4;
/// The zero point of symmetric codes (`q − 64` in −63..63).
const SYMMETRIC_ZERO: i32 = 64;
/// The lower bound the kernel assumes for GELU's outputs (its minimum is −0.169971).
pub const GELU_FLOOR: f32 = -0.17;

/// How a product's inputs are coded (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Coding {
    Symmetric,
    /// Every input is ≥ this (a smaller one is coded as the floor).
    AtLeast(f32),
}

impl Coding {
    /// The input value that codes exactly (an outlier's place in the codes).
    fn base(self) -> f32 {
        match self {
            Coding::Symmetric => 0.0,
            Coding::AtLeast(floor) => floor,
        }
    }

    fn zero_point(self) -> i32 {
        match self {
            Coding::Symmetric => SYMMETRIC_ZERO,
            Coding::AtLeast(_) => 0,
        }
    }
}

/// A q8_0 / q4_0 weight `[n, k]` in panels of [`NR`] columns: per group of 4 depths, columns
/// 0..4 then 4..8, each column's 4 values side by side (one relaxed-dot operand per 4 columns);
/// each column's block scales, its integer sums per 16 depths, and its dequantized sum.
pub struct Relaxed7Weight {
    values: Vec<i8>,
    scales: Vec<f32>,
    sums: Vec<i32>,
    column_sums: Vec<f32>,
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
        let mut column_sums = vec![0f64; n];
        for_each_block(w, |row, b, scale, block| {
            let (panel, c) = (row / NR, row % NR);
            scales[(panel * blocks + b) * NR + c] = scale;
            for (part, values) in block.chunks_exact(PART).enumerate() {
                sums[(panel * 2 * blocks + 2 * b + part) * NR + c] =
                    values.iter().map(|&v| v as i32).sum();
            }
            column_sums[row] += scale as f64 * block.iter().map(|&v| v as f64).sum::<f64>();
            for (j, &v) in block.iter().enumerate() {
                let kk = b * BLOCK + j;
                values[grouped_at(panel, k, c, kk)] = v;
            }
        })?;
        Ok(Self {
            values,
            scales,
            sums,
            column_sums: column_sums.into_iter().map(|s| s as f32).collect(),
            n,
            k,
        })
    }

    pub fn out_features(&self) -> usize {
        self.n
    }

    /// `x`: `m × k` row-major → `m × n` row-major, plus `bias` (length n) on every row.
    pub fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.matmul_bias_coded(x, m, bias, Coding::Symmetric)
    }

    /// [`Self::matmul_bias`] for inputs that are GELU outputs (≥ [`GELU_FLOOR`]).
    pub fn matmul_bias_gelu_input(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.matmul_bias_coded(x, m, bias, Coding::AtLeast(GELU_FLOOR))
    }

    /// The product with the portable coding and kernel whatever the build: the reference the
    /// relaxed-SIMD one must equal bit for bit (tests/browser_relaxed_kernels.rs).
    pub fn matmul_bias_reference(
        &self,
        x: &[f32],
        m: usize,
        bias: &[f32],
        coding: Coding,
    ) -> Vec<f32> {
        self.product(x, m, bias, coding, portable_kernel, Codes::portable)
    }

    /// The same with this build's kernel and coding (relaxed SIMD in the relaxed build).
    pub fn matmul_bias_coded(&self, x: &[f32], m: usize, bias: &[f32], coding: Coding) -> Vec<f32> {
        self.product(x, m, bias, coding, micro_kernel, Codes::of)
    }

    fn product(
        &self,
        x: &[f32],
        m: usize,
        bias: &[f32],
        coding: Coding,
        kernel: Kernel,
        code: fn(&[f32], usize, Coding) -> Codes,
    ) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        assert_eq!(x.len(), m * k, "input is not {m}×{k}");
        assert_eq!(bias.len(), n, "bias is not {n} long");
        let parts = k / PART;
        let codes = code(x, k, coding);
        // AtLeast(floor): x = (x − floor) + floor, and floor · Σ w goes into the bias.
        let shifted: Vec<f32>;
        let bias = match coding {
            Coding::Symmetric => bias,
            Coding::AtLeast(floor) => {
                shifted = bias
                    .iter()
                    .zip(&self.column_sums)
                    .map(|(b, s)| b + floor * s)
                    .collect();
                &shifted
            }
        };
        let zero_point = coding.zero_point();
        // Tiles start at multiples of MR: tile r0 / MR of the packed codes.
        let mut y = tiled_product(m, n, bias, |tile, panel, r0, _rows| {
            let tile_at = r0 / MR;
            let rows = Rows {
                codes: &codes.packed[tile_at * k * MR..][..k * MR],
                scales: &codes.scales[tile_at * parts * MR..][..parts * MR],
                zero_point,
                k,
            };
            let panel_weight = Panel {
                values: &self.values[panel * k * NR..][..k * NR],
                scales: &self.scales[panel * (k / BLOCK) * NR..][..(k / BLOCK) * NR],
                sums: &self.sums[panel * parts * NR..][..parts * NR],
            };
            kernel(tile, &rows, &panel_weight);
        });
        self.add_outliers(&codes, coding.base(), &mut y);
        y
    }

    /// `y[r] += (x[r][i] − base) · W[·][i]` for each row's uncoded inputs (coded as `base`),
    /// each column of W dequantized once per product (rows share their outlier features).
    fn add_outliers(&self, codes: &Codes, base: f32, y: &mut [f32]) {
        let n = self.n;
        // Feature → its column's place in `columns`.
        let mut slot = vec![u32::MAX; self.k];
        let mut columns = Vec::new();
        for (row, outliers) in y
            .chunks_exact_mut(n)
            .zip(codes.outliers.chunks_exact(OUTLIERS))
        {
            for &(feature, value) in outliers {
                let at = &mut slot[feature as usize];
                if *at == u32::MAX {
                    *at = (columns.len() / n) as u32;
                    self.push_column(feature as usize, &mut columns);
                }
                let column = &columns[*at as usize * n..][..n];
                let value = value - base;
                for (o, &w) in row.iter_mut().zip(column) {
                    *o += value * w;
                }
            }
        }
    }

    /// Appends column `kk` of the dequantized weight (`W[c][kk]` for every output c) to `out`.
    fn push_column(&self, kk: usize, out: &mut Vec<f32>) {
        let blocks = self.k / BLOCK;
        out.extend((0..self.n).map(|c| {
            let (panel, cc) = (c / NR, c % NR);
            self.values[grouped_at(panel, self.k, cc, kk)] as f32
                * self.scales[(panel * blocks + kk / BLOCK) * NR + cc]
        }));
    }
}

impl IntegerProduct for Relaxed7Weight {
    const ACTIVATION_MAX: f32 = 63.0;
    fn from_qtensor(w: &QTensor) -> Result<Self> {
        Self::from_qtensor(w)
    }
    fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.matmul_bias(x, m, bias)
    }
    /// Symmetric coding: half a step (max |x| / 63 of the part, outliers left out) per input;
    /// the outliers are exact.
    fn rounding_bounds(row: &[f32]) -> Vec<f64> {
        let outliers = largest_magnitudes(row).map(|(at, _)| at);
        let mut coded = row.to_vec();
        outliers.iter().for_each(|&at| coded[at] = 0.0);
        let mut bounds = Vec::with_capacity(row.len());
        for (p, part) in coded.chunks_exact(PART).enumerate() {
            let max = part.iter().fold(0f32, |a, &v| a.max(v.abs())) as f64;
            let half_step = max / (2.0 * 63.0) * (1.0 + 1e-5);
            bounds.extend((0..PART).map(|j| {
                if outliers.contains(&(p * PART + j)) {
                    0.0
                } else {
                    half_step
                }
            }));
        }
        bounds
    }
}

/// A row's [`OUTLIERS`] largest-magnitude inputs `(index, value)` in index order; on equal
/// magnitudes the first ones.
fn largest_magnitudes(row: &[f32]) -> [(usize, f32); OUTLIERS] {
    let part_max: Vec<f32> = row
        .chunks_exact(PART)
        .map(Portable::max_magnitude)
        .collect();
    largest_with(row, &part_max)
}

/// [`largest_magnitudes`] given each part's largest magnitude: only parts whose maximum reaches
/// the [`OUTLIERS`]-th largest part maximum can hold an outlier, so only those are scanned.
fn largest_with(row: &[f32], part_max: &[f32]) -> [(usize, f32); OUTLIERS] {
    let threshold = best_of(part_max.iter().copied().enumerate())
        .iter()
        .map(|&(a, _)| a)
        .fold(f32::INFINITY, f32::min);
    let candidates = part_max
        .iter()
        .enumerate()
        .filter(|&(_, &max)| max >= threshold)
        .flat_map(|(p, _)| (p * PART..(p + 1) * PART).map(|i| (i, row[i].abs())));
    let mut picked = best_of(candidates).map(|(_, i)| i);
    picked.sort_unstable();
    picked.map(|i| (i, row[i]))
}

/// The [`OUTLIERS`] largest `(index, magnitude)` as `(magnitude, index)`, largest first, the
/// first index on ties; `(−1, usize::MAX)` fills the slots when there are fewer.
fn best_of(items: impl Iterator<Item = (usize, f32)>) -> [(f32, usize); OUTLIERS] {
    let mut best = [(-1f32, usize::MAX); OUTLIERS];
    for (i, a) in items {
        if a > best[OUTLIERS - 1].0 {
            let mut slot = OUTLIERS - 1;
            while slot > 0 && a > best[slot - 1].0 {
                best[slot] = best[slot - 1];
                slot -= 1;
            }
            best[slot] = (a, i);
        }
    }
    best
}

/// The activations as 7-bit codes with one scale per 16 values, packed per tile of [`MR`] rows
/// so the kernel reads one stream at fixed offsets: per group of 4 depths, the MR rows' 4 codes;
/// per 16 depths, the MR rows' scales. Each row's [`OUTLIERS`] are kept as `(feature, value)`.
/// Rows past `m` in the last tile are the zero point (computed, never copied out).
pub struct Codes {
    packed: Vec<u8>,
    scales: Vec<f32>,
    outliers: Vec<(u32, f32)>,
    k: usize,
}

impl Codes {
    /// This build's coding (simd128 in wasm; the same values as [`Codes::portable`]).
    pub fn of(x: &[f32], k: usize, coding: Coding) -> Self {
        Self::with::<Native>(x, k, coding)
    }

    /// The portable coding.
    pub fn portable(x: &[f32], k: usize, coding: Coding) -> Self {
        Self::with::<Portable>(x, k, coding)
    }

    fn with<C: Coder>(x: &[f32], k: usize, coding: Coding) -> Self {
        assert_eq!(k % BLOCK, 0);
        assert_eq!(x.len() % k, 0);
        let m = x.len() / k;
        let (tiles, parts) = (m.div_ceil(MR), k / PART);
        let mut codes = Self {
            packed: vec![coding.zero_point() as u8; tiles * k * MR],
            scales: vec![0.0; tiles * parts * MR],
            outliers: Vec::with_capacity(m * OUTLIERS),
            k,
        };
        let (base, zero) = (coding.base(), coding.zero_point() as f32);
        let mut part_max = vec![0f32; parts];
        for (i, row) in x.chunks_exact(k).enumerate() {
            for (max, part) in part_max.iter_mut().zip(row.chunks_exact(PART)) {
                *max = C::max_magnitude(part);
            }
            let outliers = largest_with(row, &part_max);
            codes
                .outliers
                .extend(outliers.iter().map(|&(at, v)| (at as u32, v)));
            let (tile, r) = (i / MR, i % MR);
            // Row i's codes: 4 at a time, MR·GROUP apart.
            let row_codes = &mut codes.packed[tile * k * MR + r * GROUP..][..k * MR - r * GROUP];
            let scales = &mut codes.scales[tile * parts * MR + r..];
            let mut next_outlier = 0;
            for (p, part) in row.chunks_exact(PART).enumerate() {
                // A part holding an outlier is coded with the outlier at the base.
                let mut with_base = [0f32; PART];
                let mut values = part;
                while next_outlier < OUTLIERS && outliers[next_outlier].0 / PART == p {
                    if std::ptr::eq(values, part) {
                        with_base.copy_from_slice(part);
                    }
                    with_base[outliers[next_outlier].0 % PART] = base;
                    values = &with_base;
                    next_outlier += 1;
                }
                let (max, levels) = match coding {
                    // Without an outlier the part's maximum is known.
                    Coding::Symmetric if std::ptr::eq(values, part) => (part_max[p], 63.0),
                    Coding::Symmetric => (C::max_magnitude(values), 63.0),
                    Coding::AtLeast(floor) => (C::max_above(values, floor), 127.0),
                };
                let scale = max / levels;
                let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
                scales[p * MR] = scale;
                let q = C::code(values, base, inverse, zero);
                for (j, four) in q.chunks_exact(GROUP).enumerate() {
                    let at = (p * PART / GROUP + j) * MR * GROUP;
                    row_codes[at..at + GROUP].copy_from_slice(four);
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

    /// Row `i`'s input at depth `kk` as coded: `(code, its part's scale)`.
    pub fn value(&self, i: usize, kk: usize) -> (u8, f32) {
        let at = (i / MR * (self.k / PART) + kk / PART) * MR + i % MR;
        (self.packed[self.at(i, kk)], self.scales[at])
    }

    /// Row `i`'s uncoded inputs `(feature, value)`.
    pub fn outliers(&self, i: usize) -> &[(u32, f32)] {
        &self.outliers[i * OUTLIERS..][..OUTLIERS]
    }
}

/// The per-part steps of the coding, portable or simd128 (the same f32 operations, so the same
/// values for every non-NaN input: max is order-free, the rest is lane by lane).
trait Coder {
    /// `max |x|` (0 for all zeros).
    fn max_magnitude(values: &[f32]) -> f32;
    /// `max (x − floor)`, at least 0.
    fn max_above(values: &[f32], floor: f32) -> f32;
    /// `clamp(round((x − base) · inverse) + zero, 0, 127)` for 16 values.
    fn code(values: &[f32], base: f32, inverse: f32, zero: f32) -> [u8; PART];
}

struct Portable;

impl Coder for Portable {
    fn max_magnitude(values: &[f32]) -> f32 {
        values.iter().fold(0f32, |a, &x| a.max(x.abs()))
    }
    fn max_above(values: &[f32], floor: f32) -> f32 {
        values.iter().fold(0f32, |a, &x| a.max(x - floor))
    }
    fn code(values: &[f32], base: f32, inverse: f32, zero: f32) -> [u8; PART] {
        std::array::from_fn(|j| {
            (((values[j] - base) * inverse).round_ties_even() + zero).clamp(0.0, 127.0) as u8
        })
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
type Native = Portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
type Native = simd::Simd;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd {
    use super::{Coder, PART};
    use core::arch::wasm32::*;

    pub struct Simd;

    impl Coder for Simd {
        #[inline]
        fn max_magnitude(values: &[f32]) -> f32 {
            max_of(values, |x| f32x4_abs(x))
        }
        #[inline]
        fn max_above(values: &[f32], floor: f32) -> f32 {
            let floor = f32x4_splat(floor);
            max_of(values, |x| f32x4_sub(x, floor))
        }
        /// The portable code's f32 steps 4 lanes at a time (pmin/pmax: its clamp, for non-NaN).
        #[inline]
        fn code(values: &[f32], base: f32, inverse: f32, zero: f32) -> [u8; PART] {
            assert_eq!(values.len(), PART);
            let (base, inverse) = (f32x4_splat(base), f32x4_splat(inverse));
            let (zero, low, high) = (f32x4_splat(zero), f32x4_splat(0.0), f32x4_splat(127.0));
            // SAFETY: 16 values read, as asserted; unaligned v128 loads are allowed.
            unsafe {
                let src = values.as_ptr() as *const v128;
                let lanes: [v128; 4] = std::array::from_fn(|i| {
                    let scaled = f32x4_mul(f32x4_sub(v128_load(src.add(i)), base), inverse);
                    let v = f32x4_add(f32x4_nearest(scaled), zero);
                    i32x4_trunc_sat_f32x4(f32x4_pmin(high, f32x4_pmax(low, v)))
                });
                let bytes = u8x16_narrow_i16x8(
                    i16x8_narrow_i32x4(lanes[0], lanes[1]),
                    i16x8_narrow_i32x4(lanes[2], lanes[3]),
                );
                std::mem::transmute::<v128, [u8; PART]>(bytes)
            }
        }
    }

    /// `max(0, f(x)…)` over 16 values; `pmax` equals `f32::max` for non-NaN values.
    #[inline]
    fn max_of(values: &[f32], f: impl Fn(v128) -> v128) -> f32 {
        assert_eq!(values.len(), PART);
        // SAFETY: 16 values read, as asserted; unaligned v128 loads are allowed.
        let m = unsafe {
            let src = values.as_ptr() as *const v128;
            let [a, b, c, d] = [0, 1, 2, 3].map(|i| f(v128_load(src.add(i))));
            f32x4_pmax(f32x4_pmax(a, b), f32x4_pmax(c, d))
        };
        let lanes = [
            f32x4_extract_lane::<0>(m),
            f32x4_extract_lane::<1>(m),
            f32x4_extract_lane::<2>(m),
            f32x4_extract_lane::<3>(m),
        ];
        lanes.into_iter().fold(0f32, f32::max)
    }
}

type Kernel = fn(&mut [[f32; NR]; MR], &Rows, &Panel);

/// One tile of [`MR`] rows: its packed codes, scales and the product's zero point.
struct Rows<'a> {
    codes: &'a [u8],
    scales: &'a [f32],
    zero_point: i32,
    k: usize,
}

/// One panel's packed values, block scales and sums per 16 depths.
struct Panel<'a> {
    values: &'a [i8],
    scales: &'a [f32],
    sums: &'a [i32],
}

/// `tile[r][c] += Σ_parts (Σ_kk q[r][kk]·w[c][kk] − Z·Σ w[c]) · (w_scale[c] · x_scale[r])`.
fn micro_kernel(tile: &mut [[f32; NR]; MR], rows: &Rows, panel: &Panel) {
    #[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
    return relaxed_kernel(tile, rows, panel);
    #[allow(unreachable_code)]
    portable_kernel(tile, rows, panel)
}

/// [`micro_kernel`] with relaxed SIMD, one half of the panel (4 columns) at a time so that the
/// 4 rows' f32 sums stay in registers next to their 4 integer ones.
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
fn relaxed_kernel(tile: &mut [[f32; NR]; MR], rows: &Rows, panel: &Panel) {
    use core::arch::wasm32::*;
    let (k, parts) = (rows.k, rows.k / PART);
    assert!(panel.values.len() >= k * NR && rows.codes.len() >= k * MR);
    assert!(panel.scales.len() >= k / BLOCK * NR && panel.sums.len() >= parts * NR);
    assert!(rows.scales.len() >= parts * MR);
    // SAFETY: the asserts bound every read: values[0 .. k·NR), codes[0 .. k·MR), scales
    // [0 .. blocks·NR), sums [0 .. parts·NR), x scales [0 .. parts·MR); the tile is
    // [[f32; NR]; MR], read and written as 2·MR v128. Unaligned loads are allowed in wasm.
    unsafe {
        let t = tile.as_mut_ptr() as *mut v128;
        let (wp, cp) = (panel.values.as_ptr(), rows.codes.as_ptr());
        let minus_zero = i32x4_splat(-rows.zero_point);
        for half in 0..2 {
            let mut out: [v128; MR] = std::array::from_fn(|r| v128_load(t.add(2 * r + half)));
            for p in 0..parts {
                let start = i32x4_mul(
                    minus_zero,
                    v128_load(panel.sums.as_ptr().add(p * NR + 4 * half) as *const v128),
                );
                let mut acc = [start; MR];
                for g in p * PART / GROUP..(p + 1) * PART / GROUP {
                    let w = v128_load(wp.add(g * GROUP * NR + 16 * half) as *const v128);
                    let c = cp.add(g * MR * GROUP);
                    for (r, a) in acc.iter_mut().enumerate() {
                        // The row's 4 codes at depths 4g..4g+4, in every 32-bit lane.
                        let x = v128_load32_splat(c.add(r * GROUP) as *const u32);
                        *a = i32x4_relaxed_dot_i8x16_i7x16_add(w, x, *a);
                    }
                }
                let ws = v128_load(panel.scales.as_ptr().add(p / 2 * NR + 4 * half) as *const v128);
                for (r, sum) in out.iter_mut().enumerate() {
                    let x_scale = f32x4_splat(*rows.scales.get_unchecked(p * MR + r));
                    let scaled = f32x4_mul(f32x4_convert_i32x4(acc[r]), f32x4_mul(ws, x_scale));
                    *sum = f32x4_add(*sum, scaled);
                }
            }
            for (r, sum) in out.into_iter().enumerate() {
                v128_store(t.add(2 * r + half), sum);
            }
        }
    }
}

/// The same integer arithmetic, lane by lane, in plain Rust (identical results: integer sums are
/// exact and the f32 steps run in the same order).
fn portable_kernel(tile: &mut [[f32; NR]; MR], rows: &Rows, panel: &Panel) {
    let parts = rows.k / PART;
    for p in 0..parts {
        for (r, out) in tile.iter_mut().enumerate() {
            let x_scale = rows.scales[p * MR + r];
            for (c, o) in out.iter_mut().enumerate() {
                let dot: i32 = (p * PART / GROUP..(p + 1) * PART / GROUP)
                    .map(|g| {
                        let w = &panel.values[(g * NR + c) * GROUP..];
                        relaxed_dot_lane(w, &rows.codes[(g * MR + r) * GROUP..])
                    })
                    .sum();
                let exact = dot - rows.zero_point * panel.sums[p * NR + c];
                *o += exact as f32 * (panel.scales[p / 2 * NR + c] * x_scale);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::GgmlDType;

    use crate::backend::cpu::kernel_check::{
        quantized_kernel_check, random_values, QUANT_EDGE_SHAPES,
    };

    #[test]
    fn q8_0_and_q4_0_products_match_the_dequantized_weight() {
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
            for &(m, n, k) in QUANT_EDGE_SHAPES.iter().chain(&[(14, 384, 384)]) {
                quantized_kernel_check::<Relaxed7Weight>(dtype, m, n, k).unwrap();
            }
        }
    }

    /// Every input rebuilt from its code within half a step of its part, outliers left out (and
    /// coded as exactly the base); both codings.
    #[test]
    fn codes_rebuild_the_input_within_half_a_step() {
        let mut x: Vec<f32> = random_values(3 * 64, 7);
        x[5] = 40.0; // an outlier
        x[64 + 20] = -0.001; // a part of tiny values next to large ones elsewhere in the row
        x[160..176].iter_mut().for_each(|v| *v = 0.0); // all zero
        for coding in [Coding::Symmetric, Coding::AtLeast(-1.0)] {
            let codes = Codes::of(&x, 64, coding);
            for (i, &v) in x.iter().enumerate() {
                let (row, kk) = (i / 64, i % 64);
                let (q, scale) = codes.value(row, kk);
                let zero = coding.zero_point();
                assert!(q <= 127, "{i}: code {q}");
                if let Some(&(_, value)) = codes.outliers(row).iter().find(|o| o.0 as usize == kk) {
                    assert_eq!(
                        (q as i32, value),
                        (zero, v),
                        "{i}: an outlier is coded as the base"
                    );
                    continue;
                }
                let rebuilt = scale * (q as i32 - zero) as f32 + coding.base();
                assert!(
                    (rebuilt - v).abs() <= scale * 0.5 * (1.0 + 1e-5) + 1e-6,
                    "{coding:?} {i}: {v} coded as {rebuilt} (step {scale})"
                );
            }
            if coding == Coding::Symmetric {
                assert_eq!(codes.value(2, 32).1, 0.0, "an all-zero part");
            }
        }
    }

    /// GELU-input coding against f64 on GELU-like inputs (≥ −0.17, a long positive tail).
    #[test]
    fn gelu_input_coding_matches_f64() {
        let (m, n, k) = (9, 20, 96);
        let w = candle_core::Tensor::from_vec(
            random_values(n * k, 2),
            (n, k),
            &candle_core::Device::Cpu,
        )
        .unwrap();
        let q = QTensor::quantize(&w, GgmlDType::Q8_0).unwrap();
        let dense: Vec<f32> = q
            .dequantize(&candle_core::Device::Cpu)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let x: Vec<f32> = random_values(m * k, 5)
            .iter()
            .map(|v| (v * 3.0).max(-0.17))
            .collect();
        let y = Relaxed7Weight::from_qtensor(&q)
            .unwrap()
            .matmul_bias_gelu_input(&x, m, &vec![0.5; n]);
        for r in 0..m {
            for c in 0..n {
                let exact: f64 = (0..k)
                    .map(|kk| x[r * k + kk] as f64 * dense[c * k + kk] as f64)
                    .sum::<f64>()
                    + 0.5;
                // Half a step of (3 + 0.17) / 127 per input, times |w| ≤ 1.
                let bound = k as f64 * 3.17 / 254.0 * 1.01;
                assert!(
                    (y[r * n + c] as f64 - exact).abs() <= bound,
                    "[{r},{c}] {} vs {exact}",
                    y[r * n + c]
                );
            }
        }
    }

    #[test]
    fn the_four_largest_magnitudes_are_the_outliers() {
        let mut row = vec![0.5f32; 64];
        (row[1], row[40], row[17], row[63], row[2]) = (-3.0, 3.0, 2.0, -2.5, 1.0);
        assert_eq!(
            largest_magnitudes(&row),
            [(1, -3.0), (17, 2.0), (40, 3.0), (63, -2.5)]
        );
        assert_eq!(
            largest_magnitudes(&[0.0; 32]).map(|o| o.0),
            [0, 1, 2, 3],
            "ties: the first ones"
        );
    }
}
