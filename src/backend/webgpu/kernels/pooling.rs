//! Pooling over the mask fused with L2 normalisation (`wgsl/pooling.wgsl`), one workgroup
//! per sentence: every pooling mode the loader accepts.

use super::params::uniform_params;
use super::{u, Shape};
use crate::model::Pooling;

pub(super) const POOLING: &str = include_str!("../wgsl/pooling.wgsl");

/// [`PoolingParams::mode`]: the mean of the tokens the mask keeps.
pub(crate) const POOL_MEAN: u32 = 0;
/// [`PoolingParams::mode`]: the first token.
pub(crate) const POOL_CLS: u32 = 1;
/// [`PoolingParams::mode`]: the last token the mask keeps.
pub(crate) const POOL_LAST: u32 = 2;
/// [`PoolingParams::mode`]: the element-wise maximum over the tokens the mask keeps.
pub(crate) const POOL_MAX: u32 = 3;

uniform_params! {
    /// `wgsl/pooling.wgsl`: pooling over the mask and L2 normalisation of `[batch·seq, dim]`.
    PoolingParams {
        batch: u32,
        seq: u32,
        dim: u32,
        /// [`POOL_MEAN`], [`POOL_CLS`], [`POOL_LAST`] or [`POOL_MAX`].
        mode: u32,
    }
}

/// Pooling over the mask (mean, first, last or max token), then L2 normalisation,
/// `[batch·seq, dim]` → `[batch, dim]`: x, mask, pooled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PoolL2 {
    pub dim: usize,
    pub pooling: Pooling,
}

impl PoolL2 {
    pub fn params(&self, s: Shape) -> PoolingParams {
        PoolingParams {
            batch: u(s.batch),
            seq: u(s.seq),
            dim: u(self.dim),
            mode: match self.pooling {
                Pooling::Mean => POOL_MEAN,
                Pooling::Cls => POOL_CLS,
                Pooling::Last => POOL_LAST,
                Pooling::Max => POOL_MAX,
            },
        }
    }

    /// One workgroup per sentence.
    pub fn workgroups(&self, s: Shape) -> (u32, u32, u32) {
        (u(s.batch), 1, 1)
    }
}
