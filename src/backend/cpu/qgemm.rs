//! Integer matrix product for q8_0 / q4_0 weights in wasm: `y = x·Wᵀ + b` with W's 8-bit (or
//! 4-bit) block values used exactly as stored, and `x` rounded to 16 bits per block of 32.
//!
//! Why: wasm simd128's `i32x4.dot_i16x8_s` does 8 multiply-adds per instruction where f32 does
//! 4, so the product runs up to twice the f32 kernel's speed at the same instruction rate, and the
//! weights take half the memory of f32. Accuracy: the weights are the file's own integers (no
//! error beyond the file's); activations keep 16 bits per block of 32 (relative error ≤ 2⁻¹⁵ of the
//! block's largest value), far below what q8_0 activations (candle's int8 path) lose.
//!
//! Overflow cannot happen: one block sums 32 products ≤ 127 · 32767 in i32 (≤ 1.4·10⁸).
//!
//! Kernels with fewer activation bits were measured and lost (docs/cpu-kernels.md).

mod rounding;
mod tiles;
#[cfg(target_arch = "x86_64")]
mod x86;

use anyhow::{bail, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use half::f16;

use rounding::quantize_rows;
use tiles::tiled_product;

/// Values per scale block (q8_0 and q4_0 both use 32).
pub const BLOCK: usize = 32;
/// Rows of `x` per micro-kernel call.
pub(super) const MR: usize = 4;
/// Output columns per panel: two groups of 4 i32 lanes.
pub(super) const NR: usize = 8;
/// Rows per pass (whole tiles): their 16-bit `x` (MC × k × 2 bytes, ≤ 192 KB at k = 1536)
/// stays in L2.
pub(super) const MC: usize = 16 * MR;

/// The integer product the page runs: the 16-bit kernel (the alternatives measured against it
/// are in docs/cpu-kernels.md).
pub type QuantPackedWeight = Int16PackedWeight;

/// What the kernel checks need of an integer product (`kernel_check.rs`).
pub trait IntegerProduct: Sized {
    /// The largest activation magnitude per block (32767 for 16 bits).
    const ACTIVATION_MAX: f32;
    fn from_qtensor(w: &QTensor) -> Result<Self>;
    fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32>;
    /// The most each input of `row` (one row of `x`) moves when rounded: half a step of its
    /// block (symmetric per 32).
    fn rounding_bounds(row: &[f32]) -> Vec<f64> {
        row.chunks_exact(BLOCK)
            .flat_map(|block| {
                let max = block.iter().fold(0f32, |a, v| a.max(v.abs())) as f64;
                [max / (2.0 * Self::ACTIVATION_MAX as f64); BLOCK]
            })
            .collect()
    }
}

/// Reads a q8_0 / q4_0 weight `[n, k]` block by block: `each(row, block, scale, integers)`.
/// Returns `(n, k)`; other dtypes and inconsistent sizes are refused.
pub(super) fn for_each_block(
    w: &QTensor,
    mut each: impl FnMut(usize, usize, f32, &[i8; BLOCK]),
) -> Result<(usize, usize)> {
    let (n, k) = w.shape().dims2()?;
    let bytes = w.data()?;
    let (block_bytes, decode): (usize, BlockDecoder) = match w.dtype() {
        GgmlDType::Q8_0 => (2 + BLOCK, decode_q8_0),
        GgmlDType::Q4_0 => (2 + BLOCK / 2, decode_q4_0),
        other => bail!("the integer kernel takes q8_0 or q4_0 weights, not {other:?}"),
    };
    if k % BLOCK != 0 || bytes.len() != n * (k / BLOCK) * block_bytes {
        bail!("a {n}×{k} {:?} weight has {} bytes", w.dtype(), bytes.len());
    }
    let mut block = [0i8; BLOCK];
    for (row, row_bytes) in bytes.chunks_exact(k / BLOCK * block_bytes).enumerate() {
        for (b, raw) in row_bytes.chunks_exact(block_bytes).enumerate() {
            decode(&raw[2..], &mut block);
            each(
                row,
                b,
                f16::from_le_bytes([raw[0], raw[1]]).to_f32(),
                &block,
            );
        }
    }
    Ok((n, k))
}

/// Largest 16-bit magnitude used, symmetric so no product pair can reach i32's edge.
pub(super) const X_MAX: f32 = 32767.0;

/// Reads one stored block's 32 integers.
type BlockDecoder = fn(&[u8], &mut [i8; BLOCK]);

/// A q8_0 / q4_0 weight `[n, k]` packed in panels of [`NR`] columns: for each pair of depths
/// `(2q, 2q+1)`, the NR columns' two values side by side (one `dot_i16x8` operand per 4 columns),
/// and each column's block scales.
pub struct Int16PackedWeight {
    values: Vec<i16>,
    scales: Vec<f32>,
    n: usize,
    k: usize,
}

impl Int16PackedWeight {
    /// From a q8_0 or q4_0 tensor of shape `[n, k]`; other dtypes are refused.
    pub fn from_qtensor(w: &QTensor) -> Result<Self> {
        let (n, k) = w.shape().dims2()?;
        let (blocks, panels) = (k / BLOCK, n.div_ceil(NR));
        let mut values = vec![0i16; panels * k * NR];
        let mut scales = vec![0f32; panels * blocks * NR];
        for_each_block(w, |row, b, scale, block| {
            let (panel, c) = (row / NR, row % NR);
            scales[(panel * blocks + b) * NR + c] = scale;
            for (j, &v) in block.iter().enumerate() {
                let kk = b * BLOCK + j;
                values[panel * k * NR + (kk / 2) * 2 * NR + c * 2 + kk % 2] = v as i16;
            }
        })?;
        Ok(Self {
            values,
            scales,
            n,
            k,
        })
    }

    pub fn out_features(&self) -> usize {
        self.n
    }

    /// `x`: `m × k` row-major → `m × n` row-major, plus `bias` (length n) on every row.
    pub fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.matmul_bias_with(x, m, bias, micro_kernel(), wide_kernel())
    }

    /// With `kernel`, and `wide` where this machine has a two-panel kernel (x86-64).
    fn matmul_bias_with(
        &self,
        x: &[f32],
        m: usize,
        bias: &[f32],
        kernel: MicroKernel,
        wide: Option<WideKernel>,
    ) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        assert_eq!(x.len(), m * k, "input is not {m}×{k}");
        let (xq, x_scales) = quantize_rows(x, k);
        let mut y = vec![0.0; m * n];
        // Natively the rows go to rayon's threads (candle's gemm, which this replaces there, is
        // threaded too); in wasm each engine helper is one thread.
        #[cfg(not(target_arch = "wasm32"))]
        {
            use rayon::prelude::*;
            // Whole tiles, at most one pass of MC rows per task, every thread busy.
            let per_task = m
                .div_ceil(rayon::current_num_threads())
                .next_multiple_of(MR)
                .clamp(MR, MC);
            y.par_chunks_mut(per_task * n)
                .enumerate()
                .for_each(|(task, y)| {
                    self.rows_product(&xq, &x_scales, task * per_task, y, bias, kernel, wide)
                });
        }
        #[cfg(target_arch = "wasm32")]
        self.rows_product(&xq, &x_scales, 0, &mut y, bias, kernel, wide);
        y
    }

    /// Rows `r0 ..` of the product (as many as `y` holds) into `y`.
    #[allow(clippy::too_many_arguments)]
    fn rows_product(
        &self,
        xq: &[i16],
        x_scales: &[f32],
        r0: usize,
        y: &mut [f32],
        bias: &[f32],
        kernel: MicroKernel,
        wide: Option<WideKernel>,
    ) {
        let (n, k) = (self.n, self.k);
        let blocks = k / BLOCK;
        let (xq, x_scales) = (&xq[r0 * k..], &x_scales[r0 * blocks..]);
        let rows_at = |r0: usize, rows: usize| PanelRows {
            x: &xq[r0 * k..],
            x_scales: &x_scales[r0 * blocks..],
            k,
            rows,
        };
        let panel = |p: usize| {
            (
                &self.values[p * k * NR..][..k * NR],
                &self.scales[p * blocks * NR..][..blocks * NR],
            )
        };
        let m = y.len() / n;
        let Some(wide) = wide else {
            tiled_product::<NR>(y, m, n, bias, |tile, n0, r0, rows, _| {
                let (w, w_scales) = panel(n0 / NR);
                kernel(tile, &rows_at(r0, rows), w, w_scales);
            });
            return;
        };
        tiled_product::<{ 2 * NR }>(y, m, n, bias, |tile, n0, r0, rows, cols| {
            let rows = rows_at(r0, rows);
            if cols > NR {
                wide(tile, &rows, panel(n0 / NR), panel(n0 / NR + 1));
            } else {
                // The last, odd panel: the one-panel kernel on the tile's first half.
                let mut half: [[f32; NR]; MR] =
                    std::array::from_fn(|r| std::array::from_fn(|c| tile[r][c]));
                let (w, w_scales) = panel(n0 / NR);
                kernel(&mut half, &rows, w, w_scales);
                for (row, h) in tile.iter_mut().zip(&half) {
                    row[..NR].copy_from_slice(h);
                }
            }
        });
    }
}

