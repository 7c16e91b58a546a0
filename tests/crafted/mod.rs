//! Hostile model files made from real ones (shared by the native fuzz test and the browser
//! test): metadata rewritten through candle's GGUF writer, or header bytes edited in place.
#![allow(dead_code)]

use std::io::Cursor;

use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;

/// The file's metadata after `edit` (which may add, change or drop entries), tensors unchanged.
pub fn with_metadata(bytes: &[u8], edit: impl FnOnce(&mut Vec<(String, Value)>)) -> Vec<u8> {
    rewritten(bytes, edit, |_, tensor| tensor)
}

/// The file with its metadata after `edit` and each tensor replaced by `map(name, tensor)`.
pub fn rewritten(
    bytes: &[u8],
    edit: impl FnOnce(&mut Vec<(String, Value)>),
    map: impl Fn(&str, QTensor) -> QTensor,
) -> Vec<u8> {
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
            (name.as_str(), map(name, tensor))
        })
        .collect();
    let metadata: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (*k, v)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &metadata, &tensors).expect("written");
    out.into_inner()
}

/// llama-quantize's K-quant mixes (`llama_tensor_get_type`), for files made here from an f32
/// file (the pinned converter writes no K-quant): every matrix in the mix's type, Q6_K for the
/// token table (tied to the output, as in Qwen3 and Gemma) and, in Q4_K_M and Q5_K_M, for
/// `attn_v` and `ffn_down` of the layers llama.cpp gives more bits (the first and last eighth,
/// every third between); a matrix whose rows are not whole blocks of 256 falls back as
/// llama.cpp's does (Q4_K → q5_0, Q5_K → q5_1, Q6_K → q8_0). Norms stay f32.
#[derive(Debug, Clone, Copy)]
pub enum KMix {
    Q4KM,
    Q5KM,
    Q6K,
}

impl KMix {
    pub const ALL: [KMix; 3] = [KMix::Q4KM, KMix::Q5KM, KMix::Q6K];

    /// llama.cpp's `general.file_type` of the mix, and its name.
    pub fn file_type(self) -> (u32, &'static str) {
        match self {
            KMix::Q4KM => (15, "q4_k_m"),
            KMix::Q5KM => (17, "q5_k_m"),
            KMix::Q6K => (18, "q6_k"),
        }
    }

    fn dtype(self, name: &str, layers: usize, columns: usize) -> GgmlDType {
        let layer = name
            .strip_prefix("blk.")
            .and_then(|r| r.split('.').next())
            .and_then(|i| i.parse::<usize>().ok());
        let more_bits = |i: usize| {
            let eighth = layers / 8;
            i < eighth || i >= 7 * layers / 8 || (i - eighth) % 3 == 2
        };
        let base = match self {
            KMix::Q4KM => GgmlDType::Q4K,
            KMix::Q5KM => GgmlDType::Q5K,
            KMix::Q6K => GgmlDType::Q6K,
        };
        let wanted = if name == "token_embd.weight"
            || ((name.contains(".attn_v.") || name.contains(".ffn_down."))
                && layer.is_some_and(more_bits))
        {
            GgmlDType::Q6K
        } else {
            base
        };
        match (wanted, columns.is_multiple_of(256)) {
            (d, true) => d,
            (GgmlDType::Q4K, false) => GgmlDType::Q5_0,
            (GgmlDType::Q5K, false) => GgmlDType::Q5_1,
            _ => GgmlDType::Q8_0,
        }
    }
}

/// The f32 llama.cpp file `f32_file` quantized to the K-quant mix `mix` (candle's ports of
/// ggml's reference quantizers).
pub fn k_quants(f32_file: &[u8], mix: KMix) -> Vec<u8> {
    let layers = f32_file_layers(f32_file);
    rewritten(
        f32_file,
        |m| {
            m.retain(|(k, _)| k != "general.file_type");
            m.push(("general.file_type".into(), Value::U32(mix.file_type().0)));
        },
        |name, tensor| {
            let dims = tensor.shape().dims().to_vec();
            if dims.len() < 2 {
                return tensor;
            }
            let values = tensor.dequantize(&Device::Cpu).expect("f32 values");
            let dtype = mix.dtype(name, layers, dims[dims.len() - 1]);
            QTensor::quantize(&values, dtype).expect("quantized")
        },
    )
}

