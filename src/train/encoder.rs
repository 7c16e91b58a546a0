//! The BERT and MPNet encoders again, written with candle's differentiable operations only, so
//! that autograd gives the gradient of a loss against every weight. The inference backends
//! (`backend/cpu`) use fused kernels without a backward pass; this one is for `sr-bench train`.
//! Same maths as theirs (checked by the reload test: a trained file embeds as this model does),
//! plus dropout, which sentence-transformers' training applies and inference never does.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use candle_core::{DType, Device, Tensor, Var, D};

use crate::backend::cpu::{mpnet_position_bias, mpnet_position_ids, relative_buckets};
use crate::eval::rng::SplitMix64;
use crate::model::tensor_names::{self as names, LayerNames};
use crate::model::{Architecture, ModelFile, WORD_EMBEDDINGS};

/// Dropout during training: the probability, and the generator of its masks (seeded, so a
/// run repeats exactly).
pub struct Dropout {
    pub p: f64,
    pub rng: SplitMix64,
}

impl Dropout {
    /// Zeroes each element with probability `p`, scales the rest by 1/(1 − p).
    fn apply(&mut self, x: &Tensor) -> Result<Tensor> {
        if self.p <= 0.0 {
            return Ok(x.clone());
        }
        let keep = 1.0 / (1.0 - self.p);
        let threshold = (self.p * u32::MAX as f64) as u64;
        let mask: Vec<f32> = (0..x.elem_count())
            .map(|_| {
                if (self.rng.next_u64() >> 32) < threshold {
                    0.0
                } else {
                    keep as f32
                }
            })
            .collect();
        let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
        Ok(x.mul(&mask)?)
    }
}

/// Which encoder: BERT (MiniLM) or MPNet (relative-position bias, no token types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bert,
    MpNet,
}

/// An encoder whose weights are candle `Var`s (every tensor of the file, in `dtype`).
pub struct TrainableEncoder {
    kind: Kind,
    params: BTreeMap<String, Var>,
    layers: usize,
    heads: usize,
    eps: f64,
    pad_id: u32,
    buckets: usize,
}

impl TrainableEncoder {
    /// Every tensor of `file` as a trainable variable in `dtype` (f32 for training, f64 for
    /// the gradient check). Only our own BERT and MPNet files: their tensors and names are
    /// what a trained file is written back with.
    pub fn load(file: &ModelFile, dtype: DType) -> Result<Self> {
        let kind = match file.info.architecture {
            Architecture::Bert => Kind::Bert,
            Architecture::MpNet => Kind::MpNet,
            other @ (Architecture::NomicBert
            | Architecture::ModernBert
            | Architecture::Qwen2
            | Architecture::Qwen3
            | Architecture::GemmaEmbedding
            | Architecture::T5Encoder) => bail!(
                "sr-bench train fine-tunes {} files (all-MiniLM-L6-v2, all-mpnet-base-v2); \
                 this one is '{other}'",
                Architecture::ALL
                    .into_iter()
                    .filter(|a| a.spec().trainable)
                    .map(|a| a.spec().label)
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        };
        let mut params = BTreeMap::new();
        // By Hugging Face name, whatever names the file stores them under.
        for name in crate::model::expected_tensor_names(file.info.architecture, &file.config) {
            let t = file
                .tensor(&name)?
                .dequantize(&Device::Cpu)?
                .to_dtype(dtype)?;
            params.insert(name, Var::from_tensor(&t)?);
        }
        let cfg = &file.config;
        Ok(Self {
            kind,
            params,
            layers: cfg.num_hidden_layers,
            heads: cfg.num_attention_heads,
            eps: cfg.layer_norm_eps,
            pad_id: cfg.pad_token_id as u32,
            buckets: relative_buckets(cfg),
        })
    }

    /// The variables, by tensor name (the optimiser's parameters).
    pub fn params(&self) -> &BTreeMap<String, Var> {
        &self.params
    }

    fn get(&self, name: &str) -> Result<&Tensor> {
        match self.params.get(name) {
            Some(v) => Ok(v.as_tensor()),
            None => bail!("the model file has no tensor {name}"),
        }
    }

    fn linear(&self, prefix: &str, x: &Tensor) -> Result<Tensor> {
        let w = self.get(&names::weight(prefix))?;
        let b = self.get(&names::bias(prefix))?;
        Ok(x.broadcast_matmul(&w.t()?)?.broadcast_add(b)?)
    }

    fn layer_norm(&self, prefix: &str, x: &Tensor) -> Result<Tensor> {
        let mean = x.mean_keepdim(D::Minus1)?;
        let centred = x.broadcast_sub(&mean)?;
        let var = centred.sqr()?.mean_keepdim(D::Minus1)?;
        let normed = centred.broadcast_div(&(var + self.eps)?.sqrt()?)?;
        Ok(normed
            .broadcast_mul(self.get(&names::weight(prefix))?)?
            .broadcast_add(self.get(&names::bias(prefix))?)?)
    }

    /// Mean-pooled, L2-normalised sentence vectors `[batch, hidden]` of `ids` (`[batch, seq]`,
    /// padded on the right; `mask` 1 for tokens). `dropout`: training; `None`: inference.
    pub fn embed(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        mut dropout: Option<&mut Dropout>,
    ) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let dtype = self.get(WORD_EMBEDDINGS)?.dtype();
        let words = self.get(WORD_EMBEDDINGS)?;
        let hidden = words.dim(1)?;
        let mut x = words
            .index_select(&ids.flatten_all()?, 0)?
            .reshape((b, t, hidden))?;
        let positions = self.get(names::POSITION_EMBEDDINGS)?;
        let mut position_bias = None;
        match self.kind {
            Kind::Bert => {
                x = x
                    .broadcast_add(&positions.narrow(0, 0, t)?)?
                    .broadcast_add(&self.get(names::TOKEN_TYPE_EMBEDDINGS)?.get(0)?)?;
            }
            Kind::MpNet => {
                let pos = mpnet_position_ids(ids, self.pad_id, positions.dim(0)?)?;
                x = (x + positions
                    .index_select(&pos.flatten_all()?, 0)?
                    .reshape((b, t, hidden))?)?;
                position_bias = Some(mpnet_position_bias(
                    self.get(names::RELATIVE_ATTENTION_BIAS)?,
                    t,
                    self.buckets,
                    self.heads,
                )?);
            }
        }
        x = self.layer_norm(names::EMBEDDINGS_NORM, &x)?;
        if let Some(d) = dropout.as_deref_mut() {
            x = d.apply(&x)?;
        }
        // 0 for tokens, a large negative for padding: [batch, 1, 1, seq].
        let padding = ((mask.to_dtype(dtype)? - 1.0)? * 1e9)?.reshape((b, 1, 1, t))?;
        let bias = match &position_bias {
            Some(p) => p.broadcast_add(&padding)?,
            None => padding,
        };
        for i in 0..self.layers {
            let n = match self.kind {
                Kind::Bert => LayerNames::bert(i),
                Kind::MpNet => LayerNames::mpnet(i),
            };
            x = self.layer(&n, &x, &bias, dropout.as_deref_mut())?;
        }
        let keep = mask.to_dtype(dtype)?.unsqueeze(D::Minus1)?;
        let pooled = x
            .broadcast_mul(&keep)?
            .sum(1)?
            .broadcast_div(&keep.sum(1)?)?;
        let norm = pooled.sqr()?.sum_keepdim(1)?.sqrt()?;
        Ok(pooled.broadcast_div(&norm)?)
    }

