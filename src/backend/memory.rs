//! How much memory one CPU embedding instance of a model needs in the browser (a wasm instance
//! holding the model, running one batch): the page sizes its pool of embedding helpers with it.

use serde::Deserialize;

use super::MatmulMode;
use crate::model::architecture::FeedForward;
use crate::model::{batch_tokens, Architecture, ModelInfo};

/// The parts of [`ModelInfo`] the estimate reads (the page may pass `Model.info()` as it is).
#[derive(Debug, Clone, Deserialize)]
pub struct ModelShape {
    /// A gated feed-forward has a third matrix; absent (a shape without a model), the
    /// estimate counts three, on the safe side.
    #[serde(default)]
    pub architecture: Option<Architecture>,
    pub dtype: String,
    pub dim: usize,
    pub num_layers: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_heads")]
    pub num_attention_heads: usize,
    /// The query and key/value widths (`dim` when absent: one head per query head).
    #[serde(default)]
    pub query_width: Option<usize>,
    #[serde(default)]
    pub kv_width: Option<usize>,
    pub max_seq_length: usize,
    pub file_bytes: usize,
    /// A K-quant file's weights converted at load to q8_0 (`ModelInfo::converted_bytes`).
    #[serde(default)]
    pub converted_bytes: Option<usize>,
}

fn default_heads() -> usize {
    12
}

impl From<&ModelInfo> for ModelShape {
    fn from(info: &ModelInfo) -> Self {
        Self {
            architecture: Some(info.architecture),
            dtype: info.dtype.clone(),
            dim: info.dim,
            num_layers: info.num_layers,
            intermediate_size: info.intermediate_size,
            num_attention_heads: info.num_attention_heads,
            query_width: Some(info.query_width),
            kv_width: Some(info.kv_width),
            max_seq_length: info.max_seq_length,
            file_bytes: info.file_bytes,
            converted_bytes: info.converted_bytes,
        }
    }
}

/// Weights resident beside the linear layers, as a multiple of the file: the token table kept
/// quantized, position tables, norms and load-time copies. Measured in Chromium: MPNet q8_0
/// (118 MB file) takes 171 MB of wasm memory right after load (1.45×).
const FILE_OVERHEAD: f64 = 1.45;

/// Activation bytes per padded token of a batch: per hidden unit (inputs, Q/K/V, residuals,
/// the FFN's 4× width and candle's copies), and per attended position and head (scores and
/// softmax). Calibrated on MPNet q8_0 in Chromium: 8 × 384-token texts take 252 MB above the
/// loaded model (423 MB in all); this formula gives 321 MB there, on the safe side.
const BYTES_PER_HIDDEN_UNIT: usize = 4 * 16;
const BYTES_PER_ATTENDED_POSITION: usize = 4 * 3;

