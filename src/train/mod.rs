//! `sr-bench train`: fine-tunes one of our BERT or MPNet files natively, with candle's autograd
//! in f32, as sentence-transformers' `fit` does in the paper's experiments: the cosine of the
//! two mean-pooled vectors regressed on score / 5 (MSE), AdamW (weight decay 0.01 except biases
//! and LayerNorms, gradients clipped at norm 1), a learning rate warmed up linearly over the
//! first steps and then decayed linearly to 0, dropout as in the model's config, and the
//! checkpoint of the epoch that scores best on STS-B dev kept.

pub mod data;
pub mod encoder;

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{bail, Result};
use candle_core::backprop::GradStore;
use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use serde::Serialize;

use crate::backend::{load_embedder_with_options, BackendKind};
use crate::convert::storage_dtype;
use crate::eval::rng::SplitMix64;
use crate::eval::{spearman, StsFile};
use crate::model::{metadata_keys, LoadOptions, ModelFile, TextTokenizer, TokenBatch};
pub use data::{training_set, Pair, TrainData, TrainingSet};
pub use encoder::{Dropout, TrainableEncoder};

/// Metadata keys a trained file adds to its base file's.
pub use crate::model::metadata_keys::train as keys;

/// sentence-transformers' `fit` defaults the paper trained with, beside the recipe's own.
const WEIGHT_DECAY: f64 = 0.01;
const MAX_GRAD_NORM: f64 = 1.0;
const ADAM_EPS: f64 = 1e-6;
/// The dropout of BERT's and MPNet's configs (hidden and attention; both models use 0.1).
const DROPOUT: f64 = 0.1;
/// Sentences per forward pass of [`Trainer::embed`].
const EMBED_BATCH: usize = 64;

/// What a run does (`sr-bench train`'s flags).
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
    pub loss: f64,
    pub elapsed_s: f64,
}

/// A model in training: the base file, its trainable copy, its tokenizer.
pub struct Trainer<'a> {
    base: &'a ModelFile,
    base_sha256: String,
    model: TrainableEncoder,
    tokenizer: TextTokenizer,
    pad_id: u32,
}

impl<'a> Trainer<'a> {
    /// `base` must be an f32 file of ours (training in f32 from quantized weights would fit
    /// their rounding errors); `base_sha256` is its file's, for the recipe.
    pub fn new(base: &'a ModelFile, base_sha256: String, dtype: DType) -> Result<Self> {
        if base.info.dtype != "f32" {
            bail!(
                "sr-bench train starts from an f32 file (this one is {}): use the model's .f32.gguf",
                if base.info.dtype.is_empty() { "a llama.cpp file" } else { base.info.dtype.as_str() }
            );
        }
        let pad_id = base.config.pad_token_id as u32;
        let mut tokenizer = TextTokenizer::from_json(
            &base.tokenizer_json,
            base.info.max_seq_length,
            pad_id,
            base.info.vocab_size,
        )?;
        tokenizer.set_prefix(&base.info.prefix);
        Ok(Self {
            base,
            base_sha256,
            model: TrainableEncoder::load(base, dtype)?,
            tokenizer,
            pad_id,
        })
    }

    /// The trainable model (the gradient check and the tests reach it).
    pub fn model(&self) -> &TrainableEncoder {
        &self.model
    }

    /// Token ids and mask tensors of `texts`, padded to the longest.
    pub fn batch(&self, texts: &[&str]) -> Result<(Tensor, Tensor)> {
        let rows = texts
            .iter()
            .map(|t| self.tokenizer.encode(t))
            .collect::<Result<Vec<_>>>()?;
        let b = TokenBatch::from_rows(&rows, self.pad_id);
        let shape = (b.batch, b.seq_len);
        Ok((
            Tensor::from_vec(b.ids, shape, &Device::Cpu)?,
            Tensor::from_vec(b.mask, shape, &Device::Cpu)?,
        ))
    }