    fn layer(
        &self,
        n: &LayerNames,
        x: &Tensor,
        bias: &Tensor,
        mut dropout: Option<&mut Dropout>,
    ) -> Result<Tensor> {
        let (b, t, h) = x.dims3()?;
        let d = h / self.heads;
        let heads = |y: Tensor| -> Result<Tensor> {
            Ok(y.reshape((b, t, self.heads, d))?
                .transpose(1, 2)?
                .contiguous()?)
        };
        let q = heads(self.linear(&n.query, x)?)?;
        let k = heads(self.linear(&n.key, x)?)?;
        let v = heads(self.linear(&n.value, x)?)?;
        let scores = (q.matmul(&k.t()?.contiguous()?)? / (d as f64).sqrt())?.broadcast_add(bias)?;
        let mut probs = candle_nn::ops::softmax(&scores, D::Minus1)?;
        if let Some(dr) = dropout.as_deref_mut() {
            probs = dr.apply(&probs)?;
        }
        let context = probs.matmul(&v)?.transpose(1, 2)?.reshape((b, t, h))?;
        let mut out = self.linear(&n.attention_out, &context)?;
        if let Some(dr) = dropout.as_deref_mut() {
            out = dr.apply(&out)?;
        }
        let x = self.layer_norm(&n.attention_norm, &(out + x)?)?;
        let inner = self.linear(&n.intermediate, &x)?.gelu_erf()?;
        let mut out = self.linear(&n.output, &inner)?;
        if let Some(dr) = dropout {
            out = dr.apply(&out)?;
        }
        self.layer_norm(&n.output_norm, &(out + x)?)
    }

    /// A copy of the current weights as plain tensors (what a trained file is written from;
    /// the optimiser updates the variables in place, so the kept epoch needs its own copy).
    pub fn tensors(&self) -> Result<BTreeMap<String, Tensor>> {
        self.params
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.as_tensor().detach().copy()?)))
            .collect()
    }

    /// Puts `tensors` (from [`Self::tensors`]) back: the best epoch's weights.
    pub fn restore(&self, tensors: &BTreeMap<String, Tensor>) -> Result<()> {
        for (name, var) in &self.params {
            if let Some(t) = tensors.get(name) {
                var.set(t)?;
            }
        }
        Ok(())
    }
}
