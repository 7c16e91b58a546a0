//! What the benchmark scores: a loaded model, or its syntax-blind baseline, as an
//! [`eval::SentenceEncoder`](crate::eval::SentenceEncoder). The one place where `model` meets
//! `eval` (neither imports the other).

use anyhow::Result;

use crate::eval::SentenceEncoder;
use crate::model::Embedder;

/// What a text becomes: the model's embedding, or the syntax-blind baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Representation {
    #[default]
    Model,
    /// Mean of static token embeddings ([`Embedder::embed_static`]).
    StaticBaseline,
}

impl std::str::FromStr for Representation {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "model" => Ok(Self::Model),
            "static" => Ok(Self::StaticBaseline),
            other => anyhow::bail!("unknown encoder '{other}' (expected: model, static)"),
        }
    }
}

/// A model in one representation, as the benchmark runner sees it.
pub struct Scored<'a> {
    pub embedder: &'a Embedder,
    pub representation: Representation,
}

impl<'a> Scored<'a> {
    pub fn new(embedder: &'a Embedder, representation: Representation) -> Self {
        Self {
            embedder,
            representation,
        }
    }
}

impl SentenceEncoder for Scored<'_> {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        match self.representation {
            Representation::Model => self.embedder.embed(texts),
            Representation::StaticBaseline => self.embedder.embed_static(texts),
        }
    }
    fn length_key(&self, text: &str) -> usize {
        match self.representation {
            Representation::Model => self.embedder.token_count(text),
            Representation::StaticBaseline => text.len(),
        }
    }
}
