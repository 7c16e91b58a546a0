//! The pairs a probe scores (SR structure and relation pairs of a split, STS-B test), cut into
//! chunks that a probe processes one at a time: it keeps only a few numbers per pair, never
//! the vectors of more than one chunk.

use std::ops::Range;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::eval::metrics::{pearson, round_to, spearman};
use crate::eval::rng::fnv1a;
use crate::eval::{Dimension, Split, SrFile, StsFile};

/// Pairs per chunk (a chunk holds at most twice as many sentences).
pub const CHUNK_PAIRS: usize = 64;

/// Which result a pair counts towards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Index into [`ProbePairs::sr_names`], and the dimension.
    Sr(usize, Dimension),
    StsbTest,
}

/// One pair: its group, texts, gold score and a key that names it (file, dimension, line)
/// for per-pair seeds that do not depend on which other pairs are in the run.
#[derive(Debug, Clone)]
pub struct ProbePair {
    pub group: Group,
    pub left: String,
    pub right: String,
    pub gold: f64,
    pub key: u64,
}

/// The pairs of a probe run: an SR row's two pairs next to each other (so its sentence1 is
/// embedded once per chunk), then STS-B test.
#[derive(Debug, Clone)]
pub struct ProbePairs {
    pub split: Split,
    /// SR files in Table 4 order.
    pub sr_names: Vec<String>,
    pub pairs: Vec<ProbePair>,
}

/// Spearman ×100 per result (2 decimals); `None` where the run has no such pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GroupScores {
    /// Mean over the SR files of the structure Spearman (Table 4's "avg").
    pub structure_avg: Option<f64>,
    pub relation_avg: Option<f64>,
    pub stsb_test: Option<f64>,
    /// STS-B test Pearson ×100.
    pub stsb_test_pearson: Option<f64>,
}

impl ProbePairs {
    /// SR files may be any subset of [`SR_FILES`] (unknown or repeated names are errors).
    pub fn new(mut sr_files: Vec<SrFile>, stsb: Option<StsFile>, split: Split) -> Result<Self> {
        crate::eval::runner::sort_sr_files(&mut sr_files)?;
        let total_rows: usize = sr_files.iter().map(|file| file.rows.len()).sum();
        let mut pairs = Vec::new();
        for (index, file) in sr_files.iter().enumerate() {
            for row_index in split.rows(&file.name, file.rows.len(), total_rows) {
                let row = &file.rows[row_index];
                for (dimension, right, gold) in [
                    (Dimension::Structure, &row.structure, row.structure_score),
                    (Dimension::Relation, &row.relation, row.relation_score),
                ] {
                    pairs.push(ProbePair {
                        group: Group::Sr(index, dimension),
                        left: row.sentence1.clone(),
                        right: right.clone(),
                        gold,
                        key: fnv1a(&format!(
                            "{}/{}/{}",
                            file.name,
                            dimension.as_str(),
                            row.line
                        )),
                    });
                }
            }
        }
        for pair in stsb.iter().flat_map(|file| &file.pairs) {
            pairs.push(ProbePair {
                group: Group::StsbTest,
                left: pair.sentence1.clone(),
                right: pair.sentence2.clone(),
                gold: pair.score,
                key: fnv1a(&format!("stsb_test/{}", pair.line)),
            });
        }
        if pairs.is_empty() {
            bail!("nothing to probe: no SR rows and no STS-B test pairs");
        }
        Ok(Self {
            split,
            sr_names: sr_files.into_iter().map(|file| file.name).collect(),
            pairs,
        })
    }

    /// Consecutive ranges of about [`CHUNK_PAIRS`] pairs; pairs that share their left
    /// sentence with the previous pair stay in its chunk.
    pub fn chunks(&self) -> Vec<Range<usize>> {
        let mut chunks = Vec::new();
        let mut start = 0;
        for end in 1..=self.pairs.len() {
            let full = end - start >= CHUNK_PAIRS;
            let same_row =
                end < self.pairs.len() && self.pairs[end].left == self.pairs[end - 1].left;
            if end == self.pairs.len() || (full && !same_row) {
                chunks.push(start..end);
                start = end;
            }
        }
        chunks
    }

    /// Scores one cosine per pair (in pair order).
    pub fn scores(&self, cosines: &[f64]) -> GroupScores {
        let group = |wanted: Group| -> (Vec<f64>, Vec<f64>) {
            self.pairs
                .iter()
                .zip(cosines)
                .filter(|(pair, _)| pair.group == wanted)
                .map(|(pair, &cos)| (pair.gold, cos))
                .unzip()
        };
        // Table 4's average: the files' unrounded Spearman ×100, averaged, then rounded.
        let average = |dimension: Dimension| -> Option<f64> {
            if self.sr_names.is_empty() {
                return None;
            }
            let sum: f64 = (0..self.sr_names.len())
                .map(|index| {
                    let (gold, cos) = group(Group::Sr(index, dimension));
                    100.0 * spearman(&gold, &cos)
                })
                .sum();
            Some(round_to(sum / self.sr_names.len() as f64, 2))
        };
        let (gold, cos) = group(Group::StsbTest);
        let stsb = !gold.is_empty();
        GroupScores {
            structure_avg: average(Dimension::Structure),
            relation_avg: average(Dimension::Relation),
            stsb_test: stsb.then(|| round_to(100.0 * spearman(&gold, &cos), 2)),
            stsb_test_pearson: stsb.then(|| round_to(100.0 * pearson(&gold, &cos), 2)),
        }
    }
}

/// How far a probe run is, in pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProbeProgress {
    pub done: usize,
    pub total: usize,
}

