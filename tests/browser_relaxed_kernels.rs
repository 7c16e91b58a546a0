//! The relaxed-SIMD integer kernels in Chromium, both measured and not used by the page: the
//! 7-bit one (src/backend/cpu/qgemm_relaxed7.rs) and the 14-bit one
//! (src/backend/cpu/qgemm_relaxed.rs). Relaxed SIMD defines
//! `i32x4.relaxed_dot_i8x16_i7x16_add_s` per engine outside the 7-bit range, so this proves that
//! this engine on this CPU gives exactly the portable reference's value for every operand pair
//! the kernels feed it (a: all of −128..127, b: all of 0..127), and that each kernel end to end
//! equals its portable reference bit for bit and the f64 check's bound.
//!
//! Run with the relaxed build's flags and `SR_BENCH_CPU_BUILD=relaxed-simd` (as build.sh's second
//! browser run sets it): `SR_BENCH_CPU_BUILD=relaxed-simd RUSTFLAGS="-C
//! target-feature=+simd128,+relaxed-simd" wasm-pack test --headless --chrome --release --test
//! browser_relaxed_kernels`. In the plain suite (no variable) it checks that the page's integer
//! kernel is the 16-bit one; with the variable but without the flags it fails.
#![cfg(target_arch = "wasm32")]

