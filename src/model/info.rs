//! What a model file says about itself: the metadata keys `sr-bench convert` and `sr-bench
//! train` write, [`ModelInfo`] (shown by `sr-bench info` and the page), a trained file's
//! recipe, the user's [`LoadOptions`], and the reading of our own layout's metadata.

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::architecture::Architecture;
use super::metadata::Metadata;
use super::EncoderConfig;

/// Metadata keys written by `sr-bench convert` and required when loading.
pub mod metadata_keys {
    pub const ARCHITECTURE: &str = "general.architecture";
    pub const NAME: &str = "general.name";
    pub const FORMAT_VERSION: &str = "srbench.format_version";
    pub const DTYPE: &str = "srbench.dtype";
    pub const CONFIG: &str = "srbench.config_json";
    pub const TOKENIZER: &str = "srbench.tokenizer_json";
    pub const POOLING: &str = "srbench.pooling";
    pub const NORMALIZE: &str = "srbench.normalize";
    pub const MAX_SEQ_LENGTH: &str = "srbench.max_seq_length";
    pub const SOURCE: &str = "srbench.source";
    /// Optional: text put before every input, e.g. e5's "query: " (sentence-transformers'
    /// prompt); absent or empty means none.
    pub const PREFIX: &str = "srbench.prefix";

    /// Keys a file written by `sr-bench train` adds to its base file's: the recipe, so a
    /// trained file says what it was trained on wherever it is loaded.
    pub mod train {
        pub const DATA: &str = "srbench.train.data";
        pub const SEED: &str = "srbench.train.seed";
        pub const EPOCHS: &str = "srbench.train.epochs";
        pub const KEPT_EPOCH: &str = "srbench.train.kept_epoch";
        pub const BATCH: &str = "srbench.train.batch";
        pub const LR: &str = "srbench.train.lr";
        pub const WARMUP: &str = "srbench.train.warmup";
        pub const BASE_SHA256: &str = "srbench.train.base_sha256";
        pub const PAIRS: &str = "srbench.train.pairs";
    }
}

/// Longest text prefix accepted (bytes): prompts are a few words, never a document.
pub const MAX_PREFIX_BYTES: usize = 1024;

/// The versions of the layout above; bumped when a loader could misread an older file.
/// Version 1: tensors by Hugging Face's names, our keys alone.
pub const FORMAT_VERSION: u32 = 1;
/// Version 2: tensors by llama.cpp's names, llama.cpp's keys beside ours (BERT with a
/// WordPiece vocabulary: the file loads in llama.cpp too).
pub const FORMAT_VERSION_LLAMA_NAMES: u32 = 2;

/// What a model file says about itself (shown by `sr-bench info` and the page).
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub name: String,
    pub architecture: Architecture,
    /// The STS instruction the architecture's model card gives where files carry none
    /// ([`super::architecture::Spec::card_prefix`]): the page offers it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card_prefix: Option<&'static str>,
    pub dtype: String,
    pub dim: usize,
    pub num_layers: usize,
    /// Width of the feed-forward layer (the largest matrices; memory estimates use it).
    pub intermediate_size: usize,
    pub num_attention_heads: usize,
    /// The width of all query heads, and of all key (or value) heads: `dim` both, but in a
    /// model with grouped-query attention or heads of their own size (Qwen3).
    pub query_width: usize,
    pub kv_width: usize,
    pub vocab_size: usize,
    pub max_seq_length: usize,
    /// Text put before every input the model embeds (e5's "query: "; empty: none): the
    /// file's, or the user's choice ([`LoadOptions::prefix`]). Counted in `max_seq_length`.
    pub prefix: String,
    /// "mean", "cls", "last" or "max" ([`super::Pooling`]).
    pub pooling: String,
    pub normalize: bool,
    pub source: String,
    pub file_bytes: usize,
    pub tensors: usize,
    /// The type the file stores when our kernels do not run it (a K-quant file: "q4_k_m",
    /// "q6_k" …; llama.cpp's `general.file_type`): converted at load to `dtype` (q8_0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_dtype: Option<String>,
    /// Then the bytes of the converted weights, which the backends hold instead of the file's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub converted_bytes: Option<usize>,
    /// How `sr-bench train` made this file from its base (absent for a released model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trained: Option<TrainedFrom>,
}

/// A trained file's recipe, read from its metadata (the lesson and the compare table name it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainedFrom {
    /// `stsb`, `stsb+sr`, `stsb-shuffled` or the training file's name.
    pub data: String,
    pub epochs: usize,
    /// The epoch kept (best on STS-B dev), 1-based; 0 when no epoch beat the base model.
    pub kept_epoch: usize,
    pub seed: u64,
    pub pairs: usize,
    pub base_sha256: String,
}

