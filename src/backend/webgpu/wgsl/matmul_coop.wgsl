// y[m, n] = act(x[m, k] · w[n, k]ᵀ + bias[n]) (+ residual[m, n]) on matrix units (wgpu's
// cooperative matrices: tensor cores), natively where the adapter offers f16 × f16 → f32
// blocks of 16 × 16 × 16 and subgroups of 32. The same 64×64 output tile per workgroup as
// matmul.wgsl (so the same grid), here 128 threads = 4 subgroups, each owning a 32×32
// quadrant as 2 × 2 accumulator blocks. K in steps of 32 through workgroup memory as f16:
// xs row-major [TM][TK] is the A operand, ws [TN][TK] (each column's k contiguous) the B
// operand column-major. The tiles are loaded as in matmul.wgsl (`tile_x4`, `tile_w4`,
// dequantized on load), consecutive threads taking consecutive k of a row. The accumulators
// reach `store` (bias, GELU, residual, edge masks) one block at a time through a
// per-subgroup scratch block.
//
// After matmul_io.wgsl (bindings, `tile_x4`, `tile_w4`, `store`).

alias CoopA = coop_mat16x16<f16, A>;
alias CoopB = coop_mat16x16<f16, B>;
alias CoopC = coop_mat16x16<f32, C>;

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 32u;
// The block side.
const CB: u32 = 16u;

var<workgroup> xs: array<f16, 2048>; // [TM][TK]
var<workgroup> ws: array<f16, 2048>; // [TN][TK]
var<workgroup> scratch: array<f32, 1024>; // [subgroup][CB][CB]

// A block of `scratch` (row-major at `at`) into y at (row, col), through `store`.
fn store_block(at: u32, row: u32, col: u32, lane: u32, lanes: u32) {
    for (var e = lane; e < CB * CB; e += lanes) {
        store(row + e / CB, col + e % CB, scratch[at + e]);
    }
}

@compute @workgroup_size(128, 1, 1)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) lanes: u32,
) {
    let m0 = wg.y * TM;
    let n0 = wg.x * TN;
    // The subgroup's quadrant of the tile: rows qm.., columns qn...
    let qm = (sg / 2u) * 32u;
    let qn = (sg % 2u) * 32u;
    // acc_ij: rows qm + i·CB.., columns qn + j·CB...
    var acc00 = CoopC();
    var acc01 = CoopC();
    var acc10 = CoopC();
    var acc11 = CoopC();
    for (var k0 = 0u; k0 < p.k; k0 += TK) {
        // Each tile is 64 rows × 8 groups of 4 k: 4 groups per thread, k fastest.
        for (var i = 0u; i < 4u; i++) {
            let idx = tid + 128u * i;
            let r = idx / 8u;
            let kq = (idx % 8u) * 4u;
            let xv = tile_x4(m0 + r, k0 + kq);
            let wv = tile_w4(n0 + r, k0 + kq);
            for (var j = 0u; j < 4u; j++) {
                xs[r * TK + kq + j] = f16(xv[j]);
                ws[r * TK + kq + j] = f16(wv[j]);
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk += CB) {
            let a0 = coopLoadT<CoopA>(&xs[qm * TK + kk], TK);
            let a1 = coopLoadT<CoopA>(&xs[(qm + CB) * TK + kk], TK);
            let b0 = coopLoad<CoopB>(&ws[qn * TK + kk], TK);
            let b1 = coopLoad<CoopB>(&ws[(qn + CB) * TK + kk], TK);
            acc00 = coopMultiplyAdd(a0, b0, acc00);
            acc01 = coopMultiplyAdd(a0, b1, acc01);
            acc10 = coopMultiplyAdd(a1, b0, acc10);
            acc11 = coopMultiplyAdd(a1, b1, acc11);
        }
        workgroupBarrier();
    }
    let own = sg * CB * CB;
    let row = m0 + qm;
    let col = n0 + qn;
    coopStoreT(acc00, &scratch[own], CB);
    workgroupBarrier();
    store_block(own, row, col, lane, lanes);
    workgroupBarrier();
    coopStoreT(acc01, &scratch[own], CB);
    workgroupBarrier();
    store_block(own, row, col + CB, lane, lanes);
    workgroupBarrier();
    coopStoreT(acc10, &scratch[own], CB);
    workgroupBarrier();
    store_block(own, row + CB, col, lane, lanes);
    workgroupBarrier();
    coopStoreT(acc11, &scratch[own], CB);
    workgroupBarrier();
    store_block(own, row + CB, col + CB, lane, lanes);
}
