//! Byte-level BPE (`tokenizer.ggml.model = gpt2`): tokens and merges, split before the byte
//! mapping as the file's pre-tokenizer (`tokenizer.ggml.pre`) says.

use anyhow::{bail, Result};
use serde_json::{json, Value as Json};

use super::{ids_and_added_tokens, tokenizer, Pieces};
use crate::error::{coded, ErrorCode};
use crate::model::architecture::Architecture;
use crate::model::metadata::Metadata;

/// How a byte-level BPE vocabulary splits text before the byte mapping.
#[derive(Clone, Copy)]
enum Split {
    /// GPT-2's regex inside the byte-level step, no normalizer (GPT-2, ModernBERT).
    Gpt2,
    /// NFC, then Qwen2's regex as its own step (Qwen2, Qwen3).
    Qwen2,
}

/// The pre-tokenizers we rebuild, by the file's name for them: GPT-2's split (its regex, no
/// prefix space; ModernBERT's too) or Qwen2's (NFC first, single digits, a letter run takes
/// one leading non-letter). llama.cpp names the latter two after their architectures.
const PRE_TOKENIZERS: [(&str, Split); 3] = [
    ("gpt-2", Split::Gpt2),
    (Architecture::ModernBert.name(), Split::Gpt2),
    (Architecture::Qwen2.name(), Split::Qwen2),
];

/// Qwen2's split, as its `tokenizer.json` and llama.cpp's `qwen2` pre-tokenizer write it.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The file's byte-level BPE pipeline, `start A end` around every text.
pub(super) fn json(
    meta: &Metadata,
    pieces: &Pieces,
    start: Option<&str>,
    end: Option<&str>,
) -> Result<String> {
    let pre = meta.text("tokenizer.ggml.pre")?;
    let Some(&(_, split)) = PRE_TOKENIZERS.iter().find(|(name, _)| *name == pre) else {
        let names: Vec<&str> = PRE_TOKENIZERS.iter().map(|(name, _)| *name).collect();
        return Err(coded(
            ErrorCode::UnsupportedArchitecture,
            format!(
                "llama.cpp file with the byte-level BPE pre-tokenizer '{pre}': we rebuild {}",
                names.join(", ")
            ),
        ));
    };
    let merges = meta.strings("tokenizer.ggml.merges")?;
    bpe_json(pieces, &merges, split, start, end)
}

/// The `tokenizers` JSON of a byte-level BPE pipeline (`split`, then the byte mapping) over
/// llama.cpp's tokens and merges; control tokens are special added tokens, as in the model's
/// own tokenizer.
fn bpe_json(
    pieces: &Pieces,
    merges: &[String],
    split: Split,
    start: Option<&str>,
    end: Option<&str>,
) -> Result<String> {
    let (vocab, added) = ids_and_added_tokens(pieces);
    for merge in merges {
        let pair = merge.split_once(' ');
        if !pair.is_some_and(|(a, b)| vocab.contains_key(a) && vocab.contains_key(b)) {
            bail!("llama.cpp file: the merge '{merge}' is not two tokens of the vocabulary");
        }
    }
    let post_processor = super::template(&vocab, start, end);
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
        "use_regex": true});
    let (normalizer, pre_tokenizer) = match split {
        Split::Gpt2 => (Json::Null, byte_level.clone()),
        Split::Qwen2 => (
            json!({"type": "NFC"}),
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated",
                    "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false,
                    "use_regex": false}]}),
        ),
    };
    Ok(tokenizer(
        added,
        normalizer,
        pre_tokenizer,
        post_processor,
        byte_level,
        json!({"type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false,
            "byte_fallback": false, "ignore_merges": false, "vocab": Json::Object(vocab),
            "merges": merges}),
    ))
}
