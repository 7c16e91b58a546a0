//! The WebGPU backend natively (lavapipe on machines without a GPU: `mesa-vulkan-drivers`,
//! installed by build.sh): every kernel against a CPU reference on random inputs, sizes that
//! are not multiples of the workgroup sizes included; the whole encoder against the CPU
//! backend and sentence-transformers (the gate: 16 of the reference texts, every edge case and
//! the 256-token one among them; the full tier: all 82); the CPU fallback. No adapter is a
//! FAILURE, not a skip.
#![cfg(not(target_arch = "wasm32"))]

mod common;
#[path = "common/reference.rs"]
mod reference;

use candle_core::quantized::{ggml_file::qtensor_from_ggml, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use half::f16;
use sr_bench::backend::webgpu::{self, GpuContext, GpuOptions};
use sr_bench::backend::{load_embedder, BackendKind, MatmulMode};
use sr_bench::model::{cosine, ModelFile, Pooling};

const MODEL: &str = "all-MiniLM-L6-v2";
const MPNET: &str = "all-mpnet-base-v2";

fn gpu() -> GpuContext {
    gpu_with(false)
}

/// `plain_kernels`: without the optional features (`subgroups`) even where lavapipe has them.
/// The kernel tests keep f32 activations for their tight bounds (`no_f16`); the f16 variants
/// are tests/webgpu_features.rs's.
fn gpu_with(plain_kernels: bool) -> GpuContext {
    let options = GpuOptions {
        plain_kernels,
        no_f16: true,
        ..Default::default()
    };
    match pollster::block_on(GpuContext::new(&options)) {
        Ok(ctx) => ctx,
        Err(e) => panic!(
            "no WebGPU adapter for the GPU tests ({e:#}). Without a GPU, install lavapipe \
             (`apt-get install -y mesa-vulkan-drivers`, which ./build.sh does) — these tests \
             must not be skipped"
        ),
    }
}

/// Deterministic uniform values in [-scale, scale) (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.next() * scale).collect()
    }
}

/// max |a − b| / (1 + |b|): absolute for small values, relative for large ones.
fn max_err(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len(), "length");
    got.iter()
        .zip(want)
        .map(|(&g, &w)| {
            assert!(g.is_finite(), "non-finite GPU output");
            (g as f64 - w).abs() / (1.0 + w.abs())
        })
        .fold(0.0, f64::max)
}

#[test]
fn an_adapter_is_found_and_described() {
    let ctx = gpu();
    println!("adapter: {}", ctx.adapter.describe());
    assert!(!ctx.adapter.name.is_empty());
}

#[test]
fn matmul_with_bias_gelu_and_residual_matches_the_cpu() {
    let ctx = gpu();
    let mut rng = Rng(1);
    // Edge cases: single element, sizes below / across / not multiples of the 64×64×16 tile,
    // and the encoder's real shapes.
    let shapes = [
        (1, 1, 1),
        (3, 5, 7),
        (37, 70, 45),
        (65, 129, 17),
        (130, 200, 384),
        (77, 384, 1536),
        (64, 1152, 384),
    ];
    for &(m, n, k) in &shapes {
        for (gelu, residual) in [(false, false), (true, false), (false, true)] {
            let x = rng.vec(m * k, 1.0);
            let w = rng.vec(n * k, 0.1);
            let b = rng.vec(n, 0.5);
            let r = rng.vec(m * n, 1.0);
            let r = residual.then_some(r.as_slice());
            let got = pollster::block_on(ctx.run_matmul(&x, &w, &b, r, (m, n, k), gelu)).unwrap();
            let want = reference::matmul(&x, &w, &b, r, (m, n, k), gelu);
            let err = max_err(&got, &want);
            println!("matmul {m}×{n}×{k} gelu={gelu} residual={residual}: max error {err:.2e}");
            assert!(err < 1e-5, "matmul {m}×{n}×{k}: error {err}");
        }
    }
}

