//! The table itself: one [`Spec`] per architecture (what [`Architecture::spec`] returns).

use super::{
    Attention, Blocks, DecoderParts, Family, FeedForward, Gpu, HfModelType, HfPositions, Norms,
    Positions, Spec, Vocabulary,
};
use crate::model::Pooling;

pub(super) const BERT: Spec = Spec {
    name: "bert",
    label: "BERT",
    examples: "MiniLM, bge, e5, gte, arctic-embed",
    family: Family::Encoder,
    llama_cpp: true,
    vocabularies: &[Vocabulary::WordPiece, Vocabulary::Unigram],
    attention: Attention::Bidirectional,
    grouped_heads: false,
    positions: Positions::Table,
    norms: Norms::PostLayerNorm,
    feed_forward: FeedForward::Gelu,
    default_pooling: Pooling::Mean,
    token_types: true,
    scaled_embeddings: false,
    dense_head: false,
    blocks: Blocks::Bert,
    gpu: Gpu::F16Activations,
    trainable: true,
    card_prefix: None,
    hf_model_types: &[
        hf("bert", "bert.", HfPositions::Absolute),
        // XLM-R's compute is BERT's; only its position ids start after the padding index.
        hf("xlm-roberta", "roberta.", HfPositions::AbsoluteAfterPadding),
        hf("roberta", "roberta.", HfPositions::AbsoluteAfterPadding),
        hf("camembert", "roberta.", HfPositions::AbsoluteAfterPadding),
    ],
};

pub(super) const MPNET: Spec = Spec {
    name: "mpnet",
    label: "MPNet",
    examples: "all-mpnet-base-v2",
    family: Family::Encoder,
    llama_cpp: false,
    vocabularies: &[],
    attention: Attention::Bidirectional,
    grouped_heads: false,
    positions: Positions::Table,
    norms: Norms::PostLayerNorm,
    feed_forward: FeedForward::Gelu,
    default_pooling: Pooling::Mean,
    token_types: false,
    scaled_embeddings: false,
    dense_head: false,
    blocks: Blocks::MpNet,
    gpu: Gpu::F16Activations,
    trainable: true,
    card_prefix: None,
    hf_model_types: &[hf("mpnet", "mpnet.", HfPositions::AfterPaddingKept)],
};

pub(super) const NOMIC_BERT: Spec = Spec {
    name: "nomic-bert",
    label: "nomic-bert",
    examples: "nomic-embed-text v1/v1.5",
    family: Family::Encoder,
    llama_cpp: true,
    vocabularies: &[Vocabulary::WordPiece],
    attention: Attention::Bidirectional,
    grouped_heads: false,
    positions: Positions::Rotary,
    norms: Norms::PostLayerNorm,
    feed_forward: FeedForward::SwiGlu,
    default_pooling: Pooling::Mean,
    token_types: true,
    scaled_embeddings: false,
    dense_head: false,
    blocks: Blocks::FusedGated,
    gpu: Gpu::F16Activations,
    trainable: false,
    card_prefix: None,
    hf_model_types: &[],
};

pub(super) const MODERN_BERT: Spec = Spec {
    name: "modern-bert",
    label: "ModernBERT",
    examples: "modernbert-embed-base, gte-modernbert-base, granite-embedding-*-r2",
    family: Family::Encoder,
    llama_cpp: true,
    vocabularies: &[Vocabulary::ByteLevelBpe],
    attention: Attention::Bidirectional,
    grouped_heads: false,
    positions: Positions::LocalGlobal {
        default_period: 3,
        global_last: false,
        default_local_base: None,
    },
    norms: Norms::PreLayerNorm,
    feed_forward: FeedForward::GeGluOrSwiGlu,
    default_pooling: Pooling::Mean,
    token_types: false,
    scaled_embeddings: false,
    dense_head: false,
    blocks: Blocks::FusedPreNorm,
    gpu: Gpu::F32Activations,
    trainable: false,
    card_prefix: None,
    hf_model_types: &[],
};

