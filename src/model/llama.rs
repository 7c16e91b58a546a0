//! Embedding GGUFs written by llama.cpp's converter (`general.architecture = bert`,
//! `nomic-bert`, `modern-bert`, `qwen3` or `gemma-embedding`): their hyper-parameters under
//! `<architecture>.*`, tensors named `token_embd`, `blk.N.attn_q`, …, and the vocabulary as
//! `tokenizer.ggml.*`: WordPiece in llama.cpp's "phantom space" spelling, XLM-R's SentencePiece
//! Unigram (`t5`: tokens, scores, the precompiled charsmap), byte-level BPE (tokens and
//! merges), or SentencePiece BPE (`llama`: tokens and scores, Gemma's). Read into the
//! same [`EncoderConfig`] and tokenizer JSON as our own files; a `bert` file runs on every
//! backend unchanged.

use anyhow::{anyhow, bail, Result};
use serde_json::{json, Map, Value as Json};

use super::metadata::Metadata;
use super::EncoderConfig;
use crate::error::{coded, ErrorCode};

/// llama.cpp's token type for control tokens ([CLS], [SEP], …): kept as they are.
const CONTROL: i64 = 3;
/// llama.cpp's token type for the unknown token.
const UNKNOWN: i64 = 2;
/// llama.cpp's token type for user-defined pieces (a SentencePiece vocabulary's, a BPE
/// vocabulary's added tokens): matched whole, before the model, as control tokens are, but
/// plain text.
const USER_DEFINED: i64 = 4;
/// Marks a word-start piece in llama.cpp's vocabulary (a continuation piece has no mark).
const WORD_START: char = '\u{2581}';

/// Does the metadata describe a llama.cpp BERT-family embedding file?
pub(super) fn is_llama_file(meta: &Metadata) -> bool {
    meta.text("general.architecture").is_ok() && meta.get("tokenizer.ggml.model").is_some()
}

/// The llama.cpp architectures we run (`general.architecture`), each with the vocabulary its
/// files carry (`tokenizer.ggml.model`: `bert` = WordPiece, `gpt2` = byte-level BPE, `llama` =
/// SentencePiece BPE).
pub const ARCHITECTURES: [&str; 5] = [
    "bert",
    "nomic-bert",
    "modern-bert",
    "qwen3",
    "gemma-embedding",
];

/// The vocabularies (`tokenizer.ggml.model`) we rebuild for each architecture: WordPiece
/// (`bert`), SentencePiece Unigram (`t5`: XLM-R's, in multilingual BERT-family files), byte-level
/// BPE (`gpt2`), SentencePiece BPE (`llama`: Gemma's).
fn vocabularies_of(architecture: &str) -> &'static [&'static str] {
    match architecture {
        "modern-bert" | "qwen3" => &["gpt2"],
        "gemma-embedding" => &["llama"],
        "nomic-bert" => &["bert"],
        _ => &["bert", "t5"],
    }
}

/// The byte-level BPE pre-tokenizers we rebuild (`tokenizer.ggml.pre`): GPT-2's split (its
/// regex, no prefix space; ModernBERT's too) or Qwen2's (NFC first, single digits, a letter
/// run takes one leading non-letter), before the byte-to-character mapping.
const BPE_PRE_TOKENIZERS: [&str; 3] = ["gpt-2", "modern-bert", "qwen2"];

/// Qwen2's split, as its `tokenizer.json` and llama.cpp's `qwen2` pre-tokenizer write it.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// What a llama.cpp file says about the model.
pub(super) struct Described {
    pub name: String,
    /// One of [`ARCHITECTURES`].
    pub architecture: String,
    pub config: EncoderConfig,
    pub pooling: String,
    pub tokenizer_json: String,
}

