//! The row-wise norms: LayerNorm (`wgsl/layernorm.wgsl`) and RMSNorm (`wgsl/rms_norm.wgsl`,
//! which can add a residual), one workgroup per row.

use super::params::uniform_params;
use super::{grid, u, Shape};

pub(super) const LAYERNORM: &str = include_str!("../wgsl/layernorm.wgsl");
pub(super) const RMS_NORM: &str = include_str!("../wgsl/rms_norm.wgsl");

uniform_params! {
    /// `wgsl/layernorm.wgsl`: row-wise LayerNorm of `[rows, cols]`.
    LayerNormParams {
        rows: u32,
        cols: u32,
        eps: f32,
        _pad: u32,
    }
}

uniform_params! {
    /// `wgsl/rms_norm.wgsl`: row-wise RMSNorm of `[rows, cols]`, plus the residual when
    /// `residual` is 1.
    RmsNormParams {
        rows: u32,
        cols: u32,
        eps: f32,
        residual: u32,
    }
}

/// Row-wise LayerNorm of `[rows, cols]`: x, gamma, beta, y.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LayerNorm {
    pub cols: usize,
    pub eps: f32,
}

impl LayerNorm {
    pub fn params(&self, s: Shape) -> LayerNormParams {
        LayerNormParams {
            rows: u(s.rows),
            cols: u(self.cols),
            eps: self.eps,
            _pad: 0,
        }
    }
}

/// Row-wise RMSNorm of `[rows, cols]`, plus `residual` when asked: x, gamma, residual
/// (unread without), y. All f32.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RmsNorm {
    pub cols: usize,
    pub eps: f32,
    pub residual: bool,
}

impl RmsNorm {
    pub fn params(&self, s: Shape) -> RmsNormParams {
        RmsNormParams {
            rows: u(s.rows),
            cols: u(self.cols),
            eps: self.eps,
            residual: u32::from(self.residual),
        }
    }
}

/// Either norm's grid: one workgroup per row.
pub(super) fn workgroups(s: Shape) -> (u32, u32, u32) {
    let rows = grid(u(s.rows));
    (rows.0, rows.1, 1)
}
