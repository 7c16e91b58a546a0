//! The benchmark report and its JSON contract, plus the per-pair CSV.
//!
//! JSON schema (a contract other tools rely on: extend, never rename):
//! ```text
//! {"model": "...", "dtype": "...", "split": "full"|"quick",
//!  "results": {"structure": {"stsb": CELL, "sickr": CELL, ..., "biosses": CELL, "avg_spearman": x},
//!              "relation":  {... same ...}},
//!  "stsb_test": CELL | null,
//!  "encoder": "model"|"static",
//!  "paper": {"structure": {"stsb": x, ..., "avg": x}, "relation": {...}},  // Table 4 row, when known
//!  "czech_news_sts": {...},   // only when the Czech set was evaluated
//!  "own_pairs": {"name", "layout": "sts"|"sr", "scale_max", "similarity"|"structure"+"relation": CELL},
//!                             // only for a user's own pairs file
//!  "pairwise": {"min_gap", "chance", "files": {"stsb": ACC, ...}, "all": ACC,
//!               "baseline": {... the same, for the syntax-blind baseline ...}},
//!                             // when SR files were scored: how often the model picks the
//!                             // rewrite with the higher gold score (report/pairwise.rs)
//!  "prefix": "...",           // the text the model read before every input ("" for none)
//!  "pairs": [PAIR, ...]}      // only while `Report::pairs` is Some
//! CELL = {"n": rows, "spearman": x, "pearson": x, "spearman_ci95": [lo, hi], "mse": x, "rmse": x}
//! PAIR = {"file", "dimension", "line", "sentence1", "sentence2", "gold", "cosine", "rank_gap"}
//! ```
//!
//! `model`, `dtype`, `encoder`, `paper` and `prefix` are written by [`Report::stamp`] alone (the CLI and
//! the wasm layer both call it); everything else by `EvalRun::finish` (the runner).
//!
//! Spearman, Pearson and the interval are ×100 rounded to 2 decimals (Table 4's unit); MSE
//! and RMSE are on the [0, 1] scale (gold / 5 against the raw cosine), rounded to 6
//! decimals. An undefined statistic is `null`. Files appear in Table 4's order.

use std::fmt;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::eval::czech::CzechReport;
use crate::eval::metrics::{
    mse, pearson, round_to, spearman, spearman_ci95, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED,
};
use crate::eval::paper::{paper_reference, PaperRow};
use crate::eval::retrieval::RetrievalReport;
use crate::eval::split::Split;

/// The two SR dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dimension {
    /// Structural heuristics: sentence1 vs its `structure` variant.
    Structure,
    /// Relational understanding: sentence1 vs its `relation` variant.
    Relation,
}

impl Dimension {
    /// `"structure"` or `"relation"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Structure => "structure",
            Dimension::Relation => "relation",
        }
    }
}

/// What produced the embeddings: the model itself, or the syntax-blind static baseline (the
/// mean of the model's static token embeddings). The model layer maps its own representation
/// onto this; eval does not know the model crate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoder {
    /// The encoder's forward pass.
    #[default]
    Model,
    /// The static baseline.
    Static,
}

impl Encoder {
    /// `"model"` or `"static"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoder::Model => "model",
            Encoder::Static => "static",
        }
    }
}

impl fmt::Display for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Encoder {
    type Err = anyhow::Error;

    /// `"model"` or `"static"`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "model" => Ok(Encoder::Model),
            "static" => Ok(Encoder::Static),
            other => bail!("unknown encoder '{other}': expected model or static"),
        }
    }
}

/// The name a report carries: the model's own name, or `"<name> (static baseline)"` for the
/// baseline. The one naming rule of the CLI and the page.
pub fn report_model_name(model_name: &str, encoder: Encoder) -> String {
    match encoder {
        Encoder::Model => model_name.to_string(),
        Encoder::Static => format!("{model_name} (static baseline)"),
    }
}

