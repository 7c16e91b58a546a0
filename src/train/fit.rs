//! The training loop, as sentence-transformers' `fit`: shuffled batches, AdamW with and
//! without weight decay, the warm-up and linear decay of the learning rate, gradient clipping,
//! and the epoch best on STS-B dev kept.

use std::time::Instant;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use candle_core::{DType, Tensor};

use super::adamw::AdamW;
use super::checkpoint::{self, Checkpoint, Inputs, RunState};
use super::{Dropout, Pair, Recipe, StepProgress, TrainLog, Trainer, TrainingSet};
use crate::eval::rng::SplitMix64;
use crate::eval::StsFile;

/// sentence-transformers' `fit` defaults the paper trained with, beside the recipe's own.
const WEIGHT_DECAY: f64 = 0.01;
const MAX_GRAD_NORM: f64 = 1.0;
const ADAM_EPS: f64 = 1e-6;
/// The dropout of BERT's and MPNet's configs (hidden and attention; both models use 0.1).
const DROPOUT: f64 = 0.1;

/// Where a run writes its checkpoint and how often, and the checkpoint it resumes from.
pub struct Checkpoints {
    pub path: PathBuf,
    /// Steps between two checkpoints (one is also written at each epoch's end).
    pub every: usize,
    pub inputs: Inputs,
    pub resume: Option<Checkpoint>,
}

/// Everything that moves during a run, in one place: what a checkpoint holds.
struct Progress {
    steps: usize,
    epoch: usize,
    epoch_rng: SplitMix64,
    order_rng: SplitMix64,
    dropout: Dropout,
    log: TrainLog,
    best: (f64, BTreeMap<String, Tensor>),
}

