//! Every scored pair of a run ([`PairResult`]) and the per-pair CSV.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// One scored pair. Deserialisable too, so a report's `pairs` can come back as JSON
/// ([`pairs_csv_from_json`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Rank of the cosine minus rank of the gold score among the pairs of the same file and
    /// dimension (1-based average ranks, as Spearman uses): how misranked the pair is. Only in
    /// the JSON, not the CSV.
    #[serde(default)]
    pub rank_gap: f64,
}

/// The columns of the pairs CSV.
pub const PAIRS_CSV_HEADER: [&str; 7] = [
    "file",
    "dimension",
    "line",
    "sentence1",
    "sentence2",
    "gold",
    "cosine",
];

/// The pairs as CSV with the header `file,dimension,line,sentence1,sentence2,gold,cosine`
/// ([`PAIRS_CSV_HEADER`]) and `\n` line endings.
pub fn pairs_csv(pairs: &[PairResult]) -> Result<Vec<u8>> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(PAIRS_CSV_HEADER)?;
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

/// [`pairs_csv`] of a report given as JSON (the object `EvalRun::finish` serialises to, as the
/// page holds it): its `pairs` array as CSV text. An error if the report has no `pairs`.
pub fn pairs_csv_from_json(report: &serde_json::Value) -> Result<String> {
    let pairs = report
        .get("pairs")
        .context("the report has no per-pair results")?;
    let pairs: Vec<PairResult> =
        serde_json::from_value(pairs.clone()).context("reading the report's pairs")?;
    String::from_utf8(pairs_csv(&pairs)?).context("the pairs CSV is not UTF-8")
}
