//! The gated feed-forward's middle (`wgsl/glu.wgsl`): the gate's activation (GELU, SiLU or
//! Gemma's tanh GELU) times the up half, one thread per output value.

use super::elementwise::elementwise;
use super::params::uniform_params;
use super::{u, Shape};
use crate::backend::cpu::GateActivation;

pub(super) const GLU: &str = include_str!("../wgsl/glu.wgsl");

/// The gate activations of [`GluParams::act`].
pub(crate) const GLU_GELU: u32 = 0;
pub(crate) const GLU_SILU: u32 = 1;
pub(crate) const GLU_GELU_TANH: u32 = 2;

uniform_params! {
    /// `wgsl/glu.wgsl`: `y[r, j] = act(x[r, j]) · x[r, inter + j]`, `len = rows · inter`.
    GluParams {
        len: u32,
        inter: u32,
        /// [`GLU_GELU`], [`GLU_SILU`] or [`GLU_GELU_TANH`].
        act: u32,
        _pad: u32,
    }
}

/// `y[r, j] = act(x[r, j]) · x[r, inter + j]` (SwiGLU, GeGLU or Gemma's tanh GeGLU), x
/// `[rows, 2·inter]`: x, y.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Glu {
    pub inter: usize,
    pub act: GateActivation,
}

impl Glu {
    pub fn params(&self, s: Shape) -> GluParams {
        GluParams {
            len: u(s.rows * self.inter),
            inter: u(self.inter),
            act: match self.act {
                GateActivation::Gelu => GLU_GELU,
                GateActivation::Silu => GLU_SILU,
                GateActivation::GeluTanh => GLU_GELU_TANH,
            },
            _pad: 0,
        }
    }

    pub fn workgroups(&self, s: Shape) -> (u32, u32, u32) {
        elementwise(u(s.rows * self.inter))
    }
}