impl IntegerProduct for Int16PackedWeight {
    const ACTIVATION_MAX: f32 = X_MAX;
    fn from_qtensor(w: &QTensor) -> Result<Self> {
        Self::from_qtensor(w)
    }
    fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        self.matmul_bias(x, m, bias)
    }
}

/// Up to [`MR`] consecutive rows of the 16-bit input with their block scales.
pub(super) struct PanelRows<'a> {
    pub(super) x: &'a [i16],
    pub(super) x_scales: &'a [f32],
    pub(super) k: usize,
    pub(super) rows: usize,
}

/// Adds one panel's products into a tile (see [`portable_kernel`]).
pub(super) type MicroKernel = fn(&mut [[f32; NR]; MR], &PanelRows, &[i16], &[f32]);

/// One panel's packed values and block scales.
pub(super) type Panel<'a> = (&'a [i16], &'a [f32]);

/// [`MicroKernel`] over two adjacent panels at once (2·NR columns): each of a row's broadcast
/// depth pairs then feeds two multiply-adds, the same sums in the same order per column.
pub(super) type WideKernel = fn(&mut [[f32; 2 * NR]; MR], &PanelRows, Panel, Panel);

fn decode_q8_0(raw: &[u8], out: &mut [i8; BLOCK]) {
    for (o, &b) in out.iter_mut().zip(raw) {
        *o = b as i8;
    }
}

