//! `sr-bench train`: fine-tunes one of our BERT or MPNet files natively, with candle's autograd
//! in f32, as sentence-transformers' `fit` does in the paper's experiments: the cosine of the
//! two mean-pooled vectors regressed on score / 5 (MSE), AdamW (weight decay 0.01 except biases
//! and LayerNorms, gradients clipped at norm 1), a learning rate warmed up linearly over the
//! first steps and then decayed linearly to 0, dropout as in the model's config, and the
//! checkpoint of the epoch that scores best on STS-B dev kept.

mod adamw;
pub mod checkpoint;
pub mod data;
pub mod encoder;
mod fit;
mod fused;
mod trainer;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

pub use data::{training_set, Pair, TrainData, TrainingSet};
pub use encoder::{Dropout, TrainableEncoder};
pub use fit::{scheduled_lr, Checkpoints};
pub use trainer::Trainer;

/// Metadata keys a trained file adds to its base file's.
pub use crate::model::metadata_keys::train as keys;

/// What a run does (`sr-bench train`'s flags).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recipe {
    pub data: String,
    pub epochs: usize,
    pub batch: usize,
    pub lr: f64,
    pub warmup: f64,
    pub seed: u64,
    /// Stop after this many steps (a short run for the tests); `None`: every epoch in full.
    pub max_steps: Option<usize>,
}

impl Recipe {
    /// Refuses values the run could not use.
    pub fn check(&self) -> Result<()> {
        if self.epochs == 0 || self.epochs > 100 {
            bail!("--epochs must be 1 to 100, not {}", self.epochs);
        }
        if self.batch < 2 || self.batch > 512 {
            bail!("--batch must be 2 to 512 pairs, not {}", self.batch);
        }
        if !(self.lr.is_finite() && self.lr > 0.0 && self.lr < 1.0) {
            bail!("--lr must be a positive number below 1, not {}", self.lr);
        }
        if !(0.0..1.0).contains(&self.warmup) {
            bail!(
                "--warmup is a fraction of the steps, 0 up to 1: not {}",
                self.warmup
            );
        }
        Ok(())
    }
}

/// The JSON log (`train-log.json`): the recipe, the loss of every step, STS-B dev per epoch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainLog {
    pub base_model: String,
    pub base_sha256: String,
    pub recipe: Recipe,
    pub pairs: usize,
    /// Pairs dropped because a text occurs in a reported test set.
    pub dropped_for_leaks: usize,
    pub steps: usize,
    pub loss: Vec<f64>,
    /// STS-B dev Spearman ×100 after each epoch (the base model's first, as epoch 0).
    pub dev_spearman: Vec<f64>,
    /// The epoch whose weights were kept (0: none beat the base model).
    pub kept_epoch: usize,
    /// The steps at which the run was resumed from a checkpoint (`--resume`), if ever.
    #[serde(default)]
    pub resumed_at: Vec<usize>,
    /// The whole run, the dev evaluations included.
    pub seconds: f64,
    /// Training steps only (forward, backward, update): the speed figure.
    pub train_seconds: f64,
    pub steps_per_second: f64,
}

/// Progress, for the CLI's line: step `done` of `total`, the loss, the time so far.
pub struct StepProgress {
    pub epoch: usize,
    pub done: usize,
    pub total: usize,
    /// Steps done before this process started (a resumed run's), for the time left.
    pub resumed_at: usize,
    pub loss: f64,
    pub elapsed_s: f64,
    /// A checkpoint was written after this step.
    pub checkpoint: bool,
}
