//! [`EvalRun::finish`]: cosines of the planned pairs, the cells of Table 4, STS-B test and
//! Czech News STS, and the per-pair results.

use std::collections::HashMap;

use anyhow::{bail, Result};

use super::plan::{Group, PlannedPair};
use super::{EvalRun, CZECH_LABEL, OWN_LABEL, SIMILARITY_LABEL, STSB_TEST_LABEL};
use crate::eval::czech::czech_report;
use crate::eval::data::{SR_SCORE_MAX, STSB_SCORE_MAX};
use crate::eval::metrics::average_ranks;
use crate::eval::report::pairwise::{PairwiseReport, DEFAULT_MIN_GAP};
use crate::eval::report::{
    Cell, Dimension, DimensionResults, Encoder, OwnPairsReport, PairResult, Report, SrResults,
};
use crate::eval::retrieval::{self, RetrievalReport};

impl EvalRun {
    /// Cosine per pair and all metrics. `model`, `dtype`, `encoder` and `paper` of the report
    /// are left for the caller to set with [`Report::stamp`]; `pairs` holds every pair, each
    /// with its rank gap (take it out to omit it from the JSON).
    /// Takes about half a second natively on the full benchmark, nearly all of it the
    /// bootstrap intervals.
    pub fn finish(self) -> Result<Report> {
        if !self.is_done() {
            bail!(
                "finish: only {} of {} sentences are embedded",
                self.done,
                self.order.len()
            );
        }
        let plan = &self.plan;
        let cosines = plan
            .pairs
            .iter()
            .map(|pair| {
                let cos = cosine(&self.embeddings[pair.left], &self.embeddings[pair.right]);
                if cos.is_finite() {
                    Ok(cos)
                } else {
                    let (a, b) = (&plan.sentences[pair.left], &plan.sentences[pair.right]);
                    bail!("cosine of {a:?} and {b:?} is undefined (a zero embedding)")
                }
            })
            .collect::<Result<Vec<f64>>>()?;

        // Gold and cosine of the pairs of one group, in plan order.
        let group_values = |group: Group| -> (Vec<f64>, Vec<f64>) {
            plan.pairs
                .iter()
                .zip(&cosines)
                .filter(|(pair, _)| pair.group == group)
                .map(|(pair, &cos)| (pair.gold, cos))
                .unzip()
        };
        let dimension_results = |dimension: Dimension| {
            let files = plan
                .sr_names
                .iter()
                .enumerate()
                .map(|(index, name)| {
                    let (gold, cos) = group_values(Group::Sr(index, dimension));
                    (name.clone(), Cell::compute(&gold, &cos, SR_SCORE_MAX))
                })
                .collect();
            DimensionResults::new(files)
        };
        let results = SrResults {
            structure: dimension_results(Dimension::Structure),
            relation: dimension_results(Dimension::Relation),
        };
        let has_stsb = plan.pairs.iter().any(|pair| pair.group == Group::StsbTest);
        let stsb_test = has_stsb.then(|| {
            let (gold, cos) = group_values(Group::StsbTest);
            Cell::compute(&gold, &cos, STSB_SCORE_MAX)
        });
        let retrieval = has_stsb
            .then(|| {
                let pairs: Vec<(usize, usize, f64)> = plan
                    .pairs
                    .iter()
                    .filter(|pair| pair.group == Group::StsbTest)
                    .map(|pair| (pair.left, pair.right, pair.gold))
                    .collect();
                // Unit vectors in f64 once: the ranking is ~1.6 M cosines on STS-B test.
                let unit: HashMap<usize, Vec<f64>> = pairs
                    .iter()
                    .flat_map(|&(a, b, _)| [a, b])
                    .map(|id| (id, unit_f64(&self.embeddings[id])))
                    .collect();
                retrieval::evaluate(&pairs, |a, b| {
                    unit[&a].iter().zip(&unit[&b]).map(|(x, y)| x * y).sum()
                })
            })
            .flatten()
            .map(|stsb_test| RetrievalReport { stsb_test });
        let czech_news_sts = match &plan.czech {
            Some(file) => Some(czech_report(file, &group_values(Group::Czech).1)?),
            None => None,
        };
        let own_pairs = plan.own.as_ref().map(|own| {
            let cell = |group: Group| {
                let (gold, cos) = group_values(group);
                (!gold.is_empty()).then(|| Cell::compute(&gold, &cos, own.scale_max))
            };
            OwnPairsReport {
                name: own.name.clone(),
                layout: own.layout.to_string(),
                scale_max: own.scale_max,
                similarity: cell(Group::Own(None)),
                structure: cell(Group::Own(Some(Dimension::Structure))),
                relation: cell(Group::Own(Some(Dimension::Relation))),
            }
        });
        let rank_gaps = rank_gaps(&plan.pairs, &cosines);
        let pairs = plan
            .pairs
            .iter()
            .zip(&cosines)
            .zip(rank_gaps)
            .map(|((pair, &cosine), rank_gap)| {
                let (file, dimension) = match pair.group {
                    Group::Sr(index, dimension) => {
                        (plan.sr_names[index].clone(), dimension.as_str())
                    }
                    Group::StsbTest => (STSB_TEST_LABEL.to_string(), SIMILARITY_LABEL),
                    Group::Czech => (CZECH_LABEL.to_string(), SIMILARITY_LABEL),
                    Group::Own(None) => (OWN_LABEL.to_string(), SIMILARITY_LABEL),
                    Group::Own(Some(dimension)) => (OWN_LABEL.to_string(), dimension.as_str()),
                };
                PairResult {
                    file,
                    dimension: dimension.to_string(),
                    line: pair.line,
                    sentence1: plan.sentences[pair.left].clone(),
                    sentence2: plan.sentences[pair.right].clone(),
                    gold: pair.gold,
                    cosine,
                    rank_gap,
                }
            })
            .collect::<Vec<PairResult>>();
        let pairwise = match plan.sr_names.is_empty() {
            true => None,
            false => Some(PairwiseReport::from_pairs(
                &pairs,
                &plan.sr_names,
                DEFAULT_MIN_GAP,
            )?),
        };
        Ok(Report {
            model: String::new(),
            dtype: String::new(),
            split: plan.split,
            results,
            stsb_test,
            retrieval,
            encoder: Encoder::default(),
            prefix: String::new(),
            paper: None,
            czech_news_sts,
            own_pairs,
            pairwise,
            pairs: Some(pairs),
        })
    }
}