/// Bytes one wasm instance with this model needs at its peak: the weights as the CPU backend
/// holds them in wasm ([`MatmulMode::for_model`]'s rule) plus the largest batch
/// `Batching::for_model` allows (8 × `max_seq_length` padded tokens).
pub fn estimate_worker_bytes(shape: &ModelShape) -> u64 {
    let (h, i, layers) = (shape.dim, shape.intermediate_size, shape.num_layers);
    let (q, kv) = (shape.query_width.unwrap_or(h), shape.kv_width.unwrap_or(h));
    let ffn_matrices = match shape.architecture {
        Some(a) => a.spec().feed_forward.matrices(),
        None => FeedForward::SwiGlu.matrices(),
    };
    let linear_params = layers * (2 * h * q + 2 * h * kv + ffn_matrices * h * i);
    let dense_f32 = 4 * linear_params;
    // A converted file: its q8_0 image as a file of that size, and the file itself beside it
    // while it converts.
    let file_part = match shape.converted_bytes {
        Some(image) => (image as f64 * FILE_OVERHEAD) as u64 + shape.file_bytes as u64,
        None => (shape.file_bytes as f64 * FILE_OVERHEAD) as u64,
    };
    let unpacked = if dense_f32 <= MatmulMode::DENSE_LIMIT_BYTES {
        // wasm keeps q8_0/q4_0 weights as int16 plus a scale per block of 32; f32 as f32.
        match shape.dtype.as_str() {
            "q8_0" | "q4_0" => 2 * linear_params + linear_params / 8,
            _ => dense_f32,
        }
    } else {
        0 // unpacked per product, from the file's bytes
    };
    // The largest batch: the padded-token cap, or one text of the whole context alone.
    let tokens = batch_tokens(shape.max_seq_length).max(shape.max_seq_length);
    let per_token = h * BYTES_PER_HIDDEN_UNIT
        + shape.num_attention_heads * shape.max_seq_length * BYTES_PER_ATTENDED_POSITION;
    file_part + unpacked as u64 + (tokens * per_token) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dtype: &str, dim: usize, layers: usize, max_seq: usize, bytes: usize) -> ModelShape {
        ModelShape {
            architecture: Some(Architecture::Bert),
            dtype: dtype.into(),
            dim,
            num_layers: layers,
            intermediate_size: 4 * dim,
            num_attention_heads: 12,
            query_width: None,
            kv_width: None,
            max_seq_length: max_seq,
            file_bytes: bytes,
            converted_bytes: None,
        }
    }

    #[test]
    fn mpnet_q8_0_estimate_covers_the_measured_peak() {
        // Measured in Chromium (tests/browser_mpnet_memory_full.rs): 416 MB with 8 × 384-token texts
        // in a fresh instance (423 MB when earlier tests had grown the memory).
        let mpnet = estimate_worker_bytes(&shape("q8_0", 768, 12, 384, 117_700_672));
        assert!((423e6..600e6).contains(&(mpnet as f64)), "{mpnet}");
    }

    #[test]
    fn bigger_files_and_unpacked_weights_cost_more() {
        let minilm_q8 = estimate_worker_bytes(&shape("q8_0", 384, 6, 256, 25_120_704));
        let minilm_f32 = estimate_worker_bytes(&shape("f32", 384, 6, 256, 90_000_000));
        let mpnet_f32 = estimate_worker_bytes(&shape("f32", 768, 12, 384, 436_065_120));
        assert!(minilm_q8 < minilm_f32 && minilm_f32 < mpnet_f32);
        assert!(minilm_q8 < 250_000_000, "{minilm_q8}");
    }

    #[test]
    fn qwen3_0_6b_fits_at_512_tokens_not_at_its_context() {
        // Qwen3-Embedding-0.6B q8_0 (639 MB file; 28 layers of 1024, 16 query heads of 128 on
        // 8 key/value heads, a 3072-wide SwiGLU): llama.cpp's file says a 32,768-token context,
        // and one batch of such texts is what the estimate must cover unless the user lowers
        // the length (the page's max-sequence field, `--max-seq-length`).
        let qwen3 = |max_seq| ModelShape {
            architecture: Some(Architecture::Qwen3),
            dtype: "q8_0".into(),
            dim: 1024,
            num_layers: 28,
            intermediate_size: 3072,
            num_attention_heads: 16,
            query_width: Some(2048),
            kv_width: Some(1024),
            max_seq_length: max_seq,
            file_bytes: 639_000_000,
            converted_bytes: None,
        };
        let (short, full) = (
            estimate_worker_bytes(&qwen3(512)),
            estimate_worker_bytes(&qwen3(32_768)),
        );
        eprintln!("qwen3-0.6B q8_0 estimate: {short} bytes at 512 tokens, {full} at 32,768");
        // The weights alone: the file plus its copies; 512-token batches under wasm32's 4 GiB.
        assert!((1.2e9..2.5e9).contains(&(short as f64)), "{short}");
        // The full context's attention scores (16 heads × 32,768² for one text, which forms
        // a batch of its own) fit nowhere: far past wasm32's 4 GiB.
        assert!(full > 16 * 32_768 * 32_768 * 4, "{full}");
    }

    #[test]
    fn a_converted_file_counts_its_image_and_itself_while_it_converts() {
        // A Q4_K_M MiniLM (~14 MB) whose q8_0 image is 25 MB: held as a 25 MB file, plus
        // the file itself during the conversion.
        let kquant = shape("q8_0", 384, 6, 256, 14_000_000);
        let image = ModelShape {
            converted_bytes: Some(25_000_000),
            ..kquant.clone()
        };
        let as_q8_0 = shape("q8_0", 384, 6, 256, 25_000_000);
        let (converted, plain) = (
            estimate_worker_bytes(&image),
            estimate_worker_bytes(&as_q8_0),
        );
        assert_eq!(converted, plain + 14_000_000);
        assert!(converted > estimate_worker_bytes(&kquant));
    }

    #[test]
    fn embeddinggemma_300m_estimate_at_512_and_2048_tokens() {
        // EmbeddingGemma-300m q8_0 (~327 MB: a 262,144-row token table, 24 layers of 768, 3
        // query heads of 256 on 1 key/value head, a 1152-wide GeGLU; its context 2,048 tokens).
        let gemma = |max_seq| ModelShape {
            architecture: Some(Architecture::GemmaEmbedding),
            dtype: "q8_0".into(),
            dim: 768,
            num_layers: 24,
            intermediate_size: 1152,
            num_attention_heads: 3,
            query_width: Some(768),
            kv_width: Some(256),
            max_seq_length: max_seq,
            file_bytes: 327_000_000,
            converted_bytes: None,
        };
        let (short, full) = (
            estimate_worker_bytes(&gemma(512)),
            estimate_worker_bytes(&gemma(2048)),
        );
        eprintln!(
            "embeddinggemma-300m q8_0 estimate: {short} bytes at 512 tokens, {full} at 2,048"
        );
        // The file and its copies, then the batch: 8 texts of 512 tokens at most; at 2,048 the
        // padded-token cap (4,096) and the attention cap (8 × 512² cells) allow two texts of
        // 2,048 by tokens but one by attention, which the estimate (4,096 tokens, each
        // attending to 2,048) covers twice over.
        assert!((0.7e9..1.5e9).contains(&(short as f64)), "{short}");
        let one_text_scores = 3 * 2048 * 2048 * BYTES_PER_ATTENDED_POSITION;
        assert!(full - short >= one_text_scores as u64, "{full} − {short}");
        assert!((0.8e9..1.5e9).contains(&(full as f64)), "{full}");
    }
}
