//! `sr-bench train`: fine-tunes an f32 BERT or MPNet file of ours on STS-B train, the SR-style
//! pairs of the paper's §4.2, §4.1's shuffled sentences, or a file of the user's (see
//! `crate::train`), and writes the trained model (f32 and q8_0) and its log.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use candle_core::DType;

use crate::convert::sha256_hex;
use crate::eval::default_data_dir;
use crate::model::ModelFile;
use crate::train::{data, training_set, Recipe, StepProgress, TrainData, Trainer};

#[derive(clap::Args)]
pub(crate) struct TrainArgs {
    /// The f32 model file to start from (e.g. www/models/all-MiniLM-L6-v2.f32.gguf).
    #[arg(long)]
    model: PathBuf,
    /// The training data: stsb (STS-B train), stsb+sr (plus the SR-style pairs of SICK-R and
    /// CQA), stsb-shuffled (sentence 2's words shuffled, seeded), or a CSV/TSV file in the STS
    /// layout (sentence1,sentence2,score; scores 0–5) or the SR files' layout. Pairs sharing a
    /// text with STS-B test or SR's stsb, askubuntu, twitter or biosses are dropped.
    #[arg(long)]
    train: String,
    #[arg(long, default_value_t = 4)]
    epochs: usize,
    /// Pairs per step.
    #[arg(long, default_value_t = 16)]
    batch: usize,
    #[arg(long, default_value_t = 2e-5)]
    lr: f64,
    /// Fraction of the steps over which the learning rate warms up from 0.
    #[arg(long, default_value_t = 0.1)]
    warmup: f64,
    /// Seeds the order of the pairs, dropout and the shuffles of stsb-shuffled.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop after this many steps (a short run).
    #[arg(long, value_name = "N")]
    max_steps: Option<usize>,
    /// Where the trained files and the log go (created when missing).
    #[arg(long)]
    out: PathBuf,
    /// Data folder holding stsb/ and sr/ (filled by build.sh).
    #[arg(long, default_value_os_t = default_data_dir())]
    data: PathBuf,
}

/// `stsb+sr` → `stsb-sr`, a file → `own`: the trained files' name part.
fn slug(which: &TrainData) -> &'static str {
    match which {
        TrainData::Stsb => "stsb",
        TrainData::StsbSr => "stsb-sr",
        TrainData::StsbShuffled => "stsb-shuffled",
        TrainData::File(_) => "own",
    }
}

pub(crate) fn run(a: TrainArgs) -> Result<()> {
    let which = TrainData::parse(&a.train);
    let recipe = Recipe {
        data: which.name(),
        epochs: a.epochs,
        batch: a.batch,
        lr: a.lr,
        warmup: a.warmup,
        seed: a.seed,
        max_steps: a.max_steps,
    };
    recipe.check()?;
    // Everything is read and checked before the long part starts, and nothing is written
    // unless the run ends.
    let set = training_set(&a.data, &which, a.seed)?;
    let dev = data::dev_set(&a.data)?;
    let bytes =
        std::fs::read(&a.model).with_context(|| format!("cannot read {}", a.model.display()))?;
    let sha256 = sha256_hex(&bytes);
    let base = ModelFile::from_bytes(bytes)
        .with_context(|| format!("cannot load model {}", a.model.display()))?;
    let mut trainer = Trainer::new(&base, sha256, DType::F32)?;
    eprintln!(
        "training {} on {} ({} pairs; {} dropped for sharing a text with a reported test set), {} epochs of {} steps",
        base.info.name,
        recipe.data,
        set.pairs.len(),
        set.dropped,
        recipe.epochs,
        set.pairs.len().div_ceil(recipe.batch)
    );
    let tty = std::io::stderr().is_terminal();
    let log = trainer.train(&set, &dev, &recipe, |p: &StepProgress| {
        if tty || p.done.is_multiple_of(20) || p.done == p.total {
            let left = p.elapsed_s / p.done as f64 * (p.total - p.done) as f64;
            let line = format!(
                "epoch {} · step {}/{} · loss {:.4} · {:.0} s, about {:.0} s left",
                p.epoch, p.done, p.total, p.loss, p.elapsed_s, left
            );
            if tty {
                eprint!("\r{line}   ");
            } else {
                eprintln!("{line}");
            }
        }
    })?;
    if tty {
        eprintln!();
    }
    let stem = format!("{}-{}", base.info.name, slug(&which));
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    for dtype in ["f32", "q8_0"] {
        let path = a.out.join(format!("{stem}.{dtype}.gguf"));
        write(&path, &trainer.write(&log, dtype)?)?;
        eprintln!("wrote {}", path.display());
    }
    let path = a.out.join(format!("{stem}.train-log.json"));
    write(&path, serde_json::to_string_pretty(&log)?.as_bytes())?;
    eprintln!(
        "STS-B dev Spearman by epoch: {} (kept epoch {}); {:.2} steps/s; log {}",
        log.dev_spearman
            .iter()
            .map(|s| format!("{s:.2}"))
            .collect::<Vec<_>>()
            .join(" → "),
        log.kept_epoch,
        log.steps_per_second,
        path.display()
    );
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}
