//! Rotary positions on the queries and keys of a QKV buffer: alone (`wgsl/rope.wgsl`, NeoX
//! halves, one thread per pair) or after per-head RMSNorms (`wgsl/head_norm_rope.wgsl`, one
//! workgroup per token and head).

use super::elementwise::elementwise;
use super::params::uniform_params;
use super::{grid, u, Shape};

pub(super) const HEAD_NORM_ROPE: &str = include_str!("../wgsl/head_norm_rope.wgsl");
pub(super) const ROPE: &str = include_str!("../wgsl/rope.wgsl");

uniform_params! {
    /// `wgsl/head_norm_rope.wgsl`: per-head RMSNorm (where `normalize` is 1) and rotary
    /// positions over the queries and keys of the token rows of a
    /// `[rows, (heads + 2 · kv_heads) · 2 · half]` QKV buffer; position = row mod `seq`.
    HeadNormRopeParams {
        rows: u32,
        seq: u32,
        heads: u32,
        kv_heads: u32,
        half: u32,
        eps: f32,
        normalize: u32,
        _pad: u32,
    }
}

uniform_params! {
    /// `wgsl/rope.wgsl`: rotary positions over the queries and keys of the token rows of a
    /// `[rows, 3 · heads · 2 · half]` QKV buffer, `len = rows · 2 · heads · half` pairs;
    /// position = row mod `seq`.
    RopeParams {
        len: u32,
        seq: u32,
        heads: u32,
        half: u32,
    }
}

/// Per-head RMSNorm (when `normalize`: Qwen3's and Gemma's layers; Qwen2's have none), then
/// rotary positions, in place on the queries and keys of
/// `[batch·seq, (heads + 2·kv_heads)·2·half]`: qkv, query norm `[2·half]`, key norm
/// `[2·half]` (bound but not read without `normalize`), cos `[seq, half]`, sin `[seq, half]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct HeadNormRope {
    pub heads: usize,
    pub kv_heads: usize,
    pub half: usize,
    pub eps: f32,
    pub normalize: bool,
}

impl HeadNormRope {
    pub fn params(&self, s: Shape) -> HeadNormRopeParams {
        HeadNormRopeParams {
            rows: u(s.rows),
            seq: u(s.seq),
            heads: u(self.heads),
            kv_heads: u(self.kv_heads),
            half: u(self.half),
            eps: self.eps,
            normalize: u32::from(self.normalize),
            ..Default::default()
        }
    }

    /// One workgroup per token row and query or key head.
    pub fn workgroups(&self, s: Shape) -> (u32, u32, u32) {
        let rows = grid(u(s.rows));
        (rows.0, rows.1, u(self.heads + self.kv_heads))
    }
}

/// Rotary positions in place on the queries and keys of `[batch·seq, 3·heads·2·half]`:
/// qkv, cos `[seq, half]`, sin `[seq, half]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rope {
    pub heads: usize,
    pub half: usize,
}

impl Rope {
    pub fn params(&self, s: Shape) -> RopeParams {
        RopeParams {
            len: u(s.rows * 2 * self.heads * self.half),
            seq: u(s.seq),
            heads: u(self.heads),
            half: u(self.half),
        }
    }

    pub fn workgroups(&self, s: Shape) -> (u32, u32, u32) {
        elementwise(u(s.rows * 2 * self.heads * self.half))
    }
}