/// A file's every tensor dequantized to f32 (what a K-quant file holds, without the q8_0
/// rounding the loader adds).
pub fn dequantized(file: &[u8]) -> Vec<u8> {
    rewritten(
        file,
        |m| {
            m.retain(|(k, _)| k != "general.file_type");
            m.push(("general.file_type".into(), Value::U32(0)));
        },
        |_, tensor| {
            let values = tensor.dequantize(&Device::Cpu).expect("f32 values");
            QTensor::quantize(&values, GgmlDType::F32).expect("f32")
        },
    )
}

fn f32_file_layers(bytes: &[u8]) -> usize {
    let content = Content::read(&mut Cursor::new(bytes)).expect("a real model file");
    let arch = content.metadata["general.architecture"]
        .to_string()
        .expect("named")
        .clone();
    content.metadata[&format!("{arch}.block_count")]
        .to_u32()
        .expect("a layer count") as usize
}

/// One metadata entry of the file, as it is.
pub fn metadata(bytes: &[u8], key: &str) -> Option<Value> {
    let content = Content::read(&mut Cursor::new(bytes)).expect("a real model file");
    content.metadata.get(key).cloned()
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
        (
            "a Precompiled charsmap whose trie leads past its end on 'a' (at encode time)",
            with_precompiled(ours, &charsmap(0x61 | 1 << 8 | 0xFFFF << 10, 1 << 31)),
        ),
        (
            "a Precompiled charsmap whose 'a' maps past its strings (at encode time)",
            with_precompiled(ours, &charsmap(0x61 | 1 << 8 | 3 << 10, 1 << 31 | 9)),
        ),
        (
            "a template naming a special token it does not define (at encode time)",
            with_replaced(ours, b"\"special_tokens\":{\"[CLS]\"", b"\"special_tokens\":{\"[CLX]\""),
        ),
        (
            "a single template using the second sequence (at encode time)",
            with_replaced(
                ours,
                b"\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\"",
                b"\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}},{\"Sequence\":{\"id\":\"B\"",
            ),
        ),
        (
            "a Precompiled charsmap of an empty trie (at encode time)",
            with_precompiled(ours, &0u32.to_le_bytes()),
        ),
    ]
}

