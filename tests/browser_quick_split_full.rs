//! The quick split through the wasm library's `Evaluation` in one thread of headless Chromium
//! equals the native CLI's report cell by cell (full tier, ~1 min on 2 cores: the gate's e2e
//! demo runs the same split in the page, whose workers call the same `Evaluation`).
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{artefact, fetch, log, sha256_hex, NATIVE_SCORE_BOUND};

use sr_bench::eval::{sr_path, SR_FILES, STSB_TEST_PATH};
use sr_bench::wasm::{Evaluation, Model};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const MODEL_URL: &str = "/www/models/all-MiniLM-L6-v2.q8_0.gguf";

#[wasm_bindgen_test]
async fn quick_split_in_the_browser_equals_the_native_cli() {
    let bytes = fetch(MODEL_URL).await;
    let sha = sha256_hex(&bytes);
    let model = Model::load(bytes).unwrap();
    let mut eval = Evaluation::new("quick", "model").unwrap();
    for name in SR_FILES {
        eval.add_sr_file(name, &fetch(&format!("/data/{}", sr_path(name))).await)
            .unwrap();
    }
    eval.set_stsb_test(&fetch(&format!("/data/{STSB_TEST_PATH}")).await)
        .unwrap();
    let total = eval.prepare(&model).unwrap();
    while !eval.is_done() {
        eval.step(&model, 256).unwrap();
    }
    let report: serde_json::Value =
        serde_wasm_bindgen::from_value(eval.finish("all-MiniLM-L6-v2", "q8_0", None).unwrap())
            .unwrap();
    // Written by build.sh with `sr-bench eval --split quick` on the same file.
    let native: serde_json::Value =
        serde_json::from_slice(&artefact("eval-quick.q8_0.json", MODEL_URL, &sha).await).unwrap();
    // Every cell's difference, the worst one logged, then the bound (one assertion names all).
    let mut differences = Vec::new();
    for dim in ["structure", "relation"] {
        for file in SR_FILES {
            for metric in ["spearman", "pearson"] {
                let b = report["results"][dim][file][metric].as_f64().unwrap();
                let n = native["results"][dim][file][metric].as_f64().unwrap();
                differences.push((format!("{dim}/{file}/{metric}"), b, n));
            }
        }
    }
    for metric in ["spearman", "pearson"] {
        let b = report["stsb_test"][metric].as_f64().unwrap();
        let n = native["stsb_test"][metric].as_f64().unwrap();
        differences.push((format!("stsb_test/{metric}"), b, n));
    }
    let compared = differences.len();
    let worst = differences
        .iter()
        .map(|(_, b, n)| (b - n).abs())
        .fold(0f64, f64::max);
    log(format!(
        "quick split, browser vs CLI: largest score difference {worst:.4} (bound {NATIVE_SCORE_BOUND})"
    ));
    let over: Vec<_> = differences
        .iter()
        // In hundredths: 82 − 82.01 is 0.010000000000005 in f64, one unit of the last decimal.
        .filter(|(_, b, n)| ((b - n).abs() / NATIVE_SCORE_BOUND).round() > 1.0)
        .collect();
    assert!(
        over.is_empty(),
        "(cell, browser, CLI) over the bound: {over:?}"
    );
    log(format!(
        "quick split in the browser: {total} sentences, {compared} cells equal to the CLI"
    ));
}
