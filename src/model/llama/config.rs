//! A llama.cpp file's hyper-parameters (`<architecture>.*`) read into [`EncoderConfig`], as
//! the architecture's spec says which of them it has.

use anyhow::{bail, Result};

use crate::model::architecture::{Architecture, FeedForward, Positions};
use crate::model::metadata::Metadata;
use crate::model::tensor_names::{self as names, T5LayerNames};
use crate::model::EncoderConfig;

/// The keys of one architecture: `<name>.<key>`.
pub(super) struct Keys(pub Architecture);

impl Keys {
    pub fn key(&self, k: &str) -> String {
        format!("{}.{k}", self.0.name())
    }
}

/// The config of a file whose vocabulary has `vocab_size` tokens; `has_tensor` says whether
/// the file holds a tensor (T5's gate).
pub(super) fn read(
    meta: &Metadata,
    architecture: Architecture,
    vocab_size: usize,
    has_tensor: &dyn Fn(&str) -> bool,
) -> Result<EncoderConfig> {
    let spec = architecture.spec();
    let keys = Keys(architecture);
    let key = |k: &str| keys.key(k);
    let rotary = match spec.positions {
        Positions::Table | Positions::RelativeBuckets => false,
        Positions::Rotary | Positions::LocalGlobal { .. } => true,
    };
    let grouped = spec.grouped_heads;
    let mut config = EncoderConfig {
        vocab_size,
        hidden_size: meta.size(&key("embedding_length"))?,
        num_hidden_layers: meta.size(&key("block_count"))?,
        num_attention_heads: meta.size(&key("attention.head_count"))?,
        intermediate_size: meta.size(&key("feed_forward_length"))?,
        hidden_act: activation(meta, &keys, spec.feed_forward, has_tensor)?.into(),
        max_position_embeddings: meta.size(&key("context_length"))?,
        type_vocab_size: match spec.token_types {
            true => meta.size("tokenizer.ggml.token_type_count").unwrap_or(2),
            false => 0,
        },
        // The converter writes ModernBERT's LayerNorm epsilon under the RMS key.
        layer_norm_eps: meta
            .float(&key("attention.layer_norm_epsilon"))
            .or_else(|_| meta.float(&key("attention.layer_norm_rms_epsilon")))
            .unwrap_or(1e-12),
        pad_token_id: meta.size("tokenizer.ggml.padding_token_id").unwrap_or(0),
        relative_attention_num_buckets: match spec.positions {
            Positions::RelativeBuckets => {
                Some(meta.size(&key("attention.relative_buckets_count"))?)
            }
            Positions::Table | Positions::Rotary | Positions::LocalGlobal { .. } => None,
        },
        rope_theta: match rotary {
            true => Some(meta.float(&key("rope.freq_base"))?),
            false => None,
        },
        local_attention: None,
        local_rope_theta: None,
        global_attn_every_n_layers: None,
        global_layer_last: false,
        num_key_value_heads: match grouped {
            true => Some(meta.size(&key("attention.head_count_kv"))?),
            false => None,
        },
        head_size: match grouped {
            true => head_size(meta, &keys)?,
            false => None,
        },
        dense_head_width: match spec.dense_head {
            true => dense_head(meta, &keys)?,
            false => None,
        },
    };
    if let Positions::LocalGlobal {
        default_period,
        global_last,
        default_local_base,
    } = spec.positions
    {
        config.local_attention = Some(meta.size(&key("attention.sliding_window"))?);
        config.local_rope_theta = Some(match meta.float(&key("rope.freq_base_swa")) {
            Ok(theta) => theta,
            Err(_) => match default_local_base {
                Some(theta) => theta,
                None => meta.float(&key("rope.freq_base"))?,
            },
        });
        let period = key("attention.sliding_window_pattern");
        config.global_attn_every_n_layers = Some(match meta.get(&period) {
            // ModernBERT's `global_attn_every_n_layers`, written as a number.
            Some(_) => meta.size(&period)?,
            None => default_period,
        });
        config.global_layer_last = global_last;
    }
    if !grouped {
        same_head_size(meta, &keys, &config)?;
    }
    config.check()?;
    Ok(config)
}

