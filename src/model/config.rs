//! The encoder hyper-parameters, read from the Hugging Face `config.json` stored in the model file
//! (or from a llama.cpp file's metadata).

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use super::architecture::{Architecture, Positions};

/// Hyper-parameters shared by BERT-like encoders (BERT, MPNet, nomic-bert, ModernBERT) and the
/// decoder-built embedders (Qwen3-Embedding, EmbeddingGemma).
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
    /// MPNet, T5: number of relative-position buckets.
    #[serde(default)]
    pub relative_attention_num_buckets: Option<usize>,
    /// The rotary position base (nomic-bert): queries and keys are rotated by position
    /// instead of a position table being added to the embeddings.
    #[serde(default)]
    pub rope_theta: Option<f64>,
    /// ModernBERT, EmbeddingGemma: the local layers' attention window in tokens (each token
    /// sees `local_attention / 2` either side), their rotary base, and the period of the
    /// global layers (layer `i` is global when `i % n == 0`; with `global_layer_last`, when
    /// `(i + 1) % n == 0`, as Gemma 3's five local layers before each global one).
    #[serde(default)]
    pub local_attention: Option<usize>,
    #[serde(default)]
    pub local_rope_theta: Option<f64>,
    #[serde(default)]
    pub global_attn_every_n_layers: Option<usize>,
    #[serde(default)]
    pub global_layer_last: bool,
    /// Grouped-query attention (Qwen3): the key/value heads, each shared by
    /// `num_attention_heads / num_key_value_heads` query heads; absent: one per query head.
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    /// The size of one attention head when it is not `hidden_size / num_attention_heads`
    /// (Qwen3-Embedding-0.6B: 128 with 16 heads of a 1024 hidden size).
    #[serde(default, alias = "head_dim")]
    pub head_size: Option<usize>,
    /// EmbeddingGemma: the middle width of sentence-transformers' Dense head after pooling
    /// (hidden → width → hidden, 3,072 for the 300m); absent: no head.
    #[serde(default)]
    pub dense_head_width: Option<usize>,
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
        cfg.check()?;
        Ok(cfg)
    }

    /// Rejects hyper-parameters no encoder we run could have, before anything is allocated
    /// from them (a model file is untrusted input).
    pub fn check(&self) -> Result<()> {
        let bounded = [
            ("vocab_size", self.vocab_size, 1, 1 << 20),
            ("hidden_size", self.hidden_size, 1, 8192),
            ("num_hidden_layers", self.num_hidden_layers, 1, 128),
            ("num_attention_heads", self.num_attention_heads, 1, 256),
            ("intermediate_size", self.intermediate_size, 1, 65536),
            (
                "max_position_embeddings",
                self.max_position_embeddings,
                1,
                1 << 16,
            ),
        ];
        for (name, value, min, max) in bounded {
            if !(min..=max).contains(&value) {
                bail!("model config: {name} = {value} is outside {min}..={max}");
            }
        }
        if let Some(d) = self.head_size {
            if !(1..=1024).contains(&d) {
                bail!("model config: head_dim = {d} is outside 1..=1024");
            }
        } else if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            bail!(
                "model config: hidden_size {} is not divisible by num_attention_heads {}",
                self.hidden_size,
                self.num_attention_heads
            );
        }
        if let Some(w) = self.dense_head_width {
            if !(1..=65536).contains(&w) {
                bail!("model config: the Dense head's width {w} is outside 1..=65536");
            }
        }
        if let Some(n) = self.relative_attention_num_buckets {
            if !(4..=1024).contains(&n) || !n.is_multiple_of(4) {
                bail!(
                    "model config: {n} relative-position buckets; a multiple of 4 in 4..=1024 \
                     (a half each way, half of that exact)"
                );
            }
        }
        if let Some(kv) = self.num_key_value_heads {
            if kv == 0 || !self.num_attention_heads.is_multiple_of(kv) {
                bail!(
                    "model config: {} attention heads cannot share {kv} key/value heads evenly",
                    self.num_attention_heads
                );
            }
        }
        if !["gelu", "swiglu", "geglu", "geglu_tanh", "relu"].contains(&self.hidden_act.as_str()) {
            bail!(
                "model config: unsupported activation '{}' (gelu, swiglu, geglu, geglu_tanh or \
                 relu)",
                self.hidden_act
            );
        }
        for theta in [self.rope_theta, self.local_rope_theta]
            .into_iter()
            .flatten()
        {
            if !(theta.is_finite() && theta > 1.0 && self.head_dim().is_multiple_of(2)) {
                bail!(
                    "model config: rotary positions need a base above 1 and an even head size \
                     (base {theta}, head size {})",
                    self.head_dim()
                );
            }
        }
        for (name, value) in [
            ("local_attention", self.local_attention),
            (
                "global_attn_every_n_layers",
                self.global_attn_every_n_layers,
            ),
        ] {
            if value.is_some_and(|v| !(1..=1 << 16).contains(&v)) {
                bail!("model config: {name} = {value:?} is outside 1..=65536");
            }
        }
        Ok(())
    }

    /// Is layer `i` a global one (every layer but ModernBERT's and Gemma's local ones)?
    pub fn is_global_layer(&self, i: usize) -> bool {
        match (self.local_attention, self.global_attn_every_n_layers) {
            (Some(_), Some(n)) if self.global_layer_last => (i + 1).is_multiple_of(n),
            (Some(_), Some(n)) => i.is_multiple_of(n),
            _ => true,
        }
    }

    /// The parts `architecture` is built of ([`super::architecture::Spec`]) must be the ones this config names:
    /// its feed-forward's activation, rotary positions or a table, local layers or none,
    /// grouped-query heads only where the spec has them (anything else would run the wrong
    /// arithmetic without an error).
    pub fn check_architecture(&self, architecture: Architecture) -> Result<()> {
        let spec = architecture.spec();
        let grouped =
            self.kv_heads() != self.num_attention_heads || self.query_width() != self.hidden_size;
        if grouped && !spec.grouped_heads {
            bail!(
                "model config: a {architecture} model has one key/value head per query head \
                 and heads of hidden_size / num_attention_heads"
            );
        }
        let acts = spec.feed_forward.activations();
        if !acts.contains(&self.hidden_act.as_str()) {
            bail!(
                "model config: a {architecture} model has a {} feed-forward, the file says '{}'",
                acts.join(" or "),
                self.hidden_act
            );
        }
        let (rotary, local) = match spec.positions {
            Positions::Table | Positions::RelativeBuckets => (false, false),
            Positions::Rotary => (true, false),
            Positions::LocalGlobal { .. } => (true, true),
        };
        if spec.positions == Positions::RelativeBuckets
            && self.relative_attention_num_buckets.is_none()
        {
            bail!("model config: a {architecture} model needs its relative-position buckets");
        }
        let has_local = self.local_attention.is_some() && self.global_attn_every_n_layers.is_some();
        if has_local != local {
            bail!(
                "model config: a {architecture} model {} local attention layers",
                if local { "needs" } else { "has no" }
            );
        }
        if self.rope_theta.is_some() != rotary {
            bail!(
                "model config: a {architecture} model {} rotary positions",
                if rotary { "needs" } else { "has no" }
            );
        }
        Ok(())
    }

    pub fn head_dim(&self) -> usize {
        self.head_size
            .unwrap_or(self.hidden_size / self.num_attention_heads)
    }

    /// The key/value heads (grouped-query attention shares each among several query heads).
    pub fn kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    /// The width of all query heads together (`hidden_size` but where a head size is given).
    pub fn query_width(&self) -> usize {
        self.num_attention_heads * self.head_dim()
    }

    /// The width of all key (or value) heads together.
    pub fn kv_width(&self) -> usize {
        self.kv_heads() * self.head_dim()
    }
}