pub(super) fn describe(meta: &Metadata) -> Result<Described> {
    let architecture = meta.text("general.architecture")?;
    if !ARCHITECTURES.contains(&architecture.as_str()) {
        return Err(coded(
            ErrorCode::UnsupportedArchitecture,
            format!(
                "llama.cpp file with architecture '{architecture}': the embedding models we run \
                 are {} (MiniLM, bge, e5, gte, arctic-embed, nomic-embed-text, ModernBERT, \
                 Qwen3-Embedding, EmbeddingGemma …)",
                ARCHITECTURES.join(", ")
            ),
        ));
    }
    let vocabulary = meta.text("tokenizer.ggml.model")?;
    if !vocabularies_of(&architecture).contains(&vocabulary.as_str()) {
        return Err(coded(
            ErrorCode::UnsupportedArchitecture,
            format!(
                "llama.cpp {architecture} file with a '{vocabulary}' vocabulary: we read \
                 {architecture} files with {} (WordPiece 'bert' or XLM-R's Unigram 't5' for \
                 bert, 'bert' for nomic-bert, byte-level BPE 'gpt2' for modern-bert and qwen3, \
                 SentencePiece BPE 'llama' for gemma-embedding)",
                vocabularies_of(&architecture).join(" or ")
            ),
        ));
    }
    let key = |k: &str| format!("{architecture}.{k}");
    // A decoder-built embedder is causal by design (Qwen3); an encoder that is causal is not
    // one. EmbeddingGemma is built of decoder blocks but reads both ways, as llama.cpp runs it.
    let decoder = architecture == "qwen3";
    let gemma = architecture == "gemma-embedding";
    if !decoder && meta.bool(&key("attention.causal")).unwrap_or(false) {
        bail!("llama.cpp file: a causal {architecture} model is not a sentence encoder we run");
    }
    let tokens = meta.strings("tokenizer.ggml.tokens")?;
    let types = meta.integers("tokenizer.ggml.token_type")?;
    if tokens.len() != types.len() {
        bail!(
            "llama.cpp file: {} tokens but {} token types",
            tokens.len(),
            types.len()
        );
    }
    let modern = architecture == "modern-bert";
    let rotary = modern || decoder || gemma || architecture == "nomic-bert";
    // Local layers with a window (ModernBERT's, Gemma 3's) and grouped-query heads (the
    // decoder-built ones').
    let windowed = modern || gemma;
    let grouped = decoder || gemma;
    let hidden_act = match architecture.as_str() {
        "nomic-bert" | "qwen3" => "swiglu",
        "gemma-embedding" => "geglu_tanh",
        // llama.cpp's graph: GeGLU unless the file says SiLU (Granite R2's SwiGLU).
        "modern-bert" => match meta.text(&key("hidden_activation")).ok().as_deref() {
            None | Some("gelu") => "geglu",
            Some("silu") => "swiglu",
            Some(other) => bail!(
                "llama.cpp modern-bert file: feed-forward activation '{other}' is not one we \
                 run (gelu, silu)"
            ),
        },
        _ => "gelu",
    };
    let config = EncoderConfig {
        vocab_size: tokens.len(),
        hidden_size: meta.size(&key("embedding_length"))?,
        num_hidden_layers: meta.size(&key("block_count"))?,
        num_attention_heads: meta.size(&key("attention.head_count"))?,
        intermediate_size: meta.size(&key("feed_forward_length"))?,
        hidden_act: hidden_act.into(),
        max_position_embeddings: meta.size(&key("context_length"))?,
        type_vocab_size: if modern || grouped {
            0
        } else {
            meta.size("tokenizer.ggml.token_type_count").unwrap_or(2)
        },
        // The converter writes ModernBERT's LayerNorm epsilon under the RMS key.
        layer_norm_eps: meta
            .float(&key("attention.layer_norm_epsilon"))
            .or_else(|_| meta.float(&key("attention.layer_norm_rms_epsilon")))
            .unwrap_or(1e-12),
        pad_token_id: meta.size("tokenizer.ggml.padding_token_id").unwrap_or(0),
        relative_attention_num_buckets: None,
        rope_theta: if rotary {
            Some(meta.float(&key("rope.freq_base"))?)
        } else {
            None
        },
        local_attention: if windowed {
            Some(meta.size(&key("attention.sliding_window"))?)
        } else {
            None
        },
        // llama.cpp's default for the base of the local layers: ModernBERT's the global one,
        // Gemma 3's 10,000.
        local_rope_theta: match (windowed, meta.float(&key("rope.freq_base_swa"))) {
            (false, _) => None,
            (true, Ok(theta)) => Some(theta),
            (true, Err(_)) if gemma => Some(10_000.0),
            (true, Err(_)) => Some(meta.float(&key("rope.freq_base"))?),
        },
        global_attn_every_n_layers: if windowed {
            Some(global_period(
                meta,
                &key("attention.sliding_window_pattern"),
                if gemma { 6 } else { 3 },
            )?)
        } else {
            None
        },
        // Gemma 3: five local layers, then a global one.
        global_layer_last: gemma,
        num_key_value_heads: if grouped {
            Some(meta.size(&key("attention.head_count_kv"))?)
        } else {
            None
        },
        head_size: if grouped {
            head_size(meta, &architecture)?
        } else {
            None
        },
        dense_head_width: if gemma {
            dense_head(meta, &architecture)?
        } else {
            None
        },
    };
    config.check()?;
    // A Qwen3 file without a pooling type is the chat model, not Qwen3-Embedding: its
    // "sentence vectors" would be an arbitrary choice of ours.
    if decoder && meta.get(&key("pooling_type")).is_none() {
        return Err(coded(
            ErrorCode::UnsupportedArchitecture,
            format!(
                "llama.cpp {architecture} file without '{}': a language model, not an \
                 embedding model (Qwen3-Embedding's files say last-token pooling)",
                key("pooling_type")
            ),
        ));
    }
    // llama.cpp's enum: 0 none, 1 mean, 2 cls, 3 last, 4 rank.
    let pooling = match meta.number(&key("pooling_type")).unwrap_or(1) {
        1 => "mean",
        2 => "cls",
        3 => "last",
        other => bail!(
            "llama.cpp file: pooling type {other} is not a sentence embedding (supported: mean, \
             cls, last)"
        ),
    };
    let special_token = |k: &str| -> Result<Option<String>> {
        match meta.number(&format!("tokenizer.ggml.{k}_token_id")) {
            Ok(id) => tokens
                .get(usize::try_from(id).unwrap_or(usize::MAX))
                .cloned()
                .map(Some)
                .ok_or_else(|| {
                    anyhow!("llama.cpp file: {k} token id {id} is not in the vocabulary")
                }),
            Err(_) => Ok(None),
        }
    };
    let special = |k: &str, fallback: &str| -> Result<String> {
        Ok(special_token(k)?.unwrap_or_else(|| fallback.to_string()))
    };
    // ModernBERT's and XLM-R's files: add_bos and add_eos around the text (both unless the
    // file says not). Qwen's vocabulary adds neither unless the file says so, as llama.cpp's
    // `qwen2` default is; Qwen3-Embedding's says add_eos (its `<|endoftext|>`).
    let added_by_default = !decoder;
    let around = |flag: &str, first: &str, second: &str| -> Result<Option<String>> {
        if !meta.bool(flag).unwrap_or(added_by_default) {
            return Ok(None);
        }
        Ok(special_token(first)?.or(special_token(second)?))
    };
    let tokenizer_json = if vocabulary == "llama" {
        // llama.cpp's SentencePiece defaults: bos before the text, no eos, no space prefix
        // unless the file says so (Gemma's say add_space_prefix = false).
        let flag = |k: &str, default: bool| meta.bool(k).unwrap_or(default);
        let bos = if flag("tokenizer.ggml.add_bos_token", true) {
            special_token("bos")?
        } else {
            None
        };
        let eos = if flag("tokenizer.ggml.add_eos_token", false) {
            special_token("eos")?
        } else {
            None
        };
        sentencepiece_bpe_json(
            &tokens,
            &types,
            flag("tokenizer.ggml.add_space_prefix", true),
            bos.as_deref(),
            eos.as_deref(),
        )?
    } else if vocabulary == "t5" {
        let unk = meta.size("tokenizer.ggml.unknown_token_id")?;
        let charsmap = match meta.get("tokenizer.ggml.precompiled_charsmap") {
            Some(_) => meta.bytes("tokenizer.ggml.precompiled_charsmap")?,
            None => Vec::new(),
        };
        unigram_json(
            &tokens,
            &types,
            &meta.floats("tokenizer.ggml.scores")?,
            Normalization {
                charsmap: &charsmap,
                add_space_prefix: meta.bool("tokenizer.ggml.add_space_prefix").unwrap_or(true),
                remove_extra_whitespaces: meta
                    .bool("tokenizer.ggml.remove_extra_whitespaces")
                    .unwrap_or(true),
            },
            unk,
            around("tokenizer.ggml.add_bos_token", "bos", "cls")?.as_deref(),
            around("tokenizer.ggml.add_eos_token", "eos", "seperator")?.as_deref(),
        )?
    } else if vocabulary == "gpt2" {
        let pre = meta.text("tokenizer.ggml.pre")?;
        if !BPE_PRE_TOKENIZERS.contains(&pre.as_str()) {
            return Err(coded(
                ErrorCode::UnsupportedArchitecture,
                format!(
                    "llama.cpp file with the byte-level BPE pre-tokenizer '{pre}': we rebuild {}",
                    BPE_PRE_TOKENIZERS.join(", ")
                ),
            ));
        }
        // ModernBERT's files: [CLS] as bos and [SEP] as eos; Qwen3's: eos only.
        let (start, end) = if decoder {
            (
                around("tokenizer.ggml.add_bos_token", "bos", "bos")?,
                around("tokenizer.ggml.add_eos_token", "eos", "eos")?,
            )
        } else {
            (
                around("tokenizer.ggml.add_bos_token", "cls", "bos")?,
                around("tokenizer.ggml.add_eos_token", "seperator", "eos")?,
            )
        };
        bpe_json(
            &tokens,
            &types,
            &meta.strings("tokenizer.ggml.merges")?,
            if pre == "qwen2" {
                BpeSplit::Qwen2
            } else {
                BpeSplit::Gpt2
            },
            start.as_deref(),
            end.as_deref(),
        )?
    } else {
        wordpiece_json(
            &tokens,
            &types,
            meta.bool("tokenizer.ggml.normalizer.lowercase")
                .unwrap_or(true),
            &special("unknown", "[UNK]")?,
            &special("bos", "[CLS]")?,
            &special("seperator", "[SEP]").or_else(|_| special("eos", "[SEP]"))?,
        )?
    };
    Ok(Described {
        name: meta
            .text("general.name")
            .unwrap_or_else(|_| format!("llama.cpp {architecture} model")),
        architecture,
        config,
        pooling: pooling.into(),
        tokenizer_json,
    })
}

