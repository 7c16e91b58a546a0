//! The element-wise kernels on the f32 residual stream (`wgsl/elementwise.wgsl`): the
//! embedding sum and, for the kernel tests, GELU in place; and the grid every one-thread-per-
//! value kernel (these, rotary positions, the gated middle) is launched with.

use super::params::uniform_params;
use super::{grid, u, Shape};

pub(super) const ELEMENTWISE: &str = include_str!("../wgsl/elementwise.wgsl");

/// Threads per workgroup of the element-wise kernels.
const ELEMENTWISE_THREADS: u32 = 256;

uniform_params! {
    /// `wgsl/elementwise.wgsl` (`embed_add` and `gelu_inplace`): `len` values of `[·, cols]`
    /// rows, positions repeating every `seq` rows.
    ElementwiseParams {
        len: u32,
        seq: u32,
        cols: u32,
        _pad: u32,
    }
}

/// `x[r, c] += pos[r mod seq, c] + type0[c]` over `[rows, cols]`: x, pos, type0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct EmbedAdd {
    pub cols: usize,
}

impl EmbedAdd {
    pub fn params(&self, s: Shape) -> ElementwiseParams {
        ElementwiseParams {
            len: u(s.rows * self.cols),
            seq: u(s.seq),
            cols: u(self.cols),
            _pad: 0,
        }
    }

    pub fn workgroups(&self, s: Shape) -> (u32, u32, u32) {
        elementwise(u(s.rows * self.cols))
    }
}

/// `x = gelu(x)` in place over `rows` values: x. Only to measure the approximation (the
/// matmul fuses GELU), so only in the kernel tests.
#[cfg(feature = "testing")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Gelu;

#[cfg(feature = "testing")]
impl Gelu {
    pub fn params(&self, s: Shape) -> ElementwiseParams {
        ElementwiseParams {
            len: u(s.rows),
            seq: 1,
            cols: 1,
            _pad: 0,
        }
    }

    pub fn workgroups(&self, s: Shape) -> (u32, u32, u32) {
        elementwise(u(s.rows))
    }
}

/// The grid of `len` values, one thread each.
pub(super) fn elementwise(len: u32) -> (u32, u32, u32) {
    let (x, y) = grid(len.div_ceil(ELEMENTWISE_THREADS));
    (x, y, 1)
}