/// An `[n, k]` weight as GGML blocks of 32 (q8_0: f16 scale + 32 × i8; q4_0: f16 scale + 16
/// bytes of nibbles, weight j low and j + 16 high, stored + 8), with seeded random contents:
/// the bytes and the values they encode, decoded here in f64 independently of candle and the
/// WGSL. `extreme`: every block at the format's limits (scales ±65504, the smallest f16
/// subnormal and normal, 0 and 1; quants at both ends of their range).
fn craft_blocks(
    dtype: GgmlDType,
    n: usize,
    k: usize,
    extreme: bool,
    rng: &mut Rng,
) -> (Vec<u8>, Vec<f64>) {
    assert_eq!(k % 32, 0);
    let extreme_scales = [65504.0, -65504.0, 5.960_464_5e-8, 6.103_515_6e-5, 0.0, 1.0];
    let (mut bytes, mut values) = (Vec::new(), Vec::with_capacity(n * k));
    for block in 0..n * k / 32 {
        let scale = if extreme {
            f16::from_f32(extreme_scales[block % extreme_scales.len()])
        } else {
            f16::from_f32(rng.next() * 0.02)
        };
        bytes.extend(scale.to_le_bytes());
        let d = scale.to_f64();
        // Raw quants in the format's storage range.
        let raw: Vec<u8> = (0..32)
            .map(|j| {
                let r = if extreme {
                    (j + block) % 2 * 255
                } else {
                    ((rng.next() + 1.0) * 128.0) as usize
                };
                r.min(255) as u8
            })
            .collect();
        match dtype {
            GgmlDType::Q8_0 => {
                bytes.extend(&raw);
                values.extend(raw.iter().map(|&q| d * (q as i8) as f64));
            }
            GgmlDType::Q4_0 => {
                let nibbles: Vec<u8> = raw.iter().map(|&r| r >> 4).collect();
                bytes.extend((0..16).map(|j| nibbles[j] | (nibbles[j + 16] << 4)));
                values.extend(nibbles.iter().map(|&q| d * (q as f64 - 8.0)));
            }
            other => panic!("{other:?} is not a block format"),
        }
    }
    (bytes, values)
}

/// q8_0 and q4_0 weights uploaded as their blocks and dequantized inside the tiled matmul,
/// against `x · Wᵀ + b` in f64 with W decoded from the same bytes. Error per output relative
/// to 1 + |b| + Σ|x·w| (f32 accumulation over k terms), since extreme blocks make sums cancel.
#[test]
fn quantized_matmul_dequantizes_blocks_in_the_kernel() {
    let ctx = gpu();
    let mut rng = Rng(7);
    // k a multiple of the 32-weight block; m, n off the 64×64 tile, one block, n = 1, and
    // the encoders' real shapes (MiniLM 384/1536, MPNet 768/3072).
    let shapes = [
        (1, 1, 32),
        (3, 5, 32),
        (37, 70, 96),
        (65, 129, 160),
        (130, 1, 64),
        (77, 384, 1536),
        (64, 2304, 768),
        (33, 768, 3072),
    ];
    for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
        for &(m, n, k) in &shapes {
            for (gelu, residual, extreme) in [
                (false, false, false),
                (true, false, true),
                (false, true, false),
            ] {
                let (bytes, w) = craft_blocks(dtype, n, k, extreme, &mut rng);
                let q = qtensor_from_ggml(dtype, &bytes, vec![n, k], &Device::Cpu).unwrap();
                // The same values as candle (the CPU backend) decodes them.
                let candle: Vec<f32> = reference::dequantized(&q);
                assert!(
                    candle.iter().zip(&w).all(|(&c, &v)| c as f64 == v),
                    "{dtype:?}: decoding differs from candle's"
                );
                let x = rng.vec(m * k, 1.0);
                let b = rng.vec(n, 0.5);
                let r = rng.vec(m * n, 1.0);
                let r = residual.then_some(r.as_slice());
                let got =
                    pollster::block_on(ctx.run_matmul_quantized(&x, &q, &b, r, (m, n, k), gelu))
                        .unwrap();
                let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
                let want = reference::matmul(&x, &w32, &b, r, (m, n, k), gelu);
                let mut worst = 0f64;
                for i in 0..m {
                    for j in 0..n {
                        let scale: f64 = 1.0
                            + (b[j] as f64).abs()
                            + (0..k)
                                .map(|l| (x[i * k + l] as f64 * w[j * k + l]).abs())
                                .sum::<f64>();
                        let g = got[i * n + j];
                        assert!(g.is_finite(), "{dtype:?} {m}×{n}×{k}: non-finite output");
                        worst = worst.max((g as f64 - want[i * n + j]).abs() / scale);
                    }
                }
                println!("{dtype:?} matmul {m}×{n}×{k} gelu={gelu} residual={residual} extreme={extreme}: max error {worst:.2e}");
                assert!(worst < 1e-5, "{dtype:?} matmul {m}×{n}×{k}: error {worst}");
            }
        }
    }
}

