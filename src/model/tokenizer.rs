//! Text → token ids, exactly as sentence-transformers does it: the model's own `tokenizer.json`,
//! no fixed padding, truncation at the model's `max_seq_length` (special tokens included).

use anyhow::{anyhow, bail, Result};

use crate::error::{coded, ErrorCode};
use tokenizers::normalizers::precompiled::Precompiled;
use tokenizers::{Tokenizer, TruncationParams};

/// A right-padded batch of token ids with its attention mask, row-major `[batch, seq_len]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBatch {
    pub ids: Vec<u32>,
    pub mask: Vec<u32>,
    pub batch: usize,
    pub seq_len: usize,
}

impl TokenBatch {
    /// Pads `rows` to the longest one with `pad_id` (mask 0 on padding).
    pub fn from_rows(rows: &[Vec<u32>], pad_id: u32) -> Self {
        let seq_len = rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(rows.len() * seq_len);
        let mut mask = Vec::with_capacity(rows.len() * seq_len);
        for row in rows {
            ids.extend_from_slice(row);
            ids.extend(std::iter::repeat_n(pad_id, seq_len - row.len()));
            mask.extend(std::iter::repeat_n(1, row.len()));
            mask.extend(std::iter::repeat_n(0, seq_len - row.len()));
        }
        Self {
            ids,
            mask,
            batch: rows.len(),
            seq_len,
        }
    }

    /// Number of real (unpadded) tokens in row `i`.
    pub fn row_len(&self, i: usize) -> usize {
        self.mask[i * self.seq_len..(i + 1) * self.seq_len]
            .iter()
            .filter(|&&m| m == 1)
            .count()
    }
}

/// One text's tokens: ids, the tokenizer's labels (`##ing`, `[CLS]`), and per token its word
/// (the pre-tokenizer's word index and the whole word's text), `None` for special tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Pieces {
    pub ids: Vec<u32>,
    pub tokens: Vec<String>,
    pub words: Vec<Option<(u32, String)>>,
}

/// Refuses, with an error, the tokenizer JSON that `tokenizers` would meet with a panic (which
/// aborts the wasm instance): its decoder deserializer `expect`s the decoder's JSON to parse,
/// its normalizer deserializer `expect`s a `Precompiled` normalizer to build, and a built
/// `Precompiled` indexes its charsmap unchecked when it normalizes a text. So the whole JSON is
/// parsed here first, and every `Precompiled` object in it is built on its own and its charsmap
/// walked as every text would walk it.
fn check_json(json: &str) -> Result<()> {
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| anyhow!("model file: the tokenizer JSON is invalid: {e}"))?;
    let mut stack = vec![&value];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Object(map) => {
                let kind = map.get("type").and_then(|t| t.as_str());
                if kind == Some("Precompiled") {
                    check_precompiled(v).map_err(|e| {
                        anyhow!("model file: the tokenizer JSON's Precompiled normalizer is invalid: {e}")
                    })?;
                }
                if kind == Some("TemplateProcessing") {
                    check_template(v).map_err(|e| {
                        anyhow!(
                            "model file: the tokenizer JSON's TemplateProcessing is invalid: {e}"
                        )
                    })?;
                }
                stack.extend(map.values());
            }
            serde_json::Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    Ok(())
}

/// Refuses a `TemplateProcessing` post-processor that `tokenizers` would index out of bounds on
/// at the first text: its deserializer skips the builder's checks, so a template may name a
/// special token it does not define, or use the second sequence of a pair in the template for
/// one text (every text we encode is one). A template `tokenizers` cannot read is left to its
/// own error.
fn check_template(v: &serde_json::Value) -> Result<()> {
    use tokenizers::processors::template::TemplateProcessing;
    let Ok(template) = serde_json::from_str::<TemplateProcessing>(&v.to_string()) else {
        return Ok(());
    };
    // Its own serialization is the canonical form: `{"SpecialToken": {"id", ..}}` and
    // `{"Sequence": {"id": "A" | "B", ..}}` pieces, `special_tokens` keyed by id.
    let v = serde_json::to_value(&template)?;
    let tokens = v["special_tokens"].as_object().cloned().unwrap_or_default();
    for (name, token) in &tokens {
        let len = |field: &str| token[field].as_array().map_or(0, Vec::len);
        if len("ids") != len("tokens") {
            bail!(
                "special token '{name}' has {} ids and {} tokens",
                len("ids"),
                len("tokens")
            );
        }
    }
    for which in ["single", "pair"] {
        for piece in v[which].as_array().into_iter().flatten() {
            if let Some(id) = piece["SpecialToken"]["id"].as_str() {
                if !tokens.contains_key(id) {
                    bail!(
                        "its {which} template uses special token '{id}', which it does not define"
                    );
                }
            }
            if which == "single" && piece["Sequence"]["id"] == "B" {
                bail!("its single template uses the second sequence ($B)");
            }
        }
    }
    Ok(())
}