/// A charsmap of 256 units mapping "a" to "b" as [`mutate_charsmap`] builds it, with the unit
/// of 'a' and of its leaf given (`charsmap(0x61 | 1 << 8 | 3 << 10, 1 << 31)` is valid).
pub fn charsmap(a: u32, leaf: u32) -> Vec<u8> {
    let mut units = vec![0u32; 256];
    units[0x61] = a;
    units[0x61 ^ 3] = leaf;
    let mut out = 1024u32.to_le_bytes().to_vec();
    for u in units {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out.extend_from_slice(b"b\0");
    out
}

/// Our file with its tokenizer JSON edited (any length: the header is rewritten).
pub fn with_tokenizer_json(ours: &[u8], edit: impl FnOnce(&mut Json)) -> Vec<u8> {
    let base = Base::new(ours.to_vec());
    let mut entries = base.entries.clone();
    let (_, Value::String(json)) = entries
        .iter_mut()
        .find(|(k, _)| k == TOKENIZER_KEY)
        .unwrap()
    else {
        panic!("a tokenizer JSON")
    };
    let mut parsed: Json = serde_json::from_str(json).unwrap();
    edit(&mut parsed);
    *json = parsed.to_string();
    base.with_entries(&entries)
}

/// Our file with its normalizer replaced by a Precompiled one of this charsmap.
pub fn with_precompiled(ours: &[u8], charsmap: &[u8]) -> Vec<u8> {
    with_tokenizer_json(ours, |json| {
        json["normalizer"] = serde_json::json!({
            "type": "Precompiled",
            "precompiled_charsmap": base64(charsmap),
        });
    })
}

// ---------------------------------------------------------------------------------------------
// Seeded mutations of whole files, shared by the native fuzz (`fuzz_model_files`) and the
// browser one (`browser_untrusted`): the same generator runs natively and in wasm32, so no
// std::fs here. The mutations keep the file a valid GGUF (the header is re-serialised with the
// right lengths and padding) so that they reach the metadata checks, the tokenizer and the
// encoder rather than stopping at the GGUF reader.

use serde_json::Value as Json;

/// SplitMix64: a fixed, dependency-free pseudo-random sequence.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A real file split into what the mutations rewrite: its metadata entries (in file order,
/// each with its raw bytes), the tensor table's bytes and the tensor data.
pub struct Base {
    pub bytes: Vec<u8>,
    pub entries: Vec<(String, Value)>,
    /// The tensor table (raw, copied unchanged), the start of the tensor data, the alignment.
    infos: std::ops::Range<usize>,
    data_offset: usize,
    alignment: usize,
    /// The embedded JSONs of our files, parsed once.
    tokenizer: Option<Json>,
    config: Option<Json>,
}

const TOKENIZER_KEY: &str = "srbench.tokenizer_json";
const CONFIG_KEY: &str = "srbench.config_json";

/// Reads a GGUF string / skips a value, returning the offset after it (a real file: unwraps).
fn skip_string(b: &[u8], at: usize) -> usize {
    at + 8 + u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

fn skip_value(b: &[u8], at: usize, kind: u32) -> usize {
    match kind {
        0 | 1 | 7 => at + 1,
        2 | 3 => at + 2,
        4..=6 => at + 4,
        10..=12 => at + 8,
        8 => skip_string(b, at),
        9 => {
            let item = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
            let n = u64::from_le_bytes(b[at + 4..at + 12].try_into().unwrap());
            (0..n).fold(at + 12, |at, _| skip_value(b, at, item))
        }
        _ => panic!("value type {kind} in a real file"),
    }
}

impl Base {
    pub fn new(bytes: Vec<u8>) -> Self {
        let content = Content::read(&mut Cursor::new(&bytes)).expect("a real model file");
        let kv_count = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
        let mut at = 24;
        let mut entries = Vec::new();
        for _ in 0..kv_count {
            let key_end = skip_string(&bytes, at);
            let key = String::from_utf8(bytes[at + 8..key_end].to_vec()).unwrap();
            let kind = u32::from_le_bytes(bytes[key_end..key_end + 4].try_into().unwrap());
            at = skip_value(&bytes, key_end + 4, kind);
            entries.push((key.clone(), content.metadata[&key].clone()));
        }
        let infos_start = at;
        for _ in 0..content.tensor_infos.len() {
            let name_end = skip_string(&bytes, at);
            let dims = u32::from_le_bytes(bytes[name_end..name_end + 4].try_into().unwrap());
            at = name_end + 4 + 8 * dims as usize + 4 + 8;
        }
        let alignment = content
            .metadata
            .get("general.alignment")
            .and_then(|v| v.to_u32().ok())
            .unwrap_or(32) as usize;
        let json = |key: &str| match content.metadata.get(key) {
            Some(Value::String(s)) => serde_json::from_str(s).ok(),
            _ => None,
        };
        Self {
            tokenizer: json(TOKENIZER_KEY),
            config: json(CONFIG_KEY),
            infos: infos_start..at,
            data_offset: content.tensor_data_offset as usize,
            alignment,
            entries,
            bytes,
        }
    }

    /// The file with these metadata entries (any values, any order, duplicates allowed) and the
    /// tensor table and data unchanged: a valid GGUF whatever the entries hold.
    pub fn with_entries(&self, entries: &[(String, Value)]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes.len() + 4096);
        out.extend_from_slice(&self.bytes[..16]); // magic, version, tensor count
        out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        for (key, value) in entries {
            put_string(&mut out, key);
            out.extend_from_slice(&value_type(value).to_le_bytes());
            put_value(&mut out, value);
        }
        out.extend_from_slice(&self.bytes[self.infos.clone()]);
        out.resize(out.len().div_ceil(self.alignment) * self.alignment, 0);
        out.extend_from_slice(&self.bytes[self.data_offset..]);
        out
    }

    /// One seeded mutation of the whole file: what it was, and the bytes.
    pub fn mutate(&self, rng: &mut Rng) -> (&'static str, Vec<u8>) {
        let mut entries = self.entries.clone();
        let set = |entries: &mut Vec<(String, Value)>, key: &str, value: Value| {
            if let Some(e) = entries.iter_mut().find(|(k, _)| k == key) {
                e.1 = value;
            }
        };
        let kind = match (rng.below(10), &self.tokenizer, &self.config) {
            (0..=3, Some(tokenizer), _) => {
                let mut json = tokenizer.clone();
                for _ in 0..1 + rng.below(3) {
                    mutate_json(&mut json, tokenizer, rng);
                }
                set(
                    &mut entries,
                    TOKENIZER_KEY,
                    Value::String(to_text(&json, rng)),
                );
                "tokenizer JSON, structure"
            }
            (4, Some(tokenizer), _) => {
                let text = mutate_text(tokenizer.to_string(), rng);
                set(&mut entries, TOKENIZER_KEY, Value::String(text));
                "tokenizer JSON, bytes"
            }
            (5, _, Some(config)) => {
                let mut json = config.clone();
                for _ in 0..1 + rng.below(2) {
                    mutate_json(&mut json, config, rng);
                }
                set(&mut entries, CONFIG_KEY, Value::String(to_text(&json, rng)));
                "config JSON"
            }
            (9, _, _) => return ("bytes", self.mutate_bytes(rng)),
            _ => {
                mutate_entries(&mut entries, rng);
                "metadata"
            }
        };
        (kind, self.with_entries(&entries))
    }

    /// Bytes flipped or set in place (the tensor table, the header, the data) or a cut.
    fn mutate_bytes(&self, rng: &mut Rng) -> Vec<u8> {
        let mut out = self.bytes.clone();
        for _ in 0..1 + rng.below(4) {
            let at = match rng.below(3) {
                0 => self.infos.start + rng.below(self.infos.len()),
                1 => rng.below(self.data_offset),
                _ => rng.below(out.len()),
            };
            match rng.below(3) {
                0 => out[at] ^= 1 << rng.below(8),
                1 => out[at] = *rng.pick(&[0, 0xFF, 0x7F, 0x80]),
                _ => out[at] = rng.next() as u8,
            }
        }
        out
    }
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// GGUF's value type ids (an empty array says u32 items).
fn value_type(value: &Value) -> u32 {
    match value {
        Value::U8(_) => 0,
        Value::I8(_) => 1,
        Value::U16(_) => 2,
        Value::I16(_) => 3,
        Value::U32(_) => 4,
        Value::I32(_) => 5,
        Value::F32(_) => 6,
        Value::Bool(_) => 7,
        Value::String(_) => 8,
        Value::Array(_) => 9,
        Value::U64(_) => 10,
        Value::I64(_) => 11,
        Value::F64(_) => 12,
    }
}

fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U8(v) => out.push(*v),
        Value::I8(v) => out.push(*v as u8),
        Value::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::Bool(v) => out.push(*v as u8),
        Value::String(v) => put_string(out, v),
        Value::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::Array(items) => {
            // The items' type is the first's; later items of another type are cast to it
            // by mutate_value's callers (arrays stay homogeneous).
            let item = items.first().map_or(4, value_type);
            out.extend_from_slice(&item.to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for v in items {
                put_value(out, v);
            }
        }
    }
}

/// The metadata changed: one entry's value (by type or value), dropped, duplicated, or an
/// entry added. Entries with numbers (sizes, ids, dims, counts) are picked most often.
fn mutate_entries(entries: &mut Vec<(String, Value)>, rng: &mut Rng) {
    let numeric: Vec<usize> = (0..entries.len())
        .filter(|&i| !matches!(entries[i].1, Value::String(_)))
        .collect();
    let i = if rng.below(3) > 0 && !numeric.is_empty() {
        *rng.pick(&numeric)
    } else {
        rng.below(entries.len())
    };
    match rng.below(10) {
        0 => {
            entries.remove(i);
        }
        1 => {
            let copy = (entries[i].0.clone(), mutate_value(&entries[i].1, rng));
            entries.push(copy);
        }
        2 => {
            let key = *rng.pick(&[
                "general.alignment",
                "srbench.max_seq_length",
                "srbench.pooling",
                "bert.pooling_type",
                "bert.context_length",
                "tokenizer.ggml.padding_token_id",
                "srbench.format_version",
            ]);
            let value = mutate_value(&Value::U32(rng.below(1024) as u32), rng);
            entries.push((key.to_string(), value));
        }
        _ => entries[i].1 = mutate_value(&entries[i].1, rng),
    }
}

/// A number as every integer type (wrapping), for type changes that keep the value.
fn as_types(v: i128) -> [Value; 8] {
    [
        Value::U8(v as u8),
        Value::I8(v as i8),
        Value::U16(v as u16),
        Value::I16(v as i16),
        Value::U32(v as u32),
        Value::I32(v as i32),
        Value::U64(v as u64),
        Value::I64(v as i64),
    ]
}

fn number_of(value: &Value) -> Option<i128> {
    Some(match value {
        Value::U8(v) => *v as i128,
        Value::I8(v) => *v as i128,
        Value::U16(v) => *v as i128,
        Value::I16(v) => *v as i128,
        Value::U32(v) => *v as i128,
        Value::I32(v) => *v as i128,
        Value::U64(v) => *v as i128,
        Value::I64(v) => *v as i128,
        Value::Bool(v) => *v as i128,
        Value::F32(v) => *v as i128,
        Value::F64(v) => *v as i128,
        _ => return None,
    })
}

/// Another value for a metadata entry: the same type with an edge value, another type, or
/// (arrays) other lengths and items.
pub fn mutate_value(value: &Value, rng: &mut Rng) -> Value {
    if let (Value::Array(items), true) = (value, rng.below(4) > 0) {
        let mut items = items.clone();
        match rng.below(6) {
            0 => items.truncate(rng.below(items.len() + 1)),
            1 => items.clear(),
            2 if !items.is_empty() => {
                // Duplicated entries (a token twice, a vocabulary longer than the matrix).
                let from = rng.below(items.len());
                let copies = 1 + rng.below(64);
                let item = items[from].clone();
                items.splice(from..from, std::iter::repeat_n(item, copies));
            }
            3 if !items.is_empty() => {
                let at = rng.below(items.len());
                items[at] = mutate_value(&items[at], rng);
                // The array stays of one type: the item's new type becomes everyone's only
                // when it is the same type.
                if value_type(&items[at]) != value_type(&items[0]) {
                    items[at] = items[0].clone();
                }
            }
            4 => items.reverse(),
            _ => return Value::Array(vec![Value::String(String::new()); rng.below(3)]),
        }
        return Value::Array(items);
    }
    let n = number_of(value).unwrap_or(rng.below(600) as i128);
    match rng.below(8) {
        // The same value as another type.
        0 => rng.pick(&as_types(n)).clone(),
        1 => Value::F32(*rng.pick(&[f32::NAN, f32::INFINITY, -1.0, 0.0, 1e30, n as f32 + 0.5])),
        2 => Value::String(
            rng.pick(&[
                "", "mean", "cls", "bert", "mpnet", "q8_0", "{}", "[", "\u{0}",
            ])
            .to_string(),
        ),
        3 => Value::Bool(rng.below(2) == 1),
        4 => Value::Array(vec![value.clone(); rng.below(3)]),
        // Edge values, in the entry's own type where it has one.
        _ => {
            let v = *rng.pick(&[
                0,
                1,
                -1,
                2,
                n.wrapping_add(1),
                n.wrapping_sub(1),
                n.wrapping_mul(2),
                n.wrapping_mul(1000),
                u32::MAX as i128,
                1 << 31,
                u64::MAX as i128,
                i64::MIN as i128,
            ]);
            let types = as_types(v);
            let same = types
                .iter()
                .find(|t| value_type(t) == value_type(value))
                .unwrap_or(&types[4]);
            same.clone()
        }
    }
}

/// Known `type` tags of tokenizers' components, for swapping one for another.
const TYPES: &[&str] = &[
    "BertNormalizer",
    "Precompiled",
    "Sequence",
    "NFC",
    "NFKD",
    "Lowercase",
    "Strip",
    "Replace",
    "Prepend",
    "BertPreTokenizer",
    "ByteLevel",
    "Metaspace",
    "Split",
    "Punctuation",
    "Whitespace",
    "Digits",
    "WordPiece",
    "BPE",
    "Unigram",
    "WordLevel",
    "TemplateProcessing",
    "BertProcessing",
    "RobertaProcessing",
    "CTC",
    "Fuse",
    "ByteFallback",
];

/// A node `depth` steps down random children of `v` (or the last one with children).
fn node_at<'a>(v: &'a mut Json, rng: &mut Rng, depth: usize) -> &'a mut Json {
    let n = match v {
        Json::Object(m) => m.len(),
        Json::Array(a) => a.len(),
        _ => 0,
    };
    if depth == 0 || n == 0 {
        return v;
    }
    let i = rng.below(n);
    match v {
        Json::Object(m) => node_at(m.values_mut().nth(i).unwrap(), rng, depth - 1),
        Json::Array(a) => node_at(&mut a[i], rng, depth - 1),
        _ => unreachable!(),
    }
}

