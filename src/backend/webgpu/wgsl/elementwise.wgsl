// Element-wise kernels over a flat index (2-D dispatch: index = x + y · 65535 · 256).

// `struct Params` (binding 0) is prepended from Rust: `ElementwiseParams` in
// ../kernels/elementwise.rs.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<f32>;
@group(0) @binding(3) var<storage, read> type0: array<f32>;

fn flat(gid: vec3<u32>) -> u32 {
    return gid.x + gid.y * 65535u * 256u;
}

// Embedding input: x[r, c] (the gathered word rows) += pos[r mod seq, c] + type0[c].
@compute @workgroup_size(256, 1, 1)
fn embed_add(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = flat(gid);
    if (i >= p.len) {
        return;
    }
    let r = i / p.cols;
    let c = i % p.cols;
    x[i] = x[i] + pos[(r % p.seq) * p.cols + c] + type0[c];
}

// x = gelu(x) in place (the matmul fuses GELU; this entry exists to measure the approximation).
@compute @workgroup_size(256, 1, 1)
fn gelu_inplace(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = flat(gid);
    if (i >= p.len) {
        return;
    }
    x[i] = gelu(x[i]);
}
