//! Datasets, metrics and the benchmark runner: pure Rust that parses bytes and does no I/O,
//! so the same code runs natively and in the browser (wasm32). The one exception,
//! [`folder`] is the rule for where the data folder is.
//!
//! - [`data`]: SR, STS-B and Czech News STS parsers.
//! - [`metrics`]: Pearson, Spearman (average ranks), MSE/RMSE, bootstrap CI.
//! - [`split`]: the full benchmark or the quick stratified sample.
//! - [`runner`]: the plan → step → finish loop over a [`SentenceEncoder`].
//! - [`report`]: the JSON report, its naming ([`Report::stamp`]), the per-pair CSV and the
//!   pairwise accuracy (how often the model picks the rewrite that keeps the meaning).
//! - [`paper`]: the paper's Table 4 (`paper_table4.json`, compiled in) and reference numbers.
//! - [`table`]: the plain-text layouts (Table 4, Czech News STS).
//! - [`compare`]: several reports side by side (Table 4 layout, CSV).
//! - [`retrieval`]: STS-B test as a retrieval task (nDCG@10, MRR@10; TREC files).
//! - [`czech`]: the model against a random human and the oracle bound (Sido et al.).
//! - [`quiz`]: a person against the model on pairwise accuracy's questions, drawn by a seed.
//! - [`rng`]: the seeded PRNG behind the quick split and the bootstrap.

pub mod compare;
pub mod czech;
pub mod data;
pub mod folder;
pub mod metrics;
pub mod paper;
pub mod quiz;
pub mod report;
pub mod retrieval;
pub mod rng;
pub mod runner;
pub mod split;
pub mod table;

pub use compare::{
    check_against_reference, check_against_report, compare_csv, compare_row, compare_rows,
    compare_table, Cells, CompareRow, ReferenceCheck,
};
pub use czech::{
    czech_report, oracle_mse_bound, random_human_agreement, score_model, Agreement, CzechReport,
    OracleBound,
};
pub use data::{
    check_pairs_size, parse_czech_sts, parse_pairs, parse_sr, parse_stsb, sr_path, CzechFile,
    CzechPair, OwnPairs, SrFile, SrRow, StsFile, StsPair, CZECH_SCORE_MAX, SR_FILES, SR_SCORE_MAX,
    STSB_SCORE_MAX, STSB_TEST_PATH,
};
pub use folder::default_data_dir;
pub use metrics::{mse, pearson, rmse, spearman, spearman_ci95};
pub use paper::{
    paper_reference, paper_table4, reference_spearman, PaperReference, PaperRow, PaperScores,
    ReferenceSpearman, REFERENCES,
};
pub use report::pairwise;
pub use report::{
    pairs_csv, pairs_csv_from_json, report_model_name, Cell, Dimension, DimensionResults, Encoder,
    OwnPairsReport, PairResult, Report, SrResults,
};
pub use runner::{run, Cancelled, EvalPlan, EvalRun, Progress, SentenceEncoder};
pub use split::{sentence_sample, Split};
pub use table::{format_czech, format_own, format_table};
