// Masked multi-head self-attention for one (query, head, batch row) per workgroup:
// ctx[b, i, h·d..] = softmax_j(q_i·k_j · scale, masked keys excluded) · v_j.
// q, k, v come packed per token as [q (heads·d) | k (kv_heads·d) | v (kv_heads·d)] (the fused
// QKV matmul; `p.stride` values a token, k at `p.k_offset`, v at `p.v_offset`). Grouped-query
// heads (Qwen3, Gemma 3): query head h reads key/value head h / p.group (1 = one each).
// MPNet adds a learned relative-position bias to every score: rel_bias[h, j − i + rel_span − 1]
// (its buckets resolved per distance on the CPU, once per model); rel_span = 0 means none.
// A sliding window (ModernBERT's and Gemma's local layers) masks the keys with |j − i| >=
// window as it does padding; window = 0 means none. Causal attention (Qwen3) masks the keys
// after the query.

// `struct Params` (binding 0) is prepended from Rust: `AttentionParams` in
// ../kernels/attention.rs, and `Act`, how activations are stored (f32 or f16; computed in f32).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<Act>;
@group(0) @binding(2) var<storage, read> mask: array<u32>;
@group(0) @binding(3) var<storage, read> rel_bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> ctx: array<Act>;

const WG: u32 = 64u;
const MAX_SEQ: u32 = 512u;
// Heads of up to 256 values (Gemma 3's); `head_dim` divides WG or is a multiple of it.
const MAX_HEAD_DIM: u32 = 256u;

var<workgroup> scores: array<f32, MAX_SEQ>;
var<workgroup> qs: array<f32, MAX_HEAD_DIM>;
// Each thread's partial output sums, added per component at the end.
var<workgroup> partials: array<f32, WG>;

// Does query i of sentence b see key j: a token, within the window if there is one, not after
// the query if causal?
fn visible(b: u32, i: u32, j: u32) -> bool {
    let distance = max(i, j) - min(i, j);
    return mask[b * p.seq + j] != 0u && (p.window == 0u || distance < p.window)
        && (p.causal == 0u || j <= i);
}

// The weighted sum over the softmax's total (0 for a query that sees no key).
fn normalized(sum: f32, total: f32) -> f32 {
    if (total > 0.0) {
        return sum / total;
    }
    return 0.0;
}

// `reduce_max(lid, v)` / `reduce_sum(lid, v)`: the softmax's workgroup max and sum, from
// reduce.wgsl or reduce_subgroup.wgsl.

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = wg.x;
    let h = wg.y;
    let b = wg.z;
    let kv = h / p.group;
    let row_q = (b * p.seq + i) * p.stride + h * p.head_dim;
    for (var d = lid; d < p.head_dim; d += WG) {
        qs[d] = f32(qkv[row_q + d]);
    }
    workgroupBarrier();

    var local_max = -3.0e38;
    for (var j = lid; j < p.seq; j += WG) {
        var s = -3.0e38;
        if (visible(b, i, j)) {
            let row_k = (b * p.seq + j) * p.stride + p.k_offset + kv * p.head_dim;
            var qk = 0.0;
            for (var d = 0u; d < p.head_dim; d++) {
                qk = fma(qs[d], f32(qkv[row_k + d]), qk);
            }
            s = qk * p.scale;
            if (p.rel_span != 0u) {
                s += rel_bias[h * (2u * p.rel_span - 1u) + j + p.rel_span - 1u - i];
            }
        }
        scores[j] = s;
        local_max = max(local_max, s);
    }
    let m = reduce_max(lid, local_max);

    var local_sum = 0.0;
    for (var j = lid; j < p.seq; j += WG) {
        var e = 0.0;
        if (visible(b, i, j)) {
            e = exp(scores[j] - m);
        }
        scores[j] = e;
        local_sum += e;
    }
    let total = reduce_sum(lid, local_sum);
    let row_v0 = b * p.seq * p.stride + p.v_offset + kv * p.head_dim;
    let out = (b * p.seq + i) * p.heads * p.head_dim + h * p.head_dim;

    if (p.head_dim >= WG) {
        // Wide heads: each thread owns components lid, lid + WG, … over every key.
        for (var d = lid; d < p.head_dim; d += WG) {
            var acc = 0.0;
            for (var j = 0u; j < p.seq; j++) {
                acc = fma(scores[j], f32(qkv[row_v0 + j * p.stride + d]), acc);
            }
            ctx[out + d] = Act(normalized(acc, total));
        }
        return;
    }
    // Narrow heads (head_dim divides WG): `parts` threads share one output component, each
    // over every parts-th key, then their partial sums are added.
    let parts = WG / p.head_dim;
    let d = lid % p.head_dim;
    let part = lid / p.head_dim;
    var acc = 0.0;
    for (var j = part; j < p.seq; j += parts) {
        acc = fma(scores[j], f32(qkv[row_v0 + j * p.stride + d]), acc);
    }
    partials[lid] = acc;
    workgroupBarrier();
    if (part == 0u) {
        var sum = 0.0;
        for (var q = 0u; q < parts; q++) {
            sum += partials[d + q * p.head_dim];
        }
        ctx[out + d] = Act(normalized(sum, total));
    }
}