impl Trainer<'_> {
    /// Trains on `set` by `recipe`, reporting each step to `progress`; keeps the weights of
    /// the epoch best on `dev`. Returns the log.
    pub fn train(
        &mut self,
        set: &TrainingSet,
        dev: &StsFile,
        recipe: &Recipe,
        progress: impl FnMut(&StepProgress),
    ) -> Result<TrainLog> {
        self.train_with(set, dev, recipe, None, progress)
    }

    /// [`Self::train`], writing checkpoints as `checkpoints` says and resuming from its
    /// checkpoint when it names one (the same recipe, base model and data, checked).
    pub fn train_with(
        &mut self,
        set: &TrainingSet,
        dev: &StsFile,
        recipe: &Recipe,
        checkpoints: Option<Checkpoints>,
        mut progress: impl FnMut(&StepProgress),
    ) -> Result<TrainLog> {
        recipe.check()?;
        let started = Instant::now();
        let per_epoch = set.pairs.len().div_ceil(recipe.batch);
        let total = recipe.max_steps.map_or(per_epoch * recipe.epochs, |m| {
            m.min(per_epoch * recipe.epochs)
        });
        let warmup = (recipe.warmup * total as f64).ceil() as usize;
        // sentence-transformers' `fit`: no weight decay on biases and LayerNorm weights.
        let decay = |name: &str| {
            if name.ends_with(".bias") || name.contains("LayerNorm") {
                0.0
            } else {
                WEIGHT_DECAY
            }
        };
        let mut opt = AdamW::new(self.model.params(), ADAM_EPS, decay)?;
        let mut run = match checkpoints.as_ref().and_then(|c| c.resume.as_ref()) {
            Some(saved) => self.resume(saved, recipe, (per_epoch, total), &mut opt)?,
            None => {
                let base_dev = self.dev_spearman(dev)?;
                Progress {
                    steps: 0,
                    epoch: 1,
                    epoch_rng: SplitMix64::new(recipe.seed),
                    order_rng: SplitMix64::new(recipe.seed),
                    dropout: Dropout {
                        p: DROPOUT,
                        rng: SplitMix64::new(recipe.seed ^ 0xD50F),
                    },
                    log: TrainLog {
                        base_model: self.base.info.name.clone(),
                        base_sha256: self.base_sha256.clone(),
                        recipe: recipe.clone(),
                        pairs: set.pairs.len(),
                        dropped_for_leaks: set.dropped,
                        steps: 0,
                        loss: Vec::with_capacity(total),
                        dev_spearman: vec![base_dev],
                        kept_epoch: 0,
                        resumed_at: Vec::new(),
                        seconds: 0.0,
                        train_seconds: 0.0,
                        steps_per_second: 0.0,
                    },
                    best: (base_dev, self.model.tensors()?),
                }
            }
        };
        let seconds_before = run.log.seconds;
        let resumed_at = run.steps;
        let save = |run: &Progress, opt: &AdamW| -> Result<bool> {
            let Some(c) = checkpoints.as_ref() else {
                return Ok(false);
            };
            let mut log = run.log.clone();
            log.seconds = seconds_before + started.elapsed().as_secs_f64();
            self.save(c, run, &log, opt)?;
            Ok(true)
        };
        let every = checkpoints.as_ref().map_or(0, |c| c.every);
        while run.epoch <= recipe.epochs && run.steps < total {
            let epoch = run.epoch;
            run.epoch_rng = run.order_rng.clone();
            let mut order: Vec<usize> = (0..set.pairs.len()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, run.order_rng.below(i + 1));
            }
            let done_here = run.steps - (epoch - 1) * per_epoch;
            for chunk in order.chunks(recipe.batch).skip(done_here) {
                if run.steps == total {
                    break;
                }
                let step_started = Instant::now();
                let pairs: Vec<&Pair> = chunk.iter().map(|&i| &set.pairs[i]).collect();
                let loss = self.loss(&pairs, Some(&mut run.dropout))?;
                let value = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
                if !value.is_finite() {
                    bail!(
                        "the loss became {value} at step {}: lower --lr",
                        run.steps + 1
                    );
                }
                let grads = loss.backward()?;
                let lr = scheduled_lr(recipe.lr, run.steps, warmup, total);
                opt.step(&grads, lr, MAX_GRAD_NORM)?;
                run.steps += 1;
                run.log.train_seconds += step_started.elapsed().as_secs_f64();
                run.log.loss.push(value);
                let mut report = StepProgress {
                    epoch,
                    done: run.steps,
                    total,
                    resumed_at,
                    loss: value,
                    elapsed_s: started.elapsed().as_secs_f64(),
                    checkpoint: false,
                };
                progress(&report);
                // Not at the epoch's (or the run's) last step: the epoch's end writes one anyway.
                let epoch_end = (epoch * per_epoch).min(total);
                if every > 0 && run.steps.is_multiple_of(every) && run.steps < epoch_end {
                    report.checkpoint = save(&run, &opt)?;
                    progress(&report);
                }
            }
            let dev_score = self.dev_spearman(dev)?;
            run.log.dev_spearman.push(dev_score);
            if dev_score > run.best.0 {
                run.best = (dev_score, self.model.tensors()?);
                run.log.kept_epoch = epoch;
            }
            run.epoch += 1;
            // The next epoch starts here: its shuffle has not been drawn yet.
            run.epoch_rng = run.order_rng.clone();
            if run.steps < total && save(&run, &opt)? {
                progress(&StepProgress {
                    epoch,
                    done: run.steps,
                    total,
                    resumed_at,
                    loss: run.log.loss.last().copied().unwrap_or(0.0),
                    elapsed_s: started.elapsed().as_secs_f64(),
                    checkpoint: true,
                });
            }
        }
        self.model.restore(&run.best.1)?;
        let mut log = run.log;
        log.steps = run.steps;
        log.seconds = seconds_before + started.elapsed().as_secs_f64();
        log.steps_per_second = run.steps as f64 / log.train_seconds.max(1e-9);
        Ok(log)
    }

    /// Writes the checkpoint of `run`: weights, moments, the kept epoch's weights (when an
    /// epoch beat the base model; else the base file holds them), generators, log.
    fn save(&self, c: &Checkpoints, run: &Progress, log: &TrainLog, opt: &AdamW) -> Result<()> {
        let state = RunState {
            format: checkpoint::FORMAT,
            inputs: c.inputs.clone(),
            recipe: log.recipe.clone(),
            steps: run.steps,
            epoch: run.epoch,
            epoch_rng: run.epoch_rng.state(),
            dropout_rng: run.dropout.rng.state(),
            log: log.clone(),
        };
        let weights = self.model.tensors()?;
        let mut tensors: Vec<(String, &Tensor)> = Vec::new();
        tensors.extend(weights.iter().map(|(n, t)| (format!("w.{n}"), t)));
        for (n, m, v) in opt.moments() {
            tensors.push((format!("m.{n}"), m));
            tensors.push((format!("v.{n}"), v));
        }
        if log.kept_epoch > 0 {
            tensors.extend(run.best.1.iter().map(|(n, t)| (format!("best.{n}"), t)));
        }
        checkpoint::write(&c.path, &state, &tensors)
    }

    /// Puts the model, the optimiser and the run back where `saved` left them, after checking
    /// that it belongs to this base model and recipe and stands where the recipe's steps
    /// (`per_epoch`, `total`) pass.
    fn resume(
        &mut self,
        saved: &Checkpoint,
        recipe: &Recipe,
        (per_epoch, total): (usize, usize),
        opt: &mut AdamW,
    ) -> Result<Progress> {
        let s = &saved.state;
        let file = saved.path.display();
        if s.log.base_sha256 != self.base_sha256 {
            bail!(
                "{file} continues a run of the model with SHA-256 {}, not this one ({})",
                s.log.base_sha256,
                self.base_sha256
            );
        }
        if s.recipe != *recipe {
            bail!("{file} holds another recipe ({:?})", s.recipe);
        }
        // Where the run stands must be a place this recipe passes through.
        let epoch_start = s.epoch.saturating_sub(1) * per_epoch;
        if s.epoch == 0
            || s.steps < epoch_start
            || s.steps > (epoch_start + per_epoch).min(total)
            || s.log.loss.len() != s.steps
        {
            bail!(
                "{file}: step {} of epoch {} is not a place this run reaches",
                s.steps,
                s.epoch
            );
        }
        // The kept weights' dev score: the log's, at the kept epoch (0: the base model's).
        let best_dev = *s
            .log
            .dev_spearman
            .get(s.log.kept_epoch)
            .with_context(|| format!("{file}: the log keeps an epoch it never scored"))?;
        let base = self.model.tensors()?;
        let mut weights = BTreeMap::new();
        let mut best = BTreeMap::new();
        for (name, t) in &base {
            let w = saved.tensor("w", name)?;
            let b = if s.log.kept_epoch > 0 {
                saved.tensor("best", name)?
            } else {
                t.clone()
            };
            for x in [&w, &b] {
                if x.shape() != t.shape() {
                    bail!(
                        "{file}: '{name}' has shape {:?}, the model's {:?}",
                        x.dims(),
                        t.dims()
                    );
                }
            }
            weights.insert(name.clone(), w.to_dtype(t.dtype())?);
            best.insert(name.clone(), b.to_dtype(t.dtype())?);
        }
        opt.restore(s.steps, |name| {
            Ok((saved.tensor("m", name)?, saved.tensor("v", name)?))
        })
        .with_context(|| format!("{file}: the optimiser's state does not fit this model"))?;
        self.model.restore(&weights)?;
        let mut log = s.log.clone();
        log.resumed_at.push(s.steps);
        Ok(Progress {
            steps: s.steps,
            epoch: s.epoch,
            epoch_rng: SplitMix64::new(s.epoch_rng),
            order_rng: SplitMix64::new(s.epoch_rng),
            dropout: Dropout {
                p: DROPOUT,
                rng: SplitMix64::new(s.dropout_rng),
            },
            log,
            best: (best_dev, best),
        })
    }
}

/// sentence-transformers' WarmupLinear: from 0 up to `lr` over `warmup` steps, then down to 0
/// at `total`.
pub fn scheduled_lr(lr: f64, step: usize, warmup: usize, total: usize) -> f64 {
    if step < warmup {
        lr * (step + 1) as f64 / warmup as f64
    } else {
        lr * (total - step) as f64 / (total - warmup).max(1) as f64
    }
}