/// Choices a user makes when loading a file.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Truncate texts at this many tokens instead of the file's value (llama.cpp files record
    /// only the position table's size, e.g. 512, where sentence-transformers uses 256).
    pub max_seq_length: Option<usize>,
    /// Put this text before every input instead of the file's prefix (`Some("")`: none).
    pub prefix: Option<String>,
    /// Natively, multiply q8_0/q4_0 weights with the page's 16-bit integer kernel (x86-64 with
    /// AVX2) instead of candle's f32 gemm on dequantized weights: faster, and its vectors move
    /// by ~4·10⁻⁵ per component. The page always runs that kernel.
    pub integer_matmul: bool,
}

/// A prefix a user or a file gives, refused when it is too long or holds control characters
/// other than a newline or a tab (instructions may span lines).
pub fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.len() > MAX_PREFIX_BYTES {
        bail!(
            "the text prefix is {} bytes long; at most {MAX_PREFIX_BYTES} are accepted",
            prefix.len()
        );
    }
    if let Some(c) = prefix
        .chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t')
    {
        bail!("the text prefix holds the control character {c:?}");
    }
    Ok(())
}

impl ModelInfo {
    /// The pooling mode (checked when the file was read).
    pub fn pooling_mode(&self) -> super::Pooling {
        self.pooling.parse().unwrap_or(super::Pooling::Mean)
    }

    /// Floating-point operations (2 per multiply-add) of one forward pass over `batch` rows
    /// padded to `seq_len` tokens: per layer and token the linear layers (Q and output:
    /// 2·d·q, K and V: 2·d·kv, which is 4·d² where q = kv = d; FFN in and out: 2·d·ff
    /// multiply-adds, 3·d·ff with a gate) and the attention's two products (2·seq_len·q).
    /// Embeddings, norms, softmax, rotary positions and pooling are left out: benchmarks
    /// divide by time to show how close the matmuls run to a peak.
    pub fn forward_flops(&self, batch: usize, seq_len: usize) -> f64 {
        let (d, ff, t) = (
            self.dim as f64,
            self.intermediate_size as f64,
            seq_len as f64,
        );
        let (q, kv) = (self.query_width as f64, self.kv_width as f64);
        let ffn = self.architecture.spec().feed_forward.matrices() as f64;
        let per_token = 2.0 * d * q + 2.0 * d * kv + ffn * d * ff + 2.0 * t * q;
        2.0 * per_token * self.num_layers as f64 * batch as f64 * t
    }
}

/// Our own layout: everything under `srbench.*`. Also returns the format version.
pub(super) fn read_srbench(meta: &Metadata) -> Result<(ModelInfo, EncoderConfig, String, u32)> {
    let version = meta.number(metadata_keys::FORMAT_VERSION)?;
    let version = match u32::try_from(version) {
        Ok(v @ (FORMAT_VERSION | FORMAT_VERSION_LLAMA_NAMES)) => v,
        _ => bail!(
            "model file has format version {version}; this build reads versions \
             {FORMAT_VERSION} and {FORMAT_VERSION_LLAMA_NAMES}"
        ),
    };
    let config = EncoderConfig::from_json(&meta.text(metadata_keys::CONFIG)?)?;
    let architecture = Architecture::parse(&meta.text(metadata_keys::ARCHITECTURE)?)?;
    let info = ModelInfo {
        name: meta.text(metadata_keys::NAME)?,
        architecture,
        card_prefix: architecture.spec().card_prefix,
        dtype: meta.text(metadata_keys::DTYPE)?,
        dim: config.hidden_size,
        num_layers: config.num_hidden_layers,
        intermediate_size: config.intermediate_size,
        num_attention_heads: config.num_attention_heads,
        query_width: config.query_width(),
        kv_width: config.kv_width(),
        vocab_size: config.vocab_size,
        max_seq_length: meta.size(metadata_keys::MAX_SEQ_LENGTH)?,
        prefix: match meta.get(metadata_keys::PREFIX) {
            Some(_) => {
                let prefix = meta.text(metadata_keys::PREFIX)?;
                check_prefix(&prefix).context("model file")?;
                prefix
            }
            None => String::new(),
        },
        pooling: meta.text(metadata_keys::POOLING)?,
        normalize: meta.bool(metadata_keys::NORMALIZE).unwrap_or(false),
        source: meta.text(metadata_keys::SOURCE).unwrap_or_default(),
        file_bytes: 0,
        tensors: 0,
        stored_dtype: None,
        converted_bytes: None,
        trained: read_trained(meta)?,
    };
    Ok((info, config, meta.text(metadata_keys::TOKENIZER)?, version))
}

/// The recipe of a trained file; `None` when the file has no `srbench.train.data`. A file
/// that has it must have the rest, well-typed (a half-written recipe is a damaged file).
fn read_trained(meta: &Metadata) -> Result<Option<TrainedFrom>> {
    use metadata_keys::train;
    if meta.get(train::DATA).is_none() {
        return Ok(None);
    }
    let trained = TrainedFrom {
        data: meta.text(train::DATA)?,
        epochs: meta.size(train::EPOCHS)?,
        kept_epoch: meta.size(train::KEPT_EPOCH)?,
        seed: meta.number(train::SEED)?,
        pairs: meta.size(train::PAIRS)?,
        base_sha256: meta.text(train::BASE_SHA256)?,
    };
    if trained.kept_epoch > trained.epochs {
        bail!(
            "model file: metadata '{}' = {} is more than its {} epochs",
            train::KEPT_EPOCH,
            trained.kept_epoch,
            trained.epochs
        );
    }
    Ok(Some(trained))
}

