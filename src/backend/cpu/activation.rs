//! GELU (the exact, erf form BERT and MPNet use) as a branch-free loop the compiler vectorizes:
//! libm's `erff` (through candle's `gelu_erf`) took ~17% of the browser's time. The attention's
//! softmax likewise: candle's calls libm's `expf` and `fmaxf` per score in wasm (4.7 % of the
//! browser's time for MiniLM q8_0, `bench/profile.mjs`).

use anyhow::Result;
use candle_core::Tensor;

/// `x · Φ(x) = x/2 · (1 + erf(x/√2))`, in place.
pub fn gelu_erf_in_place(values: &mut [f32]) {
    for v in values {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// The activation of a gated feed-forward's gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateActivation {
    /// SwiGLU (nomic-bert, Granite R2): `silu(g) = g · σ(g)`.
    Silu,
    /// GeGLU (ModernBERT): the exact, erf GELU of the gate.
    Gelu,
    /// GeGLU with GELU's tanh approximation (Gemma's `gelu_pytorch_tanh`).
    GeluTanh,
}

/// `up ← act(gate) ⊙ up`, element by element (the two halves of a gated feed-forward).
pub fn gate_in_place(up: &mut [f32], gate: &[f32], act: GateActivation) {
    match act {
        GateActivation::Silu => up.iter_mut().zip(gate).for_each(|(u, &g)| *u *= silu(g)),
        GateActivation::Gelu => up.iter_mut().zip(gate).for_each(|(u, &g)| {
            *u *= 0.5 * g * (1.0 + erf(g * std::f32::consts::FRAC_1_SQRT_2));
        }),
        GateActivation::GeluTanh => up.iter_mut().zip(gate).for_each(|(u, &g)| {
            // √(2/π)
            const C: f32 = 0.797_884_6;
            *u *= 0.5 * g * (1.0 + tanh(C * (g + 0.044_715 * g * g * g)));
        }),
    }
}

/// tanh from [`exp_nonpositive`] of −2|x| (no libm `tanhf` per element in wasm, no overflow):
/// `(1 − e)/(1 + e)` with the sign of x.
fn tanh(x: f32) -> f32 {
    let e = exp_nonpositive(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

/// `g · σ(g)` with σ from [`exp_nonpositive`] of −|g| (so no libm `expf` per element in wasm,
/// and no overflow): σ(g) = 1/(1 + e^−g) for g ≥ 0, e^g/(1 + e^g) below.
fn silu(g: f32) -> f32 {
    let e = exp_nonpositive(-g.abs());
    let sigmoid = if g >= 0.0 { 1.0 } else { e } / (1.0 + e);
    g * sigmoid
}

/// erf by Abramowitz & Stegun 7.1.28: `1 − 1/(1 + a₁x + … + a₆x⁶)¹⁶` for x ≥ 0, odd symmetry
/// for x < 0. Only multiplies, adds and one division: no exp, no branch. The formula is within
/// 3·10⁻⁷; in f32 the 16th power multiplies the polynomial's rounding by 16, so ≤ 2·10⁻⁶ (near
/// x ≈ 0.04, where GELU's output then moves by ≤ 4·10⁻⁸).
/// Large |x| saturates cleanly (the 16th power overflows to ∞, 1/∞ = 0, erf = ±1).
pub fn erf(x: f32) -> f32 {
    const A: [f32; 6] = [
        0.070_523_08,
        0.042_282_01,
        0.009_270_527,
        0.000_152_014_3,
        0.000_276_567_2,
        0.000_043_063_8,
    ];
    let a = x.abs();
    let poly = 1.0 + a * (A[0] + a * (A[1] + a * (A[2] + a * (A[3] + a * (A[4] + a * A[5])))));
    let p2 = poly * poly;
    let p4 = p2 * p2;
    let p8 = p4 * p4;
    let magnitude = 1.0 - 1.0 / (p8 * p8);
    magnitude.copysign(x)
}

/// Softmax over the last dimension (the attention's scores). In wasm our branch-free loops;
/// natively candle's (threaded), so the native CLI's numbers stay as they were.
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    if !cfg!(target_arch = "wasm32") {
        return Ok(candle_nn::ops::softmax_last_dim(x)?);
    }
    let n = x.dim(candle_core::D::Minus1)?;
    let mut values = x.flatten_all()?.to_vec1::<f32>()?;
    for row in values.chunks_exact_mut(n) {
        softmax_in_place(row);
    }
    Ok(Tensor::from_vec(values, x.shape(), x.device())?)
}

/// `exp(x − max) / Σ exp(x − max)` over `row`, as candle computes it, with [`exp_nonpositive`].
/// Max and sum run in 4 independent lanes (the compiler keeps their order, so it can vectorize
/// only what is written lane-wise).
pub fn softmax_in_place(row: &mut [f32]) {
    let mut lanes = [f32::NEG_INFINITY; 4];
    let chunks = row.chunks_exact(4);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (m, &v) in lanes.iter_mut().zip(chunk) {
            *m = if v > *m { v } else { *m };
        }
    }
    let max = tail
        .iter()
        .chain(&lanes)
        .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    for v in row.iter_mut() {
        *v = exp_nonpositive(*v - max);
    }
    let mut sums = [0f32; 4];
    let chunks = row.chunks_exact(4);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (s, &v) in sums.iter_mut().zip(chunk) {
            *s += v;
        }
    }
    let sum = (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail;
    for v in row.iter_mut() {
        *v /= sum;
    }
}

/// `eˣ` for `x ≤ 0` (softmax's shifted scores), within 2 ulp; 0 below −87 (where f32 would
/// go subnormal) and for −∞. Cody–Waite: `x = n·ln 2 + r`, `|r| ≤ ln 2 / 2`, `eʳ` by its Taylor
/// series to r⁷ (truncation < 4·10⁻⁹), scaled by `2ⁿ` built from bits. Only multiplies, adds and
/// selects: the loop over a row vectorizes.
pub fn exp_nonpositive(x: f32) -> f32 {
    // n = round-half-to-even(x·log₂e) by adding and subtracting 1.5·2²³: IEEE's default
    // rounding does it for |v| < 2²², and the sum's low bits then hold n, so 2ⁿ comes from bits
    // without a float-to-int conversion. Natively `round_ties_even` is a libm call per value on
    // x86-64 without SSE4.1 (every build for a plain x86-64 target), which kept softmax and the
    // SwiGLU gate from vectorizing; the numbers are the same bit for bit.
    const SHIFT: f32 = 12_582_912.0;
    let clamped = if x < -87.0 { -87.0 } else { x };
    let shifted = clamped * std::f32::consts::LOG2_E + SHIFT;
    let p = exp_reduced(clamped, shifted - SHIFT);
    let scale = f32::from_bits(
        (shifted.to_bits().wrapping_sub(SHIFT.to_bits()))
            .wrapping_add(127)
            .wrapping_shl(23),
    );
    if x < -87.0 {
        0.0
    } else {
        p * scale
    }
}

/// `e^(x − n·ln 2)` for the integer `n` nearest `x·log₂e`: `r` is within ±ln 2 / 2, where the
/// Taylor series to r⁷ is enough.
#[inline(always)]
fn exp_reduced(x: f32, n: f32) -> f32 {
    const LN2_HI: f32 = 0.693_145_75; // ln 2's leading bits: n · LN2_HI is exact for |n| ≤ 127
    const LN2_LO: f32 = 1.428_606_8e-6;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    1.0 + r
        * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every gate against f64 over a range that saturates either way (SiLU's limits 0 and g).
    #[test]
    fn gates_match_their_f64_definitions() {
        let gates: Vec<f32> = (-2000..=2000).map(|i| i as f32 * 0.05).collect();
        for (act, reference) in [
            (
                GateActivation::Silu,
                (|g: f64| g / (1.0 + (-g).exp())) as fn(f64) -> f64,
            ),
            (GateActivation::Gelu, |g: f64| {
                0.5 * g * (1.0 + erf_reference(g / std::f64::consts::SQRT_2))
            }),
            (GateActivation::GeluTanh, |g: f64| {
                let c = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * g * (1.0 + (c * (g + 0.044715 * g * g * g)).tanh())
            }),
        ] {
            let mut up = vec![1.0f32; gates.len()];
            gate_in_place(&mut up, &gates, act);
            for (&g, &y) in gates.iter().zip(&up) {
                let want = reference(g as f64);
                assert!(
                    (y as f64 - want).abs() <= 2e-6 * want.abs().max(1.0),
                    "{act:?}({g}) = {y}, want {want}"
                );
            }
        }
    }

    /// erf in f64 by its Maclaurin series (exact enough for |x| ≤ 3) and by the continued
    /// fraction of erfc beyond, as the reference.
    fn erf_reference(x: f64) -> f64 {
        let a = x.abs();
        let value = if a <= 3.0 {
            let (mut term, mut sum, mut n) = (a, a, 0.0);
            while term.abs() > 1e-17 {
                n += 1.0;
                term *= -a * a / n;
                sum += term / (2.0 * n + 1.0);
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc(a) = exp(−a²)/√π · 1/(a + 1/2/(a + 1/(a + 3/2/(a + …)))).
            let mut fraction = a;
            for k in (1..60).rev() {
                fraction = a + (k as f64 / 2.0) / fraction;
            }
            1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / fraction
        };
        value.copysign(x)
    }

    #[test]
    fn erf_is_within_two_millionths() {
        let mut worst = 0f64;
        for i in -100_000..=100_000 {
            let x = i as f64 * 1e-4 * 6.0; // −6 … 6
            worst = worst.max((erf(x as f32) as f64 - erf_reference(x)).abs());
        }
        assert!(worst <= 2e-6, "max |erf error| {worst}");
    }

    #[test]
    fn gelu_matches_its_definition_and_saturates() {
        let mut values = [-100.0, -3.0, -0.5, 0.0, 0.5, 3.0, 100.0, f32::NAN];
        gelu_erf_in_place(&mut values);
        for (got, x) in values
            .iter()
            .zip([-100.0f64, -3.0, -0.5, 0.0, 0.5, 3.0, 100.0])
        {
            let want = 0.5 * x * (1.0 + erf_reference(x / std::f64::consts::SQRT_2));
            assert!(
                (*got as f64 - want).abs() <= 1e-6 * x.abs().max(1.0),
                "gelu({x}) = {got}, want {want}"
            );
        }
        assert!(values[7].is_nan());
    }

    #[test]
    fn exp_is_within_two_ulp_and_flushes_below_minus_87() {
        let mut worst = 0f64;
        for i in 0..=870_000 {
            let x = -(i as f32) * 1e-4;
            let (got, want) = (exp_nonpositive(x) as f64, (x as f64).exp());
            worst = worst.max((got - want).abs() / want);
        }
        assert!(
            worst <= 2.0 * f32::EPSILON as f64,
            "max relative error {worst}"
        );
        assert_eq!(exp_nonpositive(-87.5), 0.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpositive(0.0), 1.0);
    }

    /// The exp's rounding by adding 1.5·2²³ and its 2ⁿ from the sum's bits give what
    /// `round_ties_even` and an integer conversion give, bit for bit, over
    /// every 97th f32 from −0 down past −87 (and so across the flush to 0).
    #[test]
    fn exp_s_rounding_equals_round_ties_even_bit_for_bit() {
        fn reference(x: f32) -> f32 {
            let clamped = if x < -87.0 { -87.0 } else { x };
            let n = (clamped * std::f32::consts::LOG2_E).round_ties_even();
            let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
            if x < -87.0 {
                0.0
            } else {
                exp_reduced(clamped, n) * scale
            }
        }
        let last = (-88.0f32).to_bits();
        for bits in ((-0.0f32).to_bits()..=last).step_by(97) {
            let x = f32::from_bits(bits);
            assert_eq!(
                exp_nonpositive(x).to_bits(),
                reference(x).to_bits(),
                "exp({x})"
            );
        }
    }

    /// Rows of every length 1..=40 (4-lane chunks and tails), scores as attention has them
    /// (a masked position at −1e9), against the f64 softmax.
    #[test]
    fn softmax_matches_f64() {
        let values = crate::backend::cpu::kernel_check::random_values(40, 9);
        for len in 1..=40 {
            let mut row: Vec<f32> = values[..len].iter().map(|v| v * 12.0).collect();
            if len > 2 {
                row[len / 2] -= 1e9;
            }
            let max = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
            let exps: Vec<f64> = row.iter().map(|&v| (v as f64 - max).exp()).collect();
            let sum: f64 = exps.iter().sum();
            softmax_in_place(&mut row);
            for (got, e) in row.iter().zip(&exps) {
                assert!(
                    (*got as f64 - e / sum).abs() <= 1e-6,
                    "len {len}: {got} vs {}",
                    e / sum
                );
            }
            if len > 2 {
                assert_eq!(row[len / 2], 0.0, "a masked score");
            }
        }
    }
}