/// q4_0: byte j holds element j (low nibble) and element j + 16 (high nibble), offset by 8.
fn decode_q4_0(raw: &[u8], out: &mut [i8; BLOCK]) {
    for (j, &b) in raw.iter().enumerate().take(BLOCK / 2) {
        out[j] = (b & 0x0F) as i8 - 8;
        out[j + BLOCK / 2] = (b >> 4) as i8 - 8;
    }
}

/// Whether this machine has a SIMD micro-kernel (wasm simd128, x86-64 AVX2): elsewhere natively,
/// candle's gemm on dequantized weights is faster than the portable kernel.
pub fn has_simd_kernel() -> bool {
    #[cfg(target_arch = "x86_64")]
    let simd = x86::best_kernels().is_some();
    #[cfg(not(target_arch = "x86_64"))]
    let simd = cfg!(all(target_arch = "wasm32", target_feature = "simd128"));
    simd
}

/// The micro-kernel for this machine: simd128 in wasm, AVX2 (or AVX-VNNI) on x86-64, else the
/// portable one. Each adds `Σ_blocks (Σ_kk x[r][kk] · w[c][kk]) · (w_scale[c] · x_scale[r])`
/// into `tile[r][c]` with the same integer sums and the same f32 steps: the same numbers.
fn micro_kernel() -> MicroKernel {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return simd128_kernel;
    #[cfg(target_arch = "x86_64")]
    if let Some((kernel, _)) = x86::best_kernels() {
        return kernel;
    }
    #[allow(unreachable_code)]
    portable_kernel
}

