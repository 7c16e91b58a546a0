//! The BERT and MPNet encoders again, written with candle's differentiable operations only, so
//! that autograd gives the gradient of a loss against every weight. The inference backends
//! (`backend/cpu`) use fused kernels without a backward pass; this one is for `sr-bench train`.
//! Same maths as theirs (checked by the reload test: a trained file embeds as this model does),
//! plus dropout, which sentence-transformers' training applies and inference never does.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use candle_core::{DType, Device, Tensor, Var, D};

use super::fused;
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
        let mask = self.mask(x.elem_count());
        let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
        Ok(x.mul(&mask)?)
    }

    /// [`Self::apply`] on packed rows (`[tokens, hidden]`), drawing the mask of the padded
    /// batch and keeping the tokens' rows: the masks, and so a seeded run, stay those of the
    /// padded layout the recorded runs were trained with.
    fn apply_packed(&mut self, x: &Tensor, packing: &Packing) -> Result<Tensor> {
        if self.p <= 0.0 {
            return Ok(x.clone());
        }
        let hidden = x.dim(1)?;
        let padded = self.mask(packing.batch * packing.seq * hidden);
        let mask: Vec<f32> = packing
            .rows
            .iter()
            .flat_map(|&r| &padded[r as usize * hidden..(r as usize + 1) * hidden])
            .copied()
            .collect();
        let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
        Ok(x.mul(&mask)?)
    }

    /// `n` draws: 0 with probability `p`, else 1/(1 − p).
    fn mask(&mut self, n: usize) -> Vec<f32> {
        let keep = (1.0 / (1.0 - self.p)) as f32;
        let threshold = (self.p * u32::MAX as f64) as u64;
        (0..n)
            .map(|_| {
                if (self.rng.next_u64() >> 32) < threshold {
                    0.0
                } else {
                    keep
                }
            })
            .collect()
    }
}

/// Where a padded batch's real tokens lie. The linear layers, norms and dropout run on those
/// rows only (`[tokens, hidden]`): on STS-B train's shuffled batches padding was more than half
/// of the rows, and autograd paid for it three times. Attention and pooling put the rows back
/// in their padded places, padding as zero rows.
struct Packing {
    batch: usize,
    seq: usize,
    /// The padded row (`sentence * seq + position`) of each real token, in order.
    rows: Vec<u32>,
    /// `rows` as a tensor (the gather's indices).
    real: Tensor,
    /// Each padded row's packed row; padding points at a zero row appended after the tokens.
    padded: Tensor,
}

impl Packing {
    fn new(mask: &Tensor) -> Result<Self> {
        let (batch, seq) = mask.dims2()?;
        let mask: Vec<u32> = mask.to_dtype(DType::U32)?.flatten_all()?.to_vec1()?;
        let real: Vec<u32> = (0..mask.len() as u32)
            .filter(|&i| mask[i as usize] != 0)
            .collect();
        let zero_row = real.len() as u32;
        let mut next = 0;
        let padded: Vec<u32> = mask
            .iter()
            .map(|&m| {
                if m == 0 {
                    return zero_row;
                }
                next += 1;
                next - 1
            })
            .collect();
        let device = Device::Cpu;
        Ok(Self {
            batch,
            seq,
            real: Tensor::from_vec(real.clone(), zero_row as usize, &device)?,
            rows: real,
            padded: Tensor::from_vec(padded, batch * seq, &device)?,
        })
    }

    /// `[batch, seq, hidden]` → `[tokens, hidden]`.
    fn pack(&self, x: &Tensor) -> Result<Tensor> {
        let hidden = x.dim(D::Minus1)?;
        Ok(x.reshape((self.batch * self.seq, hidden))?
            .index_select(&self.real, 0)?)
    }

    /// `[tokens, hidden]` → `[batch, seq, hidden]`, zeros on padding.
    fn unpack(&self, x: &Tensor) -> Result<Tensor> {
        let hidden = x.dim(1)?;
        Ok(x.pad_with_zeros(0, 0, 1)?
            .index_select(&self.padded, 0)?
            .reshape((self.batch, self.seq, hidden))?)
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

    /// `x · Wᵀ + b` over packed rows (`[tokens, in]`).
    fn linear(&self, prefix: &str, x: &Tensor) -> Result<Tensor> {
        let w = self.get(&names::weight(prefix))?;
        let b = self.get(&names::bias(prefix))?;
        Ok(fused::add_bias(&x.matmul(&w.t()?)?, b)?)
    }

    fn layer_norm(&self, prefix: &str, x: &Tensor) -> Result<Tensor> {
        let w = self.get(&names::weight(prefix))?;
        let b = self.get(&names::bias(prefix))?;
        Ok(fused::layer_norm(x, w, b, self.eps)?)
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
        // From here on the rows are the real tokens only (see `Packing`).
        let packing = Packing::new(mask)?;
        x = self.layer_norm(names::EMBEDDINGS_NORM, &packing.pack(&x)?)?;
        if let Some(d) = dropout.as_deref_mut() {
            x = d.apply_packed(&x, &packing)?;
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
            x = self.layer(&n, &packing, &x, &bias, dropout.as_deref_mut())?;
        }
        // Padding rows come back as zeros: their sum is the tokens' sum.
        let counts = mask.to_dtype(dtype)?.sum_keepdim(1)?;
        let pooled = packing.unpack(&x)?.sum(1)?.broadcast_div(&counts)?;
        let norm = pooled.sqr()?.sum_keepdim(1)?.sqrt()?;
        Ok(pooled.broadcast_div(&norm)?)
    }

    /// One layer over the packed rows `x` (`[tokens, hidden]`).
    fn layer(
        &self,
        n: &LayerNames,
        packing: &Packing,
        x: &Tensor,
        bias: &Tensor,
        mut dropout: Option<&mut Dropout>,
    ) -> Result<Tensor> {
        let (b, t) = (packing.batch, packing.seq);
        let h = x.dim(1)?;
        let d = h / self.heads;
        let heads = |y: Tensor| -> Result<Tensor> {
            Ok(packing
                .unpack(&y)?
                .reshape((b, t, self.heads, d))?
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
        let context = packing.pack(&probs.matmul(&v)?.transpose(1, 2)?.reshape((b, t, h))?)?;
        let mut out = self.linear(&n.attention_out, &context)?;
        if let Some(dr) = dropout.as_deref_mut() {
            out = dr.apply_packed(&out, packing)?;
        }
        let x = self.layer_norm(&n.attention_norm, &(out + x)?)?;
        let inner = fused::gelu_erf(&self.linear(&n.intermediate, &x)?)?;
        let mut out = self.linear(&n.output, &inner)?;
        if let Some(dr) = dropout {
            out = dr.apply_packed(&out, packing)?;
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
