//! SentencePiece BPE (`tokenizer.ggml.model = llama`): Gemma's vocabulary, tokens and scores
//! without merges.

use anyhow::Result;
use serde_json::{json, Value as Json};

use super::{ids_and_added_tokens, tokenizer, Pieces, UNKNOWN, WORD_START};
use crate::model::metadata::Metadata;

/// The file's pipeline, `start A end` around every text; no space prefix unless the file says
/// so (Gemma's say add_space_prefix = false).
pub(super) fn json(
    meta: &Metadata,
    pieces: &Pieces,
    start: Option<&str>,
    end: Option<&str>,
) -> Result<String> {
    let add_space_prefix = meta.bool("tokenizer.ggml.add_space_prefix").unwrap_or(true);
    Ok(sentencepiece_bpe_json(pieces, add_space_prefix, start, end))
}

/// The `tokenizers` JSON of a SentencePiece BPE pipeline over llama.cpp's `llama` vocabulary,
/// as transformers converts Gemma's `tokenizer.model`: spaces become "▁" (after a "▁" before
/// the text when `add_space_prefix`), the BPE model with byte fallback (`<0xNN>` pieces) and
/// merges made from the vocabulary (every split of a piece into two pieces, ranked by the
/// piece's id, then the split's position: SentencePiece's BPE ids follow its merge order),
/// control and user-defined pieces matched whole.
fn sentencepiece_bpe_json(
    pieces: &Pieces,
    add_space_prefix: bool,
    start: Option<&str>,
    end: Option<&str>,
) -> String {
    let (vocab, added) = ids_and_added_tokens(pieces);
    let mut unk = pieces.tokens.iter().zip(&pieces.types);
    let unk = unk
        .find(|(_, &kind)| kind == UNKNOWN)
        .map(|(t, _)| t.clone());
    let mut merges = Vec::new();
    for (id, token) in pieces.tokens.iter().enumerate() {
        // A repeated piece merges under its first id only, as the vocabulary keeps it.
        if vocab.get(token) != Some(&json!(id)) {
            continue;
        }
        for (split, _) in token.char_indices().skip(1) {
            let (left, right) = token.split_at(split);
            if vocab.contains_key(left) && vocab.contains_key(right) {
                merges.push(json!([left, right]));
            }
        }
    }
    let mut normalizers = Vec::new();
    if add_space_prefix {
        normalizers.push(json!({"type": "Prepend", "prepend": WORD_START.to_string()}));
    }
    normalizers.push(json!({"type": "Replace", "pattern": {"String": " "},
        "content": WORD_START.to_string()}));
    let post_processor = super::template(&vocab, start, end);
    tokenizer(
        added,
        json!({"type": "Sequence", "normalizers": normalizers}),
        Json::Null,
        post_processor,
        json!({"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": WORD_START.to_string()}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]}),
        json!({"type": "BPE", "dropout": null, "unk_token": unk,
            "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": true,
            "byte_fallback": true, "ignore_merges": false, "vocab": Json::Object(vocab),
            "merges": merges}),
    )
}
