// Mean over the tokens the mask keeps, then L2 normalisation; one workgroup per batch row.
// out[b, :] = mean / max(‖mean‖, 1e-12), mean = Σ_t mask·x[b, t, :] / max(Σ_t mask, 1e-9).

// `struct Params` (binding 0) is prepended from Rust: `PoolingParams` in ../params.rs.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> mask: array<u32>;
@group(0) @binding(3) var<storage, read_write> pooled: array<f32>;

const WG: u32 = 128u;
// `reduce_sum(lid, v)`: the workgroup's sum, from reduce.wgsl or reduce_subgroup.wgsl.

@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wg.x;
    var count = 0.0;
    for (var t = 0u; t < p.seq; t++) {
        count += f32(mask[b * p.seq + t]);
    }
    count = max(count, 1e-9);
    var sq = 0.0;
    for (var c = lid; c < p.dim; c += WG) {
        var s = 0.0;
        for (var t = 0u; t < p.seq; t++) {
            if (mask[b * p.seq + t] != 0u) {
                s += x[(b * p.seq + t) * p.dim + c];
            }
        }
        let mean = s / count;
        pooled[b * p.dim + c] = mean;
        sq += mean * mean;
    }
    let norm = max(sqrt(reduce_sum(lid, sq)), 1e-12);
    for (var c = lid; c < p.dim; c += WG) {
        pooled[b * p.dim + c] = pooled[b * p.dim + c] / norm;
    }
}
