//! The Hugging Face tensor names of the encoders' weights, spelled once for every backend
//! (the CPU's BERT and MPNet, the GPU's BERT). The word embeddings are
//! [`crate::model::WORD_EMBEDDINGS`]. Linear and LayerNorm entries are prefixes: the tensors
//! are `<prefix>.weight` and `<prefix>.bias`.

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
    /// BERT's layer `i` (`BertModel`).
    pub fn bert(i: usize) -> Self {
        let p = format!("encoder.layer.{i}");
        Self {
            query: format!("{p}.attention.self.query"),
            key: format!("{p}.attention.self.key"),
            value: format!("{p}.attention.self.value"),
            attention_out: format!("{p}.attention.output.dense"),
            attention_norm: format!("{p}.attention.output.LayerNorm"),
            intermediate: format!("{p}.intermediate.dense"),
            output: format!("{p}.output.dense"),
            output_norm: format!("{p}.output.LayerNorm"),
        }
    }

    /// MPNet's layer `i` (`MPNetModel`: attention projections `attn.{q,k,v,o}`).
    pub fn mpnet(i: usize) -> Self {
        let p = format!("encoder.layer.{i}");
        Self {
            query: format!("{p}.attention.attn.q"),
            key: format!("{p}.attention.attn.k"),
            value: format!("{p}.attention.attn.v"),
            attention_out: format!("{p}.attention.attn.o"),
            attention_norm: format!("{p}.attention.LayerNorm"),
            intermediate: format!("{p}.intermediate.dense"),
            output: format!("{p}.output.dense"),
            output_norm: format!("{p}.output.LayerNorm"),
        }
    }
}