/// A decoder's head size when the file gives one (`attention.key_length`; the value heads
/// must have the same, as every Qwen3 has).
fn head_size(meta: &Metadata, architecture: &str) -> Result<Option<usize>> {
    let key = |k: &str| format!("{architecture}.attention.{k}");
    if meta.get(&key("key_length")).is_none() {
        return Ok(None);
    }
    let k = meta.size(&key("key_length"))?;
    if meta.get(&key("value_length")).is_some() && meta.size(&key("value_length"))? != k {
        bail!(
            "llama.cpp {architecture} file: keys of {k} but values of {} per head; we run \
             heads with one size",
            meta.size(&key("value_length"))?
        );
    }
    Ok(Some(k))
}

/// The period of the global layers (ModernBERT's `global_attn_every_n_layers`, which the
/// converter writes as a number; when absent, `default`: 3 for ModernBERT and 6 for Gemma 3,
/// as in transformers and llama.cpp).
fn global_period(meta: &Metadata, key: &str, default: usize) -> Result<usize> {
    if meta.get(key).is_none() {
        return Ok(default);
    }
    meta.size(key)
}

/// EmbeddingGemma's Dense head (`dense_2`: hidden → width, `dense_3`: width → hidden), whose
/// widths the converter writes when the sentence-transformers folder had the modules; `None`
/// when the file has none (its vectors are then the pooled states, as llama.cpp's).
fn dense_head(meta: &Metadata, architecture: &str) -> Result<Option<usize>> {
    let key = |dense: &str, end: &str| format!("{architecture}.{dense}_feat_{end}");
    if meta.get(&key("dense_2", "out")).is_none() {
        return Ok(None);
    }
    let hidden = meta.size(&format!("{architecture}.embedding_length"))?;
    let width = meta.size(&key("dense_2", "out"))?;
    let dims = [
        meta.size(&key("dense_2", "in"))?,
        meta.size(&key("dense_3", "in"))?,
        meta.size(&key("dense_3", "out"))?,
    ];
    if dims != [hidden, width, hidden] {
        bail!(
            "llama.cpp {architecture} file: a Dense head of {} → {} and {} → {}; we run \
             heads that map the hidden size {hidden} to {width} and back",
            dims[0],
            width,
            dims[1],
            dims[2]
        );
    }
    Ok(Some(width))
}

