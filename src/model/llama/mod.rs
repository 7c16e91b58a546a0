//! Embedding GGUFs written by llama.cpp's converter: the architectures whose spec says
//! `llama_cpp`, their hyper-parameters under `<architecture>.*` ([`config`]), tensors named
//! `token_embd`, `blk.N.attn_q`, … ([`tensor_names`]), and the vocabulary as
//! `tokenizer.ggml.*` ([`vocab`]: WordPiece in llama.cpp's "phantom space" spelling, XLM-R's
//! SentencePiece Unigram, byte-level BPE, SentencePiece BPE). Read into the same
//! [`EncoderConfig`] and tokenizer JSON as our own files; a `bert` file runs on every backend
//! unchanged.

mod config;
mod tensor_names;
mod vocab;

use anyhow::{bail, Result};

pub(crate) use tensor_names::tensor_name;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) use vocab::xlm_r_steps;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) use vocab::{CONTROL, NORMAL, UNUSED, USER_DEFINED, WORD_START};

use super::architecture::{Architecture, Attention};
use super::metadata::Metadata;
use super::{EncoderConfig, Pooling};
use crate::error::{coded, ErrorCode};

/// Does the metadata describe a llama.cpp embedding file?
pub(super) fn is_llama_file(meta: &Metadata) -> bool {
    meta.text("general.architecture").is_ok() && meta.get("tokenizer.ggml.model").is_some()
}

/// What a llama.cpp file says about the model.
pub(super) struct Described {
    pub name: String,
    pub architecture: Architecture,
    pub config: EncoderConfig,
    pub pooling: Pooling,
    pub tokenizer_json: String,
}

/// `has_tensor`: whether the file holds a tensor of that name.
pub(super) fn describe(meta: &Metadata, has_tensor: &dyn Fn(&str) -> bool) -> Result<Described> {
    let architecture = Architecture::parse_llama_cpp(&meta.text("general.architecture")?)?;
    let vocabulary = vocab::kind(meta, architecture)?;
    let keys = config::Keys(architecture);
    // A decoder-built embedder may be causal by design (Qwen3); an encoder that is causal is
    // not one.
    let causal = meta.bool(&keys.key("attention.causal")).unwrap_or(false);
    if causal && architecture.spec().attention == Attention::Bidirectional {
        bail!("llama.cpp file: a causal {architecture} model is not a sentence encoder we run");
    }
    let pieces = vocab::Pieces::read(meta)?;
    let config = config::read(meta, architecture, pieces.tokens.len(), has_tensor)?;
    let pooling = pooling(meta, architecture, &keys)?;
    let tokenizer_json = vocab::tokenizer_json(meta, architecture, vocabulary, &pieces)?;
    Ok(Described {
        name: meta
            .text("general.name")
            .unwrap_or_else(|_| format!("llama.cpp {architecture} model")),
        architecture,
        config,
        pooling,
        tokenizer_json,
    })
}

/// The file's pooling (`pooling_type`, llama.cpp's enum: 0 none, 1 mean, 2 cls, 3 last, 4
/// rank), the spec's default when absent. A causal file without one is the chat model (Qwen3,
/// not Qwen3-Embedding): its "sentence vectors" would be an arbitrary choice of ours.
fn pooling(meta: &Metadata, architecture: Architecture, keys: &config::Keys) -> Result<Pooling> {
    let key = keys.key("pooling_type");
    let spec = architecture.spec();
    if meta.get(&key).is_none() {
        return match spec.attention {
            Attention::Bidirectional => Ok(spec.default_pooling),
            Attention::Causal => Err(coded(
                ErrorCode::UnsupportedArchitecture,
                format!(
                    "llama.cpp {architecture} file without '{key}': a language model, not an \
                     embedding model ({}'s files say {} pooling)",
                    spec.examples,
                    spec.default_pooling.as_str()
                ),
            )),
        };
    }
    let number = meta.number(&key)?;
    match POOLING_TYPES.iter().find(|(n, _)| *n as u64 == number) {
        Some(&(_, pooling)) => Ok(pooling),
        None => bail!(
            "llama.cpp file: pooling type {number} is not a sentence embedding (supported: mean, \
             cls, last)"
        ),
    }
}

/// llama.cpp's pooling enum (0 none, 1 mean, 2 cls, 3 last, 4 rank): the sentence embeddings.
const POOLING_TYPES: [(u32, Pooling); 3] =
    [(1, Pooling::Mean), (2, Pooling::Cls), (3, Pooling::Last)];

/// The `pooling_type` llama.cpp gives `pooling` (`None`: llama.cpp has no such pooling).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn pooling_type(pooling: Pooling) -> Option<u32> {
    POOLING_TYPES
        .iter()
        .find(|(_, p)| *p == pooling)
        .map(|&(n, _)| n)
}
