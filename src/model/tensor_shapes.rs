//! Every tensor an encoder reads has the shape its config gives it, checked once after the
//! header parse: a hostile file's mismatched tensor is named here instead of reaching a kernel
//! that would index outside it.

use anyhow::{bail, Result};
use candle_core::quantized::gguf_file::Content;

use super::architecture::{Architecture, Blocks, DecoderParts};
use super::tensor_names::{
    self as names, DecoderLayerNames, GatedLayerNames, LayerNames, PreNormLayerNames, T5LayerNames,
};
use super::{EncoderConfig, WORD_EMBEDDINGS};

/// The tensors an encoder of `architecture` reads, by Hugging Face name, with the shape the
/// config gives them (`[rows, columns]` as PyTorch writes a linear layer: `[out, in]`); the
/// token type table (BERT) is not among them: its row count is the file's.
pub(crate) fn expected_shapes(
    architecture: Architecture,
    c: &EncoderConfig,
) -> Vec<(String, Vec<usize>)> {
    match architecture.spec().blocks {
        Blocks::Bert => table_shapes(c, LayerNames::bert, false),
        Blocks::MpNet => table_shapes(c, LayerNames::mpnet, true),
        Blocks::FusedGated => gated_shapes(c, GatedLayerNames::nomic_bert),
        Blocks::FusedPreNorm => modern_bert_shapes(c),
        Blocks::Decoder(parts) => decoder_shapes(c, parts),
        Blocks::T5 => t5_shapes(c),
    }
}

/// T5's encoder: pre-RMSNorm layers of Q, K, V without biases, a ReLU (up, down) or gated
/// (gate too, when the config's activation is gated) feed-forward, the first layer's
/// `[heads, buckets]` relative-position table, a final norm.
fn t5_shapes(c: &EncoderConfig) -> Vec<(String, Vec<usize>)> {
    let (h, inner) = (c.hidden_size, c.intermediate_size);
    let buckets = c.relative_attention_num_buckets.unwrap_or(32);
    let mut shapes = vec![
        (WORD_EMBEDDINGS.to_string(), vec![c.vocab_size, h]),
        (names::weight(names::T5_OUTPUT_NORM), vec![h]),
        (
            names::T5_RELATIVE_BIAS.to_string(),
            vec![buckets, c.num_attention_heads],
        ),
    ];
    let gated = c.hidden_act != "relu";
    for i in 0..c.num_hidden_layers {
        let l = T5LayerNames::of(i);
        let mut parts = vec![
            (&l.attention_norm, vec![h]),
            (&l.query, vec![h, h]),
            (&l.key, vec![h, h]),
            (&l.value, vec![h, h]),
            (&l.attention_out, vec![h, h]),
            (&l.ffn_norm, vec![h]),
            (&l.up, vec![inner, h]),
            (&l.down, vec![h, inner]),
        ];
        if gated {
            parts.push((&l.gate, vec![inner, h]));
        }
        shapes.extend(parts.into_iter().map(|(p, d)| (names::weight(p), d)));
    }
    shapes
}

