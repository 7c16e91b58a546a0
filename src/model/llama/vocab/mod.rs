//! A llama.cpp file's vocabulary (`tokenizer.ggml.*`) rebuilt as the `tokenizers` JSON of the
//! model's own tokenizer: one file per kind, as [`Vocabulary`] names them, and the parts they
//! share here (pieces and their types, special tokens, the template around a text).

mod bpe;
mod sentencepiece_bpe;
mod unigram;
mod wordpiece;

#[cfg(not(target_arch = "wasm32"))]
pub(crate) use unigram::xlm_r_steps;

use anyhow::{anyhow, bail, Result};
use serde_json::{json, Map, Value as Json};

use crate::model::architecture::{Architecture, Family, Vocabulary};
use crate::model::metadata::Metadata;

/// llama.cpp's token type for ordinary pieces (only the converter writes it).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const NORMAL: i64 = 1;
/// llama.cpp's token type for control tokens ([CLS], [SEP], …): kept as they are.
pub(crate) const CONTROL: i64 = 3;
/// llama.cpp's token type for the unknown token.
const UNKNOWN: i64 = 2;
/// llama.cpp's token type for user-defined pieces (a SentencePiece vocabulary's, a BPE
/// vocabulary's added tokens): matched whole, before the model, as control tokens are, but
/// plain text.
pub(crate) const USER_DEFINED: i64 = 4;
/// llama.cpp's token type for ids the vocabulary does not use (the converter's `[PAD<id>]`).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const UNUSED: i64 = 5;
/// Marks a word-start piece in llama.cpp's vocabulary (a continuation piece has no mark).
pub(crate) const WORD_START: char = '\u{2581}';

/// The file's pieces and llama.cpp's type of each.
pub(super) struct Pieces {
    pub tokens: Vec<String>,
    pub types: Vec<i64>,
}

impl Pieces {
    pub fn read(meta: &Metadata) -> Result<Self> {
        let tokens = meta.strings("tokenizer.ggml.tokens")?;
        let types = meta.integers("tokenizer.ggml.token_type")?;
        if tokens.len() != types.len() {
            bail!(
                "llama.cpp file: {} tokens but {} token types",
                tokens.len(),
                types.len()
            );
        }
        Ok(Self { tokens, types })
    }

    /// The token whose id the file gives under `tokenizer.ggml.<k>_token_id`, if it does.
    fn special(&self, meta: &Metadata, k: &str) -> Result<Option<String>> {
        match meta.number(&format!("tokenizer.ggml.{k}_token_id")) {
            Ok(id) => self
                .tokens
                .get(usize::try_from(id).unwrap_or(usize::MAX))
                .cloned()
                .map(Some)
                .ok_or_else(|| {
                    anyhow!("llama.cpp file: {k} token id {id} is not in the vocabulary")
                }),
            Err(_) => Ok(None),
        }
    }

    /// The token added before (or after) every text when `flag` says so (by default when
    /// `default`): the file's `first` special token, else its `second`.
    fn around(
        &self,
        meta: &Metadata,
        (flag, default): (&str, bool),
        first: &str,
        second: &str,
    ) -> Result<Option<String>> {
        if !meta.bool(flag).unwrap_or(default) {
            return Ok(None);
        }
        Ok(self.special(meta, first)?.or(self.special(meta, second)?))
    }
}

/// The vocabulary kind the file carries, refused by name when the architecture's files do
/// not carry it.
pub(super) fn kind(meta: &Metadata, architecture: Architecture) -> Result<Vocabulary> {
    let name = meta.text("tokenizer.ggml.model")?;
    let accepted = architecture.spec().vocabularies;
    match Vocabulary::from_ggml_name(&name) {
        Some(v) if accepted.contains(&v) => Ok(v),
        _ => {
            let list = |v: &[Vocabulary]| {
                let names: Vec<String> = v
                    .iter()
                    .map(|v| format!("{} ({})", v.ggml_name(), v.label()))
                    .collect();
                names.join(" or ")
            };
            Err(crate::error::coded(
                crate::error::ErrorCode::UnsupportedArchitecture,
                format!(
                    "llama.cpp {architecture} file with a '{name}' vocabulary: we read \
                     {architecture} files with {}",
                    list(accepted)
                ),
            ))
        }
    }
}

