// y[m, n] = act(x[m, k] · w[n, k]ᵀ + bias[n]) (+ residual[m, n])
// Tiled: a 64×64 output tile per workgroup of 16×16 threads; thread (tx, ty) owns the 4×4
// block of rows 4·ty.. and columns 4·tx.., contiguous. K in steps of 32 through workgroup
// memory held as vec4s: xs[kk][ty] = rows 4·ty..4·ty+3 of x at k0 + kk, ws[kk][tx] = columns
// 4·tx..4·tx+3 of w, so each k of the inner loop is two vec4 loads for 16 multiply-adds.
// Tiles are loaded 4 k at a time per row (`load_x4`, `load_weight4`: one scale and one or two
// words per 4 quantized weights), consecutive threads taking consecutive rows: their stores
// into the tile land in consecutive banks. Edges (m, n, k not multiples of the tile) are
// zero-padded on load and masked on store.

// `struct Params` (binding 0) is prepended from Rust: `MatmulParams` in ../params.rs
// (m, n, k, flags: bit 0 GELU after the bias, bit 1 add `residual`).
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

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 32u;

var<workgroup> xs: array<vec4<f32>, 512>; // [TK][TM / 4]
var<workgroup> ws: array<vec4<f32>, 512>; // [TK][TN / 4]

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
    store(row, col + 1u, acc.y);
    store(row, col + 2u, acc.z);
    store(row, col + 3u, acc.w);
}

@compute @workgroup_size(16, 16, 1)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let m0 = wg.y * TM;
    let n0 = wg.x * TN;
    // acc_i: row 4·ty + i, columns 4·tx..4·tx+3.
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < p.k; k0 += TK) {
        // Each tile is 64 rows × 8 groups of 4 k: 2 groups per thread, rows fastest.
        for (var i = 0u; i < 2u; i++) {
            let idx = tid + 256u * i;
            let r = idx % 64u;
            let kq = (idx / 64u) * 4u;
            let gm = m0 + r;
            let gn = n0 + r;
            var xv = vec4<f32>(0.0);
            if (gm < p.m) {
                xv = load_x4(gm, k0 + kq);
            }
            var wv = vec4<f32>(0.0);
            if (gn < p.n && k0 + kq < p.k) {
                wv = load_weight4(gn, k0 + kq);
            }
            // Row r's component of the vec4 of its 4 rows, at each of the 4 k.
            let slot = r / 4u;
            let c = r % 4u;
            for (var j = 0u; j < 4u; j++) {
                xs[(kq + j) * 16u + slot][c] = xv[j];
                ws[(kq + j) * 16u + slot][c] = wv[j];
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk += 4u) {
            for (var u = 0u; u < 4u; u++) {
                let a = xs[(kk + u) * 16u + lid.y];
                let b = ws[(kk + u) * 16u + lid.x];
                acc0 = fma(vec4<f32>(a.x), b, acc0);
                acc1 = fma(vec4<f32>(a.y), b, acc1);
                acc2 = fma(vec4<f32>(a.z), b, acc2);
                acc3 = fma(vec4<f32>(a.w), b, acc3);
            }
        }
        workgroupBarrier();
    }
    let col = n0 + 4u * lid.x;
    let row = m0 + 4u * lid.y;
    store_row(row, col, acc0);
    store_row(row + 1u, col, acc1);
    store_row(row + 2u, col, acc2);
    store_row(row + 3u, col, acc3);
}
