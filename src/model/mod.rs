//! The backend-neutral model layer: the self-describing GGUF file, the tokenizer, batching,
//! and the [`Embedder`] that turns texts into L2-normalised sentence embeddings. The maths
//! lives in `backend`, behind [`EncoderBackend`] and [`TokenTable`].

pub mod architecture;
mod config;
mod embedder;
mod file;
mod gguf_check;
mod info;
mod llama;
mod metadata;
mod requantize;
pub mod tensor_names;
mod tensor_shapes;
mod tokenizer;

pub use architecture::Architecture;
pub use config::EncoderConfig;
pub use embedder::{
    batch_cost, batch_tokens, plan_batches, Batching, Embedder, Work, BATCH_ATTENTION,
    BATCH_TOKENS, BATCH_TOKENS_PER_MAX_SEQ, DEFAULT_BATCH_SIZE, WORD_EMBEDDINGS,
};
pub use file::ModelFile;
pub use info::{
    check_prefix, metadata_keys, LoadOptions, ModelInfo, TrainedFrom, FORMAT_VERSION,
    FORMAT_VERSION_LLAMA_NAMES,
};
// The converter (native only) builds multilingual-e5's tokenizer with the same steps.
/// What the converter writes in our second format, spelled as the llama.cpp reader reads it:
/// a BERT tensor's llama.cpp name, the pooling type, the vocabulary's token types and marks.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod llama_spelling {
    pub(crate) use super::llama::{
        pooling_type, tensor_name, CONTROL, NORMAL, UNUSED, USER_DEFINED, WORD_START,
    };
}
#[cfg(not(target_arch = "wasm32"))]
pub(crate) use llama::xlm_r_steps;
pub use tokenizer::{Pieces, TextTokenizer, TokenBatch};

/// What [`EncoderBackend::encode_async`] returns.
pub type EncodeFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<Vec<Vec<f32>>>> + 'a>>;

/// What [`EncoderBackend::encode_many_async`] returns: one result per batch.
pub type EncodeManyFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<Vec<Vec<Vec<f32>>>>> + 'a>>;

/// One forward pass of a sentence encoder on a padded batch.
///
/// Implemented by each backend (`backend::cpu`, `backend::webgpu`). Returns one pooled,
/// L2-normalised embedding per row of the batch, in batch order.
pub trait EncoderBackend {
    /// Runs the batch to completion (natively a GPU readback is waited for).
    fn encode(&self, batch: &TokenBatch) -> anyhow::Result<Vec<Vec<f32>>>;
    /// The same, awaited: the only way to reach a GPU in the browser, which cannot block.
    /// Backends that never wait answer from [`Self::encode`].
    fn encode_async<'a>(&'a self, batch: &'a TokenBatch) -> EncodeFuture<'a> {
        Box::pin(std::future::ready(self.encode(batch)))
    }
    /// Several batches in order, one result each: a GPU backend keeps two in flight (the
    /// next is submitted while the previous one reads back).
    fn encode_many(&self, batches: &[TokenBatch]) -> anyhow::Result<Vec<Vec<Vec<f32>>>> {
        batches.iter().map(|b| self.encode(b)).collect()
    }
    /// [`Self::encode_many`], awaited.
    fn encode_many_async<'a>(&'a self, batches: &'a [TokenBatch]) -> EncodeManyFuture<'a> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(batches.len());
            for batch in batches {
                out.push(self.encode_async(batch).await?);
            }
            Ok(out)
        })
    }
    /// Where batches run now: "cpu" or "webgpu".
    fn name(&self) -> &'static str;
    /// Sentences per batch this backend runs best, when it is not the CPU's
    /// [`DEFAULT_BATCH_SIZE`] (a hardware GPU's fuller grids; the token bound per batch stays).
    fn max_sentences(&self) -> Option<usize> {
        None
    }
    /// Optional (the explainers): per row, the last layer's token vectors over the mask (one
    /// vector per real token, special tokens included, in order).
    fn token_states(&self, _batch: &TokenBatch) -> anyhow::Result<Vec<Vec<Vec<f32>>>> {
        Err(unsupported(self.name(), "token states"))
    }
    /// Optional (the layer probe): per row, per layer (0 = the embedding output, then each
    /// layer), the sentence vector pooled as the model pools and L2-normalised.
    fn encode_layers(&self, _batch: &TokenBatch) -> anyhow::Result<Vec<Vec<Vec<f32>>>> {
        Err(unsupported(self.name(), "per-layer embeddings"))
    }
}

/// The error of an optional [`EncoderBackend`] capability a backend does not have.
fn unsupported(backend: &str, what: &str) -> anyhow::Error {
    crate::error::coded(
        crate::error::ErrorCode::BadRequest,
        format!("the {backend} backend does not provide {what}"),
    )
}

/// The model's static input token table: all the syntax-blind baseline uses.
pub trait TokenTable {
    /// The mean of the rows of `ids` (not normalised); `ids` is not empty.
    fn mean_row(&self, ids: &[u32]) -> anyhow::Result<Vec<f32>>;
    /// The rows of `ids`, in order (the baseline's token vectors).
    fn rows(&self, ids: &[u32]) -> anyhow::Result<Vec<Vec<f32>>>;
}

/// How a sentence vector is made from the last layer's token vectors (over the attention
/// mask). [`ModelInfo::pooling`] spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of the tokens (sentence-transformers' default; MiniLM, MPNet).
    Mean,
    /// The first token ([CLS]): bge, arctic-embed …
    Cls,
    /// The last token (llama.cpp's "last").
    Last,
    /// The element-wise maximum over the tokens.
    Max,
}

impl Pooling {
    /// Every mode, as files spell them.
    pub const NAMES: [&'static str; 4] = ["mean", "cls", "last", "max"];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mean => "mean",
            Self::Cls => "cls",
            Self::Last => "last",
            Self::Max => "max",
        }
    }
}

impl std::str::FromStr for Pooling {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "mean" => Ok(Self::Mean),
            "cls" => Ok(Self::Cls),
            "last" => Ok(Self::Last),
            "max" => Ok(Self::Max),
            other => anyhow::bail!(
                "unsupported pooling '{other}' (supported: {})",
                Self::NAMES.join(", ")
            ),
        }
    }
}

/// Every tensor an encoder of `architecture` reads, by Hugging Face name (what a converted file
/// must hold; BERT's token type table included).
pub fn expected_tensor_names(architecture: Architecture, config: &EncoderConfig) -> Vec<String> {
    let mut names: Vec<String> = tensor_shapes::expected_shapes(architecture, config)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    if architecture.spec().token_types {
        names.push(tensor_names::TOKEN_TYPE_EMBEDDINGS.into());
    }
    names
}

/// Cosine similarity of two vectors (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        dot += x as f64 * y as f64;
        na += x as f64 * x as f64;
        nb += y as f64 * y as f64;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())) as f32
}

/// Scales `v` to unit L2 norm in place (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
