//! Our f32 matrix product for linear layers in wasm: `y = x·Wᵀ + b` with W packed once at load
//! into panels of [`NR`] output columns, and a register-blocked [`MR`]×[`NR`] micro-kernel on
//! wasm simd128 (candle's gemm runs several times under the machine's wasm SIMD peak there).
//!
//! Every lane does the same `mul` then `add` as the portable kernel (no fused multiply-add), so
//! the simd128 build returns exactly the portable kernel's numbers, which native tests check.

/// Rows of `x` per micro-kernel call (accumulators: MR × NR/4 = 8 simd registers).
pub const MR: usize = 4;
/// Output columns per panel: two 4-lane vectors.
pub const NR: usize = 8;
/// Depth per pass: a panel slice (KC × NR × 4 bytes = 8 KB) stays in L1.
const KC: usize = 256;
/// Rows per pass: their KC-deep slice of `x` (128 KB) stays in L2.
const MC: usize = 128;

/// A `[n, k]` weight (PyTorch's `out × in`) as `ceil(n / NR)` panels; panel `p` holds, for each
/// `kk`, the NR values `W[p·NR + j][kk]` side by side (zero past `n`).
pub struct PackedWeight {
    panels: Vec<f32>,
    n: usize,
    k: usize,
}

impl PackedWeight {
    pub fn pack(w: &[f32], n: usize, k: usize) -> Self {
        assert_eq!(w.len(), n * k, "weight is not {n}×{k}");
        let panel_count = n.div_ceil(NR);
        let mut panels = vec![0.0; panel_count * k * NR];
        for (row, values) in w.chunks_exact(k).enumerate() {
            let (panel, j) = (row / NR, row % NR);
            let base = panel * k * NR;
            for (kk, &v) in values.iter().enumerate() {
                panels[base + kk * NR + j] = v;
            }
        }
        Self { panels, n, k }
    }

    pub fn out_features(&self) -> usize {
        self.n
    }

    pub fn in_features(&self) -> usize {
        self.k
    }

    /// `x`: `m × k` row-major → `m × n` row-major, plus `bias` (length n) on every row.
    pub fn matmul_bias(&self, x: &[f32], m: usize, bias: &[f32]) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        assert_eq!(x.len(), m * k, "input is not {m}×{k}");
        assert_eq!(bias.len(), n, "bias is not {n} long");
        let mut y = vec![0.0; m * n];
        let mut tile = [[0.0f32; NR]; MR];
        for m0 in (0..m).step_by(MC) {
            let m1 = (m0 + MC).min(m);
            for k0 in (0..k).step_by(KC) {
                let kc = KC.min(k - k0);
                for panel in 0..n.div_ceil(NR) {
                    let n0 = panel * NR;
                    let cols = NR.min(n - n0);
                    let w = &self.panels[panel * k * NR + k0 * NR..][..kc * NR];
                    for r0 in (m0..m1).step_by(MR) {
                        let rows = MR.min(m1 - r0);
                        // The tile starts from the bias, then from the previous depth pass.
                        for (r, acc) in tile.iter_mut().enumerate().take(rows) {
                            let from = if k0 == 0 {
                                &bias[n0..n0 + cols]
                            } else {
                                &y[(r0 + r) * n + n0..][..cols]
                            };
                            acc[..cols].copy_from_slice(from);
                        }
                        let ops = Operands {
                            x: &x[r0 * k + k0..],
                            stride: k,
                            w,
                            kc,
                            rows,
                        };
                        micro_kernel(&mut tile, &ops);
                        for (r, acc) in tile.iter().enumerate().take(rows) {
                            y[(r0 + r) * n + n0..][..cols].copy_from_slice(&acc[..cols]);
                        }
                    }
                }
            }
        }
        y
    }
}

/// One micro-kernel call's operands: `rows` rows of `x` (`stride` apart) and a panel slice `w`,
/// both `kc` deep.
struct Operands<'a> {
    x: &'a [f32],
    stride: usize,
    w: &'a [f32],
    kc: usize,
    rows: usize,
}

/// `tile[r] += Σ_kk x[r·stride + kk] · w[kk·NR ..][..NR]` for `r < rows`, `kk < kc`.
fn micro_kernel(tile: &mut [[f32; NR]; MR], ops: &Operands) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if ops.rows == MR {
        return simd128_kernel(tile, ops);
    }
    portable_kernel(tile, ops)
}

/// [`micro_kernel`] on full tiles with wasm simd128.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn simd128_kernel(tile: &mut [[f32; NR]; MR], ops: &Operands) {
    use core::arch::wasm32::*;
    let Operands {
        x, stride, w, kc, ..
    } = *ops;
    assert!(w.len() >= kc * NR && x.len() >= 3 * stride + kc);
    // SAFETY: the assert bounds every read: w[kk·NR + 0..8] and x[r·stride + kk], r < 4, kk < kc;
    // the tile is [[f32; 8]; 4]. Unaligned v128 loads and stores are allowed in wasm.
    unsafe {
        let t = tile.as_mut_ptr() as *mut v128;
        // Row r's columns 0..4 and 4..8: 8 registers (the loops unroll).
        let mut c = [f32x4_splat(0.0); 2 * MR];
        for (i, c) in c.iter_mut().enumerate() {
            *c = v128_load(t.add(i));
        }
        let (xp, wp) = (x.as_ptr(), w.as_ptr());
        for kk in 0..kc {
            let w0 = v128_load(wp.add(kk * NR) as *const v128);
            let w1 = v128_load(wp.add(kk * NR + 4) as *const v128);
            for r in 0..MR {
                let a = f32x4_splat(*xp.add(r * stride + kk));
                c[2 * r] = f32x4_add(c[2 * r], f32x4_mul(a, w0));
                c[2 * r + 1] = f32x4_add(c[2 * r + 1], f32x4_mul(a, w1));
            }
        }
        for (i, c) in c.into_iter().enumerate() {
            v128_store(t.add(i), c);
        }
    }
}

/// The same arithmetic, lane by lane, in plain Rust.
fn portable_kernel(tile: &mut [[f32; NR]; MR], ops: &Operands) {
    let Operands {
        x,
        stride,
        w,
        kc,
        rows,
    } = *ops;
    for (kk, wk) in w.chunks_exact(NR).take(kc).enumerate() {
        for (r, acc) in tile.iter_mut().enumerate().take(rows) {
            let a = x[r * stride + kk];
            for (c, &wv) in acc.iter_mut().zip(wk) {
                *c += a * wv;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::kernel_check::{f32_kernel_error, random_values};

    #[test]
    fn matches_reference_on_ragged_shapes() {
        // Sizes around the block edges: rows not a multiple of MR or MC, columns not of NR,
        // depth not of KC, and the model's shapes.
        for &(m, n, k) in &[
            (1, 1, 1),
            (3, 7, 5),
            (5, 9, 257),
            (130, 17, 300),
            (14, 384, 384),
            (37, 1536, 384),
            (9, 384, 1536),
        ] {
            let (worst, bound) = f32_kernel_error(m, n, k);
            assert!(worst <= bound, "{m}×{n}×{k}: max error {worst} > {bound}");
        }
    }

    #[test]
    fn zero_rows_give_an_empty_output() {
        let w = PackedWeight::pack(&random_values(8 * 4, 1), 8, 4);
        assert!(w.matmul_bias(&[], 0, &[0.0; 8]).is_empty());
    }
}
