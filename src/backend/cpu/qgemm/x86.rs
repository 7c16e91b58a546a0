//! The 16-bit integer kernel's micro-kernel natively on x86-64 (`--integer-matmul`): AVX2's
//! `vpmaddwd` (16 multiply-adds per instruction where f32 FMA does 8 per 256-bit register), and
//! with AVX-VNNI `vpdpwssd`, the same multiply-add with the accumulation fused in.
//!
//! Why: natively the CLI dequantizes q8_0 weights to f32 for candle's gemm, where 76 % of its time
//! goes; this kernel keeps the file's integers as the page does. It reads the panel layout of its
//! parent, `qgemm.rs` (NR = 8 columns per depth pair = one 256-bit register), and does the same
//! integer sums and the same f32 steps in the same order (convert, scale × scale, multiply, add;
//! no fused multiply-add): its products equal the portable kernel's, and so the page's, bit for
//! bit.

use std::arch::x86_64::*;

use super::{Panel, PanelRows, BLOCK, MR, NR};

/// The one- and two-panel micro-kernels this CPU runs best, or `None` without AVX2 (then the
/// portable one runs).
pub(super) fn best_kernels() -> Option<(super::MicroKernel, super::WideKernel)> {
    if is_x86_feature_detected!("avxvnni") {
        Some((
            // SAFETY (both): AVX-VNNI (and so AVX2) is present: checked just above.
            |tile, rows, w, w_scales| unsafe { vnni_kernel(tile, rows, w, w_scales) },
            |tile, rows, w0, w1| unsafe { vnni_wide_kernel(tile, rows, w0, w1) },
        ))
    } else if is_x86_feature_detected!("avx2") {
        Some((
            // SAFETY (both): AVX2 is present: checked just above.
            |tile, rows, w, w_scales| unsafe { avx2_kernel(tile, rows, w, w_scales) },
            |tile, rows, w0, w1| unsafe { avx2_wide_kernel(tile, rows, w0, w1) },
        ))
    } else {
        None
    }
}

/// The activations' rounding to 16 bits with AVX2, or `None` without it.
pub(super) fn quantize_rows(x: &[f32], k: usize) -> Option<(Vec<i16>, Vec<f32>)> {
    if !is_x86_feature_detected!("avx2") {
        return None;
    }
    // SAFETY: AVX2 is present: checked just above.
    Some(unsafe { quantize_rows_avx2(x, k) })
}

/// The portable rounding's steps (the `rounding` module) in AVX2: the block's largest magnitude (NaN
/// skipped), one division for the scale's inverse, then `x · inverse` rounded half to even
/// (`vcvtps2dq` under the default rounding mode) and narrowed; NaN becomes 0 as Rust's `as` does.
#[target_feature(enable = "avx2")]
unsafe fn quantize_rows_avx2(x: &[f32], k: usize) -> (Vec<i16>, Vec<f32>) {
    debug_assert_eq!(x.len() % k, 0);
    let mut q = vec![0i16; x.len()];
    let mut scales = Vec::with_capacity(x.len() / BLOCK);
    let abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
    for (values, out) in x.chunks_exact(BLOCK).zip(q.chunks_exact_mut(BLOCK)) {
        // SAFETY: 32 values read and 32 written (chunks of BLOCK); unaligned loads and stores.
        unsafe {
            let v: [__m256; 4] =
                std::array::from_fn(|i| _mm256_loadu_ps(values.as_ptr().add(8 * i)));
            // max(|v|, m) keeps m where |v| is NaN, as the portable fold does.
            let mut m = _mm256_setzero_ps();
            for &vi in &v {
                m = _mm256_max_ps(_mm256_and_ps(vi, abs_mask), m);
            }
            let m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
            let m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            let max = _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
            let scale = max / super::X_MAX;
            let inverse = _mm256_set1_ps(if scale > 0.0 { 1.0 / scale } else { 0.0 });
            let rounded: [__m256i; 4] = std::array::from_fn(|i| {
                let p = _mm256_mul_ps(v[i], inverse);
                let ordered = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_ORD_Q));
                _mm256_and_si256(_mm256_cvtps_epi32(p), ordered)
            });
            for half in 0..2 {
                // packs works per 128-bit lane: the permute puts the 16 values back in order.
                let packed = _mm256_packs_epi32(rounded[2 * half], rounded[2 * half + 1]);
                let ordered = _mm256_permute4x64_epi64(packed, 0b11_01_10_00);
                _mm256_storeu_si256(out.as_mut_ptr().add(16 * half) as *mut __m256i, ordered);
            }
            scales.push(scale);
        }
    }
    (q, scales)
}

