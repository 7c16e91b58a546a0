//! The tensor names of the encoders' weights, spelled once for the model file's checks, the
//! converter and every backend: Hugging Face's for BERT and MPNet (a llama.cpp file's are mapped
//! to them), llama.cpp's own for the architectures only its files bring. The word embeddings are
//! [`crate::model::WORD_EMBEDDINGS`]. Linear and LayerNorm entries are prefixes: the tensors
//! are `<prefix>.weight` and `<prefix>.bias`.

use super::architecture::DecoderParts;

/// `[max_positions, hidden]`.
pub const POSITION_EMBEDDINGS: &str = "embeddings.position_embeddings.weight";
/// `[type_vocab_size, hidden]` (BERT only; single-segment input uses row 0).
pub const TOKEN_TYPE_EMBEDDINGS: &str = "embeddings.token_type_embeddings.weight";
/// LayerNorm after the embedding sum (prefix).
pub const EMBEDDINGS_NORM: &str = "embeddings.LayerNorm";
/// MPNet's `[buckets, heads]` relative-position bias table, shared by all layers.
pub const RELATIVE_ATTENTION_BIAS: &str = "encoder.relative_attention_bias.weight";

/// `<prefix>.weight`.
pub fn weight(prefix: &str) -> String {
    format!("{prefix}.weight")
}

/// `<prefix>.bias`.
pub fn bias(prefix: &str) -> String {
    format!("{prefix}.bias")
}

/// The prefixes of one encoder layer's weights (the same eight parts in BERT and MPNet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerNames {
    pub query: String,
    pub key: String,
    pub value: String,
    /// Attention output projection.
    pub attention_out: String,
    pub attention_norm: String,
    /// Feed-forward in (followed by GELU).
    pub intermediate: String,
    /// Feed-forward out.
    pub output: String,
    pub output_norm: String,
}

impl LayerNames {
    /// Layer `i`'s parts, in the field order, under `encoder.layer.{i}`.
    fn at(i: usize, parts: [&str; 8]) -> Self {
        let [query, key, value, attention_out, attention_norm, intermediate, output, output_norm] =
            parts.map(|part| format!("encoder.layer.{i}.{part}"));
        Self {
            query,
            key,
            value,
            attention_out,
            attention_norm,
            intermediate,
            output,
            output_norm,
        }
    }

    /// BERT's layer `i` (`BertModel`).
    pub fn bert(i: usize) -> Self {
        Self::at(
            i,
            [
                "attention.self.query",
                "attention.self.key",
                "attention.self.value",
                "attention.output.dense",
                "attention.output.LayerNorm",
                "intermediate.dense",
                "output.dense",
                "output.LayerNorm",
            ],
        )
    }

    /// MPNet's layer `i` (`MPNetModel`: attention projections `attn.{q,k,v,o}`).
    pub fn mpnet(i: usize) -> Self {
        Self::at(
            i,
            [
                "attention.attn.q",
                "attention.attn.k",
                "attention.attn.v",
                "attention.attn.o",
                "attention.LayerNorm",
                "intermediate.dense",
                "output.dense",
                "output.LayerNorm",
            ],
        )
    }
}

/// The prefixes of one layer with a fused QKV projection and a gated feed-forward, by
/// llama.cpp name (the architectures only llama.cpp's files bring): the linear layers have no
/// bias, the norms are LayerNorms with one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatedLayerNames {
    /// `[3·hidden, hidden]`: queries, keys and values stacked in that order.
    pub qkv: String,
    pub attention_out: String,
    pub attention_norm: String,
    /// Feed-forward in, multiplied by the activated gate.
    pub up: String,
    pub gate: String,
    /// Feed-forward out.
    pub down: String,
    pub output_norm: String,
}

impl GatedLayerNames {
    /// nomic-bert's layer `i` (post-norm like BERT: the norms follow each residual sum).
    pub fn nomic_bert(i: usize) -> Self {
        let at = |part: &str| format!("blk.{i}.{part}");
        Self {
            qkv: at("attn_qkv"),
            attention_out: at("attn_output"),
            attention_norm: at("attn_output_norm"),
            up: at("ffn_up"),
            gate: at("ffn_gate"),
            down: at("ffn_down"),
            output_norm: at("layer_output_norm"),
        }
    }
}

/// The layers of a pre-norm encoder with fused projections (ModernBERT, llama.cpp's names):
/// `x + out(attention(norm(x)))`, then `+ down(gated(up(norm(x))))`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreNormLayerNames {
    /// None in the first layer, whose input is the normed embeddings already.
    pub attention_norm: Option<String>,
    pub qkv: String,
    pub attention_out: String,
    pub ffn_norm: String,
    /// The gate and its multiplier in one matrix of twice the feed-forward's width.
    pub up_gate: String,
    pub down: String,
}

impl PreNormLayerNames {
    pub fn modern_bert(i: usize) -> Self {
        let at = |part: &str| format!("blk.{i}.{part}");
        Self {
            attention_norm: (i > 0).then(|| at("attn_norm")),
            qkv: at("attn_qkv"),
            attention_out: at("attn_output"),
            ffn_norm: at("ffn_norm"),
            up_gate: at("ffn_up"),
            down: at("ffn_down"),
        }
    }
}

