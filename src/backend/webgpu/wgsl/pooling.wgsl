// Pooling over the tokens the mask keeps, then L2 normalisation; one workgroup per batch row.
// out[b, :] = v / max(‖v‖, 1e-12), v by p.mode: 0 the mean Σ_t mask·x[b, t, :] / max(Σ_t mask, 1e-9),
// 1 the first token (CLS), 2 the last token the mask keeps (padding is on the right),
// 3 the element-wise maximum over the kept tokens.

// `struct Params` (binding 0) is prepended from Rust: `PoolingParams` in ../kernels/pooling.rs,
// and `Act`, how activations (x) are stored; the pooled output is f32.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<Act>;
@group(0) @binding(2) var<storage, read> mask: array<u32>;
@group(0) @binding(3) var<storage, read_write> pooled: array<f32>;

const WG: u32 = 128u;
// `reduce_sum(lid, v)`: the workgroup's sum, from reduce.wgsl or reduce_subgroup.wgsl.

// Component c of batch row b's pooled vector (`count`: the tokens the mask keeps).
fn pool(b: u32, c: u32, count: f32) -> f32 {
    let row0 = b * p.seq;
    if (p.mode == 1u) {
        return f32(x[row0 * p.dim + c]);
    }
    if (p.mode == 2u) {
        return f32(x[(row0 + max(u32(count), 1u) - 1u) * p.dim + c]);
    }
    var s = 0.0;
    var best = -3.4e38;
    for (var t = 0u; t < p.seq; t++) {
        if (mask[row0 + t] != 0u) {
            let v = f32(x[(row0 + t) * p.dim + c]);
            s += v;
            best = max(best, v);
        }
    }
    if (p.mode == 3u) {
        return best;
    }
    return s / max(count, 1e-9);
}

@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wg.x;
    var count = 0.0;
    for (var t = 0u; t < p.seq; t++) {
        count += f32(mask[b * p.seq + t]);
    }
    var sq = 0.0;
    for (var c = lid; c < p.dim; c += WG) {
        let v = pool(b, c, count);
        pooled[b * p.dim + c] = v;
        sq += v * v;
    }
    let norm = max(sqrt(reduce_sum(lid, sq)), 1e-12);
    for (var c = lid; c < p.dim; c += WG) {
        pooled[b * p.dim + c] = pooled[b * p.dim + c] / norm;
    }
}