/// Builds a `Precompiled` normalizer as `tokenizers` would (from text: its deserializer borrows
/// the base64 string, which `from_value` cannot give), then checks its charsmap.
fn check_precompiled(v: &serde_json::Value) -> Result<()> {
    serde_json::from_str::<Precompiled>(&v.to_string())?;
    let text = v["precompiled_charsmap"].as_str().unwrap_or_default();
    let bytes = base64_decode(text).ok_or_else(|| anyhow!("the charsmap is not base64"))?;
    check_charsmap(&bytes)
}

/// Standard base64 (padding optional). Only called on text the `Precompiled` deserializer has
/// already decoded, so being more lenient than it changes nothing.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let text = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    for chunk in text.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for &c in chunk {
            n = n << 6 | u32::from(digit(c)?);
        }
        n <<= 6 * (4 - chunk.len() as u32);
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    Some(out)
}

/// Refuses a charsmap that `spm_precompiled` would index out of bounds on some text. Its layout
/// is sentencepiece's: a u32 trie size in bytes, the trie (a double array of u32 units), then
/// the replacement strings (each ending in `\0`). A text's bytes walk the trie from the root:
/// at a node, byte `c` (1..=255) leads to unit `node ^ c`, which is a child when its label is
/// `c`; the child's offset gives the next node, and a child with a leaf has at that next node
/// a value, the start of its replacement in the strings. Every node reachable from the root is
/// visited once and every byte tried, so every lookup any text can make is checked here
/// (sentencepiece's own arrays come in blocks of 256 units, so they pass).
fn check_charsmap(bytes: &[u8]) -> Result<()> {
    let word = |at: usize| -> Option<usize> {
        let b = bytes.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes(b.try_into().ok()?) as usize)
    };
    let size = word(0).ok_or_else(|| anyhow!("the charsmap has no trie size"))?;
    let units: Vec<usize> = (0..size / 4)
        .map(|i| word(4 + 4 * i))
        .collect::<Option<_>>()
        .ok_or_else(|| anyhow!("the charsmap's trie is cut short"))?;
    let strings = &bytes[4 + 4 * units.len()..];
    let strings = std::str::from_utf8(strings)
        .map_err(|_| anyhow!("the charsmap's strings are not UTF-8"))?;
    // The unit fields, as spm_precompiled reads them.
    let offset = |u: usize| (u >> 10) << ((u & (1 << 9)) >> 6);
    let label = |u: usize| u & ((1 << 31) | 0xFF);
    let has_leaf = |u: usize| (u >> 8) & 1 == 1;
    let value = |u: usize| u & ((1 << 31) - 1);
    let root = offset(
        *units
            .first()
            .ok_or_else(|| anyhow!("the charsmap's trie is empty"))?,
    );
    let past = |what: &str, at: usize| {
        anyhow!(
            "the charsmap's trie leads to {what} {at}, past its {} units",
            units.len()
        )
    };
    let mut seen = vec![false; units.len()];
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        for c in 1..=255 {
            let child = node ^ c;
            let unit = *units.get(child).ok_or_else(|| past("unit", child))?;
            if label(unit) != c {
                continue;
            }
            let next = child ^ offset(unit);
            let next_unit = *units.get(next).ok_or_else(|| past("node", next))?;
            if has_leaf(unit) {
                let start = value(next_unit);
                if !strings.is_char_boundary(start) {
                    bail!(
                        "the charsmap's trie gives a replacement at byte {start} of its {}-byte \
                         strings, past their end or inside a character",
                        strings.len()
                    );
                }
            }
            if !seen[next] {
                seen[next] = true;
                stack.push(next);
            }
        }
    }
    Ok(())
}

/// The model's tokenizer with padding switched off and truncation at `max_seq_length`.
pub struct TextTokenizer {
    inner: Tokenizer,
    pad_id: u32,
    /// Rows of the model's token embedding table: every id the tokenizer gives must be below.
    vocab_size: usize,
    /// Put before every text the model reads (not the baseline's): e5's "query: ".
    prefix: String,
}

