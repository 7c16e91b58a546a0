//! The CPU backend: candle tensors natively, our simd128 kernels for the linear layers in wasm;
//! also the static token table of the syntax-blind baseline.

mod activation;
mod bert;
pub mod gemm;
mod mpnet;
pub mod peak;
pub mod qgemm;
mod weights;

use std::sync::Arc;

use anyhow::{Context, Result};
use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Tensor, D};

use super::MatmulMode;
use crate::error::{coded, ErrorCode};
use crate::model::{Embedder, EncoderBackend, ModelFile, TokenBatch, TokenTable, WORD_EMBEDDINGS};

/// A CPU [`Embedder`] for a parsed file.
pub fn embedder(file: ModelFile, matmul: MatmulMode) -> Result<Embedder> {
    // Shared with the backend: `UnpackPerProduct` weights stay in the file's bytes.
    let file = Arc::new(file);
    let words = load_words(&file)?;
    let backend = load_shared(file.clone(), words.clone(), matmul)?;
    Embedder::new(&file, Box::new(StaticTable::new(words)), backend)
}

/// The token embedding table every architecture has (the encoders' input and the baseline's
/// only weights); clones share its data.
pub fn load_words(file: &ModelFile) -> Result<QMatMul> {
    Ok(QMatMul::from_qtensor(file.tensor(WORD_EMBEDDINGS)?)?)
}

/// The syntax-blind baseline's weights: the static token table, kept as the file stores it.
pub struct StaticTable(QMatMul);

impl StaticTable {
    pub fn new(words: QMatMul) -> Self {
        Self(words)
    }
}

impl TokenTable for StaticTable {
    fn mean_row(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let ids = Tensor::new(ids, &Device::Cpu)?;
        let rows = self.0.embedding(&ids)?;
        rows.mean(0)?.to_vec1::<f32>().context("static embedding")
    }
}

/// Builds the CPU encoder for the file's architecture.
pub fn load(
    file: &ModelFile,
    word_embeddings: QMatMul,
    matmul: MatmulMode,
) -> Result<Box<dyn EncoderBackend>> {
    build(&weights::Weights::new(file, matmul), file, word_embeddings)
}

/// [`load`] keeping a share of the file: `MatmulMode::UnpackPerProduct` layers then read their
/// quantized weights straight from the file's bytes at each product, so the weights take the
/// file's memory once instead of once more as quantized tensors. Other modes do not keep it.
pub fn load_shared(
    file: Arc<ModelFile>,
    word_embeddings: QMatMul,
    matmul: MatmulMode,
) -> Result<Box<dyn EncoderBackend>> {
    build(
        &weights::Weights::shared(&file, matmul),
        &file,
        word_embeddings,
    )
}

fn build(
    weights: &weights::Weights,
    file: &ModelFile,
    word_embeddings: QMatMul,
) -> Result<Box<dyn EncoderBackend>> {
    match file.info.architecture.as_str() {
        "bert" => Ok(Box::new(bert::Bert::load(
            weights,
            &file.config,
            word_embeddings,
        )?)),
        "mpnet" => Ok(Box::new(mpnet::MpNet::load(
            weights,
            &file.config,
            word_embeddings,
        )?)),
        other => Err(coded(
            ErrorCode::UnsupportedArchitecture,
            format!("model file: unsupported architecture '{other}' (supported: bert, mpnet)"),
        )),
    }
}

/// Runs `forward` (`ids`, `mask` → last hidden states) on a batch, then pools: the part of
/// `EncoderBackend::encode` every CPU encoder shares.
fn encode_and_pool(
    batch: &TokenBatch,
    forward: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Vec<Vec<f32>>> {
    let shape = (batch.batch, batch.seq_len);
    let ids = Tensor::from_slice(&batch.ids, shape, &Device::Cpu)?;
    let mask = Tensor::from_slice(&batch.mask, shape, &Device::Cpu)?;
    let hidden = forward(&ids, &mask)?;
    mean_pool_normalize(&hidden, &mask)
}

/// Mean over the tokens the mask keeps, then L2 normalisation: `[batch, hidden]`.
pub fn mean_pool_normalize(hidden: &Tensor, mask: &Tensor) -> Result<Vec<Vec<f32>>> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(D::Minus1)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.clamp(1e-9, f64::INFINITY)?;
    let mean = summed.broadcast_div(&counts)?;
    let norm = mean
        .sqr()?
        .sum_keepdim(1)?
        .sqrt()?
        .clamp(1e-12, f64::INFINITY)?;
    Ok(mean.broadcast_div(&norm)?.to_vec2()?)
}

/// Deterministic values in [-1, 1) for kernel tests.
#[cfg(test)]
pub(crate) fn random_values(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = crate::eval::rng::SplitMix64::new(seed);
    (0..len)
        .map(|_| (rng.next_u64() >> 40) as f32 / (1u32 << 23) as f32 - 1.0)
        .collect()
}