/// A whole run's results.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Model name, set by the caller (e.g. `"all-MiniLM-L6-v2"`).
    pub model: String,
    /// Weight type, set by the caller (e.g. `"f32"`, `"q8_0"`).
    pub dtype: String,
    /// Which SR rows were evaluated.
    pub split: Split,
    /// Table 4: per file and dimension.
    pub results: SrResults,
    /// STS-B test set (all 1,379 pairs); `null` when not evaluated.
    pub stsb_test: Option<Cell>,
    /// What produced the embeddings, set by [`Report::stamp`].
    pub encoder: Encoder,
    /// The text put before every input of the model ("": none; the baseline never has one).
    #[serde(default)]
    pub prefix: String,
    /// The paper's Table 4 row for this model, set by [`Report::stamp`] when the encoder is
    /// the model and the paper has it; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paper: Option<PaperRow>,
    /// Retrieval (nDCG@10, MRR@10) from the graded pairs evaluated (STS-B test: see
    /// [`crate::eval::retrieval`]); absent when STS-B test was not evaluated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<RetrievalReport>,
    /// Czech News STS: model vs random human vs oracle; absent when not evaluated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub czech_news_sts: Option<CzechReport>,
    /// A user's own pairs file; absent when not evaluated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_pairs: Option<OwnPairsReport>,
    /// Pairwise accuracy over the SR rows whose gold scores differ by at least its
    /// `min_gap`; absent when no SR file was scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<PairwiseReport>,
    /// Every scored pair, for scatter plots and the CSV export. `finish` fills it; set it to
    /// `None` (or `take()` it) to leave it out of the JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairs: Option<Vec<PairResult>>,
}

impl Report {
    /// Names a finished report: `model` by [`report_model_name`], `dtype`, `encoder`, and,
    /// when `encoder` is the model, `paper` (the paper's Table 4 row for `model_name`) and
    /// `prefix` (the text the model read before every input; the baseline reads none).
    pub fn stamp(&mut self, model_name: &str, dtype: &str, encoder: Encoder, prefix: &str) {
        self.model = report_model_name(model_name, encoder);
        self.dtype = dtype.to_string();
        self.encoder = encoder;
        (self.paper, self.prefix) = match encoder {
            Encoder::Model => (
                paper_reference(model_name).map(|reference| reference.table4),
                prefix.to_string(),
            ),
            Encoder::Static => (None, String::new()),
        };
    }
}

impl Report {
    /// Recomputes the pairwise accuracy keeping the rows whose gold scores differ by at least
    /// `min_gap` (the default is [`pairwise::DEFAULT_MIN_GAP`]); needs the pairs.
    pub fn set_min_gap(&mut self, min_gap: f64) -> Result<()> {
        let pairs = self
            .pairs
            .as_ref()
            .context("the pairwise accuracy needs the report's per-pair results")?;
        // The run computed it at the default gap already.
        if self.pairwise.as_ref().is_some_and(|p| p.min_gap != min_gap) {
            let files: Vec<String> = self
                .results
                .structure
                .files
                .iter()
                .map(|(n, _)| n.clone())
                .collect();
            self.pairwise = Some(PairwiseReport::from_pairs(pairs, &files, min_gap)?);
        }
        Ok(())
    }

    /// Puts the syntax-blind baseline's pairwise accuracy (a static run of the same rows and
    /// gap) beside the model's.
    pub fn set_pairwise_baseline(&mut self, baseline: Option<PairwiseReport>) -> Result<()> {
        let (Some(pairwise), Some(baseline)) = (self.pairwise.as_mut(), baseline) else {
            return Ok(());
        };
        if baseline.min_gap != pairwise.min_gap || baseline.all.n != pairwise.all.n {
            bail!(
                "the baseline's pairwise accuracy is of other rows ({} at gap {}, the model's {} \
                 at gap {})",
                baseline.all.n,
                baseline.min_gap,
                pairwise.all.n,
                pairwise.min_gap
            );
        }
        pairwise.baseline = Some(Box::new(baseline));
        Ok(())
    }
}

/// The SR results of both dimensions.
#[derive(Debug, Clone, Serialize)]
pub struct SrResults {
    /// Structural heuristics.
    pub structure: DimensionResults,
    /// Relational understanding.
    pub relation: DimensionResults,
}

impl SrResults {
    /// The results of one dimension.
    pub fn dimension(&self, dimension: Dimension) -> &DimensionResults {
        match dimension {
            Dimension::Structure => &self.structure,
            Dimension::Relation => &self.relation,
        }
    }
}

