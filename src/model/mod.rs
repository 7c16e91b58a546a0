//! The backend-neutral model layer: the self-describing GGUF file, the tokenizer, batching,
//! and the [`Embedder`] that turns texts into L2-normalised sentence embeddings.

mod config;
mod embedder;
mod file;
mod tokenizer;

pub use config::EncoderConfig;
pub use embedder::{
    plan_batches, Batching, Embedder, Representation, DEFAULT_BATCH_SIZE, WORD_EMBEDDINGS,
};
pub use file::{metadata_keys, ModelFile, ModelInfo, FORMAT_VERSION};
pub use tokenizer::{TextTokenizer, TokenBatch};

/// One forward pass of a sentence encoder on a padded batch.
///
/// Implemented by each backend (`backend::cpu`, …). Returns one pooled, L2-normalised
/// embedding per row of the batch, in batch order.
pub trait EncoderBackend {
    fn encode(&self, batch: &TokenBatch) -> anyhow::Result<Vec<Vec<f32>>>;
    /// Short name shown to users ("cpu", …).
    fn name(&self) -> &'static str;
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