/// A marker that [`to_text`] replaces by 10,000 nested arrays or objects (too deep to build
/// as a `serde_json::Value` without risking the stack when it is dropped).
const DEEP: &str = "@@deep@@";

/// One structural change at a random node of `json`: keys deleted or renamed, a value of
/// another type or length, nesting far deeper than any parser allows, a sub-object of another
/// section (`donor` is the original), a `type` tag swapped, a Precompiled normalizer.
pub fn mutate_json(json: &mut Json, donor: &Json, rng: &mut Rng) {
    let (op, depth) = (rng.below(12), rng.below(6));
    // Tag swaps and Precompiled charsmaps aim at the normalizer half of the time (it runs on
    // every text), else at a random node.
    let node = if op >= 7 && json.is_object() && rng.below(2) == 0 {
        &mut json["normalizer"]
    } else {
        node_at(json, rng, depth)
    };
    match op {
        0 | 1 => {
            if let Json::Object(m) = node {
                if !m.is_empty() {
                    let key = m.keys().nth(rng.below(m.len())).unwrap().clone();
                    let value = m.remove(&key).unwrap();
                    if rng.below(2) == 0 {
                        // Renamed: a near miss, or another known key.
                        let to = *rng.pick(&["type", "vocab", "normalizer", "decoder", "id", ""]);
                        m.insert(format!("{key}{}", &to[..to.len().min(rng.below(3))]), value);
                    }
                    return;
                }
            }
            *node = Json::Null;
        }
        2 | 3 => {
            *node = match rng.below(10) {
                0 => Json::Null,
                1 => Json::Bool(true),
                2 => Json::from(*rng.pick(&[0i64, -1, 1, i64::MAX, i64::MIN, u32::MAX as i64])),
                3 => Json::from(*rng.pick(&[0.5f64, -1e300, 1e300])),
                4 => Json::from(u64::MAX),
                5 => Json::String(String::new()),
                6 => Json::String("ü".repeat(rng.below(200_000))),
                7 => Json::Array(vec![]),
                8 => Json::Object(Default::default()),
                _ => Json::String(DEEP.into()),
            }
        }
        4 => match node {
            // Lengths: arrays cut or with entries duplicated; strings emptied or huge.
            Json::Array(a) if !a.is_empty() => {
                if rng.below(2) == 0 {
                    a.truncate(rng.below(a.len()));
                } else {
                    let item = a[rng.below(a.len())].clone();
                    let at = rng.below(a.len());
                    a.splice(at..at, std::iter::repeat_n(item, 1 + rng.below(100)));
                }
            }
            Json::String(s) => *s = s.repeat([0, 2, 1000][rng.below(3)]),
            Json::Object(m) if !m.is_empty() => {
                // A key duplicated under another name with the same value.
                let (k, v) = m.iter().nth(rng.below(m.len())).unwrap();
                let (k, v) = (format!("{k}2"), v.clone());
                m.insert(k, v);
            }
            _ => *node = Json::Array(vec![node.clone(); 2]),
        },
        5 | 6 => {
            // Another section's sub-object here (a decoder where a normalizer is).
            if let Json::Object(sections) = donor {
                let section = sections.values().nth(rng.below(sections.len())).unwrap();
                let mut section = section.clone();
                let depth = rng.below(2);
                *node = node_at(&mut section, rng, depth).clone();
            }
        }
        7 | 8 => {
            // A `type` tag swapped in (or added to) an object, or an object of just a tag.
            let tag = Json::from(*rng.pick(TYPES));
            if let Json::Object(m) = node {
                m.insert("type".into(), tag);
            } else {
                *node = serde_json::json!({ "type": tag });
            }
        }
        _ => {
            // A Precompiled normalizer with a charsmap valid or broken.
            let charsmap = base64(&mutate_charsmap(rng));
            let normalizer = serde_json::json!({
                "type": "Precompiled",
                "precompiled_charsmap": charsmap,
            });
            *node = normalizer;
        }
    }
}