/// Natively the matmul runs without wgpu's runtime checks (index clamps, loop bounding), as
/// it masks its own edges: on the edge shapes it gives bit for bit what the checked kernel
/// gives, for each weight format and epilogue.
#[test]
fn the_matmul_without_runtime_checks_equals_the_checked_one() {
    let trusted = gpu();
    let checked = pollster::block_on(GpuContext::new(&GpuOptions {
        checked_kernels: true,
        no_f16: true,
        ..Default::default()
    }))
    .unwrap();
    let mut rng = Rng(11);
    let shapes = [
        (1, 1, 32),
        (3, 5, 32),
        (37, 70, 96),
        (65, 129, 160),
        (130, 1, 64),
    ];
    for dtype in [GgmlDType::F32, GgmlDType::Q8_0, GgmlDType::Q4_0] {
        for &(m, n, k) in &shapes {
            for (gelu, residual) in [(false, false), (true, false), (false, true)] {
                let x = rng.vec(m * k, 1.0);
                let b = rng.vec(n, 0.5);
                let r = rng.vec(m * n, 1.0);
                let r = residual.then_some(r.as_slice());
                let w = rng.vec(n * k, 0.1);
                let run = |ctx: &GpuContext| {
                    if dtype == GgmlDType::F32 {
                        return pollster::block_on(ctx.run_matmul(&x, &w, &b, r, (m, n, k), gelu));
                    }
                    let t = Tensor::from_vec(w.clone(), (n, k), &Device::Cpu).unwrap();
                    let q = QTensor::quantize(&t, dtype).unwrap();
                    pollster::block_on(ctx.run_matmul_quantized(&x, &q, &b, r, (m, n, k), gelu))
                };
                let (a, c) = (run(&trusted).unwrap(), run(&checked).unwrap());
                assert!(
                    a.iter().zip(&c).all(|(a, c)| a.to_bits() == c.to_bits()),
                    "{dtype:?} matmul {m}×{n}×{k} gelu={gelu} residual={residual}: the unchecked kernel differs"
                );
            }
        }
    }
}

#[test]
fn gelu_error_is_measured_on_a_dense_grid() {
    let ctx = gpu();
    // [-10, 10] in steps of 1/1024, plus the extremes where erf saturates.
    let mut x: Vec<f32> = (-10240..=10240).map(|i| i as f32 / 1024.0).collect();
    x.extend([-30.0, -12.0, 12.0, 30.0, 1e-6, -1e-6]);
    let got = pollster::block_on(ctx.run_gelu(&x)).unwrap();
    let want = reference::gelu64(&x);
    let abs = got
        .iter()
        .zip(&want)
        .map(|(&g, &w)| (g as f64 - w).abs())
        .fold(0.0, f64::max);
    // Relative error where the value is not negligible (|gelu| ≥ 1e-6).
    let rel = got
        .iter()
        .zip(&want)
        .filter(|(_, w)| w.abs() >= 1e-6)
        .map(|(&g, &w)| ((g as f64 - w) / w).abs())
        .fold(0.0, f64::max);
    // The CPU backend's own f32 GELU (candle's gelu_erf), for comparison.
    let cpu: Vec<f32> = Tensor::new(x.as_slice(), &Device::Cpu)
        .unwrap()
        .gelu_erf()
        .unwrap()
        .to_vec1()
        .unwrap();
    let cpu_abs = cpu
        .iter()
        .zip(&want)
        .map(|(&g, &w)| (g as f64 - w).abs())
        .fold(0.0, f64::max);
    println!(
        "GELU (WGSL erfcc) on {} points in [-30, 30]: max abs error {abs:.2e}, max rel error \
         {rel:.2e} (|gelu| ≥ 1e-6); candle's f32 gelu_erf: max abs error {cpu_abs:.2e}",
        x.len()
    );
    assert!(abs < 2e-6, "GELU abs error {abs}");
    assert!(rel < 1e-5, "GELU rel error {rel}");
}

#[test]
fn layer_norm_matches_the_cpu() {
    let ctx = gpu();
    let mut rng = Rng(2);
    for &(rows, cols) in &[(1, 1), (3, 100), (37, 384), (5, 1000)] {
        let x: Vec<f32> = rng.vec(rows * cols, 3.0).iter().map(|v| v + 1.5).collect();
        let g = rng.vec(cols, 1.0);
        let b = rng.vec(cols, 1.0);
        let eps = 1e-12;
        let got = pollster::block_on(ctx.run_layer_norm(&x, &g, &b, (rows, cols), eps)).unwrap();
        let want = reference::layer_norm(&x, &g, &b, cols, eps);
        if cols == 1 {
            // A single column normalises to beta (x − mean = 0).
            assert!(got.iter().zip(&b).all(|(g, b)| (g - b).abs() < 1e-6));
            continue;
        }
        let err = max_err(&got, &want);
        println!("layer norm {rows}×{cols}: max error {err:.2e}");
        assert!(err < 1e-5, "layer norm {rows}×{cols}: error {err}");
    }
}

/// The attention kernel on random q, k, v against an f64 reference; `relative`: MPNet's bias
/// table `[buckets, heads]`, resolved per (query, key) by the CPU backend's own bucket function.
fn check_attention(
    ctx: &GpuContext,
    rng: &mut Rng,
    (lengths, seq, heads, hd): (&[usize], usize, usize, usize),
    relative: Option<(&[f32], usize)>,
) {
    let batch = lengths.len();
    let hidden = heads * hd;
    let qkv = rng.vec(batch * seq * 3 * hidden, 2.0);
    let mask = reference::lengths_to_mask(lengths, seq);
    let got = pollster::block_on(ctx.run_attention(&qkv, &mask, (batch, seq, heads, hd), relative))
        .unwrap();
    let want = reference::attention(&qkv, &mask, (batch, seq, heads, hd), relative);
    let err = max_err(&got, &want);
    println!(
        "attention lengths {lengths:?} seq {seq} heads {heads}×{hd} relative bias {}, softmax \
         with subgroups {}: max error {err:.2e}",
        relative.is_some(),
        ctx.subgroups
    );
    // Measured ≤ 1.5·10⁻⁶ on lavapipe with and without subgroups; 10⁻⁵ is ~7× that, for other
    // drivers' summation order.
    assert!(err < 1e-5, "attention: error {err}");
}

