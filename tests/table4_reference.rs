//! Table 4 against sentence-transformers: the full SR split and STS-B test with the MiniLM f32
//! file, run by the CLI's `eval` (as `./build.sh bench` does), every cell within ±0.05 of what
//! sentence-transformers measures in fp32 (`sentence_transformers_fp32` in
//! tests/fixtures/sr-scores.json). Checked by the same code as `sr-bench compare --reference`.
//! Fails (never skips) when the model file or the data is missing. ~5 min on 2 cores.

mod cli_common;
mod common;

use std::process::Command;
use std::time::Instant;

use sr_bench::eval::{check_against_reference, compare_row, Cells};

const MODEL: &str = "all-MiniLM-L6-v2";
/// Spearman ×100: f32 against fp32 differs only by summation order.
const TOLERANCE: f64 = 0.05;

#[test]
fn minilm_f32_full_split_is_within_0_05_of_sentence_transformers_in_every_table4_cell() {
    let model = common::model_path(MODEL, "f32");
    let data = common::data_dir();
    let json = cli_common::temp_dir("table4", "minilm-f32").join("report.json");
    let start = Instant::now();
    let out = Command::new(cli_common::binary())
        .arg("eval")
        .arg("--model")
        .arg(&model)
        .arg("--data")
        .arg(&data)
        .args(["--split", "full", "--json"])
        .arg(&json)
        .output()
        .expect("sr-bench runs");
    assert!(
        out.status.success(),
        "sr-bench eval failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seconds = start.elapsed().as_secs_f64();
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("the report was written")).unwrap();
    std::fs::remove_dir_all(json.parent().unwrap()).unwrap();
    assert_eq!(
        (&report["model"], &report["dtype"], &report["split"]),
        (&MODEL.into(), &"f32".into(), &"full".into())
    );
    let row = compare_row(&report).expect("an eval report");
    let check =
        check_against_reference(&row, "sentence_transformers_fp32", TOLERANCE, Cells::Every)
            .expect("every cell present");
    println!("{}full split evaluated in {seconds:.0} s", check.table());
    assert_eq!(
        check.cells.len(),
        13,
        "6 files × 2 dimensions and STS-B test"
    );
    assert!(
        check.passed(),
        "Table 4 cells outside ±{TOLERANCE} of sentence-transformers:\n{}",
        check.table()
    );
}
