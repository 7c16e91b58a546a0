//! llama.cpp's own keys for a BERT model with a WordPiece vocabulary, written beside ours so
//! the same file loads in llama.cpp and its ports (wllama measured): the hyper-parameters
//! under `bert.*`, the pooling, the quantisation, and the vocabulary as `tokenizer.ggml.*` in
//! llama.cpp's "phantom space" spelling (the inverse of what [`crate::model`] reads from
//! llama.cpp's files).
//! The values are the ones llama.cpp's converter writes for the same model; `tests/llama_keys.rs`
//! compares them key by key with the pinned converter's file.
//!
//! Other models keep our first layout: llama.cpp has no MPNet (relative-position buckets), no
//! max pooling, and reads BERT only with GELU.

use std::collections::{BTreeMap, HashMap};

use anyhow::{anyhow, bail, Context, Result};
use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::GgmlDType;
use serde_json::Value as Json;

use crate::model::architecture::Vocabulary;
use crate::model::llama_spelling::{
    pooling_type, CONTROL, NORMAL, UNUSED, USER_DEFINED, WORD_START,
};
use crate::model::{Architecture, EncoderConfig, Pooling};

/// The keys, or `None` when llama.cpp cannot run the model as we do (then the file keeps our
/// first layout, Hugging Face's tensor names and our keys alone). `tokenizer_json` is the
/// prepared tokenizer the file carries.
pub fn keys(
    architecture: Architecture,
    config: &EncoderConfig,
    pooling: Pooling,
    dtype: GgmlDType,
    tokenizer_json: &str,
) -> Result<Option<Vec<(String, Value)>>> {
    let Some(pooling) = pooling_type(pooling) else {
        return Ok(None);
    };
    let tokenizer: Json =
        serde_json::from_str(tokenizer_json).context("tokenizer.json is not valid JSON")?;
    let model = &tokenizer["model"];
    let bert = matches!(architecture, Architecture::Bert) && config.hidden_act == "gelu";
    if !bert || model["type"] != "WordPiece" || model["continuing_subword_prefix"] != "##" {
        return Ok(None);
    }
    let file_type = match dtype {
        GgmlDType::F32 => 0u32,
        GgmlDType::F16 => 1,
        GgmlDType::Q4_0 => 2,
        GgmlDType::Q8_0 => 7,
        other => bail!("no llama.cpp file type for {other:?}"),
    };
    let Some(vocab) = Vocab::read(&tokenizer, config.vocab_size)? else {
        return Ok(None);
    };
    let u32_of = |n: usize, what: &str| {
        u32::try_from(n).map_err(|_| anyhow!("{what} = {n} does not fit llama.cpp's u32"))
    };
    let b = |k: &str| format!("{}.{k}", architecture.name());
    let t = |k: &str| format!("tokenizer.ggml.{k}");
    let mut keys = vec![
        (
            b("block_count"),
            Value::U32(u32_of(config.num_hidden_layers, "layers")?),
        ),
        (
            b("context_length"),
            Value::U32(u32_of(config.max_position_embeddings, "positions")?),
        ),
        (
            b("embedding_length"),
            Value::U32(u32_of(config.hidden_size, "hidden size")?),
        ),
        (
            b("feed_forward_length"),
            Value::U32(u32_of(config.intermediate_size, "ffn")?),
        ),
        (
            b("attention.head_count"),
            Value::U32(u32_of(config.num_attention_heads, "heads")?),
        ),
        (
            b("attention.layer_norm_epsilon"),
            Value::F32(config.layer_norm_eps as f32),
        ),
        (b("attention.causal"), Value::Bool(false)),
        (b("pooling_type"), Value::U32(pooling)),
        ("general.file_type".into(), Value::U32(file_type)),
        ("general.quantization_version".into(), Value::U32(2)),
        (
            t("token_type_count"),
            Value::U32(u32_of(config.type_vocab_size.max(1), "token types")?),
        ),
        (
            t("model"),
            Value::String(Vocabulary::WordPiece.ggml_name().into()),
        ),
        // llama.cpp reads a pre-tokenizer for BPE vocabularies only; WordPiece runs its own.
        (t("pre"), Value::String("default".into())),
        (
            t("tokens"),
            Value::Array(vocab.tokens.into_iter().map(Value::String).collect()),
        ),
        (
            t("token_type"),
            Value::Array(
                vocab
                    .types
                    .into_iter()
                    .map(|t| Value::I32(t as i32))
                    .collect(),
            ),
        ),
        (t("add_bos_token"), Value::Bool(true)),
        (t("add_eos_token"), Value::Bool(true)),
        (t("add_sep_token"), Value::Bool(false)),
        (t("normalizer.lowercase"), Value::Bool(vocab.lowercase)),
    ];
    let id = |k: &str, id: u32| (t(&format!("{k}_token_id")), Value::U32(id));
    keys.push(id("bos", vocab.cls));
    keys.push(id("eos", vocab.sep));
    keys.push(id("unknown", vocab.unk));
    keys.push(id("seperator", vocab.sep));
    keys.push(id("padding", u32_of(config.pad_token_id, "pad token id")?));
    if let Some(mask) = vocab.mask {
        keys.push(id("mask", mask));
    }
    Ok(Some(keys))
}