use sr_bench::backend::cpu::qgemm::{IntegerProduct, QuantPackedWeight};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The build this binary was compiled as is the one its runner meant (not a vacuous pass of the
/// plain checks when the relaxed flags were forgotten).
#[wasm_bindgen_test]
fn built_with_the_cpu_build_it_was_meant_for() {
    let want = option_env!("SR_BENCH_CPU_BUILD").unwrap_or("simd128");
    let have = if cfg!(target_feature = "relaxed-simd") {
        "relaxed-simd"
    } else {
        "simd128"
    };
    assert_eq!(
        have, want,
        "compiled without the RUSTFLAGS of the {want} build (-C target-feature=+simd128,+relaxed-simd)"
    );
}

/// Both builds: the page multiplies with the 16-bit kernel (the relaxed ones measured no
/// better, src/backend/cpu/qgemm.rs); only the relaxed build has a relaxed-dot peak.
#[wasm_bindgen_test]
fn the_page_runs_the_16_bit_kernel_in_both_builds() {
    assert_eq!(QuantPackedWeight::ACTIVATION_MAX, 32767.0);
    let peaks = sr_bench::backend::cpu::peak::int_dot_gops(1000, js_sys::Date::now);
    let relaxed = cfg!(target_feature = "relaxed-simd");
    assert!(
        peaks[0].is_finite() && peaks[1].is_finite() == relaxed,
        "{peaks:?}"
    );
}

#[cfg(target_feature = "relaxed-simd")]
mod relaxed {
    use super::*;
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};
    use core::arch::wasm32::*;
    use sr_bench::backend::cpu::kernel_check::{
        extreme_activations, extreme_q8_0_weight, quantized_kernel_check, random_values,
        QUANT_EDGE_SHAPES,
    };
    use sr_bench::backend::cpu::qgemm_relaxed::{relaxed_dot_lane, Relaxed14Weight};
    use sr_bench::backend::cpu::qgemm_relaxed7::{Coding, Relaxed7Weight, GELU_FLOOR};

    /// The engine's dot on 16 bytes of a, 16 of b and an addend, lane by lane.
    fn engine(a: [i8; 16], b: [u8; 16], c: [i32; 4]) -> [i32; 4] {
        // SAFETY: plain value conversions between 16-byte arrays and v128.
        unsafe {
            let (a, b, c) = (
                std::mem::transmute::<[i8; 16], v128>(a),
                std::mem::transmute::<[u8; 16], v128>(b),
                std::mem::transmute::<[i32; 4], v128>(c),
            );
            std::mem::transmute::<v128, [i32; 4]>(i32x4_relaxed_dot_i8x16_i7x16_add(a, b, c))
        }
    }

    fn reference(a: [i8; 16], b: [u8; 16], c: [i32; 4]) -> [i32; 4] {
        std::array::from_fn(|i| c[i] + relaxed_dot_lane(&a[4 * i..], &b[4 * i..]))
    }

    /// Every (a, b) pair alone in a lane, in all four lanes at once (4ab: the x86 pairwise i16
    /// sums at their extremes, e.g. 2·(−128)·127), and next to its mirror (a, b), (−1−a, 127−b):
    /// the engine equals the reference exactly. `std::hint::black_box` keeps the engine's
    /// instruction from being folded at compile time.
    #[wasm_bindgen_test]
    fn relaxed_dot_is_exact_for_every_operand_pair() {
        for a in i8::MIN..=i8::MAX {
            for b in 0..=127u8 {
                let mut single = ([0i8; 16], [0u8; 16]);
                single.0[4 * (b as usize % 4) + (a as u8 as usize % 4)] = a;
                single.1 = [b; 16];
                let cases = [
                    (single.0, single.1, [0, 1, -1, i32::MAX / 2]),
                    ([a; 16], [b; 16], [7, -7, 0, i32::MIN / 2]),
                    (
                        std::array::from_fn(|i| if i % 2 == 0 { a } else { -1 - a }),
                        std::array::from_fn(|i| if i % 2 == 0 { b } else { 127 - b }),
                        [0; 4],
                    ),
                ];
                for (x, y, c) in cases {
                    let got = engine(std::hint::black_box(x), std::hint::black_box(y), c);
                    assert_eq!(got, reference(x, y, c), "a {x:?} b {y:?} c {c:?}");
                }
            }
        }
    }

    /// Random operands across the whole ranges.
    #[wasm_bindgen_test]
    fn relaxed_dot_is_exact_on_random_operands() {
        let mut rng = sr_bench::eval::rng::SplitMix64::new(15);
        for _ in 0..200_000 {
            let r = [rng.next_u64(), rng.next_u64(), rng.next_u64()];
            let a: [i8; 16] = std::array::from_fn(|i| (r[0] >> (4 * i)) as i8 ^ (r[1] >> i) as i8);
            let b: [u8; 16] =
                std::array::from_fn(|i| ((r[1] >> (3 * i)) as u8 ^ (r[2] >> i) as u8) & 127);
            let c: [i32; 4] = std::array::from_fn(|i| (r[2] >> (16 * i)) as i16 as i32 * 1000);
            let got = engine(std::hint::black_box(a), std::hint::black_box(b), c);
            assert_eq!(got, reference(a, b, c), "a {a:?} b {b:?} c {c:?}");
        }
    }

    /// The kernel end to end (digits with simd128, products with relaxed dots) equals the
    /// portable reference bit for bit, and the f64 check's bound, on edge shapes.
    #[wasm_bindgen_test]
    fn relaxed_kernel_equals_its_reference_and_f64() {
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
            for &(m, n, k) in QUANT_EDGE_SHAPES.iter().chain(&[(130, 33, 384)]) {
                assert!(quantized_kernel_check::<Relaxed14Weight>(dtype, m, n, k).unwrap() <= 1.0);
                let w = Tensor::from_vec(random_values(n * k, 2), (n, k), &Device::Cpu).unwrap();
                let q =
                    Relaxed14Weight::from_qtensor(&QTensor::quantize(&w, dtype).unwrap()).unwrap();
                let mut x = random_values(m * k, 1);
                x[0] = 40.0;
                x[k - 1] = -1e-3;
                let b = random_values(n, 3);
                let (got, want) = (q.matmul_bias(&x, m, &b), q.matmul_bias_reference(&x, m, &b));
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{dtype:?} {m}×{n}×{k}");
            }
        }
    }

    /// Weights at −128 and 127 (crafted q8_0 bytes) against activations at the digits' extremes.
    #[wasm_bindgen_test]
    fn relaxed_kernel_is_exact_at_extreme_values() {
        let (m, n, k) = (6, 9, 64);
        let w = Relaxed14Weight::from_qtensor(&extreme_q8_0_weight(n, k).unwrap()).unwrap();
        let x = extreme_activations(m * k);
        let bias = [0.0; 9];
        assert_eq!(
            w.matmul_bias(&x, m, &bias),
            w.matmul_bias_reference(&x, m, &bias)
        );
    }

    /// The 7-bit kernel (src/backend/cpu/qgemm_relaxed7.rs) end to end,
    /// both codings (symmetric; above GELU's floor), equals its portable reference bit for bit
    /// on edge shapes, and the f64 check's bound; also on crafted extreme weights (−128 / 127).
    #[wasm_bindgen_test]
    fn relaxed_7_bit_kernel_equals_its_reference_and_f64() {
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
            for &(m, n, k) in QUANT_EDGE_SHAPES.iter().chain(&[(130, 33, 384)]) {
                assert!(quantized_kernel_check::<Relaxed7Weight>(dtype, m, n, k).unwrap() <= 1.0);
                let w = Tensor::from_vec(random_values(n * k, 2), (n, k), &Device::Cpu).unwrap();
                let q =
                    Relaxed7Weight::from_qtensor(&QTensor::quantize(&w, dtype).unwrap()).unwrap();
                let mut x = random_values(m * k, 1);
                x[0] = 40.0;
                x[k - 1] = -1e-3;
                let b = random_values(n, 3);
                for coding in [Coding::Symmetric, Coding::AtLeast(GELU_FLOOR)] {
                    let x: Vec<f32> = match coding {
                        Coding::Symmetric => x.clone(),
                        Coding::AtLeast(floor) => x.iter().map(|v| v.max(floor)).collect(),
                    };
                    let got = q.matmul_bias_coded(&x, m, &b, coding);
                    let want = q.matmul_bias_reference(&x, m, &b, coding);
                    assert_eq!(bits(&got), bits(&want), "{dtype:?} {m}×{n}×{k} {coding:?}");
                }
            }
        }
        let (m, n, k) = (6, 9, 64);
        let w = Relaxed7Weight::from_qtensor(&extreme_q8_0_weight(n, k).unwrap()).unwrap();
        let x = extreme_activations(m * k);
        let bias = [0.0; 9];
        assert_eq!(
            bits(&w.matmul_bias(&x, m, &bias)),
            bits(&w.matmul_bias_reference(&x, m, &bias, Coding::Symmetric))
        );
    }
}