/// The two-panel kernel where this machine has one (x86-64 with AVX2).
fn wide_kernel() -> Option<WideKernel> {
    #[cfg(target_arch = "x86_64")]
    return x86::best_kernels().map(|(_, wide)| wide);
    #[allow(unreachable_code)]
    None
}

/// [`micro_kernel`] with wasm simd128. A partial tile (rows < MR) repeats its last row in the
/// missing ones: the extra results are computed and never copied out.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
// A function of its own: inlined into the tile loop, which the compiler has done since the
// kernel became a run-time choice (x86-64), Chromium ran MiniLM q8_0 at 0.7× this speed
// (`node bench/browser.mjs`, one thread, 1,000 sentences: 155–170 against 222–235 sentences/s).
#[inline(never)]
fn simd128_kernel(tile: &mut [[f32; NR]; MR], rows: &PanelRows, w: &[i16], w_scales: &[f32]) {
    use core::arch::wasm32::*;
    let (k, blocks) = (rows.k, rows.k / BLOCK);
    let row = |r: usize| r.min(rows.rows - 1);
    assert!(rows.rows >= 1 && w.len() >= k * NR && w_scales.len() >= blocks * NR);
    assert!(rows.x.len() >= rows.rows * k && rows.x_scales.len() >= rows.rows * blocks);
    // SAFETY: the asserts bound every read: w[0 .. k·NR), w_scales[0 .. blocks·NR),
    // x[row(r)·k + 0 .. k) and x_scales[row(r)·blocks + b] (row(r) < rows); the tile is
    // [[f32; NR]; MR]. Unaligned v128 and 32-bit loads are allowed in wasm.
    unsafe {
        let t = tile.as_mut_ptr() as *mut v128;
        let x: [*const i16; MR] = std::array::from_fn(|r| rows.x.as_ptr().add(row(r) * k));
        let xs: [*const f32; MR] =
            std::array::from_fn(|r| rows.x_scales.as_ptr().add(row(r) * blocks));
        let wp = w.as_ptr();
        for b in 0..blocks {
            // Row r's columns 0..4 and 4..8.
            let mut acc = [i32x4_splat(0); 2 * MR];
            for q in b * BLOCK / 2..(b + 1) * BLOCK / 2 {
                let w0 = v128_load(wp.add(q * 2 * NR) as *const v128);
                let w1 = v128_load(wp.add(q * 2 * NR + 8) as *const v128);
                for r in 0..MR {
                    // The row's two values at depths 2q, 2q+1, in every 32-bit lane.
                    let pair = v128_load32_splat(x[r].add(2 * q) as *const u32);
                    acc[2 * r] = i32x4_add(acc[2 * r], i32x4_dot_i16x8(pair, w0));
                    acc[2 * r + 1] = i32x4_add(acc[2 * r + 1], i32x4_dot_i16x8(pair, w1));
                }
            }
            let ws0 = v128_load(w_scales.as_ptr().add(b * NR) as *const v128);
            let ws1 = v128_load(w_scales.as_ptr().add(b * NR + 4) as *const v128);
            for (r, row_scales) in xs.iter().enumerate() {
                let x_scale = f32x4_splat(*row_scales.add(b));
                for (half, ws) in [ws0, ws1].into_iter().enumerate() {
                    let i = 2 * r + half;
                    let scaled = f32x4_mul(f32x4_convert_i32x4(acc[i]), f32x4_mul(ws, x_scale));
                    v128_store(t.add(i), f32x4_add(v128_load(t.add(i)), scaled));
                }
            }
        }
    }
}

