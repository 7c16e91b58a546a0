//! The training loop, as sentence-transformers' `fit`: shuffled batches, AdamW with and
//! without weight decay, the warm-up and linear decay of the learning rate, gradient clipping,
//! and the epoch best on STS-B dev kept.

use std::time::Instant;

use anyhow::{bail, Result};
use candle_core::backprop::GradStore;
use candle_core::{DType, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};

use super::{Dropout, Pair, Recipe, StepProgress, TrainLog, Trainer, TrainingSet};
use crate::eval::rng::SplitMix64;
use crate::eval::StsFile;

/// sentence-transformers' `fit` defaults the paper trained with, beside the recipe's own.
const WEIGHT_DECAY: f64 = 0.01;
const MAX_GRAD_NORM: f64 = 1.0;
const ADAM_EPS: f64 = 1e-6;
/// The dropout of BERT's and MPNet's configs (hidden and attention; both models use 0.1).
const DROPOUT: f64 = 0.1;

impl Trainer<'_> {
    /// Trains on `set` by `recipe`, reporting each step to `progress`; keeps the weights of
    /// the epoch best on `dev`. Returns the log.
    pub fn train(
        &mut self,
        set: &TrainingSet,
        dev: &StsFile,
        recipe: &Recipe,
        mut progress: impl FnMut(&StepProgress),
    ) -> Result<TrainLog> {
        recipe.check()?;
        let started = Instant::now();
        let per_epoch = set.pairs.len().div_ceil(recipe.batch);
        let total = recipe.max_steps.map_or(per_epoch * recipe.epochs, |m| {
            m.min(per_epoch * recipe.epochs)
        });
        let warmup = (recipe.warmup * total as f64).ceil() as usize;
        let (mut decay, mut no_decay) = (Vec::new(), Vec::new());
        for (name, var) in self.model.params() {
            // sentence-transformers' `fit`: no weight decay on biases and LayerNorm weights.
            if name.ends_with(".bias") || name.contains("LayerNorm") {
                no_decay.push(var.clone());
            } else {
                decay.push(var.clone());
            }
        }
        let params = |weight_decay| ParamsAdamW {
            lr: recipe.lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: ADAM_EPS,
            weight_decay,
        };
        let mut opt_decay = AdamW::new(decay, params(WEIGHT_DECAY))?;
        let mut opt_plain = AdamW::new(no_decay, params(0.0))?;
        let all_vars: Vec<Var> = self.model.params().values().cloned().collect();

        let mut dropout = Dropout {
            p: DROPOUT,
            rng: SplitMix64::new(recipe.seed ^ 0xD50F),
        };
        let mut order_rng = SplitMix64::new(recipe.seed);
        let mut log = TrainLog {
            base_model: self.base.info.name.clone(),
            base_sha256: self.base_sha256.clone(),
            recipe: recipe.clone(),
            pairs: set.pairs.len(),
            dropped_for_leaks: set.dropped,
            steps: 0,
            loss: Vec::with_capacity(total),
            dev_spearman: vec![self.dev_spearman(dev)?],
            kept_epoch: 0,
            seconds: 0.0,
            train_seconds: 0.0,
            steps_per_second: 0.0,
        };
        let mut best = (log.dev_spearman[0], self.model.tensors()?);
        let mut step = 0;
        'epochs: for epoch in 1..=recipe.epochs {
            let mut order: Vec<usize> = (0..set.pairs.len()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, order_rng.below(i + 1));
            }
            for chunk in order.chunks(recipe.batch) {
                if step == total {
                    break;
                }
                let step_started = Instant::now();
                let pairs: Vec<&Pair> = chunk.iter().map(|&i| &set.pairs[i]).collect();
                let loss = self.loss(&pairs, Some(&mut dropout))?;
                let value = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
                if !value.is_finite() {
                    bail!("the loss became {value} at step {}: lower --lr", step + 1);
                }
                let mut grads = loss.backward()?;
                clip_gradients(&mut grads, &all_vars, MAX_GRAD_NORM)?;
                let lr = scheduled_lr(recipe.lr, step, warmup, total);
                opt_decay.set_learning_rate(lr);
                opt_plain.set_learning_rate(lr);
                opt_decay.step(&grads)?;
                opt_plain.step(&grads)?;
                step += 1;
                log.train_seconds += step_started.elapsed().as_secs_f64();
                log.loss.push(value);
                progress(&StepProgress {
                    epoch,
                    done: step,
                    total,
                    loss: value,
                    elapsed_s: started.elapsed().as_secs_f64(),
                });
            }
            let dev_score = self.dev_spearman(dev)?;
            log.dev_spearman.push(dev_score);
            if dev_score > best.0 {
                best = (dev_score, self.model.tensors()?);
                log.kept_epoch = epoch;
            }
            if step == total {
                break 'epochs;
            }
        }
        self.model.restore(&best.1)?;
        log.steps = step;
        log.seconds = started.elapsed().as_secs_f64();
        log.steps_per_second = step as f64 / log.train_seconds.max(1e-9);
        Ok(log)
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

/// Scales every gradient down so that their joint L2 norm is at most `max_norm`.
fn clip_gradients(grads: &mut GradStore, vars: &[Var], max_norm: f64) -> Result<()> {
    let mut squared = 0.0;
    for v in vars {
        if let Some(g) = grads.get(v.as_tensor()) {
            squared += g
                .sqr()?
                .sum_all()?
                .to_dtype(DType::F64)?
                .to_scalar::<f64>()?;
        }
    }
    let norm = squared.sqrt();
    if norm > max_norm {
        let scale = max_norm / (norm + 1e-6);
        for v in vars {
            if let Some(g) = grads.remove(v.as_tensor()) {
                grads.insert(v.as_tensor(), (g * scale)?);
            }
        }
    }
    Ok(())
}
