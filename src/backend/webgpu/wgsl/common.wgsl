// Shared by the kernels that need GELU (prepended by the WGSL builder, ../kernels/shaders.rs).

// erfc(z) for z >= 0, Numerical Recipes' Chebyshev fit (`erfcc`): fractional error < 1.2e-7
// everywhere, so 1 + erf(x) for negative x is computed as erfc(|x|) without cancellation.
fn erfc_pos(z: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277))))))));
    return t * exp(poly);
}

// Exact-erf GELU: x · Φ(x) = 0.5 · x · (1 + erf(x / √2)).
fn gelu(x: f32) -> f32 {
    let e = erfc_pos(abs(x) * 0.70710678118654752);
    // 1 + erf(x/√2) = 2 − erfc(|x|/√2) for x ≥ 0, erfc(|x|/√2) for x < 0.
    return 0.5 * x * select(e, 2.0 - e, x >= 0.0);
}
