//! The attention's runs (grouped-query heads, MPNet's relative bias, windowed, causal) and
//! the decoders' per-head norms with rotary positions.

use anyhow::{bail, Result};

use super::super::buffers::storage;
use super::super::context::GpuContext;
use super::super::kernels::{
    check_attention_shape, Attention, HeadNormRope, Op, Shape, ATTENTION_MAX_SEQ,
};
use super::{check_len, upload_f32, upload_u32, upload_values};
use crate::backend::cpu::relative_bias_by_distance;

impl GpuContext {
    /// Masked multi-head attention. `qkv`: `[batch·seq, 3·heads·head_dim]` (q | k | v per
    /// token), `mask`: `[batch·seq]` (1 = token); `relative`: MPNet's bias table
    /// `[buckets, heads]` and its bucket count. Returns the context `[batch·seq, hidden]`;
    /// qkv and the context are stored as the activations are.
    pub async fn run_attention(
        &self,
        qkv: &[f32],
        mask: &[u32],
        (batch, seq, heads, head_dim): (usize, usize, usize, usize),
        relative: Option<(&[f32], usize)>,
    ) -> Result<Vec<f32>> {
        let masks = AttentionMasks {
            relative,
            ..Default::default()
        };
        self.run_grouped_attention(qkv, mask, (batch, seq, heads, heads, head_dim), masks)
            .await
    }

    /// [`run_attention`](Self::run_attention) with `kv_heads` key/value heads shared by the
    /// `heads` query heads: `qkv` `[batch·seq, (heads + 2·kv_heads)·head_dim]`; causal or
    /// windowed when `masks` says so. Returns the context `[batch·seq, heads·head_dim]`.
    pub async fn run_grouped_attention(
        &self,
        qkv: &[f32],
        mask: &[u32],
        (batch, seq, heads, kv_heads, head_dim): (usize, usize, usize, usize, usize),
        masks: AttentionMasks<'_>,
    ) -> Result<Vec<f32>> {
        let AttentionMasks {
            relative,
            window,
            causal,
        } = masks;
        let hidden = heads * head_dim;
        check_attention_shape(seq, head_dim, (heads, kv_heads))?;
        check_len("qkv", qkv, batch * seq * (heads + 2 * kv_heads) * head_dim)?;
        if mask.len() != batch * seq {
            bail!("mask: expected {} values, got {}", batch * seq, mask.len());
        }
        let d = &self.device;
        let act = self.activations();
        let (qkv, mask) = (
            upload_values(d, "qkv", act, qkv),
            upload_u32(d, "mask", mask),
        );
        let bias = match relative {
            Some((table, buckets)) => {
                check_len("relative bias", table, buckets * heads)?;
                relative_bias_by_distance(table, buckets, heads, ATTENTION_MAX_SEQ)
            }
            None => vec![0.0],
        };
        let bias = upload_f32(d, "relative bias", &bias);
        let ctx = storage(d, "ctx", (batch * seq * hidden * act.bytes()) as u64);
        let op = Op::Attention(Attention {
            heads,
            kv_heads,
            head_dim,
            relative_bias: relative.is_some(),
            window,
            causal,
            scaled: true,
        });
        let shape = Shape::batch(batch, seq);
        let buffers = [&qkv, &mask, &bias, &ctx];
        self.run_one(op, shape, &buffers, &ctx, (batch * seq * hidden, act))
            .await
    }

    /// Per-head RMSNorm and rotary positions on the queries and keys of `qkv` `[batch·seq,
    /// (heads + 2·kv_heads)·head_dim]` (stored as the activations are; the values pass
    /// unchanged), with the query and key norms' `[head_dim]` weights and the tables `cos`,
    /// `sin` `[seq, head_dim / 2]`. Returns the whole buffer.
    #[allow(clippy::too_many_arguments)]
    pub async fn run_head_norm_rope(
        &self,
        qkv: &[f32],
        (query_norm, key_norm): (&[f32], &[f32]),
        (cos, sin): (&[f32], &[f32]),
        (batch, seq, heads, kv_heads, head_dim): (usize, usize, usize, usize, usize),
        eps: f32,
    ) -> Result<Vec<f32>> {
        let half = head_dim / 2;
        check_len("qkv", qkv, batch * seq * (heads + 2 * kv_heads) * head_dim)?;
        check_len("query norm", query_norm, head_dim)?;
        check_len("key norm", key_norm, head_dim)?;
        check_len("cos", cos, seq * half)?;
        check_len("sin", sin, seq * half)?;
        let d = &self.device;
        let act = self.activations();
        let buffer = upload_values(d, "qkv", act, qkv);
        let inputs = [query_norm, key_norm, cos, sin].map(|v| upload_f32(d, "input", v));
        let [qn, kn, cb, sb] = &inputs;
        let op = Op::HeadNormRope(HeadNormRope {
            heads,
            kv_heads,
            half,
            eps,
            normalize: true,
        });
        let shape = Shape::batch(batch, seq);
        let out = (qkv.len(), act);
        self.run_one(op, shape, &[&buffer, qn, kn, cb, sb], &buffer, out)
            .await
    }
}

/// The attention's masks beyond the padding: MPNet's relative bias table `[buckets, heads]`
/// and its bucket count, a window (keys with `|key − query| < window`; 0: none), causal.
#[derive(Debug, Clone, Copy, Default)]
pub struct AttentionMasks<'a> {
    pub relative: Option<(&'a [f32], usize)>,
    pub window: usize,
    pub causal: bool,
}
