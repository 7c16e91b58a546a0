//! Which SR rows a run evaluates: all of them, or the quick stratified sample.

use crate::eval::data::SrFile;
use std::fmt;
use std::str::FromStr;

use anyhow::bail;
use serde::Serialize;

use crate::eval::rng::{fnv1a, SplitMix64};

/// About how many SR rows the quick split takes in all.
pub const QUICK_TARGET_ROWS: usize = 1000;
/// The fewest rows the quick split takes from one file, so that even biosses (88 rows) gets
/// a Spearman worth reading.
pub const QUICK_MIN_ROWS_PER_FILE: usize = 20;
/// Seed of the quick split; with the file name it fixes the sample forever.
pub const QUICK_SEED: u64 = 0x5155_4943_4B31_3030; // "QUICK100"

/// The rows of the SR benchmark a run evaluates.
///
/// - `Full`: all rows (9,289 in the public data).
/// - `Quick`: a fixed stratified sample. From each file of `r` rows, out of `R` rows in all
///   the files being evaluated (9,289 for the six), it takes
///   `k = min(r, max(20, round(1000 · r / R)))` rows (round half away from zero), chosen
///   uniformly without replacement by a partial Fisher–Yates shuffle of the row indices
///   `0..r` driven by splitmix64 seeded with `QUICK_SEED ^ fnv1a(file name)`; the chosen
///   rows keep their original order. For the six files: stsb 124, sickr 415,
///   askubuntu 36, cqa 196, twitter 220, biosses 20 (1,011 rows).
///   STS-B test and Czech News STS, when evaluated, are always used whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Every row.
    Full,
    /// The stratified ~1,000-row sample.
    Quick,
}

impl Split {
    /// `"full"` or `"quick"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Full => "full",
            Split::Quick => "quick",
        }
    }

    /// Indices (ascending) of the rows this split keeps from the file `file_name` of
    /// `file_rows` rows, when `total_rows` rows are evaluated across all files.
    pub fn rows(self, file_name: &str, file_rows: usize, total_rows: usize) -> Vec<usize> {
        match self {
            Split::Full => (0..file_rows).collect(),
            Split::Quick => {
                let count = quick_row_count(file_rows, total_rows);
                let mut rng = SplitMix64::new(QUICK_SEED ^ fnv1a(file_name));
                let mut indices: Vec<usize> = (0..file_rows).collect();
                for i in 0..count {
                    let j = i + rng.below(file_rows - i);
                    indices.swap(i, j);
                }
                indices.truncate(count);
                indices.sort_unstable();
                indices
            }
        }
    }
}

/// Rows the quick split takes from a file of `file_rows` rows out of `total_rows` in all:
/// `min(file_rows, max(20, round(1000 · file_rows / total_rows)))`.
pub fn quick_row_count(file_rows: usize, total_rows: usize) -> usize {
    if total_rows == 0 {
        return 0;
    }
    let proportional =
        (QUICK_TARGET_ROWS as f64 * file_rows as f64 / total_rows as f64).round() as usize;
    proportional.max(QUICK_MIN_ROWS_PER_FILE).min(file_rows)
}

impl FromStr for Split {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Self> {
        match text {
            "full" => Ok(Split::Full),
            "quick" => Ok(Split::Quick),
            other => bail!("unknown split '{other}': expected 'full' or 'quick'"),
        }
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fixed, evenly spaced sample of `count` unique SR sentences (all files, all three
/// columns, first-seen order): the throughput benchmarks' workload, the same natively and in
/// the browser.
pub fn sentence_sample(files: &[SrFile], count: usize) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&str> = files
        .iter()
        .flat_map(|f| {
            f.rows.iter().flat_map(|r| {
                [
                    r.sentence1.as_str(),
                    r.structure.as_str(),
                    r.relation.as_str(),
                ]
            })
        })
        .filter(|s| seen.insert(*s))
        .collect();
    let step = (unique.len() as f64 / count.max(1) as f64).max(1.0);
    (0..count.min(unique.len()))
        .map(|i| unique[(i as f64 * step) as usize].to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::data::SR_FILES;

    const ROWS: [usize; 6] = [1152, 3854, 334, 1820, 2041, 88];

    #[test]
    fn parses_and_prints_split_names() {
        assert_eq!("full".parse::<Split>().unwrap(), Split::Full);
        assert_eq!("quick".parse::<Split>().unwrap(), Split::Quick);
        assert_eq!(Split::Quick.to_string(), "quick");
        assert_eq!(serde_json::to_string(&Split::Full).unwrap(), "\"full\"");
        let err = "Quick".parse::<Split>().unwrap_err().to_string();
        assert_eq!(err, "unknown split 'Quick': expected 'full' or 'quick'");
    }

    #[test]
    fn quick_counts_per_file_follow_the_rule() {
        let total: usize = ROWS.iter().sum();
        assert_eq!(total, 9289);
        let counts: Vec<usize> = ROWS.iter().map(|&r| quick_row_count(r, total)).collect();
        assert_eq!(counts, [124, 415, 36, 196, 220, 20]);
        assert_eq!(counts.iter().sum::<usize>(), 1011);
        // A file smaller than the minimum is taken whole.
        assert_eq!(quick_row_count(7, 9289), 7);
        assert_eq!(quick_row_count(0, 0), 0);
    }

    #[test]
    fn quick_rows_are_deterministic_sorted_distinct_and_in_range() {
        let total: usize = ROWS.iter().sum();
        for (name, rows) in SR_FILES.iter().zip(ROWS) {
            let picked = Split::Quick.rows(name, rows, total);
            assert_eq!(picked, Split::Quick.rows(name, rows, total));
            assert_eq!(picked.len(), quick_row_count(rows, total));
            assert!(picked.windows(2).all(|w| w[0] < w[1]), "{name}");
            assert!(picked.iter().all(|&i| i < rows));
        }
        // Different files get different samples even at equal sizes.
        assert_ne!(
            Split::Quick.rows("stsb", 500, 5000),
            Split::Quick.rows("cqa", 500, 5000)
        );
    }

    #[test]
    fn quick_sample_is_pinned() {
        // The sample is part of the published method: changing it changes reported numbers.
        let picked = Split::Quick.rows("biosses", 88, 9289);
        assert_eq!(picked, PINNED_BIOSSES);
    }
    // From a Python transcription of the rule (splitmix64, FNV-1a, partial Fisher–Yates).
    const PINNED_BIOSSES: [usize; 20] = [
        0, 5, 11, 13, 18, 19, 26, 33, 34, 40, 45, 48, 49, 61, 64, 69, 71, 76, 78, 86,
    ];

    #[test]
    fn full_keeps_every_row() {
        assert_eq!(Split::Full.rows("stsb", 5, 10), [0, 1, 2, 3, 4]);
    }
}
