//! The benchmark report and its JSON contract, plus the per-pair CSV.
//!
//! JSON schema (a contract other tools rely on: extend, never rename):
//! ```text
//! {"model": "...", "dtype": "...", "split": "full"|"quick",
//!  "results": {"structure": {"stsb": CELL, "sickr": CELL, ..., "biosses": CELL, "avg_spearman": x},
//!              "relation":  {... same ...}},
//!  "stsb_test": CELL | null,
//!  "czech_news_sts": {...},   // only when the Czech set was evaluated
//!  "pairs": [PAIR, ...]}      // only while `Report::pairs` is Some
//! CELL = {"n": rows, "spearman": x, "pearson": x, "spearman_ci95": [lo, hi], "mse": x, "rmse": x}
//! PAIR = {"file", "dimension", "line", "sentence1", "sentence2", "gold", "cosine"}
//! ```
//! Spearman, Pearson and the interval are ×100 rounded to 2 decimals (Table 4's unit); MSE
//! and RMSE are on the [0, 1] scale (gold / 5 against the raw cosine), rounded to 6
//! decimals. An undefined statistic is `null`. Files appear in Table 4's order.

use anyhow::{Context, Result};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::eval::czech::CzechReport;
use crate::eval::metrics::{
    mse, pearson, spearman, spearman_ci95, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED,
};
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
    /// Czech News STS: model vs random human vs oracle; absent when not evaluated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub czech_news_sts: Option<CzechReport>,
    /// Every scored pair, for scatter plots and the CSV export. `finish` fills it; set it to
    /// `None` (or `take()` it) to leave it out of the JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairs: Option<Vec<PairResult>>,
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

/// One scored pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairResult {
    /// SR file name, `"stsb_test"` or `"czech_news_sts"`.
    pub file: String,
    /// `"structure"`, `"relation"`, or `"similarity"` for the plain STS sets.
    pub dimension: String,
    /// Line of the pair in its file.
    pub line: usize,
    /// First sentence (SR: the original).
    pub sentence1: String,
    /// Second sentence (SR: the variant).
    pub sentence2: String,
    /// Gold score on the file's own scale (0–5, Czech 0–6).
    pub gold: f64,
    /// Cosine of the two embeddings.
    pub cosine: f64,
}

/// The pairs as CSV with the header `file,dimension,line,sentence1,sentence2,gold,cosine`.
pub fn pairs_csv(pairs: &[PairResult]) -> Result<Vec<u8>> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record([
        "file",
        "dimension",
        "line",
        "sentence1",
        "sentence2",
        "gold",
        "cosine",
    ])?;
    for pair in pairs {
        writer
            .write_record([
                pair.file.as_str(),
                pair.dimension.as_str(),
                &pair.line.to_string(),
                &pair.sentence1,
                &pair.sentence2,
                &pair.gold.to_string(),
                &pair.cosine.to_string(),
            ])
            .context("writing the pairs CSV")?;
    }
    writer.into_inner().context("finishing the pairs CSV")
}

