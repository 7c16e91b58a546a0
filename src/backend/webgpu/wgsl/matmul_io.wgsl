// The matmul kernels' bindings and edges (matmul.wgsl, the tiled kernel; matmul_coop.wgsl,
// the one on matrix units): y[m, n] = act(x[m, k] · w[n, k]ᵀ + bias[n]) (+ residual[m, n]).

// `struct Params` (binding 0) is prepended from Rust: `MatmulParams` in ../kernels/matmul.rs
// (m, n, k, flags: bit 0 GELU after the bias, bit 1 add `residual`, bit 2 ReLU after the bias).
// So are `Act` (how activations are stored: f32 or f16; the kernel computes in f32), `Out`
// (Act, or f32 for the residual-adding projections, which write the f32 residual stream) and
// the weight format: one of weights_{f32,q8_0,q4_0}.wgsl declares `WeightWord` (the
// element type of `w`) and `load_weight4(n, k)`, which returns w[n, k..k+4] as f32 (zero past
// k's end) — quantized blocks are dequantized here, while the tile is loaded, and never
// stored as f32.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<Act>;
@group(0) @binding(2) var<storage, read> w: array<WeightWord>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> residual: array<Act>;
@group(0) @binding(5) var<storage, read_write> y: array<Out>;

// x[m, k..k+4], zero past k's end.
fn load_x4(m: u32, k: u32) -> vec4<f32> {
    let base = m * p.k + k;
    if (k + 4u <= p.k) {
        return vec4<f32>(f32(x[base]), f32(x[base + 1u]), f32(x[base + 2u]), f32(x[base + 3u]));
    }
    var v = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j++) {
        if (k + j < p.k) {
            v[j] = f32(x[base + j]);
        }
    }
    return v;
}

// One row's 4 k of each tile: zero for rows and columns past the matrix's edge, so the
// kernels mask their own edges.
fn tile_x4(m: u32, k: u32) -> vec4<f32> {
    if (m < p.m) {
        return load_x4(m, k);
    }
    return vec4<f32>(0.0);
}

fn tile_w4(n: u32, k: u32) -> vec4<f32> {
    if (n < p.n && k < p.k) {
        return load_weight4(n, k);
    }
    return vec4<f32>(0.0);
}

fn store(row: u32, col: u32, acc: f32) {
    if (row >= p.m || col >= p.n) {
        return;
    }
    var v = acc + bias[col];
    if ((p.flags & 1u) != 0u) {
        v = gelu(v);
    }
    if ((p.flags & 4u) != 0u) {
        v = max(v, 0.0);
    }
    if ((p.flags & 2u) != 0u) {
        v += f32(residual[row * p.n + col]);
    }
    y[row * p.n + col] = Out(v);
}