/// Both softmax reductions: with subgroup operations (lavapipe has them) and the plain tree.
fn both_reductions() -> [GpuContext; 2] {
    let [with, plain] = [false, true].map(gpu_with);
    assert!(with.subgroups, "lavapipe offers subgroups");
    assert!(!plain.subgroups);
    [with, plain]
}

#[test]
fn masked_attention_matches_the_cpu() {
    let mut rng = Rng(3);
    // (sentence lengths, seq, heads, head_dim): padding, one-token rows, seq above the
    // 64-thread workgroup, head sizes 32 (MiniLM) and 64.
    let cases: [(&[usize], usize, usize, usize); 4] = [
        (&[1], 1, 1, 32),
        (&[13, 5, 1], 13, 12, 32),
        (&[100, 67, 3], 100, 2, 64),
        (&[256, 200], 256, 12, 32),
    ];
    for ctx in both_reductions() {
        for case in cases {
            check_attention(&ctx, &mut rng, case, None);
        }
    }
}

/// MPNet's attention: the learned relative-position bias (32 T5 buckets, exact up to distance
/// 8, log-spaced to 128, shared beyond) added to every score, on sequences short and long
/// enough to reach every bucket in both directions, up to the kernel's 512 tokens.
#[test]
fn attention_with_mpnet_relative_bias_matches_the_cpu() {
    let mut rng = Rng(6);
    let (buckets, heads) = (32, 12);
    // Bias values of MPNet's magnitude (its table spans about ±5), distinct per bucket and head.
    let table = rng.vec(buckets * heads, 5.0);
    let cases: [(&[usize], usize, usize, usize); 4] = [
        (&[1], 1, heads, 64),
        (&[9, 4, 1], 9, heads, 64),
        (&[150, 37], 150, heads, 64),
        // The longest sequence alone: every row of a batch costs the padded length on lavapipe.
        (&[512], 512, heads, 64),
    ];
    for ctx in both_reductions() {
        for case in cases {
            check_attention(&ctx, &mut rng, case, Some((&table, buckets)));
        }
    }
}