/// How a byte-level BPE vocabulary splits text before the byte mapping.
#[derive(Clone, Copy)]
enum BpeSplit {
    /// GPT-2's regex inside the byte-level step, no normalizer (GPT-2, ModernBERT).
    Gpt2,
    /// NFC, then Qwen2's regex as its own step (Qwen2, Qwen3).
    Qwen2,
}

/// The `tokenizers` JSON of a byte-level BPE pipeline (`split`, then the byte mapping) over
/// llama.cpp's tokens and merges, with `start` and `end` around every text; control tokens
/// are special added tokens, as in the model's own tokenizer.
fn bpe_json(
    tokens: &[String],
    types: &[i64],
    merges: &[String],
    split: BpeSplit,
    start: Option<&str>,
    end: Option<&str>,
) -> Result<String> {
    let (vocab, added) = ids_and_added_tokens(tokens, types);
    for merge in merges {
        let pair = merge.split_once(' ');
        if !pair.is_some_and(|(a, b)| vocab.contains_key(a) && vocab.contains_key(b)) {
            bail!("llama.cpp file: the merge '{merge}' is not two tokens of the vocabulary");
        }
    }
    let post_processor = template(&vocab, start, end);
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
        "use_regex": true});
    let (normalizer, pre_tokenizer) = match split {
        BpeSplit::Gpt2 => (Json::Null, byte_level.clone()),
        BpeSplit::Qwen2 => (
            json!({"type": "NFC"}),
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated",
                    "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false,
                    "use_regex": false}]}),
        ),
    };
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false,
            "byte_fallback": false, "ignore_merges": false, "vocab": Json::Object(vocab),
            "merges": merges},
    });
    Ok(tokenizer.to_string())
}