impl TextTokenizer {
    pub fn from_json(
        json: &str,
        max_seq_length: usize,
        pad_id: u32,
        vocab_size: usize,
    ) -> Result<Self> {
        check_json(json)?;
        let mut inner = Tokenizer::from_bytes(json.as_bytes())
            .map_err(|e| anyhow!("model file: the tokenizer JSON is invalid: {e}"))?;
        // The shipped tokenizer.json pads to 128 and truncates at 128; the model sees up to
        // max_seq_length tokens and batches are padded only to their longest row.
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_seq_length,
                ..Default::default()
            }))
            .map_err(|e| anyhow!("tokenizer: cannot set truncation: {e}"))?;
        Ok(Self {
            inner,
            pad_id,
            vocab_size,
            prefix: String::new(),
        })
    }

    /// Sets the text put before every input of the model (checked by the caller).
    pub fn set_prefix(&mut self, prefix: &str) {
        self.prefix = prefix.to_string();
    }

    /// The text the model reads: the prefix, then `text`. The prefix goes with the special
    /// tokens: the model sees it, the syntax-blind baseline (words only) does not.
    fn model_input<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        match self.prefix.is_empty() {
            true => text.into(),
            false => format!("{}{text}", self.prefix).into(),
        }
    }

    /// The ids, refused when one is past the embedding table: a file's tokenizer JSON (its
    /// vocabulary, its special tokens) may give ids its matrix does not have, which the
    /// backends would otherwise meet as an uncoded failure (CPU) or read out of bounds (GPU).
    fn checked(&self, ids: &[u32]) -> Result<()> {
        match ids.iter().find(|&&id| id as usize >= self.vocab_size) {
            Some(id) => Err(coded(
                ErrorCode::BadModel,
                format!(
                    "model file: the tokenizer gives token id {id}, past the model's \
                     {}-row vocabulary",
                    self.vocab_size
                ),
            )),
            None => Ok(()),
        }
    }

    /// Token ids of one text as the model reads it: prefix and special tokens included.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let text = self.model_input(text);
        // One text at a time: the batch API would start a thread pool, which wasm has not.
        let encoding = self.inner.encode_fast(text.as_ref(), true).map_err(|e| {
            anyhow!(
                "tokenizer failed on a text of {} characters: {e}",
                text.chars().count()
            )
        })?;
        self.checked(encoding.get_ids())?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Token ids of one text without [CLS]/[SEP] and the prefix (for the static baseline).
    pub fn encode_without_special_tokens(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self.inner.encode_fast(text, false).map_err(|e| {
            anyhow!(
                "tokenizer failed on a text of {} characters: {e}",
                text.chars().count()
            )
        })?;
        self.checked(encoding.get_ids())?;
        Ok(encoding.get_ids().to_vec())
    }

    /// One text's tokens with their labels and words, special tokens (and the prefix)
    /// included or not (the ids are [`Self::encode`]'s, or the baseline's; byte offsets are
    /// tracked here, which `encode_fast` skips).
    pub fn encode_pieces(&self, text: &str, special_tokens: bool) -> Result<Pieces> {
        let text = match special_tokens {
            true => self.model_input(text),
            false => text.into(),
        };
        let text = text.as_ref();
        let encoding = self.inner.encode(text, special_tokens).map_err(|e| {
            anyhow!(
                "tokenizer failed on a text of {} characters: {e}",
                text.chars().count()
            )
        })?;
        self.checked(encoding.get_ids())?;
        let special = encoding.get_special_tokens_mask();
        let word_ids: Vec<Option<u32>> = (0..encoding.len())
            .map(|i| encoding.get_word_ids()[i].filter(|_| special.get(i) != Some(&1)))
            .collect();
        // A word's text: from its first piece's start to its last piece's end (byte offsets).
        let span = |word: u32| {
            let offsets = word_ids
                .iter()
                .zip(encoding.get_offsets())
                .filter(|(w, _)| **w == Some(word))
                .map(|(_, &offset)| offset);
            let start = offsets.clone().map(|o| o.0).min().unwrap_or(0);
            let end = offsets.map(|o| o.1).max().unwrap_or(0);
            text.get(start..end).unwrap_or("").to_string()
        };
        let words = word_ids.iter().map(|w| w.map(|w| (w, span(w)))).collect();
        Ok(Pieces {
            ids: encoding.get_ids().to_vec(),
            tokens: encoding.get_tokens().to_vec(),
            words,
        })
    }

    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }
}
