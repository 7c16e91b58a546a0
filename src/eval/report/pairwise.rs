//! Pairwise accuracy: a yardstick a class reads at once. Each SR row holds an original
//! sentence and two rewrites with gold scores — one that keeps the meaning (voice, inversion)
//! and one that changes it (concepts swapped, relation perturbed). Where the two gold scores
//! differ by at least `min_gap`, the model "chooses" the rewrite whose cosine to the original
//! is higher; it is right when that rewrite has the higher gold score (equal cosines count
//! half). A coin is right half the time.
//!
//! JSON (the report's `pairwise`, a contract: extend, never rename):
//! ```text
//! {"min_gap": 2, "chance": 50,
//!  "files": {"stsb": ACC, ..., "biosses": ACC}, "all": ACC,
//!  "baseline": {"min_gap", "chance", "files", "all"}}   // `eval` of the model: the syntax-blind
//!                                                        // baseline on the same rows
//! ACC = {"n": rows, "correct": x, "accuracy": x, "ci95": [lo, hi]}
//! ```
//! `correct` counts ties as ½; `accuracy` and `ci95` (Wilson's score interval of a binomial
//! proportion at 95 %) are ×100 rounded to 2 decimals, `null` for a file with no row kept.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::{Dimension, PairResult};
use crate::eval::metrics::round_to;

/// Rows whose gold scores differ by less are left out (the issue's "clearly different").
pub const DEFAULT_MIN_GAP: f64 = 2.0;
/// The accuracy of a coin, ×100.
pub const CHANCE: f64 = 50.0;
/// z of a two-sided 95 % interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Accuracy over a set of rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    /// Rows whose gold scores differ by at least the gap.
    pub n: usize,
    /// Rows the model got right (ties ½).
    pub correct: f64,
    /// `correct / n` ×100, 2 decimals; `null` when `n` is 0.
    pub accuracy: Option<f64>,
    /// Wilson's 95 % interval ×100, 2 decimals; `null` when `n` is 0.
    pub ci95: Option<[f64; 2]>,
}

impl Accuracy {
    /// From the outcome of each row: 1 right, 0 wrong, ½ a tie.
    pub fn from_outcomes(outcomes: &[f64]) -> Self {
        let n = outcomes.len();
        let correct: f64 = outcomes.iter().sum();
        let (accuracy, ci95) = match n {
            0 => (None, None),
            _ => {
                let [lo, hi] = wilson_interval(correct, n as f64, Z95);
                (
                    Some(round_to(100.0 * correct / n as f64, 2)),
                    Some([round_to(100.0 * lo, 2), round_to(100.0 * hi, 2)]),
                )
            }
        };
        Accuracy {
            n,
            correct,
            accuracy,
            ci95,
        }
    }
}

/// Wilson's score interval of a proportion `successes / n` at the normal quantile `z`: the
/// interval of every p a z-test would not reject, which stays inside [0, 1] and is not empty
/// at 0 or n successes (the normal approximation's is).
pub fn wilson_interval(successes: f64, n: f64, z: f64) -> [f64; 2] {
    let p = successes / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    [(centre - half).max(0.0), (centre + half).min(1.0)]
}

/// The pairwise accuracy of a run, per SR file (Table 4 order) and over all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct PairwiseReport {
    pub min_gap: f64,
    pub files: Vec<(String, Accuracy)>,
    pub all: Accuracy,
    /// The syntax-blind baseline's on the same rows, where the run scored it too.
    pub baseline: Option<Box<PairwiseReport>>,
}

impl Serialize for PairwiseReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Files<'a>(&'a [(String, Accuracy)]);
        impl Serialize for Files<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for (name, accuracy) in self.0 {
                    map.serialize_entry(name, accuracy)?;
                }
                map.end()
            }
        }
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("min_gap", &self.min_gap)?;
        map.serialize_entry("chance", &CHANCE)?;
        map.serialize_entry("files", &Files(&self.files))?;
        map.serialize_entry("all", &self.all)?;
        if let Some(baseline) = &self.baseline {
            map.serialize_entry("baseline", baseline)?;
        }
        map.end()
    }
}

/// Fails unless `gap` is a gold-score difference the SR scale (0–5) can have.
pub fn check_min_gap(gap: f64) -> Result<()> {
    if !(gap.is_finite() && gap > 0.0 && gap <= 5.0) {
        bail!("--min-gap {gap}: a difference of gold scores in (0, 5] (the SR scale is 0–5)");
    }
    Ok(())
}

/// One choice between two texts whose gold scores differ: 1 when the higher cosine goes with
/// the higher gold score, 0 when it goes with the lower, ½ when the cosines are equal.
pub fn outcome(gold: [f64; 2], cosine: [f64; 2]) -> f64 {
    if cosine[0] == cosine[1] {
        0.5
    } else if (cosine[0] > cosine[1]) == (gold[0] > gold[1]) {
        1.0
    } else {
        0.0
    }
}

/// One SR row's two rewrites, as the run scored them.
#[derive(Default)]
struct Row {
    structure: Option<(f64, f64)>,
    relation: Option<(f64, f64)>,
}

