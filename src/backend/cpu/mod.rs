//! The CPU backend: candle tensors natively, our simd128 kernels for the linear layers in wasm;
//! also the static token table of the syntax-blind baseline.

mod activation;
mod bert;
mod blocks;
#[cfg(not(target_arch = "wasm32"))]
mod concurrent;
pub mod gemm;
mod gemma;
/// The kernels' checks against an f64 reference: for the unit tests and the browser tests.
#[cfg(any(test, feature = "testing"))]
pub mod kernel_check;
mod modern_bert;
mod mpnet;
mod nomic_bert;
mod qwen;
mod t5;
pub(crate) use activation::GateActivation;
pub(crate) use blocks::Rope;
pub use mpnet::{
    position_bias as mpnet_position_bias, position_ids as mpnet_position_ids,
    relative_position_bucket,
};
pub(crate) use mpnet::{relative_bias_by_distance, relative_buckets};
#[cfg(feature = "bench")]
pub mod peak;
mod pooling;
pub mod qgemm;
mod weights;

use std::sync::Arc;

use anyhow::{Context, Result};
use candle_core::quantized::QMatMul;
use candle_core::{Device, Tensor};

use super::MatmulMode;
use crate::model::architecture::DecoderParts;
use crate::model::{
    Architecture, Embedder, EncoderBackend, ModelFile, Pooling, TokenBatch, TokenTable,
    WORD_EMBEDDINGS,
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

    fn rows(&self, ids: &[u32]) -> Result<Vec<Vec<f32>>> {
        let ids = Tensor::new(ids, &Device::Cpu)?;
        self.0
            .embedding(&ids)?
            .to_vec2::<f32>()
            .context("static token vectors")
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
    let head = DenseHead::load(weights, config)?;
    let w = word_embeddings;
    match file.info.architecture {
        Architecture::Bert => {
            CpuEncoder::boxed(bert::Bert::load(weights, config, w)?, pooling, head)
        }
        Architecture::MpNet => {
            CpuEncoder::boxed(mpnet::MpNet::load(weights, config, w)?, pooling, head)
        }
        Architecture::NomicBert => CpuEncoder::boxed(
            nomic_bert::NomicBert::load(weights, config, w)?,
            pooling,
            head,
        ),
        Architecture::ModernBert => CpuEncoder::boxed(
            modern_bert::ModernBert::load(weights, config, w)?,
            pooling,
            head,
        ),
        Architecture::Qwen2 | Architecture::Qwen3 => CpuEncoder::boxed(
            qwen::Qwen::load(weights, config, w, decoder_parts(file)?)?,
            pooling,
            head,
        ),
        Architecture::GemmaEmbedding => CpuEncoder::boxed(
            gemma::Gemma::load(weights, config, w, decoder_parts(file)?)?,
            pooling,
            head,
        ),
        Architecture::T5Encoder => {
            CpuEncoder::boxed(t5::T5Encoder::load(weights, config, w)?, pooling, head)
        }
    }
}

/// The decoder layers' parts of the file's architecture (the table's).
fn decoder_parts(file: &ModelFile) -> Result<DecoderParts> {
    let architecture = file.info.architecture;
    architecture
        .spec()
        .decoder_parts()
        .ok_or_else(|| anyhow::anyhow!("{architecture} is not built of decoder layers"))
}

/// Sees each layer's hidden states `[batch, seq, hidden]` as a forward pass makes them:
/// layer 0 is the embedding output, layer `i` the output of encoder layer `i`.
type LayerVisitor<'a> = &'a mut dyn FnMut(usize, &Tensor) -> Result<()>;

/// An architecture's layers on the CPU: token ids and mask (`[batch, seq]`) → hidden states
/// (`[batch, seq, hidden]`).
trait Transformer {
    /// Runs every layer, showing each one's states to `visit` (which keeps what it needs:
    /// no layer is kept here), and returns the last layer's.
    fn visit_layers(&self, ids: &Tensor, mask: &Tensor, visit: LayerVisitor) -> Result<Tensor>;

    /// The last layer's hidden states.
    fn hidden_states(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        self.visit_layers(ids, mask, &mut |_, _| Ok(()))
    }
}

/// A transformer with the model's pooling (and Dense head, where it has one): the CPU
/// [`EncoderBackend`].
struct CpuEncoder<T> {
    transformer: T,
    pooling: Pooling,
    head: Option<DenseHead>,
}

impl<T: Transformer + Sync + 'static> CpuEncoder<T> {
    fn boxed(
        transformer: T,
        pooling: Pooling,
        head: Option<DenseHead>,
    ) -> Result<Box<dyn EncoderBackend>> {
        Ok(Box::new(Self {
            transformer,
            pooling,
            head,
        }))
    }
}

