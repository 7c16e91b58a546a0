//! Browser tests: the real q8_0 model file in headless Chromium (`wasm-pack test --headless --chrome`).
//! The quick split through the library in one thread is browser_quick_split_full.rs (full tier: the
//! gate's e2e demo runs it in the page, whose workers call the same `Evaluation`).
//! Files are fetched from the crate root, which wasm-bindgen-test-runner serves.
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{
    artefact, fetch, fixture, log, max_abs_delta, rows, sha256_hex, NATIVE_COMPONENT_BOUND,
};

use sr_bench::wasm::Model;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const MODEL_URL: &str = "/www/models/all-MiniLM-L6-v2.q8_0.gguf";

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    sr_bench::model::cosine(a, b)
}

/// MiniLM `dtype` in the browser: every text's cosine with sentence-transformers ≥ `min_cosine`,
/// and every component within [`NATIVE_COMPONENT_BOUND`] of the native CLI on the same file
/// (build.sh writes tests/artifacts/native-embeddings.<dtype>.json); the bound is the build's
/// (browser_common).
async fn matches_sentence_transformers_and_the_native_cli(dtype: &str, min_cosine: f32) {
    let url = format!("/www/models/all-MiniLM-L6-v2.{dtype}.gguf");
    let bytes = fetch(&url).await;
    let sha = sha256_hex(&bytes);
    let model = Model::load(bytes).expect("model loads");
    let fixture = fixture("all-MiniLM-L6-v2").await;
    let texts: Vec<String> = fixture.items.iter().map(|i| i.text.clone()).collect();
    let flat = model.embed(texts).expect("embed").to_vec();
    let vectors = rows(&flat, model.dim(), fixture.items.len());

    let min = fixture
        .items
        .iter()
        .zip(&vectors)
        .map(|(item, v)| cosine(v, &item.embedding))
        .fold(f32::INFINITY, f32::min);
    log(format!(
        "browser {dtype}: min cosine vs sentence-transformers = {min:.7}"
    ));
    assert!(min >= min_cosine, "browser {dtype} min cosine {min}");

    let native: Vec<Vec<f32>> = serde_json::from_slice(
        &artefact(&format!("native-embeddings.{dtype}.json"), &url, &sha).await,
    )
    .unwrap();
    let max_delta = max_abs_delta(&native, &vectors);
    log(format!(
        "browser {dtype} vs native CLI: max |Δ| per component = {max_delta:e}"
    ));
    assert!(
        max_delta <= NATIVE_COMPONENT_BOUND,
        "{dtype}: wasm and native differ by {max_delta} > {NATIVE_COMPONENT_BOUND}"
    );
}

#[wasm_bindgen_test]
async fn q8_0_in_the_browser_matches_sentence_transformers_and_the_native_cli() {
    // Measured 0.99946 natively; 0.9993 is every backend's q8_0 bound.
    matches_sentence_transformers_and_the_native_cli("q8_0", 0.9993).await;
}

/// The f32 file goes through the browser's f32 kernel (src/backend/cpu/gemm.rs).
#[wasm_bindgen_test]
async fn f32_in_the_browser_matches_sentence_transformers_and_the_native_cli() {
    // Summation order only (measured 1.000000 natively).
    matches_sentence_transformers_and_the_native_cli("f32", 0.99999).await;
}

/// q4_0 is lossy against the reference (measured 0.876 natively, bound 0.866 as in
/// tests/model_parity.rs), but the browser must compute what the CLI computes on the same file.
#[wasm_bindgen_test]
async fn q4_0_in_the_browser_matches_the_native_cli() {
    matches_sentence_transformers_and_the_native_cli("q4_0", 0.866).await;
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
