//! The optional WebGPU features natively on lavapipe, which offers `subgroups` (and
//! `shader-f16`): the reductions (LayerNorm, pooling) with subgroup operations and with the
//! plain workgroup tree, both against a CPU reference on edge shapes, and the whole encoder
//! both ways. No adapter, or lavapipe without subgroups, is a FAILURE, not a skip.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use sr_bench::backend::webgpu::{self, GpuContext, GpuOptions};
use sr_bench::backend::BackendKind;
use sr_bench::model::{cosine, Pooling};

fn context(plain_kernels: bool) -> GpuContext {
    let options = GpuOptions {
        plain_kernels,
        ..Default::default()
    };
    let ctx = pollster::block_on(GpuContext::new(&options))
        .unwrap_or_else(|e| panic!("no WebGPU adapter (install mesa-vulkan-drivers): {e:#}"));
    println!(
        "adapter {} offers {:?}; subgroups used: {}",
        ctx.adapter.name, ctx.adapter.features, ctx.subgroups
    );
    assert_eq!(ctx.subgroups, !plain_kernels, "lavapipe offers subgroups");
    ctx
}

/// Deterministic values in [-1, 1) (a linear congruential generator).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn max_err(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(g, w)| (*g as f64 - w).abs())
        .fold(0.0, f64::max)
}

#[test]
fn layer_norm_with_and_without_subgroups_matches_the_cpu() {
    for plain in [false, true] {
        let ctx = context(plain);
        for (rows, cols) in [(1, 1), (3, 7), (5, 128), (2, 129), (4, 384), (2, 1000)] {
            let x: Vec<f32> = values(rows * cols, 1)
                .iter()
                .map(|v| v * 3.0 + 0.5)
                .collect();
            let (gamma, beta) = (values(cols, 2), values(cols, 3));
            let eps = 1e-12;
            let got = pollster::block_on(ctx.run_layer_norm(&x, &gamma, &beta, (rows, cols), eps))
                .unwrap();
            let mut want = Vec::with_capacity(rows * cols);
            for r in x.chunks(cols) {
                let mean = r.iter().map(|v| *v as f64).sum::<f64>() / cols as f64;
                let var = r.iter().map(|v| (*v as f64 - mean).powi(2)).sum::<f64>() / cols as f64;
                let inv = 1.0 / (var + eps as f64).sqrt();
                for (c, v) in r.iter().enumerate() {
                    want.push((*v as f64 - mean) * inv * gamma[c] as f64 + beta[c] as f64);
                }
            }
            let err = max_err(&got, &want);
            // cols = 1: zero variance, eps 1e-12 — every value is beta exactly.
            assert!(
                err < 2e-5,
                "subgroups {}: {rows}×{cols} max error {err}",
                !plain
            );
        }
    }
}

#[test]
fn mean_pooling_with_and_without_subgroups_matches_the_cpu() {
    for plain in [false, true] {
        let ctx = context(plain);
        for (batch, seq, dim) in [(1, 1, 1), (3, 9, 384), (2, 5, 130), (4, 1, 768)] {
            let x = values(batch * seq * dim, 4);
            // Row 0 keeps every token, the others a prefix; the last row of 3+ keeps none.
            let mask: Vec<u32> = (0..batch * seq)
                .map(|i| {
                    let (b, t) = (i / seq, i % seq);
                    u32::from(b == 0 || (b + 1 < batch.max(3) && t <= b))
                })
                .collect();
            let got =
                pollster::block_on(ctx.run_pool_l2(&x, &mask, (batch, seq, dim), Pooling::Mean))
                    .unwrap();
            let mut want = Vec::with_capacity(batch * dim);
            for b in 0..batch {
                let kept: Vec<usize> = (0..seq).filter(|t| mask[b * seq + t] != 0).collect();
                let count = (kept.len() as f64).max(1e-9);
                let mean: Vec<f64> = (0..dim)
                    .map(|c| {
                        kept.iter()
                            .map(|t| x[(b * seq + t) * dim + c] as f64)
                            .sum::<f64>()
                            / count
                    })
                    .collect();
                let norm = mean.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
                want.extend(mean.iter().map(|v| v / norm));
            }
            let err = max_err(&got, &want);
            assert!(
                err < 1e-5,
                "subgroups {}: {batch}×{seq}×{dim} max error {err}",
                !plain
            );
        }
    }
}

#[test]
fn the_encoder_with_subgroups_matches_the_plain_kernels() {
    let fixture = common::fixture("all-MiniLM-L6-v2");
    let texts: Vec<&str> = fixture
        .items
        .iter()
        .take(24)
        .map(|i| i.text.as_str())
        .collect();
    let embed = |plain_kernels: bool| {
        let options = GpuOptions {
            plain_kernels,
            ..Default::default()
        };
        let (embedder, auto) = pollster::block_on(webgpu::load_embedder_async(
            common::model_bytes("all-MiniLM-L6-v2", "q8_0"),
            BackendKind::WebGpu,
            &options,
        ))
        .unwrap();
        assert_eq!(auto.gpu().unwrap().context().subgroups, !plain_kernels);
        embedder.embed(&texts).unwrap()
    };
    let (with, plain) = (embed(false), embed(true));
    let worst = with
        .iter()
        .zip(&plain)
        .map(|(a, b)| cosine(a, b))
        .fold(f32::INFINITY, f32::min);
    println!(
        "{} texts: min cosine subgroups vs plain {worst:.7}",
        texts.len()
    );
    assert!(worst > 0.99999, "min cosine {worst}");
    // And against sentence-transformers, as the plain encoder is.
    for (v, item) in with.iter().zip(&fixture.items) {
        assert!(cosine(v, &item.embedding) >= 0.999);
    }
}
