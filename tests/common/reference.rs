//! f64 CPU references of the GPU kernels (tests/webgpu_kernels.rs, tests/webgpu_features.rs),
//! written from the definitions, independently of the WGSL and of the CPU backend.

use candle_core::quantized::QTensor;
use candle_core::{Device, Tensor};
use sr_bench::backend::cpu::relative_position_bucket;
use sr_bench::model::Pooling;

pub fn erf64(x: &[f64]) -> Vec<f64> {
    Tensor::new(x, &Device::Cpu)
        .unwrap()
        .erf()
        .unwrap()
        .to_vec1()
        .unwrap()
}

/// A quantized tensor's values as candle (the CPU backend) decodes them, flattened.
pub fn dequantized(q: &QTensor) -> Vec<f32> {
    q.dequantize(&Device::Cpu)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap()
}

/// Exact-erf GELU.
pub fn gelu64(x: &[f32]) -> Vec<f64> {
    let z: Vec<f64> = x.iter().map(|&v| v as f64 / 2f64.sqrt()).collect();
    x.iter()
        .zip(erf64(&z))
        .map(|(&v, e)| 0.5 * v as f64 * (1.0 + e))
        .collect()
}

/// `act(x·wᵀ + b) (+ r)`: x `[m, k]`, w `[n, k]`.
pub fn matmul(
    x: &[f32],
    w: &[f32],
    b: &[f32],
    r: Option<&[f32]>,
    (m, n, k): (usize, usize, usize),
    gelu: bool,
) -> Vec<f64> {
    let mut y = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = b[j] as f64;
            for l in 0..k {
                s += x[i * k + l] as f64 * w[j * k + l] as f64;
            }
            y[i * n + j] = s;
        }
    }
    if gelu {
        let as32: Vec<f32> = y.iter().map(|&v| v as f32).collect();
        y = gelu64(&as32);
    }
    if let Some(r) = r {
        y.iter_mut().zip(r).for_each(|(v, &r)| *v += r as f64);
    }
    y
}

/// Row-wise LayerNorm of `[rows, cols]`.
pub fn layer_norm(x: &[f32], g: &[f32], b: &[f32], cols: usize, eps: f32) -> Vec<f64> {
    let mut want = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / cols as f64;
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / cols as f64;
        let inv = 1.0 / (var + eps as f64).sqrt();
        for c in 0..cols {
            want.push((row[c] as f64 - mean) * inv * g[c] as f64 + b[c] as f64);
        }
    }
    want
}

/// A right-padded mask: row b keeps its first `lengths[b]` of `seq` tokens.
pub fn lengths_to_mask(lengths: &[usize], seq: usize) -> Vec<u32> {
    lengths
        .iter()
        .flat_map(|&l| (0..seq).map(move |t| u32::from(t < l)))
        .collect()
}

/// Masked multi-head attention of `qkv` `[batch·seq, 3·hidden]` (q | k | v per token);
/// `relative`: MPNet's bias table `[buckets, heads]`, resolved per (query, key) by the CPU
/// backend's own bucket function. Returns the context `[batch·seq, hidden]`.
pub fn attention(
    qkv: &[f32],
    mask: &[u32],
    (batch, seq, heads, hd): (usize, usize, usize, usize),
    relative: Option<(&[f32], usize)>,
) -> Vec<f64> {
    grouped_attention(
        qkv,
        mask,
        (batch, seq, heads, heads, hd),
        relative,
        (0, false),
    )
}

/// [`attention`] with `kv_heads` key/value heads (query head h reads h / (heads / kv_heads)):
/// `qkv` `[batch·seq, (heads + 2·kv_heads)·hd]`; query i sees key j only when `|i − j| <
/// window` (0: any) and, if `causal`, `j ≤ i`. Returns `[batch·seq, heads·hd]`.
pub fn grouped_attention(
    qkv: &[f32],
    mask: &[u32],
    (batch, seq, heads, kv_heads, hd): (usize, usize, usize, usize, usize),
    relative: Option<(&[f32], usize)>,
    (window, causal): (usize, bool),
) -> Vec<f64> {
    let hidden = heads * hd;
    let stride = (heads + 2 * kv_heads) * hd;
    let group = heads / kv_heads;
    let mut want = vec![0f64; batch * seq * hidden];
    // part 0: query head h; parts 1 and 2: the key and value heads of h's group.
    let at = |b: usize, t: usize, part: usize, h: usize, d: usize| {
        let offset = match part {
            0 => h * hd,
            1 => hidden + (h / group) * hd,
            _ => hidden + kv_heads * hd + (h / group) * hd,
        };
        qkv[(b * seq + t) * stride + offset + d] as f64
    };
    let seen = |i: usize, j: usize| (window == 0 || i.abs_diff(j) < window) && (!causal || j <= i);
    let bias = |h: usize, i: usize, j: usize| match relative {
        Some((table, buckets)) => {
            let bucket = relative_position_bucket(j as i64 - i as i64, buckets, 128);
            table[bucket * heads + h] as f64
        }
        None => 0.0,
    };
    for b in 0..batch {
        for h in 0..heads {
            for i in 0..seq {
                let scores: Vec<f64> = (0..seq)
                    .map(|j| {
                        if mask[b * seq + j] == 0 || !seen(i, j) {
                            f64::NEG_INFINITY
                        } else {
                            (0..hd)
                                .map(|d| at(b, i, 0, h, d) * at(b, j, 1, h, d))
                                .sum::<f64>()
                                / (hd as f64).sqrt()
                                + bias(h, i, j)
                        }
                    })
                    .collect();
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let total: f64 = e.iter().sum();
                for d in 0..hd {
                    want[(b * seq + i) * hidden + h * hd + d] =
                        (0..seq).map(|j| e[j] * at(b, j, 2, h, d)).sum::<f64>() / total;
                }
            }
        }
    }
    want
}

