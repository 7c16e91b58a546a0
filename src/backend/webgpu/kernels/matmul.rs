//! The tiled matmul (`wgsl/matmul.wgsl`, and on matrix units `wgsl/matmul_coop.wgsl`, both
//! after `wgsl/matmul_io.wgsl`'s bindings, row loads and epilogue): its parameter block, its
//! launch and its grid. Its modules, one per weight format and output, are assembled in
//! `shaders.rs`.

use super::params::uniform_params;
use super::{u, Shape, WeightFormat};

pub(super) const MATMUL_IO: &str = include_str!("../wgsl/matmul_io.wgsl");
pub(super) const MATMUL: &str = include_str!("../wgsl/matmul.wgsl");
#[cfg(not(target_arch = "wasm32"))]
pub(super) const MATMUL_COOP: &str = include_str!("../wgsl/matmul_coop.wgsl");
/// The directive of wgpu's cooperative matrices (native only; naga requires it).
#[cfg(not(target_arch = "wasm32"))]
pub(super) const ENABLE_COOP: &str = "enable wgpu_cooperative_matrix;\n";

/// The matmul's output alias: the residual-adding projections write the f32 residual
/// stream (`x`, the sums LayerNorm reads), the others an activation.
pub(super) const MATMUL_OUT_ACT: &str = "alias Out = Act;\n";
pub(super) const MATMUL_OUT_F32: &str = "alias Out = f32;\n";

/// Output tile of the matmul kernel (rows and columns per workgroup).
const MATMUL_TILE: u32 = 64;

/// [`MatmulParams::flags`]: exact-erf GELU after the bias.
pub(crate) const FLAG_GELU: u32 = 1;
/// [`MatmulParams::flags`]: add `residual` (after the bias and any GELU).
pub(crate) const FLAG_RESIDUAL: u32 = 2;
/// [`MatmulParams::flags`]: ReLU after the bias (T5 1.0's feed-forward).
pub(crate) const FLAG_RELU: u32 = 4;

uniform_params! {
    /// `wgsl/matmul.wgsl`: `y[m, n] = act(x[m, k] · w[n, k]ᵀ + bias) (+ residual)`.
    MatmulParams {
        m: u32,
        n: u32,
        k: u32,
        /// [`FLAG_GELU`] | [`FLAG_RESIDUAL`].
        flags: u32,
    }
}

/// `act(x·wᵀ + bias) (+ residual)`, x `[rows, k]`, w `[n, k]` stored as `format`:
/// x, w, bias, residual, y.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Matmul {
    pub n: usize,
    pub k: usize,
    pub flags: u32,
    pub format: WeightFormat,
}

impl Matmul {
    pub fn params(&self, s: Shape) -> MatmulParams {
        MatmulParams {
            m: u(s.rows),
            n: u(self.n),
            k: u(self.k),
            flags: self.flags,
        }
    }

    /// One workgroup per output tile.
    pub fn workgroups(&self, s: Shape) -> (u32, u32, u32) {
        (
            u(self.n).div_ceil(MATMUL_TILE),
            u(s.rows).div_ceil(MATMUL_TILE),
            1,
        )
    }
}
