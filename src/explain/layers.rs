//! The layer probe: Spearman per layer (0 = the embedding output) for SR structure avg,
//! relation avg and STS-B test, from one forward pass per sentence that pools every layer.
//!
//! Memory stays bounded: a chunk of pairs is embedded at every layer, each pair keeps only its
//! cosine per layer (`pairs × layers × 8` bytes: 20k pairs × 13 layers = 2 MB on the full
//! split), and the chunk's vectors (≤ 2 × 64 sentences × layers × dim × 4 bytes: 5 MB for
//! MPNet) are dropped before the next.

use std::collections::HashMap;

use anyhow::{Context, Result};
use serde::Serialize;

use super::pairs::{cosine64, ChunkedValues, ProbePairs, ProbeProgress};
use crate::eval::Split;
use crate::model::Embedder;

/// One layer's row of the report (Spearman ×100, 2 decimals; `null` where not evaluated).
#[derive(Debug, Clone, Serialize)]
pub struct LayerScores {
    pub layer: usize,
    pub structure_avg: Option<f64>,
    pub relation_avg: Option<f64>,
    pub stsb_test: Option<f64>,
}

/// `{"model", "dtype", "split", "pooling", "pairs", "layers": [{"layer", "structure_avg",
/// "relation_avg", "stsb_test"}, ..], "memory": {...}}`.
#[derive(Debug, Clone, Serialize)]
pub struct LayerReport {
    pub model: String,
    pub dtype: String,
    pub split: Split,
    /// How every layer is pooled (the model's own pooling, so the last row is the ordinary
    /// run's).
    pub pooling: String,
    pub pairs: usize,
    pub layers: Vec<LayerScores>,
    pub memory: ProbeMemory,
}

/// What the probe itself held at its peak (the model's own memory aside).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ProbeMemory {
    /// The per-pair values kept to the end.
    pub kept_bytes: usize,
    /// The largest chunk's vectors, dropped after the chunk.
    pub chunk_vector_bytes: usize,
}

/// A layer probe in progress, driven a chunk at a time ([`LayerProbe::step`]) so a worker can
/// report progress and cancel between chunks.
#[derive(Debug, Clone)]
pub struct LayerProbe {
    values: ChunkedValues,
    chunk_vector_bytes: usize,
}

impl LayerProbe {
    pub fn new(pairs: ProbePairs) -> Self {
        Self {
            values: ChunkedValues::new(pairs),
            chunk_vector_bytes: 0,
        }
    }

    pub fn progress(&self) -> ProbeProgress {
        self.values.progress()
    }

    pub fn is_done(&self) -> bool {
        self.values.is_done()
    }

    /// Embeds the next chunk's sentences at every layer and keeps the pairs' cosines.
    pub fn step(&mut self, embedder: &Embedder) -> Result<ProbeProgress> {
        let peak = &mut self.chunk_vector_bytes;
        self.values.step(|pairs| {
            let (texts, index) = unique_texts(pairs.iter().flat_map(|p| [&p.left, &p.right]));
            let vectors = embedder.embed_layers(&texts)?;
            let bytes = vectors.iter().flatten().map(|v| v.len() * 4).sum::<usize>();
            *peak = (*peak).max(bytes);
            Ok(pairs
                .iter()
                .map(|pair| {
                    let (left, right) = (
                        &vectors[index[pair.left.as_str()]],
                        &vectors[index[pair.right.as_str()]],
                    );
                    left.iter()
                        .zip(right)
                        .map(|(a, b)| cosine64(a, b))
                        .collect()
                })
                .collect())
        })
    }

    /// The report, named after `embedder`'s model and dtype (the one the steps used).
    pub fn finish(self, embedder: &Embedder) -> Result<LayerReport> {
        if !self.is_done() {
            let p = self.progress();
            anyhow::bail!("finish: only {} of {} pairs are scored", p.done, p.total);
        }
        let pairs = &self.values.pairs;
        let layers = (0..self.values.width())
            .map(|layer| {
                let scores = pairs.scores(&self.values.column(layer));
                LayerScores {
                    layer,
                    structure_avg: scores.structure_avg,
                    relation_avg: scores.relation_avg,
                    stsb_test: scores.stsb_test,
                }
            })
            .collect();
        Ok(LayerReport {
            model: embedder.info.name.clone(),
            dtype: embedder.info.dtype.clone(),
            split: pairs.split,
            pooling: embedder.info.pooling_mode().as_str().to_string(),
            pairs: pairs.pairs.len(),
            layers,
            memory: ProbeMemory {
                kept_bytes: self.values.kept_bytes(),
                chunk_vector_bytes: self.chunk_vector_bytes,
            },
        })
    }
}

/// Per layer, the cosine of `a` and `b` (layer 0 first): the playground's line chart.
pub fn layer_cosines(embedder: &Embedder, a: &str, b: &str) -> Result<Vec<f64>> {
    let vectors = embedder.embed_layers(&[a, b])?;
    let (left, right) = (vectors.first(), vectors.get(1));
    let (left, right) = left.zip(right).context("the backend returned no layers")?;
    Ok(left
        .iter()
        .zip(right)
        .map(|(x, y)| cosine64(x, y))
        .collect())
}

/// The distinct texts, in first-use order, with each one's index.
pub(super) fn unique_texts<'a>(
    texts: impl Iterator<Item = &'a String>,
) -> (Vec<&'a str>, HashMap<&'a str, usize>) {
    let mut order = Vec::new();
    let mut index = HashMap::new();
    for text in texts {
        index.entry(text.as_str()).or_insert_with(|| {
            order.push(text.as_str());
            order.len() - 1
        });
    }
    (order, index)
}
