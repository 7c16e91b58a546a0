//! Which tensors of a `model.safetensors` the encoder uses, by the names sr-bench's encoders
//! read them (Hugging Face's, without the `bert.` / `mpnet.` prefix a task model adds), and
//! the weight format each is stored in.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use candle_core::quantized::GgmlDType;

use crate::model::{Architecture, EncoderConfig, WORD_EMBEDDINGS};

/// The tensors to write: file name → name in the safetensors file; and what is left out.
#[derive(Debug, Clone, Default)]
pub struct TensorPlan {
    pub keep: BTreeMap<String, String>,
    /// Tensors of the safetensors file that embeddings do not use (heads, the pooler).
    pub left_out: Vec<String>,
}

/// Prefixes of the parts of a checkpoint embeddings do not use: BERT's pooler (the
/// classification head's input), masked-LM and other task heads.
const HEADS: &[&str] = &["pooler.", "cls.", "lm_head.", "classifier.", "qa_outputs."];

/// Tensor names and shapes from a safetensors header (8-byte length, then JSON), without
/// reading the data.
pub fn header(bytes: &[u8]) -> Result<BTreeMap<String, Vec<usize>>> {
    let invalid = || anyhow!("model.safetensors is not a valid safetensors file");
    let len = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .ok_or_else(invalid)?;
    let json = usize::try_from(len)
        .ok()
        .and_then(|len| bytes.get(8..8usize.checked_add(len)?))
        .ok_or_else(invalid)?;
    let entries: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(json).with_context(invalid)?;
    let mut out = BTreeMap::new();
    for (name, entry) in entries {
        if name == "__metadata__" {
            continue;
        }
        let shape: Vec<usize> =
            serde_json::from_value(entry["shape"].clone()).with_context(invalid)?;
        out.insert(name, shape);
    }
    Ok(out)
}

/// Maps the safetensors tensors onto what the encoder reads: every expected tensor present
/// (under its own name or with a `<model_type>.` prefix), heads left out, anything else an
/// error (a variant of the architecture the encoder would silently run wrong).
pub fn plan(
    architecture: Architecture,
    prefix: &str,
    config: &EncoderConfig,
    safetensors: &[u8],
) -> Result<TensorPlan> {
    let shapes = header(safetensors)?;
    let mut by_name: BTreeMap<String, String> = BTreeMap::new();
    let mut out = TensorPlan::default();
    let mut unknown = Vec::new();
    for stored in shapes.keys() {
        let name = stored.strip_prefix(prefix).unwrap_or(stored);
        if name.ends_with("position_ids") {
            continue; // an integer buffer Hugging Face saves with the weights
        }
        if HEADS.iter().any(|h| name.starts_with(h)) {
            out.left_out.push(stored.clone());
        } else {
            by_name.insert(name.to_string(), stored.clone());
        }
    }
    // The model file's own list of what an encoder reads.
    for name in crate::model::expected_tensor_names(architecture, config) {
        match by_name.remove(&name) {
            Some(stored) => {
                out.keep.insert(name, stored);
            }
            None => unknown.push(name),
        }
    }
    if !unknown.is_empty() || !by_name.is_empty() {
        let found: Vec<&str> = shapes.keys().map(String::as_str).take(3).collect();
        let extra: Vec<&str> = by_name.keys().map(String::as_str).take(3).collect();
        bail!(
            "safetensors tensor names not recognized for {architecture} with {} layers: \
             {} expected tensor(s) missing (first: {}){}; the file has {} tensors (first: {})",
            config.num_hidden_layers,
            unknown.len(),
            unknown.first().map_or("none", String::as_str),
            if extra.is_empty() {
                String::new()
            } else {
                format!(", {} unknown (first: {})", by_name.len(), extra.join(", "))
            },
            shapes.len(),
            found.join(", ")
        );
    }
    let words = &shapes[&out.keep[WORD_EMBEDDINGS]];
    if words.as_slice() != [config.vocab_size, config.hidden_size] {
        bail!(
            "{WORD_EMBEDDINGS} has shape {words:?}, config.json says [{}, {}]",
            config.vocab_size,
            config.hidden_size
        );
    }
    Ok(out)
}

/// Which on-disk format a tensor gets: linear weights and the token table are quantized,
/// everything small (biases, LayerNorm, position tables) stays f32.
pub fn storage_dtype(name: &str, shape: &[usize], target: GgmlDType) -> GgmlDType {
    let is_matrix = shape.len() == 2 && shape[1].is_multiple_of(target.block_size());
    let is_linear = name.ends_with(".weight")
        && !name.starts_with("embeddings.")
        && !name.contains("relative_attention_bias");
    if !is_matrix || target == GgmlDType::F32 {
        GgmlDType::F32
    } else if name == WORD_EMBEDDINGS {
        // Looked-up rows are not averaged out by a dot product: 4-bit rows cost accuracy
        // for little size, so the token table is at least 8-bit.
        GgmlDType::Q8_0
    } else if is_linear {
        target
    } else {
        GgmlDType::F32
    }
}