impl PairwiseReport {
    /// From the run's SR pairs (`file`, `dimension`, `line`, `gold`, `cosine`); `sr_files`
    /// in Table 4 order (a file without a kept row gets `n` 0). Pairs of other sets are
    /// ignored.
    pub fn from_pairs(pairs: &[PairResult], sr_files: &[String], min_gap: f64) -> Result<Self> {
        check_min_gap(min_gap)?;
        let mut rows: BTreeMap<(&str, usize), Row> = BTreeMap::new();
        for pair in pairs {
            if !sr_files.contains(&pair.file) {
                continue;
            }
            let row = rows.entry((pair.file.as_str(), pair.line)).or_default();
            let side = Some((pair.gold, pair.cosine));
            if pair.dimension == Dimension::Structure.as_str() {
                row.structure = side;
            } else if pair.dimension == Dimension::Relation.as_str() {
                row.relation = side;
            }
        }
        let mut by_file: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for ((file, _), row) in &rows {
            let (Some((gold_s, cos_s)), Some((gold_r, cos_r))) = (row.structure, row.relation)
            else {
                continue;
            };
            if (gold_s - gold_r).abs() < min_gap {
                continue;
            }
            by_file
                .entry(file)
                .or_default()
                .push(outcome([gold_s, gold_r], [cos_s, cos_r]));
        }
        let files = sr_files
            .iter()
            .map(|name| {
                let outcomes = by_file.get(name.as_str()).map_or(&[][..], Vec::as_slice);
                (name.clone(), Accuracy::from_outcomes(outcomes))
            })
            .collect();
        let every: Vec<f64> = by_file.values().flatten().copied().collect();
        Ok(PairwiseReport {
            min_gap,
            files,
            all: Accuracy::from_outcomes(&every),
            baseline: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(file: &str, dimension: Dimension, line: usize, gold: f64, cosine: f64) -> PairResult {
        PairResult {
            file: file.into(),
            dimension: dimension.as_str().into(),
            line,
            sentence1: String::new(),
            sentence2: String::new(),
            gold,
            cosine,
            rank_gap: 0.0,
        }
    }

    #[test]
    fn the_higher_cosine_is_the_choice_and_ties_count_half() {
        use Dimension::{Relation, Structure};
        let pairs = [
            // Right: structure keeps the meaning and is closer.
            pair("stsb", Structure, 2, 5.0, 0.9),
            pair("stsb", Relation, 2, 1.0, 0.8),
            // Wrong: the meaning-changing rewrite is closer.
            pair("stsb", Structure, 3, 4.5, 0.7),
            pair("stsb", Relation, 3, 2.0, 0.95),
            // A tie in cosine: half.
            pair("stsb", Structure, 4, 1.0, 0.5),
            pair("stsb", Relation, 4, 4.0, 0.5),
            // Gold scores 1 apart: left out at the default gap.
            pair("stsb", Structure, 5, 4.0, 0.1),
            pair("stsb", Relation, 5, 3.0, 0.9),
            // Relation keeps more meaning here and is closer: right.
            pair("sickr", Structure, 2, 1.0, 0.3),
            pair("sickr", Relation, 2, 3.5, 0.6),
            pair("stsb_test", Dimension::Structure, 2, 1.0, 0.3),
        ];
        let files = ["stsb".to_string(), "sickr".into(), "biosses".into()];
        let r = PairwiseReport::from_pairs(&pairs, &files, 2.0).unwrap();
        assert_eq!((r.files[0].1.n, r.files[0].1.correct), (3, 1.5));
        assert_eq!(r.files[0].1.accuracy, Some(50.0));
        assert_eq!((r.files[1].1.n, r.files[1].1.accuracy), (1, Some(100.0)));
        assert_eq!((r.files[2].1.n, r.files[2].1.accuracy), (0, None));
        assert_eq!((r.all.n, r.all.correct), (4, 2.5));
        let loose = PairwiseReport::from_pairs(&pairs, &files, 1.0).unwrap();
        assert_eq!((loose.files[0].1.n, loose.files[0].1.correct), (4, 1.5));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["chance"], 50.0);
        assert_eq!(
            json["files"]["biosses"]["accuracy"],
            serde_json::Value::Null
        );
        for bad in [0.0, -1.0, 5.5, f64::NAN] {
            assert!(
                PairwiseReport::from_pairs(&pairs, &files, bad).is_err(),
                "{bad}"
            );
        }
    }

    /// Wilson's interval against published values: 81 of 263 is [0.2553, 0.3662] (Newcombe,
    /// Statistics in Medicine 1998, method 3); 8 of 10 is [0.4902, 0.9433] and 0 of 10
    /// [0, 0.2775] (the textbook cases); it stays inside [0, 1].
    #[test]
    fn wilson_interval_matches_published_values() {
        let [lo, hi] = wilson_interval(8.0, 10.0, Z95);
        assert!(
            (lo - 0.4902).abs() < 1e-4 && (hi - 0.9433).abs() < 1e-4,
            "{lo} {hi}"
        );
        let [lo, hi] = wilson_interval(0.0, 10.0, Z95);
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 1e-4, "{lo} {hi}");
        let [lo, hi] = wilson_interval(81.0, 263.0, Z95);
        assert!(
            (lo - 0.2553).abs() < 1e-4 && (hi - 0.3662).abs() < 1e-4,
            "{lo} {hi}"
        );
    }
}
