//! The CPU backend: candle tensors natively, our simd128 kernels for the linear layers in wasm;
//! also the static token table of the syntax-blind baseline.

mod activation;
mod bert;
pub mod gemm;
mod mpnet;
pub mod peak;
mod pooling;
pub mod qgemm;
mod weights;

use std::sync::Arc;

use anyhow::{Context, Result};
use candle_core::quantized::QMatMul;
use candle_core::{Device, Tensor};

use super::MatmulMode;
use crate::error::{coded, ErrorCode};
use crate::model::{
    Embedder, EncoderBackend, ModelFile, Pooling, TokenBatch, TokenTable, WORD_EMBEDDINGS,
};

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
    let pooling = file.info.pooling_mode();
    let config = &file.config;
    match file.info.architecture.as_str() {
        "bert" => Ok(Box::new(CpuEncoder {
            transformer: bert::Bert::load(weights, config, word_embeddings)?,
            pooling,
        })),
        "mpnet" => Ok(Box::new(CpuEncoder {
            transformer: mpnet::MpNet::load(weights, config, word_embeddings)?,
            pooling,
        })),
        other => Err(coded(
            ErrorCode::UnsupportedArchitecture,
            format!("model file: unsupported architecture '{other}' (supported: bert, mpnet)"),
        )),
    }
}

/// An architecture's layers on the CPU: token ids and mask (`[batch, seq]`) → the last
/// layer's hidden states (`[batch, seq, hidden]`).
trait Transformer {
    fn hidden_states(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor>;
}

/// A transformer with the model's pooling: the CPU [`EncoderBackend`].
struct CpuEncoder<T> {
    transformer: T,
    pooling: Pooling,
}

impl<T: Transformer> EncoderBackend for CpuEncoder<T> {
    fn encode(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        let shape = (batch.batch, batch.seq_len);
        let ids = Tensor::from_slice(&batch.ids, shape, &Device::Cpu)?;
        let mask = Tensor::from_slice(&batch.mask, shape, &Device::Cpu)?;
        let hidden = self.transformer.hidden_states(&ids, &mask)?;
        pooling::pool_normalize(&hidden, &mask, self.pooling)
    }

    fn name(&self) -> &'static str {
        "cpu"
    }
}

/// Deterministic values in [-1, 1) for kernel tests.
#[cfg(test)]
pub(crate) fn random_values(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = crate::eval::rng::SplitMix64::new(seed);
    (0..len)
        .map(|_| (rng.next_u64() >> 40) as f32 / (1u32 << 23) as f32 - 1.0)
        .collect()
}