/// BERT's and MPNet's layers (named by `layer`), a position table, biases everywhere; MPNet's
/// shared relative-position table when `relative`.
fn table_shapes(
    c: &EncoderConfig,
    layer: fn(usize) -> LayerNames,
    relative: bool,
) -> Vec<(String, Vec<usize>)> {
    let (h, inner) = (c.hidden_size, c.intermediate_size);
    let mut shapes = vec![
        (WORD_EMBEDDINGS.to_string(), vec![c.vocab_size, h]),
        (
            names::POSITION_EMBEDDINGS.to_string(),
            vec![c.max_position_embeddings, h],
        ),
    ];
    let vector = |prefix: &str, shapes: &mut Vec<(String, Vec<usize>)>| {
        shapes.push((names::weight(prefix), vec![h]));
        shapes.push((names::bias(prefix), vec![h]));
    };
    vector(names::EMBEDDINGS_NORM, &mut shapes);
    for i in 0..c.num_hidden_layers {
        let l = layer(i);
        let mut linear = |prefix: &str, out: usize, input: usize| {
            shapes.push((names::weight(prefix), vec![out, input]));
            shapes.push((names::bias(prefix), vec![out]));
        };
        for prefix in [&l.query, &l.key, &l.value, &l.attention_out] {
            linear(prefix, h, h);
        }
        linear(&l.intermediate, inner, h);
        linear(&l.output, h, inner);
        vector(&l.attention_norm, &mut shapes);
        vector(&l.output_norm, &mut shapes);
    }
    if relative {
        let buckets = c.relative_attention_num_buckets.unwrap_or(32);
        shapes.push((
            names::RELATIVE_ATTENTION_BIAS.into(),
            vec![buckets, c.num_attention_heads],
        ));
    }
    shapes
}

/// An encoder of fused-QKV, gated feed-forward layers (named by `layer`): no position table
/// (rotary positions), no biases but the norms'.
fn gated_shapes(
    c: &EncoderConfig,
    layer: fn(usize) -> GatedLayerNames,
) -> Vec<(String, Vec<usize>)> {
    let (h, inner) = (c.hidden_size, c.intermediate_size);
    let mut shapes = vec![(WORD_EMBEDDINGS.to_string(), vec![c.vocab_size, h])];
    let mut norms = vec![names::EMBEDDINGS_NORM.to_string()];
    for i in 0..c.num_hidden_layers {
        let l = layer(i);
        for (prefix, out, input) in [
            (&l.qkv, 3 * h, h),
            (&l.attention_out, h, h),
            (&l.up, inner, h),
            (&l.gate, inner, h),
            (&l.down, h, inner),
        ] {
            shapes.push((names::weight(prefix), vec![out, input]));
        }
        norms.extend([l.attention_norm, l.output_norm]);
    }
    for prefix in norms {
        shapes.push((names::weight(&prefix), vec![h]));
        shapes.push((names::bias(&prefix), vec![h]));
    }
    shapes
}

/// ModernBERT: pre-norm layers of fused projections, LayerNorms without bias, a final norm.
fn modern_bert_shapes(c: &EncoderConfig) -> Vec<(String, Vec<usize>)> {
    let (h, inner) = (c.hidden_size, c.intermediate_size);
    let mut shapes = vec![(WORD_EMBEDDINGS.to_string(), vec![c.vocab_size, h])];
    let mut norms = vec![
        names::EMBEDDINGS_NORM.to_string(),
        names::OUTPUT_NORM.into(),
    ];
    for i in 0..c.num_hidden_layers {
        let l = PreNormLayerNames::modern_bert(i);
        for (prefix, out, input) in [
            (&l.qkv, 3 * h, h),
            (&l.attention_out, h, h),
            (&l.up_gate, 2 * inner, h),
            (&l.down, h, inner),
        ] {
            shapes.push((names::weight(prefix), vec![out, input]));
        }
        norms.extend(l.attention_norm);
        norms.push(l.ffn_norm);
    }
    shapes.extend(norms.iter().map(|n| (names::weight(n), vec![h])));
    shapes
}