/// Rank of the cosine minus rank of the gold score of each pair, among the pairs of its own
/// group (an SR file and dimension, STS-B test, Czech): 1-based average ranks, the ranking
/// Spearman correlates.
pub(super) fn rank_gaps(pairs: &[PlannedPair], cosines: &[f64]) -> Vec<f64> {
    let mut groups: Vec<(Group, Vec<usize>)> = Vec::new();
    for (index, pair) in pairs.iter().enumerate() {
        match groups.iter_mut().find(|(group, _)| *group == pair.group) {
            Some((_, members)) => members.push(index),
            None => groups.push((pair.group, vec![index])),
        }
    }
    let mut gaps = vec![0.0; pairs.len()];
    for (_, members) in &groups {
        let gold: Vec<f64> = members.iter().map(|&i| pairs[i].gold).collect();
        let cos: Vec<f64> = members.iter().map(|&i| cosines[i]).collect();
        let ranks = average_ranks(&gold).into_iter().zip(average_ranks(&cos));
        for (&i, (gold_rank, cosine_rank)) in members.iter().zip(ranks) {
            gaps[i] = cosine_rank - gold_rank;
        }
    }
    gaps
}

/// `v` scaled to unit length, in f64.
fn unit_f64(v: &[f32]) -> Vec<f64> {
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    v.iter().map(|&x| f64::from(x) / norm).collect()
}

/// Cosine similarity in f64. The embeddings are meant to be unit length already; dividing by
/// the norms anyway keeps quantised or slightly denormalised vectors exact.
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    dot / (aa.sqrt() * bb.sqrt())
}

#[cfg(test)]
mod tests;
