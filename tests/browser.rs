//! Browser tests: the real q8_0 model file in headless Chromium (`wasm-pack test --headless --chrome`).
//! Files are fetched from the crate root, which wasm-bindgen-test-runner serves.
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{fetch, fixture};

use sr_bench::wasm::{Evaluation, Model};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const MODEL_URL: &str = "/www/models/all-MiniLM-L6-v2.q8_0.gguf";

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    sr_bench::model::cosine(a, b)
}

#[wasm_bindgen_test]
async fn q8_0_in_the_browser_matches_sentence_transformers_and_the_native_cli() {
    let model = Model::load(fetch(MODEL_URL).await).expect("model loads");
    let fixture = fixture("all-MiniLM-L6-v2").await;
    let texts: Vec<String> = fixture.items.iter().map(|i| i.text.clone()).collect();
    let flat = model.embed(texts).expect("embed").to_vec();
    let dim = model.dim();
    assert_eq!(flat.len(), 82 * dim);
    let vectors: Vec<&[f32]> = flat.chunks(dim).collect();

    let min = fixture
        .items
        .iter()
        .zip(&vectors)
        .map(|(item, v)| cosine(v, &item.embedding))
        .fold(f32::INFINITY, f32::min);
    web_sys::console::log_1(
        &format!("browser q8_0: min cosine vs sentence-transformers = {min:.6}").into(),
    );
    assert!(min >= 0.999, "browser q8_0 min cosine {min}");

    // Written by build.sh with the native CLI on the same file.
    let native: Vec<Vec<f32>> =
        serde_json::from_slice(&fetch("/tests/artifacts/native-embeddings.q8_0.json").await)
            .unwrap();
    let max_delta = native
        .iter()
        .zip(&vectors)
        .flat_map(|(n, w)| n.iter().zip(w.iter()).map(|(a, b)| (a - b).abs()))
        .fold(0f32, f32::max);
    web_sys::console::log_1(
        &format!("browser vs native CLI: max |Δ| per component = {max_delta:e}").into(),
    );
    // The same weights and layers; the browser's integer kernel (src/backend/cpu/qgemm.rs)
    // rounds activations to 16 bits per block of 32 where native multiplies in f32: a relative
    // 2⁻¹⁶ per input, measured 3.4e-5 at most on a unit vector (1e-6 before that kernel).
    assert!(max_delta <= 1e-4, "wasm and native differ by {max_delta}");
}

/// The f32 file goes through the browser's f32 kernel (src/backend/cpu/gemm.rs).
#[wasm_bindgen_test]
async fn f32_file_in_the_browser_matches_sentence_transformers() {
    let model = Model::load(fetch("/www/models/all-MiniLM-L6-v2.f32.gguf").await).expect("loads");
    let fixture = fixture("all-MiniLM-L6-v2").await;
    let texts: Vec<String> = fixture.items.iter().map(|i| i.text.clone()).collect();
    let flat = model.embed(texts).expect("embed").to_vec();
    let min = fixture
        .items
        .iter()
        .zip(flat.chunks(model.dim()))
        .map(|(item, v)| cosine(v, &item.embedding))
        .fold(f32::INFINITY, f32::min);
    web_sys::console::log_1(
        &format!("browser f32: min cosine vs sentence-transformers = {min:.7}").into(),
    );
    assert!(min >= 0.9999, "browser f32 min cosine {min}");
}

#[wasm_bindgen_test]
async fn bad_model_bytes_become_a_plain_error_not_a_panic() {
    let err = Model::load(b"<html>not a model</html>".to_vec())
        .err()
        .expect("must fail");
    let msg: js_sys::Error = err.dyn_into().unwrap();
    assert!(String::from(msg.message()).contains("not a GGUF"));
    let bytes = fetch(MODEL_URL).await;
    let err = Model::load(bytes[..bytes.len() / 3].to_vec())
        .err()
        .expect("must fail");
    let msg: js_sys::Error = err.dyn_into().unwrap();
    assert!(String::from(msg.message()).contains("truncated"));
    // The code is Rust's, for the page to act on (protocol.js ERR.BAD_MODEL).
    let code = js_sys::Reflect::get(&msg, &"code".into()).unwrap();
    assert_eq!(code.as_string().as_deref(), Some("bad-model"));
}

#[wasm_bindgen_test]
async fn quick_split_in_the_browser_equals_the_native_cli() {
    let model = Model::load(fetch(MODEL_URL).await).unwrap();
    let mut eval = Evaluation::new("quick", "model").unwrap();
    for name in ["stsb", "sickr", "askubuntu", "cqa", "twitter", "biosses"] {
        eval.add_sr_file(name, &fetch(&format!("/data/sr/{name}.csv")).await)
            .unwrap();
    }
    eval.set_stsb_test(&fetch("/data/stsb/stsb-en-test.csv").await)
        .unwrap();
    let total = eval.prepare(&model).unwrap();
    while !eval.is_done() {
        eval.step(&model, 256).unwrap();
    }
    let report: serde_json::Value =
        serde_wasm_bindgen::from_value(eval.finish("all-MiniLM-L6-v2", "q8_0").unwrap()).unwrap();
    // Written by build.sh with `sr-bench eval --split quick` on the same file.
    let native: serde_json::Value =
        serde_json::from_slice(&fetch("/tests/artifacts/eval-quick.q8_0.json").await).unwrap();
    let mut compared = 0;
    for dim in ["structure", "relation"] {
        for file in ["stsb", "sickr", "askubuntu", "cqa", "twitter", "biosses"] {
            for metric in ["spearman", "pearson"] {
                let b = report["results"][dim][file][metric].as_f64().unwrap();
                let n = native["results"][dim][file][metric].as_f64().unwrap();
                assert!(
                    (b - n).abs() <= 0.01,
                    "{dim}/{file}/{metric}: browser {b} vs CLI {n}"
                );
                compared += 1;
            }
        }
    }
    for metric in ["spearman", "pearson"] {
        let b = report["stsb_test"][metric].as_f64().unwrap();
        let n = native["stsb_test"][metric].as_f64().unwrap();
        assert!(
            (b - n).abs() <= 0.01,
            "stsb_test/{metric}: browser {b} vs CLI {n}"
        );
    }
    web_sys::console::log_1(
        &format!(
            "quick split in the browser: {total} sentences, {compared} cells equal to the CLI"
        )
        .into(),
    );
}
