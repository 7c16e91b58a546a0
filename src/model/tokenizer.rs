//! Text → token ids, exactly as sentence-transformers does it: the model's own `tokenizer.json`,
//! no fixed padding, truncation at the model's `max_seq_length` (special tokens included).

use anyhow::{anyhow, Result};
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

/// The model's tokenizer with padding switched off and truncation at `max_seq_length`.
pub struct TextTokenizer {
    inner: Tokenizer,
    pad_id: u32,
}

impl TextTokenizer {
    pub fn from_json(json: &str, max_seq_length: usize, pad_id: u32) -> Result<Self> {
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

    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }
}