/// Row-wise RMSNorm of `[rows, cols]` (`x / √(mean(x²) + eps) · g`), plus `residual`.
pub fn rms_norm(x: &[f32], g: &[f32], residual: Option<&[f32]>, cols: usize, eps: f32) -> Vec<f64> {
    let mut want = Vec::with_capacity(x.len());
    for (r, row) in x.chunks(cols).enumerate() {
        let ms = row.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / cols as f64;
        let inv = 1.0 / (ms + eps as f64).sqrt();
        for c in 0..cols {
            let add = residual.map_or(0.0, |res| res[r * cols + c] as f64);
            want.push(row[c] as f64 * inv * g[c] as f64 + add);
        }
    }
    want
}

/// The decoders' query and key heads of `qkv` `[rows, (heads + 2·kv_heads)·hd]`: each head
/// RMSNormed with the query norm `qn` or the key norm `kn`, then turned by rotary positions
/// (rotate half: pair (c, c + hd/2) by the angle θ = position · base^(−2c/hd), position = row
/// mod seq); the values unchanged.
pub fn head_norm_rope(
    qkv: &[f32],
    (qn, kn): (&[f32], &[f32]),
    (seq, heads, kv_heads, hd): (usize, usize, usize, usize),
    (base, eps): (f64, f32),
) -> Vec<f64> {
    let stride = (heads + 2 * kv_heads) * hd;
    let half = hd / 2;
    let mut want: Vec<f64> = qkv.iter().map(|&v| v as f64).collect();
    for (r, row) in qkv.chunks(stride).enumerate() {
        let position = (r % seq) as f64;
        for head in 0..heads + kv_heads {
            let g = if head < heads { qn } else { kn };
            let x = &row[head * hd..(head + 1) * hd];
            let ms = x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / hd as f64;
            let inv = 1.0 / (ms + eps as f64).sqrt();
            let normed: Vec<f64> = (0..hd).map(|c| x[c] as f64 * inv * g[c] as f64).collect();
            for c in 0..half {
                let theta = position * base.powf(-(2.0 * c as f64) / hd as f64);
                let (a, b) = (normed[c], normed[c + half]);
                let out = r * stride + head * hd;
                want[out + c] = a * theta.cos() - b * theta.sin();
                want[out + c + half] = b * theta.cos() + a * theta.sin();
            }
        }
    }
    want
}

/// The pooling kernel's edge shapes (sentence lengths, seq, dim): one token, ragged batches
/// with one-token rows, a width off the 128-thread workgroup, MPNet's width.
pub fn pooling_cases() -> [(Vec<usize>, usize, usize); 4] {
    [
        (vec![1], 1, 384),
        (vec![11, 3, 7, 1, 11], 11, 384),
        (vec![40, 2], 40, 130),
        (vec![5, 1, 2], 5, 768),
    ]
}

/// Pooling of `x` `[batch·seq, dim]` over the tokens `mask` keeps (right-padded; mean of none
/// is 0), then L2 normalisation (norm at least 1e-12).
pub fn pool_l2(
    x: &[f32],
    mask: &[u32],
    (batch, seq, dim): (usize, usize, usize),
    pooling: Pooling,
) -> Vec<f64> {
    let mut want = Vec::with_capacity(batch * dim);
    for b in 0..batch {
        let token = |t: usize, c: usize| x[(b * seq + t) * dim + c] as f64;
        let kept: Vec<usize> = (0..seq).filter(|t| mask[b * seq + t] != 0).collect();
        let v: Vec<f64> = (0..dim)
            .map(|c| match pooling {
                Pooling::Mean => {
                    kept.iter().map(|&t| token(t, c)).sum::<f64>() / (kept.len() as f64).max(1e-9)
                }
                Pooling::Cls => token(0, c),
                Pooling::Last => token(kept.len().max(1) - 1, c),
                Pooling::Max => kept.iter().map(|&t| token(t, c)).fold(f64::MIN, f64::max),
            })
            .collect();
        let norm = v.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
        want.extend(v.iter().map(|v| v / norm));
    }
    want
}

/// `x[r, c] + pos[r mod seq, c] + type0[c]` over `[rows, cols]`.
pub fn embed_add(x: &[f32], pos: &[f32], type0: &[f32], (seq, cols): (usize, usize)) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let (r, c) = (i / cols, i % cols);
            x[i] as f64 + pos[(r % seq) * cols + c] as f64 + type0[c] as f64
        })
        .collect()
}
