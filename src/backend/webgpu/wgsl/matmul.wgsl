// y[m, n] = act(x[m, k] · w[n, k]ᵀ + bias[n]) (+ residual[m, n])
// Tiled: a 64×64 output tile per workgroup of 16×16 threads; thread (tx, ty) owns the 4×4
// block of rows 4·ty.. and columns 4·tx.., contiguous. K in steps of 32 through workgroup
// memory held as vec4s: xs[kk][ty] = rows 4·ty..4·ty+3 of x at k0 + kk, ws[kk][tx] = columns
// 4·tx..4·tx+3 of w, so each k of the inner loop is two vec4 loads for 16 multiply-adds.
// Tiles are loaded 4 k at a time per row (`load_x4`, `load_weight4`: one scale and one or two
// words per 4 quantized weights), consecutive threads taking consecutive rows: their stores
// into the tile land in consecutive banks. Edges (m, n, k not multiples of the tile) are
// zero-padded on load and masked on store.
//
// After matmul_io.wgsl (bindings, `tile_x4`, `tile_w4`, `store`).

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 32u;

var<workgroup> xs: array<vec4<f32>, 512>; // [TK][TM / 4]
var<workgroup> ws: array<vec4<f32>, 512>; // [TK][TN / 4]

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
            let xv = tile_x4(m0 + r, k0 + kq);
            let wv = tile_w4(n0 + r, k0 + kq);
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
