//! The parts an architecture is described with ([`super::Spec`]'s field types).

/// Encoder blocks, or a decoder LLM's blocks read as an embedder (pre-RMSNorm, grouped heads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Encoder,
    Decoder,
}

/// Which tokens a token attends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attention {
    /// Every token sees every token (local layers narrow it to a window: [`Positions`]).
    Bidirectional,
    /// A token sees the ones before it: the sentence is in the last token (Qwen3-Embedding).
    Causal,
}

/// How a token's position enters the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Positions {
    /// A learned table added to the embeddings (MPNet adds relative-position buckets too).
    Table,
    /// Queries and keys rotated by position, one base in every layer.
    Rotary,
    /// Local layers (a sliding window, their own rotary base) between global ones.
    LocalGlobal {
        /// llama.cpp's default period of the global layers, where a file gives none.
        default_period: usize,
        /// The global layer ends each period (Gemma 3's five local, then one global) instead
        /// of starting it (ModernBERT's).
        global_last: bool,
        /// The local layers' rotary base where a file gives none; `None`: the global one.
        default_local_base: Option<f64>,
    },
    /// No positions in the input: each layer adds to its scores a learned bias per head and
    /// distance bucket (T5's bidirectional log buckets, the first layer's table used by all).
    RelativeBuckets,
}

/// Where the norms sit and what they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norms {
    /// LayerNorm with bias after each residual sum (BERT's).
    PostLayerNorm,
    /// LayerNorm without bias before each block, one after the last (ModernBERT's).
    PreLayerNorm,
    /// RMSNorm before each block, over each query and key head, after the last (Qwen3's).
    PreRmsNorm,
    /// Gemma's: RMSNorm scaled by `1 + weight` before and after each block (llama.cpp's
    /// converter stores the weights with the 1 added).
    SandwichRmsNorm,
}

/// The feed-forward block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedForward {
    /// `down(gelu(up(x)))`.
    Gelu,
    /// `down(silu(gate(x)) ⊙ up(x))`.
    SwiGlu,
    /// `down(gelu(gate(x)) ⊙ up(x))`, or SwiGLU where the file says `silu` (Granite R2).
    GeGluOrSwiGlu,
    /// `down(gelu_tanh(gate(x)) ⊙ up(x))` (Gemma's).
    GeGluTanh,
    /// `down(relu(up(x)))` (T5 1.0's: Sentence-T5, GTR), or T5 1.1's tanh GeGLU where the
    /// file has a gate.
    ReluOrGeGluTanh,
}

impl FeedForward {
    /// The activations (`EncoderConfig::hidden_act`) a model of this kind may name.
    pub fn activations(self) -> &'static [&'static str] {
        match self {
            Self::Gelu => &["gelu"],
            Self::SwiGlu => &["swiglu"],
            Self::GeGluOrSwiGlu => &["geglu", "swiglu"],
            Self::GeGluTanh => &["geglu_tanh"],
            Self::ReluOrGeGluTanh => &["relu", "geglu_tanh"],
        }
    }

    /// Matrices of hidden × intermediate per layer: in and out, and the gate where there is
    /// one (what FLOP counts and memory estimates multiply by; the most where a file may
    /// have a gate or not).
    pub fn matrices(self) -> usize {
        match self {
            Self::Gelu => 2,
            Self::SwiGlu | Self::GeGluOrSwiGlu | Self::GeGluTanh | Self::ReluOrGeGluTanh => 3,
        }
    }
}

/// A vocabulary kind as llama.cpp's files record it (`tokenizer.ggml.model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vocabulary {
    /// `bert`: WordPiece in llama.cpp's phantom-space spelling.
    WordPiece,
    /// `t5`: SentencePiece Unigram (XLM-R's, in multilingual BERT-family files).
    Unigram,
    /// `gpt2`: byte-level BPE.
    ByteLevelBpe,
    /// `llama`: SentencePiece BPE (Gemma's).
    SentencePieceBpe,
}

impl Vocabulary {
    pub const ALL: [Self; 4] = [
        Self::WordPiece,
        Self::Unigram,
        Self::ByteLevelBpe,
        Self::SentencePieceBpe,
    ];

    /// The file's spelling (`tokenizer.ggml.model`).
    pub fn ggml_name(self) -> &'static str {
        match self {
            Self::WordPiece => "bert",
            Self::Unigram => "t5",
            Self::ByteLevelBpe => "gpt2",
            Self::SentencePieceBpe => "llama",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::WordPiece => "WordPiece",
            Self::Unigram => "SentencePiece Unigram",
            Self::ByteLevelBpe => "byte-level BPE",
            Self::SentencePieceBpe => "SentencePiece BPE",
        }
    }

    pub fn from_ggml_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.ggml_name() == name)
    }
}

/// The tensors one layer reads, and their names (`tensor_names`, `tensor_shapes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocks {
    /// BERT's eight parts by Hugging Face name (a llama.cpp file's are mapped to them).
    Bert,
    /// MPNet's eight parts (`attn.{q,k,v,o}`) and the shared relative-position table.
    MpNet,
    /// Fused QKV, gated feed-forward, post-norm, llama.cpp's names (nomic-bert).
    FusedGated,
    /// Fused QKV, fused gate and up, pre-norm, llama.cpp's names (ModernBERT).
    FusedPreNorm,
    /// Separate grouped Q, K, V, gated feed-forward, pre-norm, llama.cpp's names (Qwen2,
    /// Qwen3, Gemma 3).
    Decoder(DecoderParts),
    /// T5's encoder (`enc.blk.N.*`): pre-RMSNorm, separate Q, K, V without biases, scores
    /// not scaled by 1/√head_dim (T5 folds it into the query weights), the first layer's
    /// relative-position table, a ReLU or gated feed-forward, a final RMSNorm.
    T5,
}

/// What a decoder layer has beyond Qwen2's (pre-RMSNorm, grouped Q, K, V, SwiGLU-like gated
/// feed-forward).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderParts {
    /// An RMSNorm over each query and key head before the rotary positions (Qwen3, Gemma 3).
    pub qk_norms: bool,
    /// Biases on the query, key and value projections (Qwen2).
    pub qkv_biases: bool,
    /// A norm after each block too, before its residual sum (Gemma 3).
    pub post_norms: bool,
}

/// What the WebGPU backend does with the architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gpu {
    /// Runs it; activations may be f16 where the device has it.
    F16Activations,
    /// Runs it with f32 activations: pre-norm layers add each residual to the f32 stream,
    /// which their kernels read as activations (Gemma's would also overflow f16).
    F32Activations,
}

/// A Hugging Face `model_type` that `sr-bench convert --from` reads as this architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HfModelType {
    pub model_type: &'static str,
    /// The prefix safetensors may put before the encoder's names (`bert.`, `roberta.`).
    pub stored_prefix: &'static str,
    pub positions: HfPositions,
}

/// How a Hugging Face model's position ids count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HfPositions {
    /// From row 0; `position_embedding_type` must be `absolute` (BERT).
    Absolute,
    /// From after the padding index, `absolute` too: the unused rows are cut from the stored
    /// table, so BERT's encoder reads it from row 0 (RoBERTa's family).
    AbsoluteAfterPadding,
    /// From after the padding index, the table kept whole: MPNet's encoder offsets them.
    AfterPaddingKept,
}
