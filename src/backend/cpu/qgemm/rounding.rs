//! The integer kernel's activations rounded to 16 bits per block of 32 (symmetric, one f32
//! scale per block, half to even): the same numbers in wasm (simd128), natively in plain Rust,
//! and on x86-64 with AVX2 (the sibling `x86` module's build of the same steps).

use super::{BLOCK, X_MAX};

/// Each row's blocks of 32 as 16-bit integers and one f32 scale per block (`x ≈ q · scale`),
/// rounding half to even (wasm's `nearest`, one instruction where `round` is a libm call).
pub(super) fn quantize_rows(x: &[f32], k: usize) -> (Vec<i16>, Vec<f32>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(rounded) = super::x86::quantize_rows(x, k) {
        return rounded;
    }
    quantize_rows_portable(x, k)
}

/// [`quantize_rows`] in plain Rust (natively without SSE4.1 each `round_ties_even` is a call to
/// libm's `rintf`: x86-64 with AVX2 runs its own build, the same numbers).
pub(super) fn quantize_rows_portable(x: &[f32], k: usize) -> (Vec<i16>, Vec<f32>) {
    let mut q = vec![0i16; x.len()];
    let mut scales = Vec::with_capacity(x.len() / BLOCK);
    for (values, out) in x.chunks_exact(BLOCK).zip(q.chunks_exact_mut(BLOCK)) {
        let (scale, inverse) = block_scale(values, X_MAX);
        quantize_block(values, inverse, out);
        scales.push(scale);
    }
    debug_assert_eq!(scales.len(), x.len() / k * (k / BLOCK));
    (q, scales)
}

/// A block's `(scale, 1 / scale)` mapping its largest magnitude to `x_max`, the largest integer
/// used; an all-zero block gets `(0, 0)`.
fn block_scale(values: &[f32], x_max: f32) -> (f32, f32) {
    // A compare and select, the same as `f32::max` here (NaN is skipped either way): in wasm
    // `f32::max` is a call to libm's `fmaxf` (2.3 % of the browser's time for MiniLM q8_0).
    let max = values
        .iter()
        .fold(0f32, |m, v| if v.abs() > m { v.abs() } else { m });
    let scale = max / x_max;
    (scale, if scale > 0.0 { 1.0 / scale } else { 0.0 })
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn quantize_block(values: &[f32], inverse: f32, out: &mut [i16]) {
    use core::arch::wasm32::*;
    assert!(values.len() == BLOCK && out.len() == BLOCK);
    let inverse = f32x4_splat(inverse);
    // SAFETY: 32 values read and 32 written, as asserted; unaligned v128 access is allowed.
    unsafe {
        let (src, dst) = (
            values.as_ptr() as *const v128,
            out.as_mut_ptr() as *mut v128,
        );
        for i in 0..BLOCK / 8 {
            // |v · inverse| ≤ 32767: the saturating conversions never saturate.
            let lo =
                i32x4_trunc_sat_f32x4(f32x4_nearest(f32x4_mul(v128_load(src.add(2 * i)), inverse)));
            let hi = i32x4_trunc_sat_f32x4(f32x4_nearest(f32x4_mul(
                v128_load(src.add(2 * i + 1)),
                inverse,
            )));
            v128_store(dst.add(i), i16x8_narrow_i32x4(lo, hi));
        }
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn quantize_block(values: &[f32], inverse: f32, out: &mut [i16]) {
    for (o, &v) in out.iter_mut().zip(values) {
        *o = (v * inverse).round_ties_even() as i16;
    }
}
