//! The GPU kernel benchmark (bench/gpu.sh runs it; `cargo bench --features bench --bench
//! gpu_kernels`): GFLOP/s of the matmul kernel — over 99 % of an encoder's FLOPs — for the
//! four linear layers of MiniLM and MPNet, per weight format (f32, q8_0, q4_0), at 160, 448
//! and 3,584 rows (32 sentences of 5 and 14 tokens, 256 of 14). Per-dispatch GPU times come
//! from timestamp queries where the adapter has them (else only the wall time per dispatch);
//! a software adapter (lavapipe, SwiftShader, WARP) is labelled so: its figures are a CPU's.
//!   ROWS=160,448,3584   the row counts
//!   SHAPES=minilm,mpnet the models whose layers are timed
//!   SECONDS=0.25        wall time aimed at per figure (at least 3 dispatches, at most 2,048)
//!   COMPARE=checked     also time the matmul with wgpu's runtime checks (index clamps, loop
//!                       bounding), alternating on a second device, and print the ratio
//!   COMPARE=tiled       likewise the tiled matmul against the one on matrix units (where the
//!                       adapter has them: cooperative matrices, 16×16 f16 blocks)
//! and the GPU variables of `sr-bench` (SR_BENCH_GPU_F16=0: f32 activations, SR_BENCH_GPU_PLAIN=1,
//! SR_BENCH_GPU_COOP=0: no matrix units).

use anyhow::{bail, Context, Result};
use candle_core::quantized::GgmlDType;
use sr_bench::backend::webgpu::{Epilogue, GpuContext, GpuOptions};

/// A linear layer: (name, n, k, epilogue) of `x[rows, k] · w[n, k]ᵀ`.
type Layer = (&'static str, usize, usize, Epilogue);

/// A model's name and its four linear layers.
fn layers(model: &str) -> Result<(&'static str, [Layer; 4])> {
    let (name, hidden, inter) = match model {
        "minilm" => ("all-MiniLM-L6-v2", 384, 1536),
        "mpnet" => ("all-mpnet-base-v2", 768, 3072),
        other => bail!("SHAPES: unknown model {other:?} (minilm, mpnet)"),
    };
    Ok((
        name,
        [
            ("attention qkv", 3 * hidden, hidden, Epilogue::Bias),
            ("attention out", hidden, hidden, Epilogue::Residual),
            ("ffn up (GELU)", inter, hidden, Epilogue::Gelu),
            ("ffn down", hidden, inter, Epilogue::Residual),
        ],
    ))
}

fn list(var: &str, default: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

fn main() -> Result<()> {
    let rows: Vec<usize> = list("ROWS", "160,448,3584")
        .iter()
        .map(|r| {
            r.parse()
                .with_context(|| format!("ROWS: {r:?} is not a row count"))
        })
        .collect::<Result<_>>()?;
    let seconds: f64 = std::env::var("SECONDS")
        .unwrap_or_else(|_| "0.25".into())
        .parse()
        .context("SECONDS: not a number")?;
    let options = GpuOptions {
        timestamps: true,
        ..GpuOptions::from_env()
    };
    let gpu = pollster::block_on(GpuContext::new(&options))?;
    // The second device of COMPARE, and the columns it adds.
    let compared = match std::env::var("COMPARE").as_deref() {
        Ok("checked") => Some((
            GpuOptions {
                checked_kernels: true,
                ..options.clone()
            },
            "checked",
            "unchecked",
        )),
        Ok("tiled") => {
            if gpu.matrix_units().is_none() {
                bail!(
                    "COMPARE=tiled: the matmul does not run on matrix units here (the adapter \
                     offers no cooperative matrices with 16×16 f16 blocks and subgroups of 32, \
                     or SR_BENCH_GPU_COOP=0): nothing to compare"
                );
            }
            Some((
                GpuOptions {
                    no_matrix_units: true,
                    ..options.clone()
                },
                "tiled",
                "units",
            ))
        }
        Ok("") | Err(_) => None,
        Ok(other) => bail!("COMPARE: {other:?} is neither \"checked\" nor \"tiled\""),
    };
    let other = match &compared {
        Some((o, _, _)) => Some(pollster::block_on(GpuContext::new(o))?),
        None => None,
    };
    let a = &gpu.adapter;
    let kind = if a.software {
        "software adapter, not a GPU: the figures are the CPU's running the shaders"
    } else {
        "hardware GPU"
    };
    println!("adapter: {} — {kind}", a.describe());
    println!(
        "activations {}; per-dispatch times from {}",
        if gpu.f16 { "f16" } else { "f32" },
        if gpu.has_timestamps() {
            "timestamp queries (median of the dispatches; GFLOP/s from them)"
        } else {
            "the wall clock only (the adapter has no timestamp queries)"
        }
    );
    let checks = if options.checked_kernels {
        "with wgpu's runtime checks (SR_BENCH_GPU_CHECKED=1)"
    } else {
        "without wgpu's runtime checks (the native default)"
    };
    match gpu.matrix_units() {
        Some(units) => println!("matmul on matrix units: {units}, {checks}"),
        None => println!("matmul tiled (no matrix units in use), {checks}"),
    }
    print!(
        "{:<17} {:<14} {:>5} {:>6} {:>6} {:>5} {:>6} {:>10} {:>10} {:>9}",
        "model", "layer", "rows", "n", "k", "fmt", "runs", "gpu ms", "wall ms", "GFLOP/s"
    );
    match &compared {
        Some((_, name, base)) => println!(
            "  {:>10}  {:>17}",
            format!("{name} ms"),
            format!("{name}/{base}")
        ),
        None => println!(),
    }
    for model in list("SHAPES", "minilm,mpnet") {
        let (name, layers) = layers(&model)?;
        for (layer, n, k, epilogue) in layers {
            for &m in &rows {
                for (format, label) in [
                    (GgmlDType::F32, "f32"),
                    (GgmlDType::Q8_0, "q8_0"),
                    (GgmlDType::Q4_0, "q4_0"),
                ] {
                    let timed = gpu.prepare_matmul(format, (m, n, k), epilogue)?;
                    // One dispatch's wall time sizes the run to about `seconds`.
                    let probe = timed.time(1)?;
                    let count = ((seconds * 1e3 / probe.wall_ms).round() as usize).clamp(3, 2048);
                    let t = timed.time(count)?;
                    let ms = t.gpu_ms.unwrap_or(t.wall_ms);
                    let gflops = 2.0 * (m * n * k) as f64 / (ms * 1e6);
                    let gpu_ms = t.gpu_ms.map_or("-".into(), |g| format!("{g:.3}"));
                    print!(
                        "{name:<17} {layer:<14} {m:>5} {n:>6} {k:>6} {label:>5} {:>6} {gpu_ms:>10} {:>10.3} {gflops:>9.1}",
                        t.dispatches, t.wall_ms
                    );
                    if let Some(other) = &other {
                        let c = other
                            .prepare_matmul(format, (m, n, k), epilogue)?
                            .time(count)?;
                        let c_ms = c.gpu_ms.unwrap_or(c.wall_ms);
                        print!("  {c_ms:>10.3}  {:>17.2}", c_ms / ms);
                    }
                    println!();
                }
            }
        }
    }
    Ok(())
}
