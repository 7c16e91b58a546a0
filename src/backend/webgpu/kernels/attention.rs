//! Masked multi-head attention (`wgsl/attention.wgsl`): one workgroup per query × head ×
//! sentence, a row of scores in workgroup memory; grouped-query heads, MPNet's relative bias,
//! a sliding window, causal. Its limits, and the check a model's shape passes against them.

use anyhow::{bail, Result};

use super::params::uniform_params;
use super::{u, Shape};

pub(super) const ATTENTION: &str = include_str!("../wgsl/attention.wgsl");

/// Threads per workgroup of the attention kernel; `head_dim` must divide it or be a multiple
/// of it, up to [`ATTENTION_MAX_HEAD_DIM`].
const ATTENTION_THREADS: usize = 64;
/// Widest head the attention kernel holds in workgroup memory (Gemma 3's 256).
const ATTENTION_MAX_HEAD_DIM: usize = 256;
/// Longest sequence the attention kernel holds in workgroup memory (and the span of MPNet's
/// relative-position bias table: distances −511..=511).
pub(crate) const ATTENTION_MAX_SEQ: usize = 512;

uniform_params! {
    /// `wgsl/attention.wgsl`: masked multi-head attention over a fused QKV buffer of `stride`
    /// values a token (queries first, keys at `k_offset`, values at `v_offset`).
    AttentionParams {
        batch: u32,
        seq: u32,
        heads: u32,
        head_dim: u32,
        stride: u32,
        k_offset: u32,
        v_offset: u32,
        /// Query heads per key/value head (grouped-query attention; 1 = one each).
        group: u32,
        scale: f32,
        /// 0: no relative-position bias; else the bias table is `[heads, 2·rel_span − 1]`
        /// (MPNet, T5), indexed by `key − query + rel_span − 1`.
        rel_span: u32,
        /// A sliding window (ModernBERT's and Gemma's local layers): only keys with `|key −
        /// query| < window`; 0 = every key.
        window: u32,
        /// 1: keys after the query are masked (Qwen3's causal attention).
        causal: u32,
    }
}

/// Masked multi-head attention of `[batch·seq, (heads + 2·kv_heads)·head_dim]` (query
/// head h reads key/value head h·kv_heads/heads), plus MPNet's relative-position bias
/// (`[heads, 2·ATTENTION_MAX_SEQ − 1]`) when `relative_bias`: qkv, mask, bias (unread
/// without), context `[batch·seq, heads·head_dim]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Attention {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub relative_bias: bool,
    /// Local layers (ModernBERT's, Gemma's): a key is seen when `|key − query| < window`
    /// (0: all).
    pub window: usize,
    /// Keys after the query are not seen (Qwen3).
    pub causal: bool,
    /// Scores scaled by 1/√head_dim (all but T5's, whose query weights carry it).
    pub scaled: bool,
}

impl Attention {
    pub fn params(&self, s: Shape) -> AttentionParams {
        let Self {
            heads,
            kv_heads,
            head_dim,
            relative_bias,
            window,
            causal,
            scaled,
        } = *self;
        AttentionParams {
            batch: u(s.batch),
            seq: u(s.seq),
            heads: u(heads),
            head_dim: u(head_dim),
            stride: u((heads + 2 * kv_heads) * head_dim),
            k_offset: u(heads * head_dim),
            v_offset: u((heads + kv_heads) * head_dim),
            group: u(heads / kv_heads.max(1)),
            scale: match scaled {
                true => 1.0 / (head_dim as f32).sqrt(),
                false => 1.0,
            },
            rel_span: if relative_bias {
                u(ATTENTION_MAX_SEQ)
            } else {
                0
            },
            window: u(window),
            causal: u32::from(causal),
        }
    }

    /// One workgroup per query, head and sentence.
    pub fn workgroups(&self, s: Shape) -> (u32, u32, u32) {
        (u(s.seq), u(self.heads), u(s.batch))
    }
}

/// Fails unless the attention kernel handles sequences of `seq` tokens, heads of `head_dim`
/// and `heads` query heads over `kv_heads` key/value heads.
pub(crate) fn check_attention_shape(
    seq: usize,
    head_dim: usize,
    (heads, kv_heads): (usize, usize),
) -> Result<()> {
    if seq > ATTENTION_MAX_SEQ {
        bail!("the GPU attention kernel handles up to {ATTENTION_MAX_SEQ} tokens, got {seq}");
    }
    let fits = head_dim > 0
        && head_dim <= ATTENTION_MAX_HEAD_DIM
        && (ATTENTION_THREADS.is_multiple_of(head_dim)
            || head_dim.is_multiple_of(ATTENTION_THREADS));
    if !fits {
        bail!(
            "the GPU attention kernel needs a head size dividing {ATTENTION_THREADS} or a \
             multiple of it up to {ATTENTION_MAX_HEAD_DIM}, got {head_dim}"
        );
    }
    if kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
        bail!("{heads} query heads cannot share {kv_heads} key/value heads evenly");
    }
    Ok(())
}
