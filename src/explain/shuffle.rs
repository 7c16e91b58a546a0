//! The word-order probe (the SR paper's §4.1 at inference time): every pair's second sentence
//! with its words shuffled, once per seed, scored against the unchanged gold. STS-B test
//! gives the headline ("with word order destroyed the model keeps X of its Y Spearman"); the
//! SR variants shuffled the same way are a sanity row.
//!
//! Pair `p` under seed `s` uses `shuffle_words(right, pair_seed(s, key(p)))`, `key` naming the
//! pair by file, dimension and line: a seed gives the same sentences whatever else is in the run.
//! A chunk's sentences (both sides, every seed) are embedded together and dropped after it.

use anyhow::{bail, Result};
use serde::Serialize;

use super::layers::unique_texts;
use super::pairs::{cosine64, ChunkedValues, GroupScores, ProbePairs, ProbeProgress};
use super::words::{pair_seed, shuffle_words};
use crate::eval::metrics::round_to;
use crate::eval::Split;
use crate::model::Embedder;

/// Ordinary STS-B test scores (×100).
#[derive(Debug, Clone, Serialize)]
pub struct Ordinary {
    pub spearman: Option<f64>,
    pub pearson: Option<f64>,
}

/// One seed's STS-B test and SR scores.
#[derive(Debug, Clone, Serialize)]
pub struct SeedScores {
    pub seed: u64,
    pub spearman: Option<f64>,
    pub pearson: Option<f64>,
    pub structure_avg: Option<f64>,
    pub relation_avg: Option<f64>,
}

/// Mean ± sample standard deviation over the seeds (×100, 2 decimals).
#[derive(Debug, Clone, Serialize)]
pub struct Shuffled {
    /// How many seeds (0..seeds).
    pub seeds: usize,
    pub spearman_mean: Option<f64>,
    pub spearman_sd: Option<f64>,
    pub pearson_mean: Option<f64>,
    pub pearson_sd: Option<f64>,
    pub per_seed: Vec<SeedScores>,
}

/// The SR sanity row: ordinary and shuffled averages (×100).
#[derive(Debug, Clone, Serialize)]
pub struct SrShuffle {
    pub split: Split,
    pub structure_avg: Option<f64>,
    pub relation_avg: Option<f64>,
    pub structure_avg_shuffled_mean: Option<f64>,
    pub structure_avg_shuffled_sd: Option<f64>,
    pub relation_avg_shuffled_mean: Option<f64>,
    pub relation_avg_shuffled_sd: Option<f64>,
}

/// `{"model", "dtype", "stsb_test": {"spearman", "pearson"}, "shuffled": {"seeds",
/// "spearman_mean", "spearman_sd", "pearson_mean", "pearson_sd", "per_seed": [..]},
/// "kept": spearman_mean / spearman, "sr": {...} | null, "finding": "..."}`.
#[derive(Debug, Clone, Serialize)]
pub struct ShuffleReport {
    pub model: String,
    pub dtype: String,
    pub stsb_test: Ordinary,
    pub shuffled: Shuffled,
    /// The share of the ordinary STS-B Spearman kept with shuffled words.
    pub kept: Option<f64>,
    pub sr: Option<SrShuffle>,
    /// The finding in one sentence, with the measured numbers.
    pub finding: String,
}

/// A shuffle probe in progress, stepped a chunk at a time.
#[derive(Debug, Clone)]
pub struct ShuffleProbe {
    values: ChunkedValues,
    seeds: usize,
}

impl ShuffleProbe {
    /// Seeds `0..seeds` (at least 1).
    pub fn new(pairs: ProbePairs, seeds: usize) -> Result<Self> {
        if seeds == 0 {
            bail!("the shuffle probe needs at least one seed");
        }
        Ok(Self {
            values: ChunkedValues::new(pairs),
            seeds,
        })
    }

    pub fn progress(&self) -> ProbeProgress {
        self.values.progress()
    }

    pub fn is_done(&self) -> bool {
        self.values.is_done()
    }

