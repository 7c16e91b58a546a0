//! WordPiece (`tokenizer.ggml.model = bert`): llama.cpp writes word starts as "▁word" and
//! continuations plain; BERT's pipeline wants them plain and "##piece".

use anyhow::{bail, Result};
use serde_json::{json, Map, Value as Json};

use super::{added_token, tokenizer, Pieces, CONTROL, WORD_START};
use crate::model::metadata::Metadata;

/// BERT's WordPiece pipeline over the file's vocabulary (its lowercasing, its [UNK], [CLS]
/// and [SEP], which default to those names).
pub(super) fn json(meta: &Metadata, pieces: &Pieces) -> Result<String> {
    let special = |k: &str, fallback: &str| -> Result<String> {
        Ok(pieces
            .special(meta, k)?
            .unwrap_or_else(|| fallback.to_string()))
    };
    wordpiece_json(
        pieces,
        meta.bool("tokenizer.ggml.normalizer.lowercase")
            .unwrap_or(true),
        &special("unknown", "[UNK]")?,
        &special("bos", "[CLS]")?,
        &special("seperator", "[SEP]").or_else(|_| special("eos", "[SEP]"))?,
    )
}

/// The `tokenizers` JSON of a BERT WordPiece pipeline over llama.cpp's vocabulary: pieces
/// spelled "▁word" are word starts, plain ones continuations ("##" again), control tokens stay.
fn wordpiece_json(
    pieces: &Pieces,
    lowercase: bool,
    unk: &str,
    cls: &str,
    sep: &str,
) -> Result<String> {
    let mut vocab = Map::new();
    let mut added = Vec::new();
    for (id, (token, &kind)) in pieces.tokens.iter().zip(&pieces.types).enumerate() {
        let piece = if kind == CONTROL {
            added.push(added_token(id, token, true));
            token.clone()
        } else if let Some(word) = token.strip_prefix(WORD_START) {
            word.to_string()
        } else {
            format!("##{token}")
        };
        // A repeated piece keeps its first id, as a vocab.txt reader would.
        vocab.entry(piece).or_insert(json!(id));
    }
    for token in [unk, cls, sep] {
        if !vocab.contains_key(token) {
            bail!("llama.cpp file: the special token '{token}' is not in the vocabulary");
        }
    }
    let post_processor = super::template(&vocab, Some(cls), Some(sep));
    Ok(tokenizer(
        added,
        json!({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
            "strip_accents": null, "lowercase": lowercase}),
        json!({"type": "BertPreTokenizer"}),
        post_processor,
        json!({"type": "WordPiece", "prefix": "##", "cleanup": true}),
        json!({"type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": Json::Object(vocab)}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phantom_space_vocabulary_becomes_wordpiece_again() {
        let tokens: Vec<String> = [
            "[PAD]",
            "[UNK]",
            "[CLS]",
            "[SEP]",
            "\u{2581}tom",
            "s",
            "\u{2581}likes",
        ]
        .map(String::from)
        .to_vec();
        let pieces = Pieces {
            tokens,
            types: vec![3, 3, 3, 3, 1, 1, 1],
        };
        let json = wordpiece_json(&pieces, true, "[UNK]", "[CLS]", "[SEP]").unwrap();
        let tokenizer = tokenizers::Tokenizer::from_bytes(json.as_bytes()).unwrap();
        let ids = tokenizer
            .encode("Toms likes", true)
            .unwrap()
            .get_ids()
            .to_vec();
        assert_eq!(ids, [2, 4, 5, 6, 3]);
    }
}
