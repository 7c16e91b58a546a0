//! Datasets, metrics and the benchmark runner: pure Rust that parses bytes and does no I/O,
//! so the same code runs natively and in the browser (wasm32).
//!
//! - [`data`]: SR, STS-B and Czech News STS parsers.
//! - [`metrics`]: Pearson, Spearman (average ranks), MSE/RMSE, bootstrap CI.
//! - [`split`]: the full benchmark or the quick stratified sample.
//! - [`runner`]: the plan → step → finish loop over a [`SentenceEncoder`].
//! - [`report`]: the JSON report and the per-pair CSV; [`table`]: the Table 4 text layout.
//! - [`czech`]: the model against a random human and the oracle bound (Sido et al.).
//! - [`rng`]: the seeded PRNG behind the quick split and the bootstrap.

pub mod czech;
pub mod data;
pub mod metrics;
pub mod report;
pub mod rng;
pub mod runner;
pub mod split;
pub mod table;

pub use czech::{
    czech_report, format_czech, oracle_mse_bound, random_human_agreement, score_model, Agreement,
    CzechReport, OracleBound,
};
pub use data::{
    parse_czech_sts, parse_sr, parse_stsb, CzechFile, CzechPair, SrFile, SrRow, StsFile, StsPair,
    CZECH_SCORE_MAX, SR_FILES, SR_SCORE_MAX, STSB_SCORE_MAX,
};
pub use metrics::{mse, pearson, rmse, spearman, spearman_ci95};
pub use report::{pairs_csv, Cell, Dimension, DimensionResults, PairResult, Report, SrResults};
pub use runner::{run, Cancelled, EvalPlan, EvalRun, Progress, SentenceEncoder};
pub use split::{sentence_sample, Split};
pub use table::{format_table, paper_reference, PaperReference};