/// The vocabulary as llama.cpp spells it, and the ids of its special tokens.
struct Vocab {
    tokens: Vec<String>,
    types: Vec<i64>,
    lowercase: bool,
    cls: u32,
    sep: u32,
    unk: u32,
    mask: Option<u32>,
}

impl Vocab {
    /// `rows`: the embedding table's; ids the tokenizer does not use become unused pieces.
    /// `None` when llama.cpp would not put a text between the tokens the tokenizer does.
    fn read(tokenizer: &Json, rows: usize) -> Result<Option<Self>> {
        let model = &tokenizer["model"];
        let by_token = model["vocab"]
            .as_object()
            .ok_or_else(|| anyhow!("tokenizer.json: WordPiece model without a vocab"))?;
        let mut by_id: BTreeMap<usize, &str> = BTreeMap::new();
        for (token, id) in by_token {
            let id = id
                .as_u64()
                .and_then(|id| usize::try_from(id).ok())
                .filter(|&id| id < rows)
                .ok_or_else(|| anyhow!("tokenizer.json: token {token:?} has id {id}"))?;
            by_id.insert(id, token);
        }
        // Added tokens: special ones are control tokens (kept as they are), others user-defined.
        let mut added: HashMap<usize, bool> = HashMap::new();
        for entry in tokenizer["added_tokens"].as_array().into_iter().flatten() {
            let id = entry["id"].as_u64().and_then(|id| usize::try_from(id).ok());
            let content = entry["content"].as_str();
            if let (Some(id), Some(content)) = (id, content) {
                if id < rows {
                    by_id.entry(id).or_insert(content);
                    added.insert(id, entry["special"].as_bool().unwrap_or(false));
                }
            }
        }
        let (mut tokens, mut types) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
        for i in 0..rows {
            let (token, kind) = match (by_id.get(&i), added.get(&i)) {
                (None, _) => (format!("[PAD{i}]"), UNUSED),
                (Some(t), Some(true)) => (t.to_string(), CONTROL),
                (Some(t), Some(false)) => (t.to_string(), USER_DEFINED),
                (Some(t), None) => (t.to_string(), NORMAL),
            };
            // llama.cpp's phantom space: control tokens as they are, continuations without
            // their "##", word starts behind "▁".
            let spelled = if kind == CONTROL {
                token
            } else if let Some(rest) = token.strip_prefix("##") {
                rest.to_string()
            } else {
                format!("{WORD_START}{token}")
            };
            tokens.push(spelled);
            types.push(kind);
        }
        let id_of = |token: &str| -> Option<u32> {
            by_token
                .get(token)
                .and_then(Json::as_u64)
                .and_then(|id| u32::try_from(id).ok())
        };
        let unk = model["unk_token"].as_str().unwrap_or("[UNK]");
        let Some((cls, sep)) = template_ends(&tokenizer["post_processor"]) else {
            return Ok(None);
        };
        let (Some(cls), Some(sep), Some(unk)) = (id_of(&cls), id_of(&sep), id_of(unk)) else {
            return Ok(None);
        };
        // llama.cpp's WordPiece normalises as BERT's normaliser does, lowercasing if told.
        let normalizer = &tokenizer["normalizer"];
        if normalizer["type"] != "BertNormalizer" {
            return Ok(None);
        }
        Ok(Some(Self {
            lowercase: normalizer["lowercase"].as_bool().unwrap_or(true),
            cls,
            sep,
            unk,
            mask: id_of("[MASK]"),
            tokens,
            types,
        }))
    }
}

/// The tokens a single text is put between: `[CLS] A [SEP]` as BertProcessing or a
/// TemplateProcessing says (llama.cpp adds its bos and eos there, nothing else).
fn template_ends(post: &Json) -> Option<(String, String)> {
    let name = |v: &Json| v.as_str().map(str::to_string);
    match post["type"].as_str() {
        Some("BertProcessing") => name(&post["cls"][0]).zip(name(&post["sep"][0])),
        Some("TemplateProcessing") => match post["single"].as_array().map(Vec::as_slice) {
            Some([first, middle, last]) if middle.get("Sequence").is_some() => {
                name(&first["SpecialToken"]["id"]).zip(name(&last["SpecialToken"]["id"]))
            }
            _ => None,
        },
        _ => None,
    }
}
