//! `sr-bench bench`: model load time and embedding throughput.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};

use super::{load_model, read_file, sr_files, LoadArgs};
use crate::backend::{load_gpu_embedder_with_status, BackendKind};

/// Prints load time and embedding throughput for each model file on the same sentences.
pub(super) fn bench(
    models: &[PathBuf],
    data: &Path,
    count: usize,
    batch_size: Option<usize>,
    backend: BackendKind,
    load: &LoadArgs,
    mixed: bool,
) -> Result<()> {
    let texts = crate::eval::sentence_sample(&sr_files(data)?, count);
    if texts.is_empty() {
        bail!("no SR sentences found under {}", data.display());
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!(
        "native {} benchmark: {} SR sentences, batch size {}",
        backend.as_str().to_uppercase(),
        refs.len(),
        batch_size.map_or("the backend's".to_string(), |n| n.to_string())
    );
    println!(
        "{:<36} {:>12} {:>14} {:>10} {:>10} {:>9}",
        "model file", "load (ms)", "sentences/s", "tokens", "padded", "GFLOP/s"
    );
    for path in models {
        let start = Instant::now();
        let (mut embedder, gpu) = match backend {
            BackendKind::Cpu => (load_model(path, backend, load)?, None),
            _ => {
                let (embedder, gpu) =
                    load_gpu_embedder_with_status(read_file(path)?, backend, load.options())
                        .with_context(|| format!("cannot load model {}", path.display()))?;
                (embedder, Some(gpu))
            }
        };
        let load_ms = start.elapsed().as_secs_f64() * 1e3;
        if let Some(n) = batch_size {
            embedder.set_batch_size(n);
        }
        let work = embedder.work(&refs)?;
        let start = Instant::now();
        embedder.embed(&refs)?;
        let seconds = start.elapsed().as_secs_f64();
        let rate = refs.len() as f64 / seconds;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!(
            "{name:<36} {load_ms:>12.1} {rate:>14.1} {:>10} {:>10} {:>9.1}",
            work.tokens,
            work.padded_tokens,
            work.flops / seconds / 1e9
        );
        // Where it ran, on which adapter, with how much GPU memory (bench/gpu.sh reads it).
        if let Some(gpu) = gpu {
            println!(
                "backend_status {name}: {}",
                serde_json::to_string(&gpu.status())?
            );
        }
        if mixed {
            mixed_lengths(&embedder, &texts, &name)?;
        }
    }
    Ok(())
}

/// Short texts and a paragraph in one `embed` call against the same texts in two calls, each
/// of one length (best of three, alternating): a batch must cost what its tokens cost, so the
/// two should be close (the bound: within 1.3×).
fn mixed_lengths(embedder: &crate::model::Embedder, sample: &[String], name: &str) -> Result<()> {
    let short: Vec<&str> = sample
        .iter()
        .map(String::as_str)
        .filter(|t| t.len() < 120)
        .take(59)
        .collect();
    let mut paragraph = String::new();
    for text in sample.iter().filter(|t| t.len() >= 60) {
        if paragraph.len() >= 1800 {
            break;
        }
        paragraph.push_str(text);
        paragraph.push(' ');
    }
    let mut together = short.clone();
    together.push(paragraph.trim_end());
    let time = |texts: &[&[&str]]| -> Result<f64> {
        let start = Instant::now();
        for group in texts {
            embedder.embed(group)?;
        }
        Ok(start.elapsed().as_secs_f64())
    };
    let (mut one, mut two) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        one = one.min(time(&[&together])?);
        two = two.min(time(&[&short, &together[short.len()..]])?);
    }
    let work = embedder.work(&together)?;
    println!(
        "mixed {name}: {} short + 1 paragraph ({} tokens, {} padded in one call): one call {:.3} s, \
         two length-sorted calls {:.3} s, ratio {:.2}",
        short.len(),
        work.tokens,
        work.padded_tokens,
        one,
        two,
        one / two
    );
    Ok(())
}