/// One row of Table 4: a cell per SR file (Table 4 order) and their average Spearman.
/// Serialises as a map `{"stsb": CELL, …, "avg_spearman": x}`.
#[derive(Debug, Clone)]
pub struct DimensionResults {
    /// (file name, cell), in Table 4 order.
    pub files: Vec<(String, Cell)>,
    /// Mean of the files' Spearman ×100 (computed before rounding, then rounded to 2
    /// decimals), as Table 4's "avg" column; NaN if any file's Spearman is undefined.
    pub avg_spearman: f64,
}

impl DimensionResults {
    /// Wraps the cells and averages their Spearman.
    pub fn new(files: Vec<(String, Cell)>) -> Self {
        let avg = files
            .iter()
            .map(|(_, cell)| cell.spearman_unrounded)
            .sum::<f64>()
            / files.len() as f64;
        DimensionResults {
            files,
            avg_spearman: round_to(avg, 2),
        }
    }

    /// The cell of one file, if it was evaluated.
    pub fn get(&self, file: &str) -> Option<&Cell> {
        self.files
            .iter()
            .find(|(name, _)| name == file)
            .map(|(_, cell)| cell)
    }
}

impl Serialize for DimensionResults {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.files.len() + 1))?;
        for (name, cell) in &self.files {
            map.serialize_entry(name, cell)?;
        }
        map.serialize_entry("avg_spearman", &self.avg_spearman)?;
        map.end()
    }
}

/// The scores of one set of pairs (one SR file and dimension, or STS-B test).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// Pairs scored.
    pub n: usize,
    /// Spearman ×100, 2 decimals.
    pub spearman: f64,
    /// Pearson ×100, 2 decimals.
    pub pearson: f64,
    /// 95 % bootstrap interval of Spearman ×100, 2 decimals (1000 resamples, fixed seed,
    /// percentile method; see [`spearman_ci95`]).
    pub spearman_ci95: [f64; 2],
    /// MSE between gold / scale max and the raw cosine, 6 decimals.
    pub mse: f64,
    /// RMSE on the same scale, 6 decimals.
    pub rmse: f64,
    /// Spearman ×100 before rounding, for the average.
    #[serde(skip)]
    spearman_unrounded: f64,
}

impl Cell {
    /// Scores cosines against gold scores on `0..=scale_max`.
    ///
    /// MSE/RMSE compare gold / `scale_max` with the cosine as it is, neither clamped nor
    /// rescaled: this follows the Czech News STS paper, whose bi-encoder puts a cosine on top
    /// and is trained so that the cosine itself matches the [0, 1]-scaled score (as
    /// sentence-transformers' CosineSimilarityLoss does). For a model not tuned that way the
    /// error measures calibration as much as quality; the correlations are the benchmark.
    pub fn compute(gold: &[f64], cosines: &[f64], scale_max: f64) -> Self {
        let gold_unit: Vec<f64> = gold.iter().map(|g| g / scale_max).collect();
        let spearman_unrounded = 100.0 * spearman(gold, cosines);
        let [lo, hi] = spearman_ci95(gold, cosines, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED);
        let mse = mse(&gold_unit, cosines);
        Cell {
            n: gold.len(),
            spearman: round_to(spearman_unrounded, 2),
            pearson: round_to(100.0 * pearson(gold, cosines), 2),
            spearman_ci95: [round_to(100.0 * lo, 2), round_to(100.0 * hi, 2)],
            mse: round_to(mse, 6),
            rmse: round_to(mse.sqrt(), 6),
            spearman_unrounded,
        }
    }
}

/// A user's own pairs file scored: one cell for the STS layout, one per dimension for the SR
/// layout. MSE divides the scores by `scale_max` (1, 5, 6, 10 or 100: the smallest holding them all).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OwnPairsReport {
    /// The file's name as given.
    pub name: String,
    /// "sts" (`sentence1,sentence2,score`) or "sr" (the SR files' columns).
    pub layout: String,
    pub scale_max: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<Cell>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structure: Option<Cell>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<Cell>,
}

mod pairs;
pub mod pairwise;

pub use pairs::{pairs_csv, pairs_csv_from_json, PairResult, PAIRS_CSV_HEADER};

use pairwise::PairwiseReport;

#[cfg(test)]
mod tests;