pub(super) const QWEN2: Spec = Spec {
    name: "qwen2",
    label: "Qwen2",
    examples: "gte-Qwen2-1.5B-instruct, gte-Qwen2-7B-instruct",
    family: Family::Decoder,
    llama_cpp: true,
    vocabularies: &[Vocabulary::ByteLevelBpe],
    attention: Attention::Causal,
    grouped_heads: true,
    positions: Positions::Rotary,
    norms: Norms::PreRmsNorm,
    feed_forward: FeedForward::SwiGlu,
    default_pooling: Pooling::Last,
    token_types: false,
    scaled_embeddings: false,
    dense_head: false,
    blocks: Blocks::Decoder(DecoderParts {
        qk_norms: false,
        qkv_biases: true,
        post_norms: false,
    }),
    gpu: Gpu::F32Activations,
    trainable: false,
    card_prefix: None,
    hf_model_types: &[],
};

pub(super) const QWEN3: Spec = Spec {
    name: "qwen3",
    label: "Qwen3",
    examples: "Qwen3-Embedding-0.6B/4B/8B",
    family: Family::Decoder,
    llama_cpp: true,
    vocabularies: &[Vocabulary::ByteLevelBpe],
    attention: Attention::Causal,
    grouped_heads: true,
    positions: Positions::Rotary,
    norms: Norms::PreRmsNorm,
    feed_forward: FeedForward::SwiGlu,
    default_pooling: Pooling::Last,
    token_types: false,
    scaled_embeddings: false,
    dense_head: false,
    blocks: Blocks::Decoder(DecoderParts {
        qk_norms: true,
        qkv_biases: false,
        post_norms: false,
    }),
    gpu: Gpu::F32Activations,
    trainable: false,
    card_prefix: None,
    hf_model_types: &[],
};

pub(super) const GEMMA_EMBEDDING: Spec = Spec {
    name: "gemma-embedding",
    label: "EmbeddingGemma",
    examples: "EmbeddingGemma-300m",
    family: Family::Decoder,
    llama_cpp: true,
    vocabularies: &[Vocabulary::SentencePieceBpe],
    // Built of decoder blocks, but reads both ways, as llama.cpp runs it.
    attention: Attention::Bidirectional,
    grouped_heads: true,
    positions: Positions::LocalGlobal {
        default_period: 6,
        global_last: true,
        default_local_base: Some(10_000.0),
    },
    norms: Norms::SandwichRmsNorm,
    feed_forward: FeedForward::GeGluTanh,
    default_pooling: Pooling::Mean,
    token_types: false,
    scaled_embeddings: true,
    dense_head: true,
    blocks: Blocks::Decoder(DecoderParts {
        qk_norms: true,
        qkv_biases: false,
        post_norms: true,
    }),
    gpu: Gpu::F32Activations,
    trainable: false,
    // Measured on its real weights: STS-B test 84.87 → 88.17 (docs/benchmarks.md).
    card_prefix: Some("task: sentence similarity | query: "),
    hf_model_types: &[],
};

pub(super) const T5_ENCODER: Spec = Spec {
    name: "t5encoder",
    label: "T5 encoder",
    examples: "Sentence-T5, GTR (llama.cpp keeps no Dense head)",
    family: Family::Encoder,
    llama_cpp: true,
    vocabularies: &[Vocabulary::Unigram],
    attention: Attention::Bidirectional,
    grouped_heads: false,
    positions: Positions::RelativeBuckets,
    norms: Norms::PreRmsNorm,
    feed_forward: FeedForward::ReluOrGeGluTanh,
    default_pooling: Pooling::Mean,
    token_types: false,
    scaled_embeddings: false,
    // sentence-transformers' Sentence-T5 and GTR end in one Dense (hidden → hidden), which
    // llama.cpp's converter does not write: their files' vectors are the mean's.
    dense_head: false,
    blocks: Blocks::T5,
    gpu: Gpu::F32Activations,
    trainable: false,
    card_prefix: None,
    hf_model_types: &[],
};

const fn hf(
    model_type: &'static str,
    stored_prefix: &'static str,
    positions: HfPositions,
) -> HfModelType {
    HfModelType {
        model_type,
        stored_prefix,
        positions,
    }
}