/// Qwen2, Qwen3, EmbeddingGemma: pre-RMSNorm decoder layers, grouped-query projections (Qwen2's
/// with biases), per-head q/k norms (Qwen3's, Gemma's), a gated feed-forward, a final norm
/// (Gemma: post-norms too, and the Dense head after pooling when the file has one); no other
/// biases, no position table (rotary positions).
fn decoder_shapes(c: &EncoderConfig, parts: DecoderParts) -> Vec<(String, Vec<usize>)> {
    let (h, inner, q, kv) = (
        c.hidden_size,
        c.intermediate_size,
        c.query_width(),
        c.kv_width(),
    );
    let mut shapes = vec![
        (WORD_EMBEDDINGS.to_string(), vec![c.vocab_size, h]),
        (names::weight(names::OUTPUT_NORM), vec![h]),
    ];
    for i in 0..c.num_hidden_layers {
        let l = DecoderLayerNames::of(parts, i);
        for post in [&l.post_attention_norm, &l.post_ffn_norm]
            .into_iter()
            .flatten()
        {
            shapes.push((names::weight(post), vec![h]));
        }
        for (prefix, dims) in [
            (&l.attention_norm, vec![h]),
            (&l.query, vec![q, h]),
            (&l.key, vec![kv, h]),
            (&l.value, vec![kv, h]),
        ] {
            shapes.push((names::weight(prefix), dims));
        }
        for norm in [&l.query_norm, &l.key_norm].into_iter().flatten() {
            shapes.push((names::weight(norm), vec![c.head_dim()]));
        }
        if l.qkv_biases {
            for (prefix, width) in [(&l.query, q), (&l.key, kv), (&l.value, kv)] {
                shapes.push((names::bias(prefix), vec![width]));
            }
        }
        for (prefix, dims) in [
            (&l.attention_out, vec![h, q]),
            (&l.ffn_norm, vec![h]),
            (&l.gate, vec![inner, h]),
            (&l.up, vec![inner, h]),
            (&l.down, vec![h, inner]),
        ] {
            shapes.push((names::weight(prefix), dims));
        }
    }
    if let Some(width) = c.dense_head_width {
        let [up, down] = names::DENSE_HEAD;
        shapes.push((names::weight(up), vec![width, h]));
        shapes.push((names::weight(down), vec![h, width]));
    }
    shapes
}

/// Every tensor the encoder of `architecture` reads has the shape `config` gives it (a missing
/// one is named when it is read); the token type table (BERT) is `[types, hidden]`; the
/// padding id is in the vocabulary and the sequence length within the position table.
/// `file_name` maps a Hugging Face name to the file's own.
pub(super) fn check(
    content: &Content,
    architecture: Architecture,
    config: &EncoderConfig,
    max_seq_length: usize,
    file_name: impl Fn(&str) -> String,
) -> Result<()> {
    let dims_of = |hf: &str| {
        let name = file_name(hf);
        let dims = content
            .tensor_infos
            .get(&name)
            .map(|t| t.shape.dims().to_vec());
        (name, dims)
    };
    for (hf, expected) in expected_shapes(architecture, config) {
        if let (name, Some(dims)) = dims_of(&hf) {
            if dims != expected {
                bail!(
                    "the model file is corrupt: tensor '{name}' has shape {dims:?}, the config \
                     says {expected:?}"
                );
            }
        }
    }
    // A Dense head the metadata does not size would be left out of every vector unseen.
    if config.dense_head_width.is_none() {
        for dense in names::DENSE_HEAD {
            if let (name, Some(_)) = dims_of(&names::weight(dense)) {
                bail!(
                    "the model file is corrupt: it holds '{name}' but its metadata gives the Dense head no widths"
                );
            }
        }
    }
    if architecture.spec().token_types {
        if let (name, Some(dims)) = dims_of(names::TOKEN_TYPE_EMBEDDINGS) {
            if dims.len() != 2 || dims[1] != config.hidden_size {
                bail!(
                    "the model file is corrupt: tensor '{name}' has shape {dims:?}, expected \
                     [types, {}]",
                    config.hidden_size
                );
            }
        }
    }
    if config.pad_token_id >= config.vocab_size {
        bail!(
            "the model file is corrupt: padding token id {} is outside the vocabulary of {}",
            config.pad_token_id,
            config.vocab_size
        );
    }
    if max_seq_length == 0 || max_seq_length > config.max_position_embeddings {
        bail!(
            "the model file is corrupt: max sequence length {max_seq_length} is outside \
             1..={} (the position table)",
            config.max_position_embeddings
        );
    }
    Ok(())
}
