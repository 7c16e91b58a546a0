//! `sr-bench train`: fine-tunes an f32 BERT or MPNet file of ours on STS-B train, the SR-style
//! pairs of the paper's §4.2, §4.1's shuffled sentences, or a file of the user's (see
//! `crate::train`), and writes the trained model (f32 and q8_0) and its log.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::DType;

use crate::convert::sha256_hex;
use crate::eval::default_data_dir;
use crate::model::ModelFile;
use crate::train::checkpoint::{self, Inputs};
use crate::train::{
    data, training_set, Checkpoints, Recipe, StepProgress, TrainData, Trainer, TrainingSet,
};

#[derive(clap::Args)]
pub(crate) struct TrainArgs {
    /// The f32 model file to start from (e.g. www/models/all-MiniLM-L6-v2.f32.gguf). With
    /// --resume, the checkpoint's model unless given (it must be the same file).
    #[arg(long, required_unless_present = "resume")]
    model: Option<PathBuf>,
    /// The training data: stsb (STS-B train), stsb+sr (plus the SR-style pairs of SICK-R and
    /// CQA), stsb-shuffled (sentence 2's words shuffled, seeded), or a CSV/TSV file in the STS
    /// layout (sentence1,sentence2,score; scores 0–5) or the SR files' layout. Pairs sharing a
    /// text with STS-B test or SR's stsb, askubuntu, twitter or biosses are dropped.
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    train: Option<String>,
    #[arg(long, default_value_t = 4, conflicts_with = "resume")]
    epochs: usize,
    /// Pairs per step.
    #[arg(long, default_value_t = 16, conflicts_with = "resume")]
    batch: usize,
    #[arg(long, default_value_t = 2e-5, conflicts_with = "resume")]
    lr: f64,
    /// Fraction of the steps over which the learning rate warms up from 0.
    #[arg(long, default_value_t = 0.1, conflicts_with = "resume")]
    warmup: f64,
    /// Seeds the order of the pairs, dropout and the shuffles of stsb-shuffled.
    #[arg(long, default_value_t = 1, conflicts_with = "resume")]
    seed: u64,
    /// Stop after this many steps (a short run).
    #[arg(long, value_name = "N", conflicts_with = "resume")]
    max_steps: Option<usize>,
    /// Where the trained files, the log and the run's checkpoint go (created when missing).
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Write the checkpoint (<name>.checkpoint.gguf in --out) every N steps, and at each
    /// epoch's end; a killed run loses at most N steps. 0: at epochs' ends only.
    #[arg(long, value_name = "N", default_value_t = 200)]
    checkpoint_every: usize,
    /// Continue the run whose checkpoint is in this folder (or this checkpoint file) with its
    /// recipe, data and model; the trained files go beside the checkpoint.
    #[arg(long, value_name = "DIR")]
    resume: Option<PathBuf>,
    /// Data folder holding stsb/ and sr/ (filled by build.sh; with --resume, the checkpoint's
    /// unless given).
    #[arg(long)]
    data: Option<PathBuf>,
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
    // Everything is read and checked before the long part starts; nothing but the
    // checkpoint is written until the run ends.
    let saved = a
        .resume
        .as_deref()
        .map(|target| checkpoint::read(&checkpoint::find(target)?))
        .transpose()?;
    let (recipe, inputs, out) = match &saved {
        Some(c) => {
            let s = &c.state;
            let inputs = Inputs {
                model: a.model.clone().unwrap_or_else(|| s.inputs.model.clone()),
                data: a.data.clone().unwrap_or_else(|| s.inputs.data.clone()),
                ..s.inputs.clone()
            };
            let out = c.path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
            (s.recipe.clone(), inputs, out)
        }
        None => {
            let train = a.train.clone().context("--train is required")?;
            let recipe = Recipe {
                data: TrainData::parse(&train).name(),
                epochs: a.epochs,
                batch: a.batch,
                lr: a.lr,
                warmup: a.warmup,
                seed: a.seed,
                max_steps: a.max_steps,
            };
            let inputs = Inputs {
                model: absolute(a.model.as_deref().context("--model is required")?),
                train,
                data: absolute(&a.data.clone().unwrap_or_else(default_data_dir)),
                pairs_sha256: String::new(),
            };
            (recipe, inputs, a.out.clone().context("--out is required")?)
        }
    };
    recipe.check()?;
    let which = TrainData::parse(&inputs.train);
    let set = training_set(&inputs.data, &which, recipe.seed)?;
    let pairs_sha256 = pairs_sha256(&set);
    if let Some(c) = &saved {
        if c.state.inputs.pairs_sha256 != pairs_sha256 {
            bail!(
                "{}: the training data ({} in {}) has changed since this checkpoint was written",
                c.path.display(),
                inputs.train,
                inputs.data.display()
            );
        }
    }
    let dev = data::dev_set(&inputs.data)?;
    let bytes = std::fs::read(&inputs.model)
        .with_context(|| format!("cannot read {}", inputs.model.display()))?;
    let sha256 = sha256_hex(&bytes);
    let base = ModelFile::from_bytes(bytes)
        .with_context(|| format!("cannot load model {}", inputs.model.display()))?;
    let mut trainer = Trainer::new(&base, sha256, DType::F32)?;
    let stem = format!("{}-{}", base.info.name, slug(&which));
    let resumed_at = saved.as_ref().map(|c| c.state.steps);
    let checkpoints = Checkpoints {
        path: out.join(format!("{stem}{}", checkpoint::SUFFIX)),
        every: a.checkpoint_every,
        inputs: Inputs {
            pairs_sha256,
            ..inputs
        },
        resume: saved,
    };
    let checkpoint_path = checkpoints.path.clone();
    if let Some(step) = resumed_at {
        eprintln!(
            "resuming {} on {} at step {step} from {}",
            base.info.name,
            recipe.data,
            checkpoint_path.display()
        );
    } else if checkpoint_path.exists() {
        bail!(
            "{} holds the checkpoint of an unfinished run: continue it with --resume {}, or remove it",
            checkpoint_path.display(),
            out.display()
        );
    } else {
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create {}", out.display()))?;
    }
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
    let log = trainer.train_with(
        &set,
        &dev,
        &recipe,
        Some(checkpoints),
        |p: &StepProgress| {
            if p.checkpoint {
                if tty {
                    eprintln!();
                }
                eprintln!(
                    "checkpoint at step {} in {}",
                    p.done,
                    checkpoint_path.display()
                );
            } else if tty || p.done.is_multiple_of(20) || p.done == p.total {
                let here = (p.done - p.resumed_at).max(1);
                let left = p.elapsed_s / here as f64 * (p.total - p.done) as f64;
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
        },
    )?;
    if tty {
        eprintln!();
    }
    for dtype in ["f32", "q8_0"] {
        let path = out.join(format!("{stem}.{dtype}.gguf"));
        write(&path, &trainer.write(&log, dtype)?)?;
        eprintln!("wrote {}", path.display());
    }
    let path = out.join(format!("{stem}.train-log.json"));
    write(&path, serde_json::to_string_pretty(&log)?.as_bytes())?;
    // The run is whole: its checkpoint (weights, moments) is only good for resuming.
    if checkpoint_path.exists() {
        std::fs::remove_file(&checkpoint_path)
            .with_context(|| format!("cannot remove {}", checkpoint_path.display()))?;
    }
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

/// SHA-256 of the pairs in order: what a resumed run checks its data against.
fn pairs_sha256(set: &TrainingSet) -> String {
    let mut text = String::new();
    for p in &set.pairs {
        text.push_str(&format!("{}\t{}\t{}\n", p.text_a, p.text_b, p.label));
    }
    sha256_hex(text.as_bytes())
}

/// `path` made absolute, so a resumed run finds it from any folder.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}
