//! What an architecture is, in one place: [`Architecture`] (parsed once from
//! `general.architecture`) and one [`Spec`] per variant. Every other place that differs by
//! architecture reads the spec or matches the enum exhaustively, so a new architecture that
//! forgets a place does not compile, and no model quietly runs BERT's arithmetic. The specs
//! are in `specs.rs`, the parts they are made of in `parts.rs`; this folder is the only place
//! under `src/` that spells an architecture's name.

mod parts;
mod specs;

use serde::Serialize;

pub use parts::{
    Attention, Blocks, DecoderParts, Family, FeedForward, Gpu, HfModelType, HfPositions, Norms,
    Positions, Vocabulary,
};

use super::Pooling;
use crate::error::{coded, ErrorCode};
use specs::{BERT, GEMMA_EMBEDDING, MODERN_BERT, MPNET, NOMIC_BERT, QWEN2, QWEN3, T5_ENCODER};

/// The architectures the engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Architecture {
    Bert,
    MpNet,
    NomicBert,
    ModernBert,
    Qwen2,
    Qwen3,
    GemmaEmbedding,
    T5Encoder,
}

/// One architecture, described once.
#[derive(Debug)]
pub struct Spec {
    /// `general.architecture`, and the prefix of its llama.cpp keys (`bert.block_count`).
    pub name: &'static str,
    /// How people write it ("ModernBERT").
    pub label: &'static str,
    /// Models of this architecture, for messages.
    pub examples: &'static str,
    pub family: Family,
    /// llama.cpp's converter writes it (MPNet is not a llama.cpp architecture).
    pub llama_cpp: bool,
    /// The vocabularies its llama.cpp files may carry.
    pub vocabularies: &'static [Vocabulary],
    pub attention: Attention,
    /// Key/value heads shared by several query heads, and heads of their own size.
    pub grouped_heads: bool,
    pub positions: Positions,
    pub norms: Norms,
    pub feed_forward: FeedForward,
    /// Pooling where a file names none (`pooling_type`); causal ones must name it.
    pub default_pooling: Pooling,
    /// BERT's token type table (row 0) is added to the input.
    pub token_types: bool,
    /// The embeddings are scaled by √hidden before the first layer (Gemma's).
    pub scaled_embeddings: bool,
    /// sentence-transformers' Dense head after pooling may follow (EmbeddingGemma's).
    pub dense_head: bool,
    pub blocks: Blocks,
    pub gpu: Gpu,
    /// `sr-bench train` fine-tunes it (our own files' BERT and MPNet).
    pub trainable: bool,
    /// The STS instruction its model card gives, where files carry none (the page offers it).
    pub card_prefix: Option<&'static str>,
    /// What `sr-bench convert --from` reads as this architecture.
    pub hf_model_types: &'static [HfModelType],
}

impl Spec {
    /// The parts of its decoder layers, for the decoder-built ones.
    pub fn decoder_parts(&self) -> Option<DecoderParts> {
        match self.blocks {
            Blocks::Decoder(parts) => Some(parts),
            Blocks::Bert
            | Blocks::MpNet
            | Blocks::FusedGated
            | Blocks::FusedPreNorm
            | Blocks::T5 => None,
        }
    }
}

impl Architecture {
    /// Every architecture we run, in the order messages list them.
    pub const ALL: [Self; 8] = [
        Self::Bert,
        Self::MpNet,
        Self::NomicBert,
        Self::ModernBert,
        Self::Qwen2,
        Self::Qwen3,
        Self::GemmaEmbedding,
        Self::T5Encoder,
    ];