/// The JSON as text, the deep-nesting markers replaced, maybe pretty-printed.
fn to_text(json: &Json, rng: &mut Rng) -> String {
    let text = if rng.below(4) == 0 {
        serde_json::to_string_pretty(json).unwrap()
    } else {
        json.to_string()
    };
    let marker = format!("\"{DEEP}\"");
    if !text.contains(&marker) {
        return text;
    }
    let (open, close) = if rng.below(2) == 0 {
        ("[", "]")
    } else {
        ("{\"a\":", "}")
    };
    let deep = format!("{}1{}", open.repeat(10_000), close.repeat(10_000));
    text.replace(&marker, &deep)
}

/// The JSON text with bytes changed, removed, inserted, or cut short (kept valid UTF-8: the
/// GGUF string must still read, so that the JSON parser meets the damage).
pub fn mutate_text(text: String, rng: &mut Rng) -> String {
    let mut bytes = text.into_bytes();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(bytes.len());
        let byte = *rng.pick(b"{}[]\",:0-9.e \\ntruex");
        match rng.below(5) {
            0 => bytes[at] = byte,
            1 => bytes[at] ^= 1 << rng.below(7),
            2 => drop(bytes.drain(at..(at + 1 + rng.below(64)).min(bytes.len()))),
            3 => bytes.insert(at, byte),
            _ => bytes.truncate(at),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A Precompiled charsmap (`[trie size: u32][trie: u32 units][normalized strings]`, as
/// sentencepiece writes it) mapping "a" to "b", then maybe damaged: units set to edge values,
/// the trie cut short, the strings cut, lengths that disagree.
pub fn mutate_charsmap(rng: &mut Rng) -> Vec<u8> {
    // A double array of 256 units: the root's children are at the byte's own index; 'a' has a
    // leaf at 'a' ^ 3 whose value is offset 0 in "b\0".
    let mut units = vec![0u32; 256];
    units[0x61] = 0x61 | 1 << 8 | 3 << 10;
    units[0x61 ^ 3] = 1 << 31;
    let mut normalized = b"b\0".to_vec();
    for _ in 0..rng.below(4) {
        match rng.below(6) {
            0 => {
                let (any, random) = (rng.below(256), rng.next() as u32);
                let at = *rng.pick(&[0, 0x61, 0x62, any]);
                // All bits; a leaf's value past the strings; a child far past the end; the
                // offset's shift bit; anything.
                let unit = [
                    u32::MAX,
                    1 << 31 | 7,
                    0x61 | 1 << 8 | 0xFFFF << 10,
                    0x61 | 1 << 9 | 1 << 8 | 1 << 10,
                    random,
                ];
                let unit = *rng.pick(&unit);
                if let Some(u) = units.get_mut(at) {
                    *u = unit;
                }
            }
            1 => units.truncate(rng.below(units.len() + 1)),
            2 => normalized = "é\0".into(),
            3 => {
                let value = 1 << 31 | rng.below(8) as u32;
                if let Some(u) = units.get_mut(0x61 ^ 3) {
                    *u = value;
                }
            }
            4 => normalized.clear(),
            _ => {
                let root = (rng.below(1 << 12) as u32) << 10;
                if let Some(u) = units.first_mut() {
                    *u = root;
                }
            }
        }
    }
    let mut out = ((units.len() * 4) as u32).to_le_bytes().to_vec();
    for u in &units {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out.extend_from_slice(&normalized);
    if rng.below(8) == 0 {
        out.truncate(rng.below(out.len()));
    }
    out
}

/// Standard base64 with padding (what the Precompiled deserializer reads).
pub fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | b as u32) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            let c = if i <= chunk.len() {
                ABC[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            };
            out.push(c);
        }
    }
    out
}