/// The chunk loop both probes share: per pair a fixed number of values (layers, seeds),
/// computed a chunk at a time; only those values are kept.
#[derive(Debug, Clone)]
pub struct ChunkedValues {
    pub pairs: ProbePairs,
    chunks: Vec<Range<usize>>,
    next: usize,
    /// Values per pair, known after the first chunk.
    width: Option<usize>,
    /// Pair-major: `values[pair * width + k]`.
    values: Vec<f64>,
}

impl ChunkedValues {
    pub fn new(pairs: ProbePairs) -> Self {
        Self {
            chunks: pairs.chunks(),
            pairs,
            next: 0,
            width: None,
            values: Vec::new(),
        }
    }

    pub fn progress(&self) -> ProbeProgress {
        ProbeProgress {
            done: self.chunks[..self.next].last().map_or(0, |c| c.end),
            total: self.pairs.pairs.len(),
        }
    }

    pub fn is_done(&self) -> bool {
        self.next == self.chunks.len()
    }

    /// Runs `values_of` on the next chunk's pairs (one row of values per pair, all rows of one
    /// width); a no-op once done.
    pub fn step(
        &mut self,
        values_of: impl FnOnce(&[ProbePair]) -> Result<Vec<Vec<f64>>>,
    ) -> Result<ProbeProgress> {
        let Some(range) = self.chunks.get(self.next).cloned() else {
            return Ok(self.progress());
        };
        let rows = values_of(&self.pairs.pairs[range.clone()])?;
        let width = self.width.unwrap_or(rows.first().map_or(0, Vec::len));
        if rows.len() != range.len() || rows.iter().any(|r| r.len() != width) || width == 0 {
            bail!(
                "a probe chunk of {} pairs gave {} uneven rows",
                range.len(),
                rows.len()
            );
        }
        if let Some((pair, _)) = rows
            .iter()
            .enumerate()
            .find(|(_, r)| r.iter().any(|v| !v.is_finite()))
        {
            let pair = &self.pairs.pairs[range.start + pair];
            bail!(
                "cosine of {:?} and {:?} is undefined",
                pair.left,
                pair.right
            );
        }
        self.width = Some(width);
        self.values.extend(rows.into_iter().flatten());
        self.next += 1;
        Ok(self.progress())
    }

    /// Bytes of the values kept (pairs × width × 8).
    pub fn kept_bytes(&self) -> usize {
        self.pairs.pairs.len() * self.width.unwrap_or(0) * std::mem::size_of::<f64>()
    }

    /// Values per pair (0 before the first chunk).
    pub fn width(&self) -> usize {
        self.width.unwrap_or(0)
    }

    /// The `k`-th value of every pair, in pair order (once done).
    pub fn column(&self, k: usize) -> Vec<f64> {
        let width = self.width();
        (0..self.pairs.pairs.len())
            .map(|pair| self.values[pair * width + k])
            .collect()
    }
}

/// Cosine in f64 of two vectors (0 for a zero vector).
pub fn cosine64(a: &[f32], b: &[f32]) -> f64 {
    crate::eval::runner::cosine64(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::runner::testing::{fake_report, six_varied_files, varied_stsb, FakeEncoder};

    fn pairs() -> ProbePairs {
        ProbePairs::new(six_varied_files(), Some(varied_stsb(50)), Split::Full).unwrap()
    }

    #[test]
    fn chunks_cover_the_pairs_and_keep_a_row_together() {
        let pairs = pairs();
        let chunks = pairs.chunks();
        assert_eq!(chunks.first().unwrap().start, 0);
        assert_eq!(chunks.last().unwrap().end, pairs.pairs.len());
        for (chunk, next) in chunks.iter().zip(&chunks[1..]) {
            assert_eq!(chunk.end, next.start);
            assert!(chunk.len() <= CHUNK_PAIRS + 1);
            let (last, first) = (&pairs.pairs[chunk.end - 1], &pairs.pairs[next.start]);
            assert_ne!(last.left, first.left, "a row's pairs stay in one chunk");
        }
    }

    #[test]
    fn scores_match_the_benchmark_runner() {
        let pairs = pairs();
        let cosines: Vec<f64> = pairs
            .pairs
            .iter()
            .map(|p| {
                cosine64(
                    &FakeEncoder::vector(&p.left),
                    &FakeEncoder::vector(&p.right),
                )
            })
            .collect();
        let scores = pairs.scores(&cosines);
        let report = fake_report(six_varied_files(), Some(varied_stsb(50)));
        assert_eq!(
            scores.structure_avg,
            Some(report.results.structure.avg_spearman)
        );
        assert_eq!(
            scores.relation_avg,
            Some(report.results.relation.avg_spearman)
        );
        let stsb = report.stsb_test.unwrap();
        assert_eq!(scores.stsb_test, Some(stsb.spearman));
        assert_eq!(scores.stsb_test_pearson, Some(stsb.pearson));
    }

    #[test]
    fn chunked_values_reject_uneven_or_undefined_rows() {
        let mut values = ChunkedValues::new(pairs());
        let err = values
            .step(|chunk| Ok(vec![vec![0.5]; chunk.len() - 1]))
            .unwrap_err();
        assert!(err.to_string().contains("uneven"), "{err}");
        let err = values
            .step(|chunk| Ok(vec![vec![f64::NAN]; chunk.len()]))
            .unwrap_err();
        assert!(err.to_string().contains("undefined"), "{err}");
        let progress = values
            .step(|chunk| Ok(vec![vec![0.5, 0.25]; chunk.len()]))
            .unwrap();
        assert!(progress.done > 0 && progress.done < progress.total);
        assert_eq!(values.width(), 2);
    }
}