/// The layers of a decoder-built embedder (Qwen2, Qwen3, EmbeddingGemma; llama.cpp's names):
/// pre-RMSNorm, separate Q, K, V projections (grouped-query: K and V narrower; Qwen2's with
/// biases), an RMSNorm over each query and key head (Qwen3's, Gemma's),
/// `x + out(attention(norm(x)))`, then `+ down(act(gate(norm(x))) ⊙ up(norm(x)))`; Gemma 3
/// normalises each branch's output once more before it is added (`post_attention_norm`,
/// `post_ffn_norm`). No other biases; the norms have a weight only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecoderLayerNames {
    pub attention_norm: String,
    pub query: String,
    pub key: String,
    pub value: String,
    /// Per-head RMSNorms of the queries and keys (`[head_dim]`), where the layer has them.
    pub query_norm: Option<String>,
    pub key_norm: Option<String>,
    /// Q, K and V have biases (`<prefix>.bias`).
    pub qkv_biases: bool,
    pub attention_out: String,
    pub ffn_norm: String,
    pub gate: String,
    pub up: String,
    pub down: String,
    pub post_attention_norm: Option<String>,
    pub post_ffn_norm: Option<String>,
}

impl DecoderLayerNames {
    /// The parts every decoder layer has (the optional ones as Qwen3's).
    fn base(i: usize) -> Self {
        let at = |part: &str| format!("blk.{i}.{part}");
        Self {
            attention_norm: at("attn_norm"),
            query: at("attn_q"),
            key: at("attn_k"),
            value: at("attn_v"),
            query_norm: Some(at("attn_q_norm")),
            key_norm: Some(at("attn_k_norm")),
            qkv_biases: false,
            attention_out: at("attn_output"),
            ffn_norm: at("ffn_norm"),
            gate: at("ffn_gate"),
            up: at("ffn_up"),
            down: at("ffn_down"),
            post_attention_norm: None,
            post_ffn_norm: None,
        }
    }

    /// Layer `i` of decoder blocks with `parts`.
    pub fn of(parts: DecoderParts, i: usize) -> Self {
        let at = |part: &str| format!("blk.{i}.{part}");
        let base = Self::base(i);
        Self {
            query_norm: parts.qk_norms.then(|| at("attn_q_norm")),
            key_norm: parts.qk_norms.then(|| at("attn_k_norm")),
            qkv_biases: parts.qkv_biases,
            post_attention_norm: parts.post_norms.then(|| at("post_attention_norm")),
            post_ffn_norm: parts.post_norms.then(|| at("post_ffw_norm")),
            ..base
        }
    }
}

/// T5's `[heads, buckets]` relative-position bias table (llama.cpp's layout of Hugging Face's
/// `[buckets, heads]`), the first layer's, used by every layer.
pub const T5_RELATIVE_BIAS: &str = "enc.blk.0.attn_rel_b.weight";
/// The RMSNorm after T5's last layer (prefix).
pub const T5_OUTPUT_NORM: &str = "enc.output_norm";

/// The layers of T5's encoder (llama.cpp's `t5encoder` names): pre-RMSNorm,
/// `x + out(attention(norm(x)))`, then `+ down(relu(up(norm(x))))` (T5 1.0) or
/// `+ down(gelu_tanh(gate(norm(x))) ⊙ up(norm(x)))` (T5 1.1, where the file has the gate).
/// No biases; the norms have a weight only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct T5LayerNames {
    pub attention_norm: String,
    pub query: String,
    pub key: String,
    pub value: String,
    pub attention_out: String,
    pub ffn_norm: String,
    pub gate: String,
    pub up: String,
    pub down: String,
}

impl T5LayerNames {
    pub fn of(i: usize) -> Self {
        let at = |part: &str| format!("enc.blk.{i}.{part}");
        Self {
            attention_norm: at("attn_norm"),
            query: at("attn_q"),
            key: at("attn_k"),
            value: at("attn_v"),
            attention_out: at("attn_o"),
            ffn_norm: at("ffn_norm"),
            gate: at("ffn_gate"),
            up: at("ffn_up"),
            down: at("ffn_down"),
        }
    }
}

/// sentence-transformers' two Dense modules after EmbeddingGemma's pooling (hidden → 4·hidden
/// → hidden, no bias, no activation), as llama.cpp's converter names them.
pub const DENSE_HEAD: [&str; 2] = ["dense_2", "dense_3"];

/// The norm after the last layer (ModernBERT's `final_norm`, Qwen3's `norm`).
pub const OUTPUT_NORM: &str = "output_norm";

#[cfg(test)]
mod tests {
    use super::LayerNames;

    #[test]
    fn layer_names_are_hugging_face_s() {
        let b = LayerNames::bert(3);
        assert_eq!(b.query, "encoder.layer.3.attention.self.query");
        assert_eq!(
            b.attention_norm,
            "encoder.layer.3.attention.output.LayerNorm"
        );
        assert_eq!(b.output_norm, "encoder.layer.3.output.LayerNorm");
        let m = LayerNames::mpnet(11);
        assert_eq!(m.attention_out, "encoder.layer.11.attention.attn.o");
        assert_eq!(m.attention_norm, "encoder.layer.11.attention.LayerNorm");
        assert_eq!(m.intermediate, "encoder.layer.11.intermediate.dense");
    }
}