impl<T: Transformer> CpuEncoder<T> {
    /// Pooled, through the head, normalised: the sentence vectors of `states`.
    fn sentence_vectors(&self, states: &Tensor, mask: &Tensor) -> Result<Vec<Vec<f32>>> {
        let pooled = pooling::pool(states, mask, self.pooling)?;
        match &self.head {
            Some(head) => pooling::normalize(&head.forward(&pooled.unsqueeze(1)?)?.squeeze(1)?),
            None => pooling::normalize(&pooled),
        }
    }
}

/// sentence-transformers' Dense modules after the pooling (EmbeddingGemma's hidden → 3,072 →
/// hidden, no bias, no activation). Being linear, they commute with mean pooling: token
/// states sent through them pool to the sentence vector, so the token explainers see them too.
struct DenseHead {
    up: weights::Linear,
    down: weights::Linear,
}

impl DenseHead {
    fn load(w: &weights::Weights, config: &crate::model::EncoderConfig) -> Result<Option<Self>> {
        if config.dense_head_width.is_none() {
            return Ok(None);
        }
        let [up, down] = crate::model::tensor_names::DENSE_HEAD;
        Ok(Some(Self {
            up: w.linear_no_bias(up)?,
            down: w.linear_no_bias(down)?,
        }))
    }

    /// `x`: `[batch, seq, hidden]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.down.forward(&self.up.forward(x)?)
    }
}

/// A file's Dense head for a backend that pools on its own (the GPU): its pooled vectors, of
/// any scale (the head is linear and has no bias, so scaling commutes with it), to the
/// normalised sentence vectors, as [`CpuEncoder`] makes them.
pub(crate) struct PooledHead(DenseHead);

impl PooledHead {
    /// `None` for a file without a head.
    pub fn load(file: &ModelFile) -> Result<Option<Self>> {
        let weights = weights::Weights::new(file, MatmulMode::UnpackAtLoad);
        Ok(DenseHead::load(&weights, &file.config)?.map(Self))
    }

    pub fn apply(&self, pooled: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>> {
        if pooled.is_empty() {
            return Ok(pooled);
        }
        let (rows, width) = (pooled.len(), pooled.first().map_or(0, Vec::len));
        let flat: Vec<f32> = pooled.into_iter().flatten().collect();
        let x = Tensor::from_vec(flat, (rows, 1, width), &Device::Cpu)?;
        pooling::normalize(&self.0.forward(&x)?.squeeze(1)?)
    }
}

/// A batch's ids and mask as `[batch, seq]` tensors.
fn batch_tensors(batch: &TokenBatch) -> Result<(Tensor, Tensor)> {
    let shape = (batch.batch, batch.seq_len);
    let ids = Tensor::from_slice(&batch.ids, shape, &Device::Cpu)?;
    let mask = Tensor::from_slice(&batch.mask, shape, &Device::Cpu)?;
    Ok((ids, mask))
}

impl<T: Transformer + Sync> EncoderBackend for CpuEncoder<T> {
    fn encode(&self, batch: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        let (ids, mask) = batch_tensors(batch)?;
        let hidden = self.transformer.hidden_states(&ids, &mask)?;
        self.sentence_vectors(&hidden, &mask)
    }

    /// Natively several batches at once, each on one thread (`concurrent.rs`).
    #[cfg(not(target_arch = "wasm32"))]
    fn encode_many(&self, batches: &[TokenBatch]) -> Result<Vec<Vec<Vec<f32>>>> {
        concurrent::encode_all(batches, |b| self.encode(b))
    }

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn token_states(&self, batch: &TokenBatch) -> Result<Vec<Vec<Vec<f32>>>> {
        let (ids, mask) = batch_tensors(batch)?;
        let mut hidden = self.transformer.hidden_states(&ids, &mask)?;
        if let Some(head) = &self.head {
            hidden = head.forward(&hidden)?;
        }
        let hidden: Vec<Vec<Vec<f32>>> = hidden.to_vec3()?;
        Ok(hidden
            .into_iter()
            .enumerate()
            .map(|(row, mut tokens)| {
                tokens.truncate(batch.row_len(row));
                tokens
            })
            .collect())
    }

    fn encode_layers(&self, batch: &TokenBatch) -> Result<Vec<Vec<Vec<f32>>>> {
        let (ids, mask) = batch_tensors(batch)?;
        let mut rows = vec![Vec::new(); batch.batch];
        // Each layer is pooled as it is made: only `batch × layers` vectors are kept.
        self.transformer
            .visit_layers(&ids, &mask, &mut |_, states| {
                let pooled = self.sentence_vectors(states, &mask)?;
                rows.iter_mut().zip(pooled).for_each(|(row, v)| row.push(v));
                Ok(())
            })?;
        Ok(rows)
    }
}
