//! `sr-bench probe layers|shuffle`: the layer-by-layer Spearman and the word-order probe.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;

use super::{load_model, parse_data_file, sr_files, LoadArgs};
use crate::backend::BackendKind;
use crate::eval::{default_data_dir, parse_stsb, Split};
use crate::explain::{LayerProbe, ProbePairs, ProbeProgress, ShuffleProbe};

#[derive(Subcommand)]
pub enum ProbeCommand {
    /// Spearman ×100 per layer (0 = the embedding output) for SR structure avg, relation avg
    /// and STS-B test, from one forward pass per sentence; the last layer is the ordinary run.
    Layers {
        #[command(flatten)]
        common: Common,
        /// full: all 9,289 SR rows; quick: the ~1,000-row stratified sample.
        #[arg(long, default_value = "quick")]
        split: Split,
    },
    /// STS-B test with sentence 2's words shuffled (seeds 0..K) against the unchanged gold,
    /// beside the ordinary score; the SR variants shuffled the same way as a sanity row.
    Shuffle {
        #[command(flatten)]
        common: Common,
        /// Number of shuffle seeds (0..K).
        #[arg(long, default_value_t = 5)]
        seeds: usize,
        /// SR rows for the sanity row: quick, full, or none (STS-B test only).
        #[arg(long, default_value = "quick")]
        sr: String,
    },
}

#[derive(Args)]
pub struct ProbeArgs {
    #[command(subcommand)]
    command: ProbeCommand,
}

#[derive(Args)]
pub struct Common {
    /// The .gguf model file.
    #[arg(long)]
    model: PathBuf,
    /// Data folder holding sr/*.csv and stsb/stsb-en-test.csv;
    /// default: $SR_BENCH_DATA, else data, else ../shared/data.
    #[arg(long, default_value_os_t = default_data_dir())]
    data: PathBuf,
    /// Also write the result as JSON to this file ("-" for stdout; the table then goes to stderr).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Backend: cpu, webgpu (also: gpu) or auto (the layer probe runs on the CPU either way).
    #[arg(long, default_value = "cpu")]
    backend: BackendKind,
    #[command(flatten)]
    load: LoadArgs,
}

pub fn run(args: ProbeArgs) -> Result<()> {
    match args.command {
        ProbeCommand::Layers { common, split } => {
            let embedder = load_model(&common.model, common.backend, &common.load)?;
            let pairs = ProbePairs::new(sr_files(&common.data)?, Some(stsb(&common.data)?), split)?;
            let mut probe = LayerProbe::new(pairs);
            let start = Instant::now();
            while !probe.is_done() {
                show(probe.step(&embedder)?, start);
            }
            let report = probe.finish(&embedder)?;
            let mut table = format!(
                "{} ({}), {} split, {} pairs: Spearman ×100 per layer\n{:>5} {:>10} {:>10} {:>10}\n",
                report.model, report.dtype, report.split.as_str(), report.pairs,
                "layer", "structure", "relation", "stsb_test"
            );
            for row in &report.layers {
                table += &format!(
                    "{:>5} {:>10} {:>10} {:>10}\n",
                    row.layer,
                    number(row.structure_avg),
                    number(row.relation_avg),
                    number(row.stsb_test)
                );
            }
            table += &format!(
                "probe memory: {} bytes kept (cosines), {} bytes of vectors at most per chunk\n",
                report.memory.kept_bytes, report.memory.chunk_vector_bytes
            );
            output(&table, &report, common.json.as_deref())
        }
        ProbeCommand::Shuffle { common, seeds, sr } => {
            let embedder = load_model(&common.model, common.backend, &common.load)?;
            let (files, split) = match sr.as_str() {
                "none" => (Vec::new(), Split::Quick),
                other => {
                    let split = other
                        .parse::<Split>()
                        .context("--sr: quick, full or none")?;
                    (sr_files(&common.data)?, split)
                }
            };
            let pairs = ProbePairs::new(files, Some(stsb(&common.data)?), split)?;
            let mut probe = ShuffleProbe::new(pairs, seeds)?;
            let start = Instant::now();
            while !probe.is_done() {
                show(probe.step(&embedder)?, start);
            }
            let report = probe.finish(&embedder)?;
            let s = &report.shuffled;
            let mut table = format!(
                "{} ({}): STS-B test Spearman {} (Pearson {}); words of sentence 2 shuffled, \
                 {} seeds: Spearman {} ± {} (Pearson {} ± {})\n",
                report.model,
                report.dtype,
                number(report.stsb_test.spearman),
                number(report.stsb_test.pearson),
                s.seeds,
                number(s.spearman_mean),
                number(s.spearman_sd),
                number(s.pearson_mean),
                number(s.pearson_sd)
            );
            if let Some(sr) = &report.sr {
                table += &format!(
                    "SR ({} split), variants shuffled: structure avg {} → {} ± {}, relation avg {} → {} ± {}\n",
                    sr.split.as_str(),
                    number(sr.structure_avg), number(sr.structure_avg_shuffled_mean),
                    number(sr.structure_avg_shuffled_sd),
                    number(sr.relation_avg), number(sr.relation_avg_shuffled_mean),
                    number(sr.relation_avg_shuffled_sd)
                );
            }
            table += &report.finding;
            table.push('\n');
            output(&table, &report, common.json.as_deref())
        }
    }
}

fn stsb(data: &Path) -> Result<crate::eval::StsFile> {
    parse_data_file(data, crate::eval::STSB_TEST_PATH, parse_stsb)
}

fn number(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
}

fn show(p: ProbeProgress, start: Instant) {
    let rate = p.done as f64 / start.elapsed().as_secs_f64().max(1e-9);
    let eta = (p.total - p.done) as f64 / rate.max(1e-9);
    eprint!(
        "\rprobed {}/{} pairs  {rate:.1}/s  ETA {eta:.0} s   ",
        p.done, p.total
    );
    if p.done == p.total {
        eprintln!();
    }
}

/// Prints the table; writes the JSON to a file, or to stdout with the table on stderr ("-").
fn output(table: &str, report: &impl Serialize, json: Option<&Path>) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    match json {
        Some(p) if p == Path::new("-") => {
            eprint!("{table}");
            println!("{text}");
        }
        Some(p) => {
            print!("{table}");
            std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?;
        }
        None => print!("{table}"),
    }
    Ok(())
}