/// The decoders' attention (Qwen3's causal, Gemma 3's windowed) with grouped-query heads, on
/// heads of 64, 128 (Qwen3-Embedding-0.6B's 16 over 8) and 256 (EmbeddingGemma-300m's 3 over
/// 1), wider than the 64-thread workgroup.
#[test]
fn grouped_causal_and_windowed_attention_match_the_cpu() {
    use webgpu::AttentionMasks;
    let mut rng = Rng(11);
    // (lengths, seq, heads, kv_heads, head_dim, window, causal)
    type Case = (&'static [usize], usize, usize, usize, usize, usize, bool);
    let cases: [Case; 5] = [
        (&[1], 1, 2, 1, 128, 0, true),
        (&[13, 5, 1], 13, 4, 2, 64, 0, true),
        (&[40, 17], 40, 3, 1, 256, 9, false),
        (&[70, 3], 70, 16, 8, 128, 0, true),
        (&[30], 30, 4, 4, 32, 5, true),
    ];
    for ctx in both_reductions() {
        for (lengths, seq, heads, kv_heads, hd, window, causal) in cases {
            let batch = lengths.len();
            let qkv = rng.vec(batch * seq * (heads + 2 * kv_heads) * hd, 2.0);
            let mask = reference::lengths_to_mask(lengths, seq);
            let masks = AttentionMasks {
                window,
                causal,
                ..Default::default()
            };
            let dims = (batch, seq, heads, kv_heads, hd);
            let got =
                pollster::block_on(ctx.run_grouped_attention(&qkv, &mask, dims, masks)).unwrap();
            let want = reference::grouped_attention(&qkv, &mask, dims, None, (window, causal));
            let err = max_err(&got, &want);
            println!(
                "attention lengths {lengths:?} heads {heads}/{kv_heads}×{hd} window {window} \
                 causal {causal}, subgroups {}: max error {err:.2e}",
                ctx.subgroups
            );
            assert!(err < 1e-5, "attention {dims:?}: error {err}");
        }
    }
}

/// RMSNorm with and without the residual sum (Gemma's post-norms), on one value, a width off
/// the 128-thread workgroup, and the real models' widths.
#[test]
fn rms_norm_matches_the_cpu() {
    let mut rng = Rng(12);
    for ctx in both_reductions() {
        for (rows, cols, residual) in [
            (1, 1, false),
            (3, 130, true),
            (5, 1024, false),
            (2, 768, true),
        ] {
            let x = rng.vec(rows * cols, 3.0);
            let g = rng.vec(cols, 2.0);
            let r = residual.then(|| rng.vec(rows * cols, 1.0));
            let got =
                pollster::block_on(ctx.run_rms_norm(&x, &g, r.as_deref(), (rows, cols), 1e-6))
                    .unwrap();
            let want = reference::rms_norm(&x, &g, r.as_deref(), cols, 1e-6);
            let err = max_err(&got, &want);
            println!("rms norm {rows}×{cols} residual {residual}: max error {err:.2e}");
            assert!(err < 1e-5, "rms norm {rows}×{cols}: error {err}");
        }
    }
}

/// The per-head query and key norms and the rotary positions, in place; the values untouched.
#[test]
fn head_norms_and_rotary_positions_match_the_cpu() {
    let mut rng = Rng(13);
    let base = 1_000_000f64;
    for ctx in both_reductions() {
        for (batch, seq, heads, kv_heads, hd) in
            [(2, 7, 4, 2, 64), (1, 5, 3, 1, 256), (2, 9, 16, 8, 128)]
        {
            let qkv = rng.vec(batch * seq * (heads + 2 * kv_heads) * hd, 3.0);
            let (qn, kn) = (rng.vec(hd, 2.0), rng.vec(hd, 2.0));
            // The angles as the CPU backend's `Rope` makes them (f32).
            let half = hd / 2;
            let angles: Vec<f32> = (0..seq)
                .flat_map(|p| {
                    (0..half)
                        .map(move |i| p as f32 / (base as f32).powf((2 * i) as f32 / hd as f32))
                })
                .collect();
            let cos: Vec<f32> = angles.iter().map(|a| a.cos()).collect();
            let sin: Vec<f32> = angles.iter().map(|a| a.sin()).collect();
            let dims = (batch, seq, heads, kv_heads, hd);
            let got = pollster::block_on(ctx.run_head_norm_rope(
                &qkv,
                (&qn, &kn),
                (&cos, &sin),
                dims,
                1e-6,
            ))
            .unwrap();
            let want = reference::head_norm_rope(
                &qkv,
                (&qn, &kn),
                (seq, heads, kv_heads, hd),
                (base, 1e-6),
            );
            let err = max_err(&got, &want);
            println!("head norms and rotary positions {dims:?}: max error {err:.2e}");
            assert!(err < 1e-5, "head norm rope {dims:?}: error {err}");
        }
    }
}

#[test]
fn every_pooling_mode_and_l2_normalisation_match_the_cpu() {
    let ctx = gpu();
    let mut rng = Rng(4);
    for pooling in [Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Max] {
        for (lengths, seq, dim) in reference::pooling_cases() {
            let batch = lengths.len();
            let x = rng.vec(batch * seq * dim, 1.0);
            let mask = reference::lengths_to_mask(&lengths, seq);
            let got =
                pollster::block_on(ctx.run_pool_l2(&x, &mask, (batch, seq, dim), pooling)).unwrap();
            let want = reference::pool_l2(&x, &mask, (batch, seq, dim), pooling);
            let err = max_err(&got, &want);
            println!("pool {pooling:?}+L2 lengths {lengths:?} dim {dim}: max error {err:.2e}");
            assert!(err < 1e-6, "pooling {pooling:?}: error {err}");
            for b in 0..batch {
                let norm: f32 = got[b * dim..(b + 1) * dim].iter().map(|v| v * v).sum();
                assert!((norm - 1.0).abs() < 1e-5, "row {b} has squared norm {norm}");
            }
        }
    }
}

#[test]
fn embedding_sum_matches_the_cpu() {
    let ctx = gpu();
    let mut rng = Rng(5);
    let (rows, seq, cols) = (3 * 7, 7, 384);
    let x = rng.vec(rows * cols, 1.0);
    let pos = rng.vec(512 * cols, 1.0);
    let type0 = rng.vec(cols, 1.0);
    let got = pollster::block_on(ctx.run_embed_add(&x, &pos, &type0, (rows, seq, cols))).unwrap();
    let want = reference::embed_add(&x, &pos, &type0, (seq, cols));
    assert!(max_err(&got, &want) < 1e-6);
}

/// Worst cosine of a GPU run over the 82 fixture texts: against the CPU backend and against
/// sentence-transformers, each with (min cosine, the text's first 40 characters).
struct Parity {
    vs_cpu: (f32, String),
    vs_reference: (f32, String),
}

/// The fixture texts of `model` (its `dtype` file; all 82, or the gate's sample) embedded on
/// the GPU, against the CPU backend and against sentence-transformers; f32 activations (the
/// path of adapters without `shader-f16`, as Chromium's SwiftShader): tests/webgpu_features.rs
/// checks f16's parity.
fn gpu_parity(model: &str, dtype: &str, batch_size: usize, all_texts: bool) -> Parity {
    let fixture = common::fixture(model);
    let fixture = if all_texts {
        fixture
    } else {
        fixture.gate_sample(6, true)
    };
    let texts: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    let bytes = common::model_bytes(model, dtype);
    let cpu = load_embedder(bytes.clone(), BackendKind::Cpu).unwrap();
    let started = std::time::Instant::now();
    let options = GpuOptions {
        no_f16: true,
        ..Default::default()
    };
    let (mut gpu, auto) = pollster::block_on(webgpu::load_embedder_async(
        bytes,
        BackendKind::WebGpu,
        &options,
    ))
    .unwrap_or_else(|e| panic!("the GPU backend must load {model} {dtype}: {e:#}"));
    let loaded = started.elapsed().as_secs_f64();
    assert_eq!(gpu.backend_name(), "webgpu");
    gpu.set_batch_size(batch_size);
    let started = std::time::Instant::now();
    let got = gpu.embed(&texts).unwrap();
    let on_gpu = started.elapsed().as_secs_f64();
    let want = cpu.embed(&texts).unwrap();
    assert_eq!(
        auto.status().active,
        "webgpu",
        "no fallback may happen: {:?}",
        auto.status()
    );
    let worst = |pairs: &mut dyn Iterator<Item = (&Vec<f32>, &[f32])>| {
        let mut worst = (f32::INFINITY, String::new());
        for ((g, w), text) in pairs.zip(&texts) {
            assert_eq!(g.len(), w.len(), "dimension");
            let c = cosine(g, w);
            if c < worst.0 {
                worst = (c, text.chars().take(40).collect());
            }
        }
        worst
    };
    let vs_cpu = worst(&mut got.iter().zip(want.iter().map(Vec::as_slice)));
    let vs_reference = worst(
        &mut got
            .iter()
            .zip(fixture.items.iter().map(|i| i.embedding.as_slice())),
    );
    println!(
        "{model} {dtype} GPU ({}), batch {batch_size}: min cosine vs CPU backend {:.6} ({:?}), \
         vs sentence-transformers {:.6} ({:?}); load {loaded:.1} s, {} texts in {on_gpu:.1} s; \
         GPU weights {:.1} MB",
        auto.status().adapter.unwrap().name,
        vs_cpu.0,
        vs_cpu.1,
        vs_reference.0,
        vs_reference.1,
        texts.len(),
        auto.gpu().unwrap().weight_bytes() as f64 / 1e6,
    );
    Parity {
        vs_cpu,
        vs_reference,
    }
}

/// The GPU and the CPU backend run the same arithmetic up to summation order: measured 1.000000
/// (printed to 6 places) for every model and dtype on lavapipe, so 0.99999 is the bound.
const GPU_VS_CPU: f32 = 0.99999;
/// Against sentence-transformers: f32 measured 1.000000 (MiniLM and MPNet), so 0.99999; q8_0
/// measured 0.999457 (MiniLM) and 0.999461 (MPNet), so 0.9993, every backend's q8_0 bound.
const F32_VS_REFERENCE: f32 = 0.99999;
const Q8_0_VS_REFERENCE: f32 = 0.9993;

/// GPU vs sentence-transformers ≥ `reference` and GPU vs the CPU backend ≥ [`GPU_VS_CPU`].
fn assert_parity(model: &str, dtype: &str, reference: f32, all_texts: bool) {
    let p = gpu_parity(model, dtype, 32, all_texts);
    let (min, text) = &p.vs_reference;
    assert!(
        *min >= reference,
        "{model} {dtype} GPU vs sentence-transformers min cosine {min} on {text:?}"
    );
    let (min, text) = &p.vs_cpu;
    assert!(
        *min >= GPU_VS_CPU,
        "{model} {dtype} GPU vs CPU min cosine {min} on {text:?}"
    );
}

#[test]
fn minilm_q8_0_on_the_gpu_matches_sentence_transformers() {
    assert_parity(MODEL, "q8_0", Q8_0_VS_REFERENCE, false);
}

#[test]
fn minilm_f32_on_the_gpu_matches_sentence_transformers() {
    assert_parity(MODEL, "f32", F32_VS_REFERENCE, false);
}

#[test]
#[ignore = "full tier (./build.sh test full): all 82 texts, ~80 s a file on lavapipe"]
fn minilm_q8_0_on_the_gpu_matches_sentence_transformers_on_all_82_texts() {
    assert_parity(MODEL, "q8_0", Q8_0_VS_REFERENCE, true);
}

#[test]
#[ignore = "full tier (./build.sh test full): all 82 texts, ~80 s a file on lavapipe"]
fn minilm_f32_on_the_gpu_matches_sentence_transformers_on_all_82_texts() {
    assert_parity(MODEL, "f32", F32_VS_REFERENCE, true);
}

/// MPNet (relative-position bias, positions after the padding index) on the GPU. The gate
/// holds MPNet's GPU kernels (`attention_with_mpnet_relative_bias_matches_the_cpu`).
#[test]
#[ignore = "full tier (./build.sh test full): MPNet on lavapipe takes minutes on 2 cores"]
fn mpnet_q8_0_on_the_gpu_matches_sentence_transformers() {
    assert_parity(MPNET, "q8_0", Q8_0_VS_REFERENCE, true);
}

#[test]
#[ignore = "full tier (./build.sh test full): MPNet on lavapipe takes minutes on 2 cores"]
fn mpnet_f32_on_the_gpu_matches_sentence_transformers() {
    assert_parity(MPNET, "f32", F32_VS_REFERENCE, true);
}

/// q4_0 weights stay q4_0 on the GPU too: the GPU equals the CPU backend on the same file
/// (sentence-transformers is further away for q4_0 on any backend).
fn assert_q4_0_matches_the_cpu(model: &str) {
    let (min, text) = gpu_parity(model, "q4_0", 32, true).vs_cpu;
    assert!(
        min >= GPU_VS_CPU,
        "{model} q4_0 GPU vs CPU min cosine {min} on {text:?}"
    );
}

#[test]
#[ignore = "full tier (./build.sh test full): the q4_0 kernel itself is in the gate (quantized_matmul_dequantizes_blocks_in_the_kernel)"]
fn minilm_q4_0_on_the_gpu_matches_the_cpu_backend() {
    assert_q4_0_matches_the_cpu(MODEL);
}

#[test]
#[ignore = "full tier (./build.sh test full): MPNet on lavapipe takes minutes on 2 cores"]
fn mpnet_q4_0_on_the_gpu_matches_the_cpu_backend() {
    assert_q4_0_matches_the_cpu(MPNET);
}

/// GPU memory of the weights, from the buffers the upload created, per model and dtype:
/// quantized files keep their blocks (q8_0 ≈ 3.8×, q4_0 ≈ 7.1× smaller matrices than f32).
#[test]
fn quantized_weights_stay_quantized_in_gpu_memory() {
    for model in [MODEL, MPNET] {
        let bytes: Vec<u64> = ["f32", "q8_0", "q4_0"]
            .iter()
            .map(|dtype| {
                let (_, auto) = pollster::block_on(webgpu::load_embedder_async(
                    common::model_bytes(model, dtype),
                    BackendKind::WebGpu,
                    &GpuOptions::default(),
                ))
                .unwrap();
                let b = auto.gpu().unwrap().weight_bytes();
                println!(
                    "{model} {dtype}: GPU weights {:.1} MB ({b} bytes)",
                    b as f64 / 1e6
                );
                b
            })
            .collect();
        let (f32_bytes, q8, q4) = (bytes[0] as f64, bytes[1] as f64, bytes[2] as f64);
        // Biases, LayerNorms and positions stay f32: a little less than the matrices' ratios.
        assert!(
            f32_bytes / q8 > 3.3,
            "{model}: f32 {f32_bytes} vs q8_0 {q8}"
        );
        assert!(
            f32_bytes / q4 > 5.5,
            "{model}: f32 {f32_bytes} vs q4_0 {q4}"
        );
    }
}

/// Files pooled by the first or the last token (bge, e5, gte … and llama.cpp's "last") run on
/// the GPU: a llama.cpp f16 file (widened to f32 on the GPU) with its pooling set to each mode,
/// GPU vs the CPU backend on the fixture texts.
#[test]
#[ignore = "full tier (./build.sh test full): 3 × 82 texts on lavapipe; the pooling kernels are in the gate (every_pooling_mode_and_l2_normalisation_match_the_cpu)"]
fn cls_and_last_token_pooling_run_on_the_gpu_like_the_cpu() {
    let fixture = common::fixture(MODEL);
    let texts: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    let path = common::llama_path("f16");
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (./build.sh fixtures makes it)", path.display()));
    for pooling in ["cls", "last", "max"] {
        let file = |bytes: Vec<u8>| {
            let mut file = ModelFile::from_bytes(bytes).unwrap();
            file.info.pooling = pooling.into();
            file
        };
        let on_cpu = file(bytes.clone());
        let matmul = MatmulMode::for_model(&on_cpu.info, &on_cpu.config);
        let cpu = sr_bench::backend::cpu::embedder(on_cpu, matmul).unwrap();
        let (gpu, auto) = pollster::block_on(webgpu::embedder_from_file(
            file(bytes.clone()),
            BackendKind::WebGpu,
            BackendKind::WebGpu.gpu_fallback(false),
            matmul,
            &GpuOptions::default(),
        ))
        .unwrap();
        assert_eq!(auto.status().active, "webgpu", "{:?}", auto.status());
        let (got, want) = (gpu.embed(&texts).unwrap(), cpu.embed(&texts).unwrap());
        let min = got
            .iter()
            .zip(&want)
            .map(|(g, w)| cosine(g, w))
            .fold(f32::INFINITY, f32::min);
        println!("llama.cpp f16 MiniLM pooled by {pooling}: GPU vs CPU min cosine {min:.6}");
        assert!(
            min >= GPU_VS_CPU,
            "{pooling} pooling: GPU vs CPU min cosine {min}"
        );
    }
}

#[test]
fn gpu_batching_and_buffer_reuse_do_not_change_embeddings() {
    // Five edge-case texts (empty to emoji, 2 to 26 tokens): 5 + 2 + 1 forward passes.
    let mut fixture = common::fixture(MODEL).gate_sample(0, false);
    fixture.items.truncate(5);
    let texts = fixture.texts();
    let (mut gpu, _auto) = pollster::block_on(webgpu::load_embedder_async(
        common::model_bytes(MODEL, "q8_0"),
        BackendKind::WebGpu,
        &GpuOptions::default(),
    ))
    .unwrap();
    // Batches of 1, 3 and 5 sentences reuse (and grow) the same pooled buffers.
    gpu.set_batch_size(1);
    let one = gpu.embed(&texts).unwrap();
    gpu.set_batch_size(3);
    let three = gpu.embed(&texts).unwrap();
    gpu.set_batch_size(5);
    let all = gpu.embed(&texts).unwrap();
    for ((a, b), c) in one.iter().zip(&three).zip(&all) {
        for ((x, y), z) in a.iter().zip(b).zip(c) {
            assert!(
                (x - y).abs() < 1e-5 && (x - z).abs() < 1e-5,
                "padding leaked"
            );
        }
    }
}

#[test]
fn auto_without_an_adapter_selects_the_cpu_and_says_why() {
    let bytes = common::model_bytes(MODEL, "q8_0");
    let options = GpuOptions {
        disable: Some("no WebGPU adapter (forced by the test)".into()),
        ..Default::default()
    };
    let (embedder, auto) = pollster::block_on(webgpu::load_embedder_async(
        bytes.clone(),
        BackendKind::Auto,
        &options,
    ))
    .unwrap();
    let status = auto.status();
    println!("auto without an adapter: {status:?}");
    assert_eq!(status.active, "cpu");
    assert_eq!(embedder.backend_name(), "cpu");
    assert!(status.adapter.is_none());
    let reason = status.fallback_reason.expect("a reason");
    assert!(
        reason.contains("no WebGPU adapter (forced by the test)"),
        "{reason}"
    );
    assert!(reason.contains("running on the CPU"), "{reason}");
    // And it still embeds, as the CPU backend does.
    let cpu = load_embedder(bytes.clone(), BackendKind::Cpu).unwrap();
    let texts = ["Tom likes Taylor Swift.", "Taylor Swift likes Tom."];
    for (a, b) in embedder
        .embed(&texts)
        .unwrap()
        .iter()
        .zip(cpu.embed(&texts).unwrap())
    {
        assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6));
    }
    // `gpu` (explicit) fails with the reason instead.
    let err = pollster::block_on(webgpu::load_embedder_async(
        bytes,
        BackendKind::WebGpu,
        &options,
    ))
    .err()
    .expect("gpu without an adapter must fail");
    assert!(format!("{err:#}").contains("forced by the test"), "{err:#}");
    assert_eq!(
        sr_bench::error::code_of(&err),
        sr_bench::error::ErrorCode::NoAdapter
    );
}

