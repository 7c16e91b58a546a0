//! A model in training: the base file, its trainable copy and its tokenizer; the loss of a
//! batch of pairs, embeddings, the STS-B dev score, and the trained file written.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};

use super::{keys, Dropout, Pair, TrainLog, TrainableEncoder};
use crate::backend::{load_embedder_with_options, BackendKind};
use crate::convert::storage_dtype;
use crate::eval::{spearman, StsFile};
use crate::model::{metadata_keys, LoadOptions, ModelFile, TextTokenizer, TokenBatch};

/// Sentences per forward pass of [`Trainer::embed`].
const EMBED_BATCH: usize = 64;

/// A model in training: the base file, its trainable copy, its tokenizer.
pub struct Trainer<'a> {
    pub(super) base: &'a ModelFile,
    pub(super) base_sha256: String,
    pub(super) model: TrainableEncoder,
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
