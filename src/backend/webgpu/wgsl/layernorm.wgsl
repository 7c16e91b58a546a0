// y[r, :] = (x[r, :] − mean) / sqrt(var + eps) · gamma + beta; one workgroup per row.
// Two passes over the row (mean, then the centred sum of squares) for accuracy.

// `struct Params` (binding 0) is prepended from Rust: `LayerNormParams` in ../kernels/norm.rs, and
// `Act`, how activations are stored (x is the f32 residual stream; y an activation).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> gamma: array<f32>;
@group(0) @binding(3) var<storage, read> beta: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<Act>;

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
        s += x[base + c];
    }
    let mean = reduce_sum(lid, s) / f32(p.cols);
    var q = 0.0;
    for (var c = lid; c < p.cols; c += WG) {
        let d = x[base + c] - mean;
        q += d * d;
    }
    let inv = inverseSqrt(reduce_sum(lid, q) / f32(p.cols) + p.eps);
    for (var c = lid; c < p.cols; c += WG) {
        y[base + c] = Act((x[base + c] - mean) * inv * gamma[c] + beta[c]);
    }
}