#[test]
fn a_lost_device_mid_run_redoes_the_batch_on_the_cpu() {
    // 15 short texts: two batches of 4 on the GPU, then the loss, the rest on the CPU.
    let fixture = common::fixture(MODEL).gate_sample(6, false);
    let texts = fixture.texts();
    let split = 8;
    let bytes = common::model_bytes(MODEL, "q8_0");
    let mut cpu = load_embedder(bytes.clone(), BackendKind::Cpu).unwrap();
    let (mut embedder, auto) = pollster::block_on(webgpu::load_embedder_async(
        bytes,
        BackendKind::Auto,
        &GpuOptions::default(),
    ))
    .unwrap();
    embedder.set_batch_size(4);
    let first = embedder.embed(&texts[..split]).unwrap();
    assert_eq!(auto.status().active, "webgpu");
    auto.simulate_device_lost();
    let rest = embedder.embed(&texts[split..]).unwrap();
    let status = auto.status();
    println!("after a device loss: {status:?}");
    assert_eq!(status.active, "cpu");
    assert_eq!(embedder.backend_name(), "cpu");
    assert!(status
        .fallback_reason
        .as_deref()
        .is_some_and(|r| r.contains("device was lost") && r.contains("redone")));
    let want = cpu.embed(&texts).unwrap();
    for (got, want) in first.iter().chain(&rest).zip(&want) {
        assert!(cosine(got, want) >= GPU_VS_CPU);
    }
    // After the fallback the values are the CPU backend's, to the bit, for the same batches
    // (another batch composition moves candle's sums by ~1e-7, which the 16-bit rounding of the
    // activations can turn into ~1e-5).
    cpu.set_batch_size(4);
    let want_rest = cpu.embed(&texts[split..]).unwrap();
    assert_eq!(
        rest, want_rest,
        "the CPU fallback differs from the CPU backend"
    );
}
