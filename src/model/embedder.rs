//! Texts → sentence embeddings: tokenize, sort by length, batch, run the backend, restore order.
//! Also the syntax-blind baseline (mean of the model's static input token embeddings).

use anyhow::{Context, Result};
use candle_core::quantized::QMatMul;
use candle_core::{Device, Tensor};

use super::{l2_normalize, EncoderBackend, ModelFile, ModelInfo, TextTokenizer, TokenBatch};
use crate::eval::SentenceEncoder;

/// Sentences per forward pass. Inputs are sorted by length first, so padding stays small.
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// Name of the token embedding table in every supported architecture.
pub const WORD_EMBEDDINGS: &str = "embeddings.word_embeddings.weight";

/// A loaded sentence encoder: tokenizer + backend + the static token table for the baseline.
pub struct Embedder {
    pub info: ModelInfo,
    tokenizer: TextTokenizer,
    /// The token embedding table, shared with the CPU backend (a `QMatMul` clone shares data).
    word_embeddings: QMatMul,
    backend: Box<dyn EncoderBackend>,
    batch_size: usize,
}

impl Embedder {
    pub fn new(
        file: &ModelFile,
        word_embeddings: QMatMul,
        backend: Box<dyn EncoderBackend>,
    ) -> Result<Self> {
        let tokenizer = TextTokenizer::from_json(
            &file.tokenizer_json,
            file.info.max_seq_length,
            file.config.pad_token_id as u32,
        )?;
        Ok(Self {
            info: file.info.clone(),
            tokenizer,
            word_embeddings,
            backend,
            batch_size: DEFAULT_BATCH_SIZE,
        })
    }

    /// Loads the token embedding table every architecture has (used by backends and the baseline).
    pub fn load_word_embeddings(file: &ModelFile) -> Result<QMatMul> {
        Ok(QMatMul::from_qtensor(file.tensor(WORD_EMBEDDINGS)?)?)
    }

    pub fn set_batch_size(&mut self, batch_size: usize) {
        self.batch_size = batch_size.max(1);
    }

    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// L2-normalised embeddings, one per text, in input order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let tokens = texts
            .iter()
            .map(|t| self.tokenizer.encode(t))
            .collect::<Result<Vec<_>>>()?;
        // Sorting by length keeps each batch's padding (wasted compute) small.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| tokens[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch_size) {
            let rows: Vec<Vec<u32>> = chunk.iter().map(|&i| tokens[i].clone()).collect();
            let batch = TokenBatch::from_rows(&rows, self.tokenizer.pad_id());
            let vectors = self.backend.encode(&batch)?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// The syntax-blind baseline: the mean of the static input embeddings of a text's tokens
    /// (special tokens excluded, no transformer layer), L2-normalised. Order-invariant by
    /// construction, like the averaged word2vec of the Czech News STS paper.
    pub fn embed_static(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts
            .iter()
            .map(|text| {
                let ids = self.tokenizer.encode_without_special_tokens(text)?;
                if ids.is_empty() {
                    return Ok(vec![0.0; self.info.dim]);
                }
                let ids = Tensor::new(ids.as_slice(), &Device::Cpu)?;
                let rows = self.word_embeddings.embedding(&ids)?;
                let mut mean = rows.mean(0)?.to_vec1::<f32>().context("static embedding")?;
                l2_normalize(&mut mean);
                Ok(mean)
            })
            .collect()
    }

    /// Token count including special tokens, after truncation (the batching key).
    pub fn token_count(&self, text: &str) -> usize {
        self.tokenizer.encode(text).map(|t| t.len()).unwrap_or(0)
    }
}

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

impl Embedder {
    /// This model as a benchmark encoder, in the given representation.
    pub fn as_encoder(&self, representation: Representation) -> impl SentenceEncoder + '_ {
        RepresentedEmbedder {
            embedder: self,
            representation,
        }
    }
}

struct RepresentedEmbedder<'a> {
    embedder: &'a Embedder,
    representation: Representation,
}

impl SentenceEncoder for RepresentedEmbedder<'_> {
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
