//! What the benchmark scores: a loaded model, or its syntax-blind baseline, as an
//! [`eval::SentenceEncoder`](crate::eval::SentenceEncoder). The one place where `model` meets
//! `eval` (neither imports the other).

use anyhow::Result;

use crate::eval::{Encoder, SentenceEncoder};
use crate::model::Embedder;

/// A model as the benchmark runner sees it: its embeddings ([`Encoder::Model`]) or the
/// syntax-blind baseline's ([`Encoder::Static`], [`Embedder::embed_static`]).
pub struct Scored<'a> {
    pub embedder: &'a Embedder,
    pub encoder: Encoder,
}

impl<'a> Scored<'a> {
    pub fn new(embedder: &'a Embedder, encoder: Encoder) -> Self {
        Self { embedder, encoder }
    }
}

impl SentenceEncoder for Scored<'_> {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        match self.encoder {
            Encoder::Model => self.embedder.embed(texts),
            Encoder::Static => self.embedder.embed_static(texts),
        }
    }
    fn length_key(&self, text: &str) -> usize {
        match self.encoder {
            Encoder::Model => self.embedder.token_count(text),
            Encoder::Static => text.len(),
        }
    }
}