/// An encoder's heads are `hidden / heads` wide; a file that says otherwise (T5-3B's 128 of
/// 1,024 / 32) is refused rather than read with the wrong heads.
fn same_head_size(meta: &Metadata, keys: &Keys, config: &EncoderConfig) -> Result<()> {
    let key = keys.key("attention.key_length");
    if meta.get(&key).is_none() {
        return Ok(());
    }
    let k = meta.size(&key)?;
    let heads = config.num_attention_heads.max(1);
    if k * heads != config.hidden_size {
        bail!(
            "llama.cpp {} file: {heads} heads of {k} on a hidden size of {}; we run {} \
             models whose heads split the hidden size",
            keys.0,
            config.hidden_size,
            keys.0
        );
    }
    Ok(())
}

/// The feed-forward's activation as `EncoderConfig::hidden_act` spells it.
fn activation(
    meta: &Metadata,
    keys: &Keys,
    ffn: FeedForward,
    has_tensor: &dyn Fn(&str) -> bool,
) -> Result<&'static str> {
    Ok(match ffn {
        FeedForward::Gelu => "gelu",
        FeedForward::SwiGlu => "swiglu",
        FeedForward::GeGluTanh => "geglu_tanh",
        // llama.cpp's graph: a gate makes it T5 1.1's tanh GeGLU, else T5 1.0's ReLU.
        FeedForward::ReluOrGeGluTanh => match has_tensor(&names::weight(&T5LayerNames::of(0).gate))
        {
            true => "geglu_tanh",
            false => "relu",
        },
        // llama.cpp's graph: GeGLU unless the file says SiLU (Granite R2's SwiGLU).
        FeedForward::GeGluOrSwiGlu => {
            match meta.text(&keys.key("hidden_activation")).ok().as_deref() {
                None | Some("gelu") => "geglu",
                Some("silu") => "swiglu",
                Some(other) => bail!(
                    "llama.cpp {} file: feed-forward activation '{other}' is not one we run \
                     (gelu, silu)",
                    keys.0
                ),
            }
        }
    })
}

/// A decoder's head size when the file gives one (`attention.key_length`; the value heads
/// must have the same, as every Qwen3 has).
fn head_size(meta: &Metadata, keys: &Keys) -> Result<Option<usize>> {
    let key = |k: &str| keys.key(&format!("attention.{k}"));
    if meta.get(&key("key_length")).is_none() {
        return Ok(None);
    }
    let k = meta.size(&key("key_length"))?;
    if meta.get(&key("value_length")).is_some() && meta.size(&key("value_length"))? != k {
        bail!(
            "llama.cpp {} file: keys of {k} but values of {} per head; we run heads with one \
             size",
            keys.0,
            meta.size(&key("value_length"))?
        );
    }
    Ok(Some(k))
}

/// EmbeddingGemma's Dense head (`dense_2`: hidden → width, `dense_3`: width → hidden), whose
/// widths the converter writes when the sentence-transformers folder had the modules; `None`
/// when the file has none (its vectors are then the pooled states, as llama.cpp's).
fn dense_head(meta: &Metadata, keys: &Keys) -> Result<Option<usize>> {
    let key = |dense: &str, end: &str| keys.key(&format!("{dense}_feat_{end}"));
    if meta.get(&key("dense_2", "out")).is_none() {
        return Ok(None);
    }
    let hidden = meta.size(&keys.key("embedding_length"))?;
    let width = meta.size(&key("dense_2", "out"))?;
    let dims = [
        meta.size(&key("dense_2", "in"))?,
        meta.size(&key("dense_3", "in"))?,
        meta.size(&key("dense_3", "out"))?,
    ];
    if dims != [hidden, width, hidden] {
        bail!(
            "llama.cpp {} file: a Dense head of {} → {} and {} → {}; we run heads that map \
             the hidden size {hidden} to {width} and back",
            keys.0,
            dims[0],
            width,
            dims[1],
            dims[2]
        );
    }
    Ok(Some(width))
}
