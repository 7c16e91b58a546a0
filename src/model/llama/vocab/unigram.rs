//! SentencePiece Unigram (`tokenizer.ggml.model = t5`): XLM-R's vocabulary, in multilingual
//! BERT-family files (multilingual-e5, bge-m3).

use anyhow::{bail, Result};
use serde_json::{json, Value as Json};

use super::{ids_and_added_tokens, tokenizer, Pieces, WORD_START};
use crate::model::metadata::Metadata;

/// The text normalisation a SentencePiece vocabulary records.
struct Normalization {
    /// SentencePiece's precompiled normalisation rules (NFKC and more); empty: none.
    charsmap: Vec<u8>,
    /// A "▁" before the first word, as SentencePiece's dummy prefix.
    add_space_prefix: bool,
    /// Leading, trailing and repeated whitespace is dropped.
    remove_extra_whitespaces: bool,
}

/// The normalizer, pre-tokenizer and decoder of XLM-R's SentencePiece Unigram pipeline as
/// transformers' XLM-R tokenizer builds them (and so sentence-transformers runs them): the
/// Precompiled normaliser (`precompiled`; `null`: none); then, when `remove_extra_whitespaces`
/// (SentencePiece's default), the text split at whitespace, which drops leading, trailing and
/// repeated whitespace of every kind as SentencePiece and llama.cpp do — the model's
/// tokenizer.json alone, run by `tokenizers`, keeps a trailing "▁" ("hello\n" → "▁hell o ▁");
/// Metaspace "▁", with the dummy prefix when `add_space_prefix`.
pub(crate) fn xlm_r_steps(
    precompiled: Json,
    add_space_prefix: bool,
    remove_extra_whitespaces: bool,
) -> (Json, Json, Json) {
    let metaspace = json!({"type": "Metaspace", "replacement": WORD_START.to_string(),
        "prepend_scheme": if add_space_prefix { "always" } else { "never" }, "split": true});
    let pre_tokenizer = match remove_extra_whitespaces {
        true => json!({"type": "Sequence",
            "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace.clone()]}),
        false => metaspace.clone(),
    };
    (precompiled, pre_tokenizer, metaspace)
}

/// XLM-R's pipeline over the file's `t5` vocabulary, `start A end` around every text.
pub(super) fn json(
    meta: &Metadata,
    pieces: &Pieces,
    start: Option<&str>,
    end: Option<&str>,
) -> Result<String> {
    let normalization = Normalization {
        charsmap: match meta.get("tokenizer.ggml.precompiled_charsmap") {
            Some(_) => meta.bytes("tokenizer.ggml.precompiled_charsmap")?,
            None => Vec::new(),
        },
        add_space_prefix: meta.bool("tokenizer.ggml.add_space_prefix").unwrap_or(true),
        remove_extra_whitespaces: meta
            .bool("tokenizer.ggml.remove_extra_whitespaces")
            .unwrap_or(true),
    };
    unigram_json(
        pieces,
        &meta.floats("tokenizer.ggml.scores")?,
        &normalization,
        meta.size("tokenizer.ggml.unknown_token_id")?,
        start,
        end,
    )
}

/// The `tokenizers` JSON of XLM-R's SentencePiece Unigram pipeline ([`xlm_r_steps`]) with the
/// file's scores.
fn unigram_json(
    pieces: &Pieces,
    scores: &[f32],
    normalization: &Normalization,
    unk: usize,
    start: Option<&str>,
    end: Option<&str>,
) -> Result<String> {
    let tokens = &pieces.tokens;
    if scores.len() != tokens.len() {
        bail!(
            "llama.cpp file: {} tokens but {} scores",
            tokens.len(),
            scores.len()
        );
    }
    if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
        bail!("llama.cpp file: token {i}'s score is not a finite number");
    }
    if unk >= tokens.len() {
        bail!(
            "llama.cpp file: unknown token id {unk} is not in the vocabulary of {}",
            tokens.len()
        );
    }
    let (ids, added) = ids_and_added_tokens(pieces);
    let vocab: Vec<Json> = tokens
        .iter()
        .zip(scores)
        .map(|(t, &s)| json!([t, s]))
        .collect();
    let precompiled = match normalization.charsmap.is_empty() {
        true => Json::Null,
        false => json!({"type": "Precompiled",
            "precompiled_charsmap": base64::encode(&normalization.charsmap)}),
    };
    let (normalizer, pre_tokenizer, decoder) = xlm_r_steps(
        precompiled,
        normalization.add_space_prefix,
        normalization.remove_extra_whitespaces,
    );
    Ok(tokenizer(
        added,
        normalizer,
        pre_tokenizer,
        super::template(&ids, start, end),
        decoder,
        json!({"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": false}),
    ))
}