    /// The regression loss of `pairs`: mean over pairs of (cos(a, b) − label)².
    pub fn loss(&self, pairs: &[&Pair], dropout: Option<&mut Dropout>) -> Result<Tensor> {
        let texts: Vec<&str> = pairs
            .iter()
            .flat_map(|p| [p.text_a.as_str(), p.text_b.as_str()])
            .collect();
        let (ids, mask) = self.batch(&texts)?;
        let v = self.model.embed(&ids, &mask, dropout)?;
        let n = pairs.len();
        let dim = v.dim(1)?;
        let v = v.reshape((n, 2, dim))?;
        let cos = (v.narrow(1, 0, 1)?.squeeze(1)? * v.narrow(1, 1, 1)?.squeeze(1)?)?.sum(1)?;
        let dtype = cos.dtype();
        let labels: Vec<f64> = pairs.iter().map(|p| p.label).collect();
        let labels = Tensor::from_vec(labels, n, &Device::Cpu)?.to_dtype(dtype)?;
        Ok((cos - labels)?.sqr()?.mean_all()?)
    }

    /// Unit vectors of `texts` from the model as it is now (no dropout).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(EMBED_BATCH) {
            let (ids, mask) = self.batch(chunk)?;
            let v = self.model.embed(&ids, &mask, None)?.detach();
            out.extend(v.to_dtype(DType::F32)?.to_vec2::<f32>()?);
        }
        Ok(out)
    }

    /// STS-B dev Spearman ×100 of the model as it is now, embedded as the product embeds it:
    /// the weights written to a file (in memory) and read by the CPU backend.
    pub fn dev_spearman(&self, dev: &StsFile) -> Result<f64> {
        let bytes = self.encode(GgmlDType::F32, &[])?;
        let embedder = load_embedder_with_options(bytes, BackendKind::Cpu, LoadOptions::default())?;
        let texts: Vec<&str> = dev
            .pairs
            .iter()
            .flat_map(|p| [p.sentence1.as_str(), p.sentence2.as_str()])
            .collect();
        let v = embedder.embed(&texts)?;
        let cos: Vec<f64> = v
            .chunks(2)
            .map(|ab| {
                ab[0]
                    .iter()
                    .zip(&ab[1])
                    .map(|(x, y)| f64::from(x * y))
                    .sum()
            })
            .collect();
        let gold: Vec<f64> = dev.pairs.iter().map(|p| p.score).collect();
        Ok(100.0 * spearman(&cos, &gold))
    }

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

    /// The trained model as a file of ours in `dtype` ("f32" or "q8_0"), the base file's
    /// metadata plus the recipe.
    pub fn write(&self, log: &TrainLog, dtype: &str) -> Result<Vec<u8>> {
        let target = match dtype {
            "f32" => GgmlDType::F32,
            "q8_0" => GgmlDType::Q8_0,
            other => bail!("a trained file is written as f32 or q8_0, not {other}"),
        };
        let r = &log.recipe;
        let s = |v: &str| Value::String(v.to_string());
        let set = [
            (
                metadata_keys::NAME,
                s(&format!("{}+{}", log.base_model, r.data)),
            ),
            (metadata_keys::DTYPE, s(dtype)),
            (keys::DATA, s(&r.data)),
            (keys::SEED, Value::U64(r.seed)),
            (keys::EPOCHS, Value::U32(r.epochs as u32)),
            (keys::KEPT_EPOCH, Value::U32(log.kept_epoch as u32)),
            (keys::BATCH, Value::U32(r.batch as u32)),
            (keys::LR, Value::F64(r.lr)),
            (keys::WARMUP, Value::F64(r.warmup)),
            (keys::BASE_SHA256, s(&log.base_sha256)),
            (keys::PAIRS, Value::U32(log.pairs as u32)),
        ];
        self.encode(target, &set)
    }

    /// The current weights in `target` (linear weights and the token table; the rest stays
    /// f32, as the converter writes), with the base file's metadata and `set`.
    fn encode(&self, target: GgmlDType, set: &[(&str, Value)]) -> Result<Vec<u8>> {
        let mut quantized: BTreeMap<String, QTensor> = BTreeMap::new();
        for (name, t) in self.model.tensors()? {
            let t = t.to_dtype(DType::F32)?.contiguous()?;
            let q = QTensor::quantize(&t, storage_dtype(&name, t.dims(), target))?;
            quantized.insert(name, q);
        }
        let tensors: Vec<(&str, &QTensor)> =
            quantized.iter().map(|(k, v)| (k.as_str(), v)).collect();
        self.base.rewrite(set, &tensors)
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