/// The same arithmetic, lane by lane, in plain Rust (identical results: integer sums are exact
/// and the f32 steps run in the same order).
fn portable_kernel(tile: &mut [[f32; NR]; MR], rows: &PanelRows, w: &[i16], w_scales: &[f32]) {
    let (k, blocks) = (rows.k, rows.k / BLOCK);
    for b in 0..blocks {
        for (r, out) in tile.iter_mut().enumerate().take(rows.rows) {
            let x = &rows.x[r * k..];
            let mut acc = [0i32; NR];
            for q in b * BLOCK / 2..(b + 1) * BLOCK / 2 {
                let (x0, x1) = (x[2 * q] as i32, x[2 * q + 1] as i32);
                for (c, a) in acc.iter_mut().enumerate() {
                    let wq = &w[q * 2 * NR + c * 2..];
                    *a += x0 * wq[0] as i32 + x1 * wq[1] as i32;
                }
            }
            let x_scale = rows.x_scales[r * blocks + b];
            for (c, o) in out.iter_mut().enumerate() {
                *o += acc[c] as f32 * (w_scales[b * NR + c] * x_scale);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::rounding::quantize_rows_portable;
    use super::*;
    use candle_core::{Device, Tensor};

    use crate::backend::cpu::kernel_check::{quantized_kernel_check, QUANT_EDGE_SHAPES};

    #[test]
    fn q8_0_and_q4_0_products_match_the_dequantized_weight() {
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
            for &(m, n, k) in QUANT_EDGE_SHAPES.iter().chain(&[(14, 384, 384)]) {
                quantized_kernel_check::<Int16PackedWeight>(dtype, m, n, k).unwrap();
            }
        }
    }

    /// The CLI's kernel (AVX2 / AVX-VNNI here) returns the portable kernel's numbers, and so the
    /// page's (simd128 does the same steps), bit for bit, on full and partial tiles and passes.
    #[test]
    fn this_machines_kernel_equals_the_portable_one_bit_for_bit() {
        use crate::backend::cpu::kernel_check::random_values;
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
            for &(m, n, k) in QUANT_EDGE_SHAPES
                .iter()
                .chain(&[(14, 384, 384), (131, 40, 1536)])
            {
                let w = Tensor::from_vec(random_values(n * k, 2), (n, k), &Device::Cpu).unwrap();
                let w = Int16PackedWeight::from_qtensor(&QTensor::quantize(&w, dtype).unwrap())
                    .unwrap();
                let mut x = random_values(m * k, 1);
                x[0] = 40.0;
                let b = random_values(n, 3);
                assert_eq!(quantize_rows(&x, k), quantize_rows_portable(&x, k));
                let ours = w.matmul_bias(&x, m, &b);
                let portable = w.matmul_bias_with(&x, m, &b, portable_kernel, None);
                let same = ours
                    .iter()
                    .zip(&portable)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{dtype:?} {m}×{n}×{k}: the kernels differ");
            }
        }
        // A NaN is skipped by the block's maximum and rounds to 0; an infinity makes its block 0.
        let mut odd = crate::backend::cpu::kernel_check::random_values(96, 5);
        (odd[3], odd[40], odd[70]) = (f32::NAN, f32::INFINITY, f32::NEG_INFINITY);
        assert_eq!(quantize_rows(&odd, 96), quantize_rows_portable(&odd, 96));
        #[cfg(target_arch = "x86_64")]
        assert!(has_simd_kernel(), "this machine (AVX2) runs a SIMD kernel");
    }

    #[test]
    fn other_dtypes_are_refused() {
        let w = Tensor::zeros((4, 32), candle_core::DType::F32, &Device::Cpu).unwrap();
        let q = QTensor::quantize(&w, GgmlDType::F32).unwrap();
        assert!(Int16PackedWeight::from_qtensor(&q).is_err());
    }

    #[test]
    fn an_all_zero_block_stays_zero() {
        let (q, scales) = quantize_rows(&[0.0; 64], 64);
        assert!(q.iter().all(|&v| v == 0) && scales == [0.0, 0.0]);
    }
}