/// The `tokenizers` JSON of the file's vocabulary.
pub(super) fn tokenizer_json(
    meta: &Metadata,
    architecture: Architecture,
    vocabulary: Vocabulary,
    pieces: &Pieces,
) -> Result<String> {
    // Encoders' files put their bos and eos around the text unless they say not; a decoder
    // LLM's vocabulary adds neither unless the file says so (llama.cpp's `qwen2` default;
    // Qwen3-Embedding's files say add_eos, its `<|endoftext|>`).
    let by_default = match architecture.spec().family {
        Family::Encoder => true,
        Family::Decoder => false,
    };
    let bos = ("tokenizer.ggml.add_bos_token", by_default);
    let eos = ("tokenizer.ggml.add_eos_token", by_default);
    match vocabulary {
        Vocabulary::WordPiece => wordpiece::json(meta, pieces),
        Vocabulary::Unigram => unigram::json(
            meta,
            pieces,
            pieces.around(meta, bos, "bos", "cls")?.as_deref(),
            pieces.around(meta, eos, "eos", "seperator")?.as_deref(),
        ),
        Vocabulary::ByteLevelBpe => {
            // ModernBERT's files: [CLS] as bos and [SEP] as eos; a decoder's: bos and eos.
            let (start, end) = match architecture.spec().family {
                Family::Encoder => (
                    pieces.around(meta, bos, "cls", "bos")?,
                    pieces.around(meta, eos, "seperator", "eos")?,
                ),
                Family::Decoder => (
                    pieces.around(meta, bos, "bos", "bos")?,
                    pieces.around(meta, eos, "eos", "eos")?,
                ),
            };
            bpe::json(meta, pieces, start.as_deref(), end.as_deref())
        }
        // llama.cpp's SentencePiece defaults: bos before the text, no eos.
        Vocabulary::SentencePieceBpe => sentencepiece_bpe::json(
            meta,
            pieces,
            pieces.around(meta, (bos.0, true), "bos", "bos")?.as_deref(),
            pieces
                .around(meta, (eos.0, false), "eos", "eos")?
                .as_deref(),
        ),
    }
}

/// A token matched whole before normalisation, never split; `special`: a control token (a
/// user-defined one is plain text).
fn added_token(id: usize, token: &str, special: bool) -> Json {
    json!({"id": id, "content": token, "single_word": false, "lstrip": false, "rstrip": false,
        "normalized": false, "special": special})
}

/// A vocabulary's token → id map (a repeated token keeps its first id) and its added tokens:
/// the control ones special, the user-defined ones plain, as llama.cpp matches both whole.
fn ids_and_added_tokens(pieces: &Pieces) -> (Map<String, Json>, Vec<Json>) {
    let mut ids = Map::new();
    let mut added = Vec::new();
    for (id, (token, &kind)) in pieces.tokens.iter().zip(&pieces.types).enumerate() {
        if kind == CONTROL || kind == USER_DEFINED {
            added.push(added_token(id, token, kind == CONTROL));
        }
        ids.entry(token.clone()).or_insert(json!(id));
    }
    (ids, added)
}

/// `start A end` (and `start A end B end` for pairs) as a TemplateProcessing post-processor;
/// `ids` maps the tokens to their ids.
fn template(ids: &Map<String, Json>, start: Option<&str>, end: Option<&str>) -> Json {
    let mut special_tokens = Map::new();
    for token in [start, end].into_iter().flatten() {
        special_tokens.insert(
            token.to_string(),
            json!({"id": token, "ids": [ids[token].clone()], "tokens": [token]}),
        );
    }
    let special = |token: Option<&str>, type_id: u32| {
        token.map(|t| json!({"SpecialToken": {"id": t, "type_id": type_id}}))
    };
    let sequence = |s: &str, type_id: u32| Some(json!({"Sequence": {"id": s, "type_id": type_id}}));
    let single: Vec<Json> = [special(start, 0), sequence("A", 0), special(end, 0)]
        .into_iter()
        .flatten()
        .collect();
    let pair: Vec<Json> = [
        special(start, 0),
        sequence("A", 0),
        special(end, 0),
        sequence("B", 1),
        special(end, 1),
    ]
    .into_iter()
    .flatten()
    .collect();
    json!({"type": "TemplateProcessing", "single": single, "pair": pair,
        "special_tokens": special_tokens})
}

/// A tokenizer JSON with no truncation or padding (the embedder sets both).
fn tokenizer(
    added: Vec<Json>,
    normalizer: Json,
    pre_tokenizer: Json,
    post_processor: Json,
    decoder: Json,
    model: Json,
) -> String {
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": decoder,
        "model": model,
    })
    .to_string()
}
