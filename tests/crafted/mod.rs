//! Hostile model files made from real ones (shared by the native fuzz test and the browser
//! test): metadata rewritten through candle's GGUF writer, or header bytes edited in place.
#![allow(dead_code)]

use std::io::Cursor;

use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::QTensor;
use candle_core::Device;

/// The file's metadata after `edit` (which may add, change or drop entries), tensors unchanged.
pub fn with_metadata(bytes: &[u8], edit: impl FnOnce(&mut Vec<(String, Value)>)) -> Vec<u8> {
    let content = Content::read(&mut Cursor::new(bytes)).expect("a real model file");
    let mut metadata: Vec<(String, Value)> = content.metadata.clone().into_iter().collect();
    metadata.sort_by(|a, b| a.0.cmp(&b.0));
    edit(&mut metadata);
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let tensors: Vec<(&str, QTensor)> = names
        .iter()
        .map(|name| {
            let tensor = content
                .tensor(&mut Cursor::new(bytes), name, &Device::Cpu)
                .expect("a real tensor");
            (name.as_str(), tensor)
        })
        .collect();
    let metadata: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (*k, v)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &metadata, &tensors).expect("written");
    out.into_inner()
}

/// Sets (or adds) one metadata entry.
pub fn set_metadata(bytes: &[u8], key: &str, value: Value) -> Vec<u8> {
    with_metadata(bytes, |m| {
        m.retain(|(k, _)| k != key);
        m.push((key.to_string(), value));
    })
}

/// Drops the metadata entries whose key starts with `prefix`.
pub fn drop_metadata(bytes: &[u8], prefix: &str) -> Vec<u8> {
    with_metadata(bytes, |m| m.retain(|(k, _)| !k.starts_with(prefix)))
}

/// Where the dimension count of tensor `name` sits in the header (right after the name,
/// found as its length-prefixed bytes).
pub fn tensor_entry(bytes: &[u8], name: &str) -> usize {
    let mut needle = (name.len() as u64).to_le_bytes().to_vec();
    needle.extend_from_slice(name.as_bytes());
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle.as_slice())
        .unwrap_or_else(|| panic!("tensor '{name}' is in the file"));
    at + needle.len()
}

/// The file with tensor `name`'s two dimensions replaced (GGUF order: columns first); the
/// tensor keeps its byte size when `dims` has the same product.
pub fn with_tensor_dims(bytes: &[u8], name: &str, dims: [u64; 2]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let at = tensor_entry(bytes, name);
    assert_eq!(u32::from_le_bytes(out[at..at + 4].try_into().unwrap()), 2);
    out[at + 4..at + 12].copy_from_slice(&dims[0].to_le_bytes());
    out[at + 12..at + 20].copy_from_slice(&dims[1].to_le_bytes());
    out
}

/// Our file's config JSON with one field changed.
pub fn with_config_field(bytes: &[u8], field: &str, value: u64) -> Vec<u8> {
    const KEY: &str = "srbench.config_json";
    with_metadata(bytes, |m| {
        let (_, config) = m.iter_mut().find(|(k, _)| k == KEY).expect("a config");
        let Value::String(json) = config else {
            panic!("config is a string")
        };
        let mut parsed: serde_json::Value = serde_json::from_str(json).unwrap();
        parsed[field] = value.into();
        *json = parsed.to_string();
    })
}

/// `bytes` with the first `from` replaced by `to` (same length, so the GGUF header's string
/// lengths still hold and the file reaches the tokenizer).
pub fn with_replaced(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| panic!("{} not in the file", String::from_utf8_lossy(from)));
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
}

/// Our MiniLM file with embedded tokenizer JSONs that `tokenizers` itself meets with a panic
/// (an `expect` in its decoder and normalizer deserializers), each with what it is.
pub fn tokenizer_panics(ours: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "8 bytes changed inside the decoder: its JSON no longer parses",
            with_replaced(
                ours,
                b"\"decoder\":{\"cleanup\":true",
                b"\"decoder\":{\"cleanup\"xtrue",
            ),
        ),
        (
            "a Precompiled normalizer without its charsmap",
            with_replaced(
                ours,
                b"\"type\":\"BertNormalizer\"}",
                b"\"type\":\"Precompiled\"   }",
            ),
        ),
    ]
}
