//! The self-describing model file: one GGUF holding the weights, the tokenizer, the config,
//! the pooling mode and the maximum sequence length.

use std::io::Cursor;

use anyhow::{anyhow, bail, Context, Result};
use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::QTensor;
use candle_core::Device;
use serde::Serialize;

use super::EncoderConfig;
use crate::error::{ErrorCode, ResultExt};

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
}

/// The version of the layout above; bumped when a loader could misread an older file.
pub const FORMAT_VERSION: u32 = 1;

/// What a model file says about itself (shown by `sr-bench info` and the page).
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub name: String,
    pub architecture: String,
    pub dtype: String,
    pub dim: usize,
    pub num_layers: usize,
    /// Width of the feed-forward layer (the largest matrices; memory estimates use it).
    pub intermediate_size: usize,
    pub num_attention_heads: usize,
    pub vocab_size: usize,
    pub max_seq_length: usize,
    pub pooling: String,
    pub normalize: bool,
    pub source: String,
    pub file_bytes: usize,
    pub tensors: usize,
}

/// A parsed model file. Tensors are read lazily from the bytes.
pub struct ModelFile {
    bytes: Vec<u8>,
    content: Content,
    pub info: ModelInfo,
    pub config: EncoderConfig,
    pub tokenizer_json: String,
}

impl ModelFile {
    /// Parses and validates a model file. Errors name what is wrong (not a GGUF, truncated,
    /// missing metadata) and carry [`ErrorCode::BadModel`].
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::parse(bytes).code(ErrorCode::BadModel)
    }

    fn parse(bytes: Vec<u8>) -> Result<Self> {
        if bytes.len() < 4 || &bytes[..4] != b"GGUF" {
            bail!(
                "not a GGUF model file (expected the bytes 'GGUF' at the start, got {} bytes{})",
                bytes.len(),
                if bytes.len() >= 4 {
                    format!(" starting with {:?}", &bytes[..4])
                } else {
                    String::new()
                }
            );
        }
        let content = Content::read(&mut Cursor::new(&bytes))
            .map_err(|e| anyhow!("the model file is truncated or corrupt: {e}"))?;
        let text = |key: &str| -> Result<String> {
            match content.metadata.get(key) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => bail!("model file: metadata '{key}' is not a string"),
                None => {
                    bail!("model file: missing metadata '{key}' (not made by `sr-bench convert`?)")
                }
            }
        };
        let number = |key: &str| -> Result<u64> {
            content
                .metadata
                .get(key)
                .ok_or_else(|| anyhow!("model file: missing metadata '{key}'"))?
                .to_u64()
                .map_err(|e| anyhow!("model file: metadata '{key}': {e}"))
        };
        let version = number(metadata_keys::FORMAT_VERSION)?;
        if version != FORMAT_VERSION as u64 {
            bail!("model file has format version {version}; this build reads version {FORMAT_VERSION}");
        }
        let config_json = text(metadata_keys::CONFIG)?;
        let config = EncoderConfig::from_json(&config_json)?;
        let architecture = text(metadata_keys::ARCHITECTURE)?;
        let info = ModelInfo {
            name: text(metadata_keys::NAME)?,
            dtype: text(metadata_keys::DTYPE)?,
            dim: config.hidden_size,
            num_layers: config.num_hidden_layers,
            intermediate_size: config.intermediate_size,
            num_attention_heads: config.num_attention_heads,
            vocab_size: config.vocab_size,
            max_seq_length: number(metadata_keys::MAX_SEQ_LENGTH)? as usize,
            pooling: text(metadata_keys::POOLING)?,
            normalize: matches!(
                content.metadata.get(metadata_keys::NORMALIZE),
                Some(Value::Bool(true))
            ),
            source: text(metadata_keys::SOURCE).unwrap_or_default(),
            file_bytes: bytes.len(),
            tensors: content.tensor_infos.len(),
            architecture,
        };
        if info.pooling != "mean" {
            bail!(
                "model file: unsupported pooling '{}' (only mean)",
                info.pooling
            );
        }
        let tokenizer_json = text(metadata_keys::TOKENIZER)?;
        let file = Self {
            bytes,
            content,
            info,
            config,
            tokenizer_json,
        };
        file.check_tensor_data_in_bounds()?;
        Ok(file)
    }

    /// Reads one tensor (quantized or f32) by its Hugging Face name.
    pub fn tensor(&self, name: &str) -> Result<QTensor> {
        if !self.content.tensor_infos.contains_key(name) {
            return Err(anyhow!("model file is missing tensor '{name}'")).code(ErrorCode::BadModel);
        }
        self.content
            .tensor(&mut Cursor::new(&self.bytes), name, &Device::Cpu)
            .with_context(|| format!("model file: cannot read tensor '{name}'"))
            .code(ErrorCode::BadModel)
    }

    pub fn tensor_names(&self) -> impl Iterator<Item = &str> {
        self.content.tensor_infos.keys().map(String::as_str)
    }

    /// A file cut short passes the header parse; catch it before a forward pass does.
    fn check_tensor_data_in_bounds(&self) -> Result<()> {
        for (name, t) in &self.content.tensor_infos {
            let size = t.shape.elem_count() / t.ggml_dtype.block_size() * t.ggml_dtype.type_size();
            let end = self.content.tensor_data_offset + t.offset + size as u64;
            if end > self.bytes.len() as u64 {
                bail!(
                    "the model file is truncated: tensor '{name}' ends at byte {end} but the file has {} bytes",
                    self.bytes.len()
                );
            }
        }
        Ok(())
    }
}