/// The `tokenizers` JSON of a SentencePiece BPE pipeline over llama.cpp's `llama` vocabulary,
/// as transformers converts Gemma's `tokenizer.model`: spaces become "▁" (after a "▁" before
/// the text when `add_space_prefix`), the BPE model with byte fallback (`<0xNN>` pieces) and
/// merges made from the vocabulary (every split of a piece into two pieces, ranked by the
/// piece's id, then the split's position: SentencePiece's BPE ids follow its merge order),
/// control and user-defined pieces matched whole, `start A end` around every text.
fn sentencepiece_bpe_json(
    tokens: &[String],
    types: &[i64],
    add_space_prefix: bool,
    start: Option<&str>,
    end: Option<&str>,
) -> Result<String> {
    let (vocab, added) = ids_and_added_tokens(tokens, types);
    let unk = tokens.iter().zip(types).find(|(_, &kind)| kind == UNKNOWN);
    let unk = unk.map(|(token, _)| token.clone());
    let mut merges = Vec::new();
    for (id, token) in tokens.iter().enumerate() {
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
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": null,
        "post_processor": template(&vocab, start, end),
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": WORD_START.to_string()}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": null, "unk_token": unk,
            "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": true,
            "byte_fallback": true, "ignore_merges": false, "vocab": Json::Object(vocab),
            "merges": merges},
    });
    Ok(tokenizer.to_string())
}

/// The text normalisation a SentencePiece vocabulary records.
struct Normalization<'a> {
    /// SentencePiece's precompiled normalisation rules (NFKC and more); empty: none.
    charsmap: &'a [u8],
    /// A "▁" before the first word, as SentencePiece's dummy prefix.
    add_space_prefix: bool,
    /// Runs of spaces collapse to one.
    remove_extra_whitespaces: bool,
}