/// The kernel body over `$p` adjacent panels (`$panels`: `[Panel; $p]`, the tile `$p`·NR wide)
/// for one integer multiply-accumulate step `$madd(acc, pair, w)`. Two panels share each
/// broadcast of a row's depth pair (one broadcast per 32 multiply-adds instead of per 16:
/// natively the broadcasts' loads, not the multiplies, bounded the one-panel kernel). Per column
/// the same sums and f32 steps whatever `$p`.
macro_rules! micro_kernel_body {
    ($tile:ident, $rows:ident, $panels:expr, $p:literal, $madd:expr) => {{
        let (k, blocks) = ($rows.k, $rows.k / BLOCK);
        let panels: [Panel; $p] = $panels;
        // A partial tile (rows < MR) repeats its last row: the extra sums are never copied out.
        let row = |r: usize| r.min($rows.rows - 1);
        assert!($rows.rows >= 1);
        assert!(panels
            .iter()
            .all(|(w, s)| w.len() >= k * NR && s.len() >= blocks * NR));
        assert!($rows.x.len() >= $rows.rows * k && $rows.x_scales.len() >= $rows.rows * blocks);
        // SAFETY: the asserts bound every read: each panel's w[0 .. k·NR) and
        // w_scales[0 .. blocks·NR), x[row(r)·k + 0 .. k) and x_scales[row(r)·blocks + b]
        // (row(r) < rows); the tile is [[f32; $p·NR]; MR]; all loads and stores are unaligned.
        unsafe {
            let x: [*const i16; MR] = std::array::from_fn(|r| $rows.x.as_ptr().add(row(r) * k));
            let xs: [*const f32; MR] =
                std::array::from_fn(|r| $rows.x_scales.as_ptr().add(row(r) * blocks));
            let wp: [*const i16; $p] = std::array::from_fn(|p| panels[p].0.as_ptr());
            for b in 0..blocks {
                let mut acc = [[_mm256_setzero_si256(); $p]; MR];
                for q in b * BLOCK / 2..(b + 1) * BLOCK / 2 {
                    // Each panel's NR columns' values at depths 2q, 2q+1.
                    let wv: [__m256i; $p] = std::array::from_fn(|p| {
                        _mm256_loadu_si256(wp[p].add(q * 2 * NR) as *const __m256i)
                    });
                    for r in 0..MR {
                        // The row's two values at depths 2q, 2q+1, in every 32-bit lane.
                        let pair =
                            _mm256_set1_epi32((x[r].add(2 * q) as *const i32).read_unaligned());
                        for p in 0..$p {
                            acc[r][p] = $madd(acc[r][p], pair, wv[p]);
                        }
                    }
                }
                let ws: [__m256; $p] =
                    std::array::from_fn(|p| _mm256_loadu_ps(panels[p].1.as_ptr().add(b * NR)));
                for (r, out) in $tile.iter_mut().enumerate() {
                    let x_scale = _mm256_set1_ps(*xs[r].add(b));
                    for p in 0..$p {
                        let scaled = _mm256_mul_ps(
                            _mm256_cvtepi32_ps(acc[r][p]),
                            _mm256_mul_ps(ws[p], x_scale),
                        );
                        let o = out.as_mut_ptr().add(p * NR);
                        _mm256_storeu_ps(o, _mm256_add_ps(_mm256_loadu_ps(o), scaled));
                    }
                }
            }
        }
    }};
}

/// `tile[r][c] += Σ_blocks (Σ_kk x[r][kk] · w[c][kk]) · (w_scale[c] · x_scale[r])` with AVX2.
#[target_feature(enable = "avx2")]
unsafe fn avx2_kernel(tile: &mut [[f32; NR]; MR], rows: &PanelRows, w: &[i16], w_scales: &[f32]) {
    micro_kernel_body!(tile, rows, [(w, w_scales)], 1, |acc, pair, wv| {
        _mm256_add_epi32(acc, _mm256_madd_epi16(pair, wv))
    })
}

/// The same with AVX-VNNI's fused multiply-accumulate.
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn vnni_kernel(tile: &mut [[f32; NR]; MR], rows: &PanelRows, w: &[i16], w_scales: &[f32]) {
    micro_kernel_body!(tile, rows, [(w, w_scales)], 1, |acc, pair, wv| {
        _mm256_dpwssd_avx_epi32(acc, pair, wv)
    })
}

/// [`avx2_kernel`] over two adjacent panels.
#[target_feature(enable = "avx2")]
unsafe fn avx2_wide_kernel(tile: &mut [[f32; 2 * NR]; MR], rows: &PanelRows, p0: Panel, p1: Panel) {
    micro_kernel_body!(tile, rows, [p0, p1], 2, |acc, pair, wv| {
        _mm256_add_epi32(acc, _mm256_madd_epi16(pair, wv))
    })
}

/// [`vnni_kernel`] over two adjacent panels.
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn vnni_wide_kernel(tile: &mut [[f32; 2 * NR]; MR], rows: &PanelRows, p0: Panel, p1: Panel) {
    micro_kernel_body!(tile, rows, [p0, p1], 2, |acc, pair, wv| {
        _mm256_dpwssd_avx_epi32(acc, pair, wv)
    })
}
