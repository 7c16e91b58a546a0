//! A training run's checkpoint (`<stem>.checkpoint.gguf` in the run's `--out` folder): the
//! weights, AdamW's moments, the best epoch's weights, the generators' states and the log so
//! far, in one GGUF file (f32 tensors, the run's state as JSON in one metadata key), written
//! to a temporary name, flushed to disk and renamed, so a run killed at any moment leaves the
//! previous checkpoint or the new one whole, never a torn file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use super::{Recipe, TrainLog};

/// The metadata key holding [`RunState`] as JSON: what marks a file as our checkpoint.
const STATE_KEY: &str = "sr_bench.train.checkpoint";
/// Bumped whenever [`RunState`] or the tensor layout changes meaning.
pub const FORMAT: u32 = 1;
/// A checkpoint's file name ends so.
pub const SUFFIX: &str = ".checkpoint.gguf";

/// What a run was started from: the CLI's inputs, so `--resume` needs nothing else.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Inputs {
    pub model: PathBuf,
    /// `--train` as given (a set's name or a file).
    pub train: String,
    pub data: PathBuf,
    /// SHA-256 of the training pairs in order (texts and labels): the data must not change
    /// under a resumed run.
    pub pairs_sha256: String,
}

/// Where a run stands between two steps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunState {
    pub format: u32,
    pub inputs: Inputs,
    pub recipe: Recipe,
    /// Steps done (AdamW's update count too: one update a step).
    pub steps: usize,
    /// The epoch in progress (its steps so far are `steps - (epoch - 1) × steps per epoch`).
    pub epoch: usize,
    /// The pair-order generator as it was when `epoch` began (before its shuffle).
    pub epoch_rng: u64,
    pub dropout_rng: u64,
    pub log: TrainLog,
}

/// A checkpoint read back: the state and every tensor by name (`w.`, `m.`, `v.`, `best.`).
pub struct Checkpoint {
    pub path: PathBuf,
    pub state: RunState,
    pub tensors: BTreeMap<String, Tensor>,
}

impl Checkpoint {
    /// The tensor `prefix.name`, or an error naming the file.
    pub fn tensor(&self, prefix: &str, name: &str) -> Result<Tensor> {
        self.tensors
            .get(&format!("{prefix}.{name}"))
            .cloned()
            .with_context(|| {
                format!(
                    "{}: the checkpoint lacks '{prefix}.{name}' (not from this model?)",
                    self.path.display()
                )
            })
    }
}

/// Writes `state` and `tensors` (named with their prefixes) to `path` atomically.
pub fn write(path: &Path, state: &RunState, tensors: &[(String, &Tensor)]) -> Result<()> {
    let json = serde_json::to_string(state)?;
    let mut quantized = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        let t = t.to_dtype(candle_core::DType::F32)?.contiguous()?;
        quantized.push((name.as_str(), QTensor::quantize(&t, GgmlDType::F32)?));
    }
    let refs: Vec<(&str, &QTensor)> = quantized.iter().map(|(n, q)| (*n, q)).collect();
    let format = Value::U32(FORMAT);
    let state = Value::String(json);
    let metadata = [("sr_bench.train.format", &format), (STATE_KEY, &state)];
    let partial = path.with_extension("gguf.partial");
    let result = (|| -> Result<()> {
        let file = File::create(&partial)?;
        let mut out = BufWriter::new(file);
        gguf_file::write(&mut out, &metadata, &refs)?;
        out.flush()?;
        out.get_ref().sync_all()?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&partial);
        return Err(e).with_context(|| format!("cannot write {}", partial.display()));
    }
    std::fs::rename(&partial, path)
        .with_context(|| format!("cannot move {} into place", partial.display()))?;
    // The rename itself reaches the disk with the folder's entry.
    if let Some(dir) = path.parent() {
        let _ = File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

/// Reads the checkpoint at `path`; a file that is not one of ours, or is cut short, is an
/// error naming it.
pub fn read(path: &Path) -> Result<Checkpoint> {
    let named = |what: &str| format!("{}: {what}", path.display());
    let file = File::open(path).with_context(|| named("cannot open"))?;
    let mut reader = BufReader::new(file);
    let content = gguf_file::Content::read(&mut reader)
        .with_context(|| named("not a readable training checkpoint (a GGUF file)"))?;
    let Some(Value::String(json)) = content.metadata.get(STATE_KEY) else {
        bail!(named(
            "not an sr-bench training checkpoint (no run state in it)"
        ));
    };
    let state: RunState = serde_json::from_str(json)
        .with_context(|| named("the checkpoint's run state does not parse"))?;
    if state.format != FORMAT {
        bail!(named(&format!(
            "a checkpoint of format {} (this sr-bench reads format {FORMAT})",
            state.format
        )));
    }
    let mut tensors = BTreeMap::new();
    for name in content.tensor_infos.keys() {
        let t = content
            .tensor(&mut reader, name, &Device::Cpu)
            .and_then(|q| q.dequantize(&Device::Cpu))
            .with_context(|| named(&format!("tensor '{name}' is cut short or damaged")))?;
        tensors.insert(name.clone(), t);
    }
    Ok(Checkpoint {
        path: path.to_path_buf(),
        state,
        tensors,
    })
}

/// The checkpoint `--resume` names: the file itself, or the only `*.checkpoint.gguf` in a
/// folder.
pub fn find(target: &Path) -> Result<PathBuf> {
    if !target.is_dir() {
        if target.exists() {
            return Ok(target.to_path_buf());
        }
        bail!("--resume {}: no such file or folder", target.display());
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(target)
        .with_context(|| format!("cannot list {}", target.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(SUFFIX))
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => bail!(
            "{}: no training checkpoint here (a run writes <name>{SUFFIX} into its --out folder)",
            target.display()
        ),
        _ => bail!(
            "{}: several checkpoints ({}); name the one to resume",
            target.display(),
            found
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