/// The `tokenizers` JSON of XLM-R's SentencePiece Unigram pipeline over llama.cpp's `t5`
/// vocabulary, as transformers builds it for XLM-R: the Precompiled normaliser from the
/// charsmap and " {2,}" → " ", Metaspace "▁" (with the dummy prefix when the file says so), the
/// Unigram model with the file's scores, `<s> A </s>` from the bos/eos the file adds.
fn unigram_json(
    tokens: &[String],
    types: &[i64],
    scores: &[f32],
    normalization: Normalization,
    unk: usize,
    start: Option<&str>,
    end: Option<&str>,
) -> Result<String> {
    if scores.len() != tokens.len() {
        bail!(
            "llama.cpp file: {} tokens but {} scores",
            tokens.len(),
            scores.len()
        );
    }
    if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
        bail!("llama.cpp file: token {i}'s score is not a finite number");
    }
    if unk >= tokens.len() {
        bail!(
            "llama.cpp file: unknown token id {unk} is not in the vocabulary of {}",
            tokens.len()
        );
    }
    let (ids, added) = ids_and_added_tokens(tokens, types);
    let vocab: Vec<Json> = tokens
        .iter()
        .zip(scores)
        .map(|(t, &s)| json!([t, s]))
        .collect();
    let mut normalizers = Vec::new();
    if !normalization.charsmap.is_empty() {
        normalizers.push(json!({"type": "Precompiled",
            "precompiled_charsmap": base64::encode(normalization.charsmap)}));
    }
    if normalization.remove_extra_whitespaces {
        normalizers.push(json!({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}));
    }
    let metaspace = json!({"type": "Metaspace", "replacement": WORD_START.to_string(),
        "prepend_scheme": if normalization.add_space_prefix { "always" } else { "never" },
        "split": true});
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": if normalizers.is_empty() { Json::Null }
            else { json!({"type": "Sequence", "normalizers": normalizers}) },
        "pre_tokenizer": metaspace,
        "post_processor": template(&ids, start, end),
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": false},
    });
    Ok(tokenizer.to_string())
}

/// A control token as `tokenizers` keeps it: matched before normalisation, never split.
fn special_added_token(id: usize, token: &str) -> Json {
    added_token(id, token, true)
}

/// A token matched whole before normalisation, never split; `special`: a control token (a
/// user-defined one is plain text).
fn added_token(id: usize, token: &str, special: bool) -> Json {
    json!({"id": id, "content": token, "single_word": false, "lstrip": false, "rstrip": false,
        "normalized": false, "special": special})
}

/// A vocabulary's token → id map (a repeated token keeps its first id) and its added tokens:
/// the control ones special, the user-defined ones plain, as llama.cpp matches both whole.
fn ids_and_added_tokens(tokens: &[String], types: &[i64]) -> (Map<String, Json>, Vec<Json>) {
    let mut ids = Map::new();
    let mut added = Vec::new();
    for (id, (token, &kind)) in tokens.iter().zip(types).enumerate() {
        if kind == CONTROL || kind == USER_DEFINED {
            added.push(added_token(id, token, kind == CONTROL));
        }
        ids.entry(token.clone()).or_insert(json!(id));
    }
    (ids, added)
}

/// `start A end` (and `start A end B end` for pairs) as a TemplateProcessing post-processor;
/// `ids` maps the tokens to their ids.
fn template(ids: &Map<String, Json>, start: Option<&str>, end: Option<&str>) -> Json {
    let mut special_tokens = Map::new();
    for token in [start, end].into_iter().flatten() {
        special_tokens.insert(
            token.to_string(),
            json!({"id": token, "ids": [ids[token].clone()], "tokens": [token]}),
        );
    }
    let special = |token: Option<&str>, type_id: u32| {
        token.map(|t| json!({"SpecialToken": {"id": t, "type_id": type_id}}))
    };
    let sequence = |s: &str, type_id: u32| Some(json!({"Sequence": {"id": s, "type_id": type_id}}));
    let single: Vec<Json> = [special(start, 0), sequence("A", 0), special(end, 0)]
        .into_iter()
        .flatten()
        .collect();
    let pair: Vec<Json> = [
        special(start, 0),
        sequence("A", 0),
        special(end, 0),
        sequence("B", 1),
        special(end, 1),
    ]
    .into_iter()
    .flatten()
    .collect();
    json!({"type": "TemplateProcessing", "single": single, "pair": pair,
        "special_tokens": special_tokens})
}

