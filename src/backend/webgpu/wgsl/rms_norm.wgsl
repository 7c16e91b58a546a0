// y[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) · gamma (+ residual[r, :]), as candle's
// `rms_norm` on the CPU; one workgroup per row. The decoder-built embedders' norms (Qwen3,
// Gemma 3): before each block and at the end, and Gemma's after the attention and the
// feed-forward, whose normed output is added to the residual stream (`p.residual` = 1).
// These models run with f32 activations, so every buffer here is f32.

// `struct Params` (binding 0) is prepended from Rust: `RmsNormParams` in ../kernels/norm.rs.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> gamma: array<f32>;
@group(0) @binding(3) var<storage, read> residual: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

const WG: u32 = 128u;
// `reduce_sum(lid, v)`: the workgroup's sum, from reduce.wgsl or reduce_subgroup.wgsl.

@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = wg.x + wg.y * 65535u;
    // `row` is uniform across the workgroup, so the early exit keeps barriers uniform.
    if (row >= p.rows) {
        return;
    }
    let base = row * p.cols;
    var s = 0.0;
    for (var c = lid; c < p.cols; c += WG) {
        let v = x[base + c];
        s = fma(v, v, s);
    }
    let inv = inverseSqrt(reduce_sum(lid, s) / f32(p.cols) + p.eps);
    for (var c = lid; c < p.cols; c += WG) {
        var v = x[base + c] * inv * gamma[c];
        if (p.residual != 0u) {
            v += residual[base + c];
        }
        y[base + c] = v;
    }
}
