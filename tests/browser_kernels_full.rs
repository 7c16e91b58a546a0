//! The simd128 kernels the page runs, tested directly in Chromium: the packed f32 kernel and the
//! int16 × q8_0 / q4_0 kernel against an f64 reference (src/backend/cpu/kernel_check.rs, the
//! same checks the native unit tests run on the portable kernels), on seeded random inputs and
//! edge shapes: m, n, k not multiples of the 4 × 8 tile, k one block, n = 1.
#![cfg(target_arch = "wasm32")]

use candle_core::quantized::GgmlDType;
use sr_bench::backend::cpu::kernel_check::{
    f32_kernel_error, quantized_kernel_check, QUANT_EDGE_SHAPES,
};
use sr_bench::backend::cpu::qgemm::Int16PackedWeight;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

// Without the feature the kernels below would be the portable ones (.cargo/config.toml): this
// binary does not build.
const _: () = assert!(
    cfg!(target_feature = "simd128"),
    "the browser kernel tests need +simd128"
);

/// Bound: f32 accumulation over k terms of magnitude ≤ 1, 1e-6 · k.
#[wasm_bindgen_test]
fn packed_f32_kernel_matches_f64_on_edge_shapes() {
    for &(m, n, k) in &[
        (1, 1, 1),
        (1, 1, 32),
        (3, 7, 5),
        (5, 1, 64),
        (5, 9, 257),
        (4, 8, 32),
        (130, 17, 300),
        (9, 384, 1536),
    ] {
        let (worst, bound) = f32_kernel_error(m, n, k);
        assert!(worst <= bound, "{m}×{n}×{k}: max error {worst} > {bound}");
    }
}

/// Bound per element: half a 16-bit step of each block's max per input, plus f32 accumulation.
#[wasm_bindgen_test]
fn int16_quantized_kernels_match_f64_on_edge_shapes() {
    for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
        for &(m, n, k) in QUANT_EDGE_SHAPES {
            let ratio = quantized_kernel_check::<Int16PackedWeight>(dtype, m, n, k).unwrap();
            assert!(ratio <= 1.0);
        }
    }
}