/// The `tokenizers` JSON of a BERT WordPiece pipeline over llama.cpp's vocabulary: pieces
/// spelled "▁word" are word starts, plain ones continuations ("##" again), control tokens stay.
fn wordpiece_json(
    tokens: &[String],
    types: &[i64],
    lowercase: bool,
    unk: &str,
    cls: &str,
    sep: &str,
) -> Result<String> {
    let mut vocab = Map::new();
    let mut added = Vec::new();
    for (id, (token, &kind)) in tokens.iter().zip(types).enumerate() {
        let piece = if kind == CONTROL {
            added.push(special_added_token(id, token));
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
    let id = |t: &str| vocab[t].clone();
    let special = |t: &str, type_id: u32| json!({"SpecialToken": {"id": t, "type_id": type_id}});
    let sequence = |s: &str, type_id: u32| json!({"Sequence": {"id": s, "type_id": type_id}});
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
            "strip_accents": null, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [special(cls, 0), sequence("A", 0), special(sep, 0)],
            "pair": [special(cls, 0), sequence("A", 0), special(sep, 0), sequence("B", 1),
                special(sep, 1)],
            "special_tokens": {
                cls: {"id": cls, "ids": [id(cls)], "tokens": [cls]},
                sep: {"id": sep, "ids": [id(sep)], "tokens": [sep]},
            }},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": Json::Object(vocab)},
    });
    Ok(tokenizer.to_string())
}

/// The llama.cpp name of a tensor we know by its Hugging Face name.
pub(super) fn tensor_name(hf: &str) -> Option<String> {
    let fixed = [
        ("embeddings.word_embeddings.weight", "token_embd.weight"),
        (
            "embeddings.position_embeddings.weight",
            "position_embd.weight",
        ),
        (
            "embeddings.token_type_embeddings.weight",
            "token_types.weight",
        ),
        ("embeddings.LayerNorm.weight", "token_embd_norm.weight"),
        ("embeddings.LayerNorm.bias", "token_embd_norm.bias"),
    ];
    if let Some((_, name)) = fixed.iter().find(|(h, _)| *h == hf) {
        return Some(name.to_string());
    }
    let rest = hf.strip_prefix("encoder.layer.")?;
    let (layer, part) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (module, param) = part.rsplit_once('.')?;
    let block = match module {
        "attention.self.query" => "attn_q",
        "attention.self.key" => "attn_k",
        "attention.self.value" => "attn_v",
        "attention.output.dense" => "attn_output",
        "attention.output.LayerNorm" => "attn_output_norm",
        "intermediate.dense" => "ffn_up",
        "output.dense" => "ffn_down",
        "output.LayerNorm" => "layer_output_norm",
        _ => return None,
    };
    Some(format!("blk.{layer}.{block}.{param}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugging_face_names_map_to_llama_cpp_names() {
        assert_eq!(
            tensor_name("encoder.layer.5.attention.output.LayerNorm.bias").as_deref(),
            Some("blk.5.attn_output_norm.bias")
        );
        assert_eq!(
            tensor_name("embeddings.word_embeddings.weight").as_deref(),
            Some("token_embd.weight")
        );
        assert_eq!(tensor_name("encoder.layer.x.output.dense.weight"), None);
        assert_eq!(tensor_name("pooler.dense.weight"), None);
    }

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
        let types = [3, 3, 3, 3, 1, 1, 1];
        let json = wordpiece_json(&tokens, &types, true, "[UNK]", "[CLS]", "[SEP]").unwrap();
        let tokenizer = tokenizers::Tokenizer::from_bytes(json.as_bytes()).unwrap();
        let ids = tokenizer
            .encode("Toms likes", true)
            .unwrap()
            .get_ids()
            .to_vec();
        assert_eq!(ids, [2, 4, 5, 6, 3]);
    }
}