    /// Embeds the next chunk (left, right and each seed's shuffled right) and keeps per pair
    /// the ordinary cosine and one per seed.
    pub fn step(&mut self, embedder: &Embedder) -> Result<ProbeProgress> {
        let seeds = self.seeds as u64;
        self.values.step(|pairs| {
            let shuffled: Vec<Vec<String>> = pairs
                .iter()
                .map(|p| {
                    (0..seeds)
                        .map(|s| shuffle_words(&p.right, pair_seed(s, p.key)))
                        .collect()
                })
                .collect();
            let all = pairs
                .iter()
                .flat_map(|p| [&p.left, &p.right])
                .chain(shuffled.iter().flatten());
            let (texts, index) = unique_texts(all);
            let vectors = embedder.embed(&texts)?;
            let vector = |text: &str| &vectors[index[text]];
            Ok(pairs
                .iter()
                .zip(&shuffled)
                .map(|(pair, variants)| {
                    let left = vector(&pair.left);
                    std::iter::once(&pair.right)
                        .chain(variants)
                        .map(|right| cosine64(left, vector(right)))
                        .collect()
                })
                .collect())
        })
    }

    pub fn finish(self, embedder: &Embedder) -> Result<ShuffleReport> {
        if !self.is_done() {
            let p = self.progress();
            bail!("finish: only {} of {} pairs are scored", p.done, p.total);
        }
        let pairs = &self.values.pairs;
        let ordinary = pairs.scores(&self.values.column(0));
        let per_seed: Vec<(u64, GroupScores)> = (0..self.seeds)
            .map(|s| (s as u64, pairs.scores(&self.values.column(s + 1))))
            .collect();
        let stat = |get: fn(&GroupScores) -> Option<f64>| -> (Option<f64>, Option<f64>) {
            let values: Option<Vec<f64>> = per_seed.iter().map(|(_, s)| get(s)).collect();
            values.map_or((None, None), |v| {
                let (mean, sd) = mean_sd(&v);
                (Some(round_to(mean, 2)), sd.map(|sd| round_to(sd, 2)))
            })
        };
        let (spearman_mean, spearman_sd) = stat(|s| s.stsb_test);
        let (pearson_mean, pearson_sd) = stat(|s| s.stsb_test_pearson);
        let sr = (!pairs.sr_names.is_empty()).then(|| {
            let (structure_mean, structure_sd) = stat(|s| s.structure_avg);
            let (relation_mean, relation_sd) = stat(|s| s.relation_avg);
            SrShuffle {
                split: pairs.split,
                structure_avg: ordinary.structure_avg,
                relation_avg: ordinary.relation_avg,
                structure_avg_shuffled_mean: structure_mean,
                structure_avg_shuffled_sd: structure_sd,
                relation_avg_shuffled_mean: relation_mean,
                relation_avg_shuffled_sd: relation_sd,
            }
        });
        let kept = ordinary
            .stsb_test
            .zip(spearman_mean)
            .map(|(all, shuffled)| round_to(shuffled / all, 4));
        let finding = match (ordinary.stsb_test, spearman_mean, kept) {
            (Some(all), Some(mean), Some(kept)) => format!(
                "With word order destroyed the model keeps {mean:.2} of its {all:.2} STS-B \
                 Spearman ({:.0}%, mean of {} seeds).",
                kept * 100.0,
                self.seeds
            ),
            _ => "No STS-B test pairs were probed.".to_string(),
        };
        Ok(ShuffleReport {
            model: embedder.info.name.clone(),
            dtype: embedder.info.dtype.clone(),
            stsb_test: Ordinary {
                spearman: ordinary.stsb_test,
                pearson: ordinary.stsb_test_pearson,
            },
            shuffled: Shuffled {
                seeds: self.seeds,
                spearman_mean,
                spearman_sd,
                pearson_mean,
                pearson_sd,
                per_seed: per_seed
                    .iter()
                    .map(|(seed, s)| SeedScores {
                        seed: *seed,
                        spearman: s.stsb_test,
                        pearson: s.stsb_test_pearson,
                        structure_avg: s.structure_avg,
                        relation_avg: s.relation_avg,
                    })
                    .collect(),
            },
            kept,
            sr,
            finding,
        })
    }
}

/// Mean and sample standard deviation (`None` for one value).
fn mean_sd(values: &[f64]) -> (f64, Option<f64>) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.len() > 1)
        .then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    (mean, sd)
}