/// A BERT model's info of these sizes (12 heads, 256 tokens), for the unit tests.
#[cfg(test)]
pub(crate) fn test_info(dim: usize, intermediate_size: usize, num_layers: usize) -> ModelInfo {
    ModelInfo {
        name: "m".into(),
        architecture: Architecture::Bert,
        card_prefix: None,
        dtype: "q8_0".into(),
        dim,
        num_layers,
        intermediate_size,
        num_attention_heads: 12,
        query_width: dim,
        kv_width: dim,
        vocab_size: 30522,
        max_seq_length: 256,
        prefix: String::new(),
        pooling: "mean".into(),
        normalize: true,
        source: String::new(),
        file_bytes: 0,
        tensors: 0,
        stored_dtype: None,
        converted_bytes: None,
        trained: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::gguf_file::Value;

    #[test]
    fn a_trained_recipe_is_read_whole_or_refused() {
        use metadata_keys::train;
        use std::collections::HashMap;
        let s = |v: &str| Value::String(v.into());
        let mut m: HashMap<String, Value> = [
            (train::DATA, s("stsb+sr")),
            (train::EPOCHS, Value::U32(4)),
            (train::KEPT_EPOCH, Value::U32(3)),
            (train::SEED, Value::U64(7)),
            (train::PAIRS, Value::U32(16_608)),
            (train::BASE_SHA256, s("ab12")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let read = |m: &HashMap<String, Value>| read_trained(&Metadata(m));
        assert_eq!(
            read(&m).unwrap(),
            Some(TrainedFrom {
                data: "stsb+sr".into(),
                epochs: 4,
                kept_epoch: 3,
                seed: 7,
                pairs: 16_608,
                base_sha256: "ab12".into(),
            })
        );
        // A kept epoch past the last one, a missing or mistyped key: a damaged file.
        m.insert(train::KEPT_EPOCH.into(), Value::U32(5));
        let e = read(&m).unwrap_err().to_string();
        assert!(
            e.contains(train::KEPT_EPOCH) && e.contains("4 epochs"),
            "{e}"
        );
        m.insert(train::KEPT_EPOCH.into(), Value::U32(0));
        m.remove(train::SEED);
        assert!(read(&m).unwrap_err().to_string().contains(train::SEED));
        m.insert(train::SEED.into(), s("seven"));
        assert!(read(&m).unwrap_err().to_string().contains(train::SEED));
        // No recipe at all: a released model.
        assert_eq!(read(&HashMap::new()).unwrap(), None);
    }

    #[test]
    fn forward_flops_count_the_linear_layers_and_attention_products_per_token() {
        // MiniLM: 6 × (4·384² + 2·384·1536 + 2·1·384) multiply-adds for one token alone.
        let minilm = test_info(384, 1536, 6);
        assert_eq!(minilm.forward_flops(1, 1), 2.0 * 6.0 * 1_770_240.0);
        // Linear in the batch; the attention term grows with the padded length squared.
        assert_eq!(
            minilm.forward_flops(32, 20),
            32.0 * minilm.forward_flops(1, 20)
        );
        let attention =
            |t: usize| minilm.forward_flops(1, t) - t as f64 * minilm.forward_flops(1, 1);
        assert_eq!(attention(10), 2.0 * 6.0 * 2.0 * 384.0 * (100.0 - 10.0));
        assert_eq!(test_info(0, 0, 12).forward_flops(8, 128), 0.0);
        // A gated feed-forward (nomic-bert's SwiGLU) has a third matrix: 4·d² + 3·d·ff.
        let nomic = ModelInfo {
            architecture: Architecture::NomicBert,
            ..test_info(384, 1536, 6)
        };
        let gated = 4.0 * 384.0 * 384.0 + 3.0 * 384.0 * 1536.0 + 2.0 * 384.0;
        assert_eq!(nomic.forward_flops(1, 1), 2.0 * 6.0 * gated);
        // Qwen3-Embedding-0.6B per layer and token: Q and output 2·1024·2048, K and V (8
        // heads of 128) 2·1024·1024, a SwiGLU of 3·1024·3072, attention 2·1·2048.
        let qwen = ModelInfo {
            architecture: Architecture::Qwen3,
            query_width: 2048,
            kv_width: 1024,
            ..test_info(1024, 3072, 28)
        };
        let per_token =
            2.0 * 1024.0 * 2048.0 + 2.0 * 1024.0 * 1024.0 + 3.0 * 1024.0 * 3072.0 + 2.0 * 2048.0;
        assert_eq!(qwen.forward_flops(1, 1), 2.0 * 28.0 * per_token);
    }
}