/// Rounds to `decimals` places (half away from zero); NaN stays NaN.
pub(crate) fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::data::SR_FILES;
    use crate::eval::runner::tests::{fake_report, six_varied_files, sr_file, varied_stsb};

    /// Byte offsets of `keys` (as `"key":`) in `json`, to check their order.
    fn positions(json: &str, keys: &[&str]) -> Vec<usize> {
        keys.iter()
            .map(|key| {
                json.find(&format!("\"{key}\":"))
                    .unwrap_or_else(|| panic!("{key} missing in {json}"))
            })
            .collect()
    }

    fn is_sorted(values: &[usize]) -> bool {
        values.windows(2).all(|w| w[0] < w[1])
    }

    #[test]
    fn json_follows_the_contract() {
        let mut report = fake_report(six_varied_files(), Some(varied_stsb(30)));
        report.model = "all-MiniLM-L6-v2".into();
        report.dtype = "q8_0".into();
        report.pairs = None;
        let json = serde_json::to_string(&report).unwrap();
        assert!(json.starts_with(r#"{"model":"all-MiniLM-L6-v2","dtype":"q8_0","split":"full","results":{"structure":{"stsb":{"n":20,"spearman":"#), "{json}");
        let top = positions(&json, &["model", "dtype", "split", "results", "stsb_test"]);
        assert!(is_sorted(&top));
        assert!(!json.contains("\"pairs\""));
        assert!(!json.contains("czech_news_sts"));

        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        for dimension in ["structure", "relation"] {
            let dim = match dimension {
                "structure" => Dimension::Structure,
                _ => Dimension::Relation,
            };
            let dim_json = serde_json::to_string(&value["results"][dimension]).unwrap();
            let mut keys: Vec<&str> = SR_FILES.to_vec();
            keys.push("avg_spearman");
            // serde_json::Value sorts keys; check the order in the typed value's own text.
            let section = serde_json::to_string(report.results.dimension(dim)).unwrap();
            assert!(is_sorted(&positions(&section, &keys)), "{section}");
            assert_eq!(dim_json.matches("\"n\":20").count(), 6);
            let cells = &value["results"][dimension];
            let spearmans: Vec<f64> = SR_FILES
                .iter()
                .map(|f| cells[f]["spearman"].as_f64().unwrap())
                .collect();
            let mean = spearmans.iter().sum::<f64>() / 6.0;
            let avg = cells["avg_spearman"].as_f64().unwrap();
            assert!((avg - mean).abs() <= 0.006, "{avg} vs {mean}");
            for file in SR_FILES {
                let cell = &cells[file];
                let typed = report.results.dimension(dim).get(file).unwrap();
                let section = serde_json::to_string(typed).unwrap();
                assert!(is_sorted(&positions(
                    &section,
                    &["n", "spearman", "pearson", "spearman_ci95", "mse", "rmse"]
                )));
                for key in ["spearman", "pearson"] {
                    let v = cell[key].as_f64().unwrap();
                    assert_eq!(v, (v * 100.0).round() / 100.0, "{key} {v} not 2 decimals");
                    assert!((-100.0..=100.0).contains(&v));
                }
                let ci = cell["spearman_ci95"].as_array().unwrap();
                assert!(ci[0].as_f64().unwrap() <= ci[1].as_f64().unwrap());
            }
        }
        let stsb = &value["stsb_test"];
        assert_eq!(stsb["n"], 30);
        assert!(stsb["spearman"].is_f64() && stsb["pearson"].is_f64());
    }

    #[test]
    fn missing_stsb_is_null_and_pairs_are_included_until_removed() {
        let mut report = fake_report(six_varied_files(), None);
        let json = serde_json::to_value(&report).unwrap();
        assert!(json["stsb_test"].is_null());
        assert!(json.as_object().unwrap().contains_key("stsb_test"));
        let pairs = json["pairs"].as_array().unwrap();
        assert_eq!(pairs.len(), 2 * 6 * 20);
        let first = &pairs[0];
        for key in [
            "file",
            "dimension",
            "line",
            "sentence1",
            "sentence2",
            "gold",
            "cosine",
        ] {
            assert!(first.get(key).is_some(), "{key}");
        }
        assert_eq!(first["file"], "stsb");
        assert_eq!(first["dimension"], "structure");
        let taken = report.pairs.take().unwrap();
        assert_eq!(taken.len(), 240);
        assert!(serde_json::to_value(&report)
            .unwrap()
            .get("pairs")
            .is_none());
    }

    #[test]
    fn undefined_statistics_serialise_as_null() {
        // Every structure score is 3: Spearman and Pearson are undefined for that dimension.
        let rows: Vec<(String, String, f64, String, f64)> = (0..5)
            .map(|i| {
                (
                    format!("s {i}"),
                    format!("r {i}{i}"),
                    i as f64,
                    format!("t {i}"),
                    3.0,
                )
            })
            .collect();
        let borrowed: Vec<_> = rows
            .iter()
            .map(|(a, b, c, d, e)| (a.as_str(), b.as_str(), *c, d.as_str(), *e))
            .collect();
        let report = fake_report(vec![sr_file("cqa", &borrowed)], None);
        let json = serde_json::to_value(&report).unwrap();
        let cell = &json["results"]["structure"]["cqa"];
        assert!(cell["spearman"].is_null() && cell["pearson"].is_null());
        assert!(cell["spearman_ci95"][0].is_null());
        assert!(cell["mse"].is_f64());
        assert!(json["results"]["structure"]["avg_spearman"].is_null());
        assert!(json["results"]["relation"]["cqa"]["spearman"].is_f64());
    }

    #[test]
    fn cell_rounds_and_scales_the_metrics() {
        // Same vectors as the metrics tests: scipy spearman 0.98164981..., pearson 0.97308524...
        let gold = [1.0, 2.0, 2.0, 3.0, 5.0, 5.0, 5.0, 0.0, 4.0, 4.0];
        let cos = [0.10, 0.35, 0.20, 0.50, 0.90, 0.70, 0.80, 0.05, 0.60, 0.65];
        let cell = Cell::compute(&gold, &cos, 5.0);
        assert_eq!(cell.n, 10);
        assert_eq!(cell.spearman, 98.16);
        assert_eq!(cell.pearson, 97.31);
        // np.mean((np.array(gold)/5 - np.array(cos))**2) = 0.026750000000000006, sqrt 0.163554...
        assert_eq!(cell.mse, 0.02675);
        assert_eq!(cell.rmse, 0.163554);
    }

    #[test]
    fn pairs_csv_quotes_and_orders_columns() {
        let pairs = [PairResult {
            file: "sickr".into(),
            dimension: "relation".into(),
            line: 7,
            sentence1: "A, \"quoted\" one".into(),
            sentence2: "plain".into(),
            gold: 4.0,
            cosine: 0.5,
        }];
        let csv = String::from_utf8(pairs_csv(&pairs).unwrap()).unwrap();
        assert_eq!(
            csv,
            "file,dimension,line,sentence1,sentence2,gold,cosine\n\
             sickr,relation,7,\"A, \"\"quoted\"\" one\",plain,4,0.5\n"
        );
        // And it reads back with the benchmark's own CSV settings.
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let record = reader.records().next().unwrap().unwrap();
        assert_eq!(&record[3], "A, \"quoted\" one");
    }
}
