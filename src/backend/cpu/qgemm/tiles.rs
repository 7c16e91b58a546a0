//! The tile loop of the integer product: the output filled tile by tile from the bias, one
//! micro-kernel call per tile.

use super::{MC, MR, NR};

/// `m × n` outputs into `y` starting from `bias`, filled tile by tile: `kernel(tile, n0, r0,
/// rows, cols)` adds rows `r0 .. r0 + rows` × columns `n0 .. n0 + cols` (`cols` ≤ `W`, whole
/// panels of NR but at the matrix's edge) into `tile` (passes of MC rows, so a pass's quantized
/// inputs stay in L2 while every panel goes by). `W`: NR, or 2·NR for x86-64's two-panel kernel.
pub(super) fn tiled_product<const W: usize>(
    y: &mut [f32],
    m: usize,
    n: usize,
    bias: &[f32],
    mut kernel: impl FnMut(&mut [[f32; W]; MR], usize, usize, usize, usize),
) {
    assert_eq!(bias.len(), n, "bias is not {n} long");
    assert_eq!(y.len(), m * n, "output is not {m}×{n}");
    let mut tile = [[0.0f32; W]; MR];
    for m0 in (0..m).step_by(MC) {
        let m1 = (m0 + MC).min(m);
        for n0 in (0..n).step_by(W) {
            let cols = W.min(n - n0);
            for r0 in (m0..m1).step_by(MR) {
                let rows = MR.min(m1 - r0);
                for acc in tile.iter_mut().take(rows) {
                    copy_cols(acc, &bias[n0..], cols);
                }
                kernel(&mut tile, n0, r0, rows, cols);
                for (r, acc) in tile.iter().enumerate().take(rows) {
                    copy_cols(&mut y[(r0 + r) * n + n0..], acc, cols);
                }
            }
        }
    }
}

/// `dst[..cols] = src[..cols]`, whole panels as fixed-size copies: a copy of a run-time length
/// is a call to `memcpy` natively, 5 % of a profile at 32 bytes a call.
#[inline(always)]
fn copy_cols(dst: &mut [f32], src: &[f32], cols: usize) {
    if cols == 2 * NR {
        dst[..2 * NR].copy_from_slice(&src[..2 * NR]);
    } else if cols == NR {
        dst[..NR].copy_from_slice(&src[..NR]);
    } else {
        dst[..cols].copy_from_slice(&src[..cols]);
    }
}
