// y[m, n] = act(x[m, k] · w[n, k]ᵀ + bias[n]) (+ residual[m, n])
// Tiled: a 64×64 output tile per workgroup of 16×16 threads, each thread 4×4 outputs, K in
// steps of 16 through workgroup memory. Edges (m, n, k not multiples of the tile) are
// zero-padded on load and masked on store.

// `struct Params` (binding 0) is prepended from Rust: `MatmulParams` in ../params.rs
// (m, n, k, flags: bit 0 GELU after the bias, bit 1 add `residual`).
// So are `Act` (how activations are stored: f32 or f16; the kernel computes in f32), `Out`
// (Act, or f32 for the residual-adding projections, which write the f32 residual stream) and
// the weight format: one of weights_{f32,q8_0,q4_0}.wgsl declares `WeightWord` (the
// element type of `w`) and `load_weight(n, k)`, which returns w[n, k] as f32 — quantized
// blocks are dequantized here, while the tile is loaded, and never stored as f32.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<Act>;
@group(0) @binding(2) var<storage, read> w: array<WeightWord>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> residual: array<Act>;
@group(0) @binding(5) var<storage, read_write> y: array<Out>;

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 16u;

var<workgroup> xs: array<f32, 1024>; // [TK][TM]
var<workgroup> ws: array<f32, 1024>; // [TK][TN]

fn store(row: u32, col: u32, acc: f32) {
    if (row >= p.m || col >= p.n) {
        return;
    }
    var v = acc + bias[col];
    if ((p.flags & 1u) != 0u) {
        v = gelu(v);
    }
    if ((p.flags & 2u) != 0u) {
        v += f32(residual[row * p.n + col]);
    }
    y[row * p.n + col] = Out(v);
}

fn store_row(row: u32, col: u32, acc: vec4<f32>) {
    store(row, col, acc.x);
    store(row, col + 16u, acc.y);
    store(row, col + 32u, acc.z);
    store(row, col + 48u, acc.w);
}

@compute @workgroup_size(16, 16, 1)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let m0 = wg.y * TM;
    let n0 = wg.x * TN;
    // Thread (x, y) owns rows y + 16·i and columns x + 16·j (i, j < 4): acc_i holds row i.
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < p.k; k0 += TK) {
        // 1024 values of each tile, 4 per thread; consecutive threads read consecutive k.
        for (var i = 0u; i < 4u; i++) {
            let idx = tid + 256u * i;
            let r = idx / TK;
            let kk = idx % TK;
            let gk = k0 + kk;
            let gm = m0 + r;
            let gn = n0 + r;
            var xv = 0.0;
            if (gm < p.m && gk < p.k) {
                xv = f32(x[gm * p.k + gk]);
            }
            xs[kk * TM + r] = xv;
            var wv = 0.0;
            if (gn < p.n && gk < p.k) {
                wv = load_weight(gn, gk);
            }
            ws[kk * TN + r] = wv;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk++) {
            let wb = kk * TN + lid.x;
            let b = vec4<f32>(ws[wb], ws[wb + 16u], ws[wb + 32u], ws[wb + 48u]);
            let xb = kk * TM + lid.y;
            acc0 = fma(vec4<f32>(xs[xb]), b, acc0);
            acc1 = fma(vec4<f32>(xs[xb + 16u]), b, acc1);
            acc2 = fma(vec4<f32>(xs[xb + 32u]), b, acc2);
            acc3 = fma(vec4<f32>(xs[xb + 48u]), b, acc3);
        }
        workgroupBarrier();
    }
    let col = n0 + lid.x;
    let row = m0 + lid.y;
    store_row(row, col, acc0);
    store_row(row + 16u, col, acc1);
    store_row(row + 32u, col, acc2);
    store_row(row + 48u, col, acc3);
}