    pub const fn spec(self) -> &'static Spec {
        match self {
            Self::Bert => &BERT,
            Self::MpNet => &MPNET,
            Self::NomicBert => &NOMIC_BERT,
            Self::ModernBert => &MODERN_BERT,
            Self::Qwen2 => &QWEN2,
            Self::Qwen3 => &QWEN3,
            Self::GemmaEmbedding => &GEMMA_EMBEDDING,
            Self::T5Encoder => &T5_ENCODER,
        }
    }

    /// `general.architecture`.
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    /// The architecture a file names, or an [`ErrorCode::UnsupportedArchitecture`] error that
    /// lists the ones we run.
    pub fn parse(name: &str) -> anyhow::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| {
                coded(
                    ErrorCode::UnsupportedArchitecture,
                    format!(
                        "model file: unsupported architecture '{name}' (supported: {})",
                        names(Self::ALL.into_iter())
                    ),
                )
            })
    }

    /// The architecture of a llama.cpp file, refused by name when we do not run it.
    pub fn parse_llama_cpp(name: &str) -> anyhow::Result<Self> {
        let known = Self::ALL.into_iter().filter(|a| a.spec().llama_cpp);
        match known.clone().find(|a| a.name() == name) {
            Some(a) => Ok(a),
            None => {
                Err(coded(
                    ErrorCode::UnsupportedArchitecture,
                    format!(
                    "llama.cpp file with architecture '{name}': the embedding models we run are \
                     {} ({} …)",
                    names(known.clone()),
                    known.map(|a| a.spec().examples).collect::<Vec<_>>().join(", ")
                ),
                ))
            }
        }
    }

    /// The architecture `sr-bench convert --from` reads a Hugging Face `model_type` as.
    pub fn from_hf_model_type(model_type: &str) -> anyhow::Result<(Self, HfModelType)> {
        let all = || {
            Self::ALL
                .into_iter()
                .flat_map(|a| a.spec().hf_model_types.iter().map(move |t| (a, *t)))
        };
        all()
            .find(|(_, t)| t.model_type == model_type)
            .ok_or_else(|| {
                let supported: Vec<_> = all().map(|(_, t)| t.model_type).collect();
                anyhow::anyhow!(
                    "unsupported model_type {model_type} (supported: {})",
                    supported.join(", ")
                )
            })
    }
}

/// `a, b, c`.
fn names(architectures: impl Iterator<Item = Architecture>) -> String {
    architectures
        .map(|a| a.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl std::fmt::Display for Architecture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Architecture {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Architecture {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Self::parse(&name).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_is_unique() {
        for a in Architecture::ALL {
            assert_eq!(Architecture::parse(a.name()).unwrap(), a);
        }
        let err = Architecture::parse("llama").unwrap_err().to_string();
        assert!(
            err.contains("'llama'") && err.contains("gemma-embedding"),
            "{err}"
        );
        let err = Architecture::parse_llama_cpp("mpnet")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("nomic-bert") && !err.contains("mpnet,"),
            "{err}"
        );
    }

    #[test]
    fn the_table_is_consistent() {
        for a in Architecture::ALL {
            let s = a.spec();
            // Pre-norm stacks add each residual to the f32 stream the kernels read.
            let pre_norm = !matches!(s.norms, Norms::PostLayerNorm);
            assert_eq!(pre_norm, s.gpu == Gpu::F32Activations, "{a}");
            assert_eq!(s.llama_cpp, !s.vocabularies.is_empty(), "{a}");
            assert_eq!(
                s.attention == Attention::Causal,
                s.default_pooling == Pooling::Last
            );
            assert!(s.grouped_heads == (s.family == Family::Decoder), "{a}");
        }
        let (a, t) = Architecture::from_hf_model_type("xlm-roberta").unwrap();
        assert_eq!(
            (a, t.positions),
            (Architecture::Bert, HfPositions::AbsoluteAfterPadding)
        );
        assert!(Architecture::from_hf_model_type("t5").is_err());
    }

    /// Every file of the engine and the page that would say an architecture's name as a
    /// string: the table's folder alone may (the rest reads the spec or matches the enum).
    #[test]
    fn only_the_table_spells_architecture_names() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let table = root.join("src/model/architecture");
        let skipped = ["www/dist", "www/pkg", "www/vendor"].map(|d| root.join(d));
        let mut files = Vec::new();
        let mut folders = vec![root.join("src"), root.join("www")];
        while let Some(folder) = folders.pop() {
            if folder.starts_with(&table) || skipped.iter().any(|s| folder.starts_with(s)) {
                continue;
            }
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                let source = ["rs", "js", "ts", "mjs", "html"]
                    .iter()
                    .any(|e| path.extension().is_some_and(|x| x == *e));
                match path.is_dir() {
                    true => folders.push(path),
                    false if source => files.push(path),
                    false => {}
                }
            }
        }
        assert!(files.len() > 100, "{} source files", files.len());
        let mut found = Vec::new();
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            for a in Architecture::ALL {
                for quoted in [format!("\"{a}\""), format!("'{a}'")] {
                    if text.contains(&quoted) {
                        found.push(format!("{} spells {quoted}", path.display()));
                    }
                }
            }
        }
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}
