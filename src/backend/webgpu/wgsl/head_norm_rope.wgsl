// The decoder-built embedders' queries and keys (Qwen2, Qwen3, Gemma 3), in place in a fused
// QKV buffer [rows, q (heads·d) | k (kv_heads·d) | v (kv_heads·d)]: per head an RMSNorm over its
// d values (the query norm's d weights for query heads, the key norm's for key heads) where
// `p.normalize` says the layer has them (Qwen2's have none: the gammas are not read), then the
// rotary positions in the "rotate half" form of rope.wgsl (dimension c of the first half turns
// with c + d/2 by the angle of the token's position, row mod seq; the angles' cosines and
// sines come from the CPU). One workgroup per (row, head): q heads, then k heads.

// `struct Params` (binding 0) is prepended from Rust: `HeadNormRopeParams` in ../kernels/rope.rs,
// and `Act`.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> qkv: array<Act>;
@group(0) @binding(2) var<storage, read> q_gamma: array<f32>;
@group(0) @binding(3) var<storage, read> k_gamma: array<f32>;
@group(0) @binding(4) var<storage, read> cos_table: array<f32>;
@group(0) @binding(5) var<storage, read> sin_table: array<f32>;

const WG: u32 = 64u;
// `reduce_sum(lid, v)`: the workgroup's sum, from reduce.wgsl or reduce_subgroup.wgsl.

fn weight(is_key: bool, c: u32) -> f32 {
    if (p.normalize == 0u) {
        return 1.0;
    }
    if (is_key) {
        return k_gamma[c];
    }
    return q_gamma[c];
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = wg.x + wg.y * 65535u;
    // `row` is uniform across the workgroup, so the early exit keeps barriers uniform.
    if (row >= p.rows) {
        return;
    }
    let head = wg.z;
    let half = p.half;
    let d = 2u * half;
    let base = row * (p.heads + 2u * p.kv_heads) * d + head * d;
    let is_key = head >= p.heads;
    // Every thread reads its values before the reduction's barriers and writes only its own
    // pairs after them.
    var inv = 1.0;
    // A uniform value: the reduction's barriers stay in uniform control flow.
    if (p.normalize != 0u) {
        var s = 0.0;
        for (var c = lid; c < d; c += WG) {
            let v = f32(qkv[base + c]);
            s = fma(v, v, s);
        }
        inv = inverseSqrt(reduce_sum(lid, s) / f32(d) + p.eps);
    }
    let at = (row % p.seq) * half;
    for (var c = lid; c < half; c += WG) {
        let a = f32(qkv[base + c]) * inv * weight(is_key, c);
        let b = f32(qkv[base + c + half]) * inv * weight(is_key, c + half);
        let co = cos_table[at + c];
        let si = sin_table[at + c];
        qkv[base + c] = Act(a * co - b * si);
        qkv[base + c + half] = Act(b * co + a * si);
    }
}
