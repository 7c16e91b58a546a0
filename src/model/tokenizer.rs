//! Text → token ids, exactly as sentence-transformers does it: the model's own `tokenizer.json`,
//! no fixed padding, truncation at the model's `max_seq_length` (special tokens included).

use anyhow::{anyhow, Result};
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
/// and its normalizer deserializer `expect`s a `Precompiled` normalizer to build. So the whole
/// JSON is parsed here first, and every `Precompiled` object in it is built on its own.
fn check_json(json: &str) -> Result<()> {
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| anyhow!("model file: the tokenizer JSON is invalid: {e}"))?;
    let mut stack = vec![&value];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Object(map) => {
                if map.get("type").and_then(|t| t.as_str()) == Some("Precompiled") {
                    serde_json::from_value::<Precompiled>(v.clone()).map_err(|e| {
                        anyhow!("model file: the tokenizer JSON's Precompiled normalizer is invalid: {e}")
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

/// The model's tokenizer with padding switched off and truncation at `max_seq_length`.
pub struct TextTokenizer {
    inner: Tokenizer,
    pad_id: u32,
}

impl TextTokenizer {
    pub fn from_json(json: &str, max_seq_length: usize, pad_id: u32) -> Result<Self> {
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
        Ok(Self { inner, pad_id })
    }

    /// Token ids of one text, special tokens included.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        // One text at a time: the batch API would start a thread pool, which wasm has not.
        let encoding = self.inner.encode_fast(text, true).map_err(|e| {
            anyhow!(
                "tokenizer failed on a text of {} characters: {e}",
                text.chars().count()
            )
        })?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Token ids of one text without [CLS]/[SEP] (for the static baseline).
    pub fn encode_without_special_tokens(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self.inner.encode_fast(text, false).map_err(|e| {
            anyhow!(
                "tokenizer failed on a text of {} characters: {e}",
                text.chars().count()
            )
        })?;
        Ok(encoding.get_ids().to_vec())
    }

    /// One text's tokens with their labels and words, special tokens included or not (the ids
    /// are [`Self::encode`]'s; byte offsets are tracked here, which `encode_fast` skips).
    pub fn encode_pieces(&self, text: &str, special_tokens: bool) -> Result<Pieces> {
        let encoding = self.inner.encode(text, special_tokens).map_err(|e| {
            anyhow!(
                "tokenizer failed on a text of {} characters: {e}",
                text.chars().count()
            )
        })?;
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
