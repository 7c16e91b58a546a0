//! The encoder hyper-parameters, read from the Hugging Face `config.json` stored in the model file.

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// Hyper-parameters shared by BERT-like encoders (BERT, MPNet).
#[derive(Debug, Clone, Deserialize)]
pub struct EncoderConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    #[serde(default)]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub pad_token_id: usize,
    /// MPNet: number of relative-position buckets.
    #[serde(default)]
    pub relative_attention_num_buckets: Option<usize>,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_eps() -> f64 {
    1e-12
}

impl EncoderConfig {
    pub fn from_json(json: &str) -> Result<Self> {
        let cfg: Self = serde_json::from_str(json).context("model config is not valid JSON")?;
        if cfg.num_attention_heads == 0 || cfg.hidden_size % cfg.num_attention_heads != 0 {
            bail!(
                "model config: hidden_size {} is not divisible by num_attention_heads {}",
                cfg.hidden_size,
                cfg.num_attention_heads
            );
        }
        if cfg.hidden_act != "gelu" {
            bail!(
                "model config: unsupported activation '{}' (only gelu)",
                cfg.hidden_act
            );
        }
        Ok(cfg)
    }

    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }
}
