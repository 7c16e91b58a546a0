//! Browser tests of all-mpnet-base-v2 q8_0 (`wasm-pack test --headless --chrome`): parity with
//! sentence-transformers and the native CLI (its memory: tests/browser_mpnet_memory.rs).
//!
//! They run in a dedicated Web Worker, as the web app runs the model: mpnet in wasm embeds a
//! few sentences a second, and a page's main thread busy that long makes the test runner's
//! webdriver polls time out ("Timed out receiving message from renderer"), which a worker
//! leaves free. Files are fetched from the crate root, which wasm-bindgen-test-runner serves.
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{
    fetch, fixture, log, max_abs_delta, mb, rows, wasm_memory_bytes, NATIVE_COMPONENT_BOUND,
};

use sr_bench::model::cosine;
use sr_bench::wasm::Model;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

const MODEL_URL: &str = "/www/models/all-mpnet-base-v2.q8_0.gguf";

#[wasm_bindgen_test]
async fn mpnet_q8_0_in_the_browser_matches_sentence_transformers_and_the_native_cli() {
    let start_memory = wasm_memory_bytes();
    let t0 = js_sys::Date::now();
    let bytes = fetch(MODEL_URL).await;
    let file_bytes = bytes.len() as f64;
    let t1 = js_sys::Date::now();
    let model = Model::load(bytes).expect("model loads");
    let load_ms = js_sys::Date::now() - t1;
    let loaded_memory = wasm_memory_bytes();
    let fixture = fixture("all-mpnet-base-v2").await;
    let texts: Vec<String> = fixture.items.iter().map(|i| i.text.clone()).collect();
    let t2 = js_sys::Date::now();
    let flat = model.embed(texts).expect("embed").to_vec();
    let embed_ms = js_sys::Date::now() - t2;
    let dim = model.dim();
    assert_eq!(dim, 768);
    let vectors = rows(&flat, dim, fixture.items.len());

    let min = fixture
        .items
        .iter()
        .zip(&vectors)
        .map(|(item, v)| cosine(v, &item.embedding))
        .fold(f32::INFINITY, f32::min);
    log(format!(
        "browser mpnet q8_0: min cosine vs sentence-transformers over 82 texts = {min:.6}; \
         fetch {:.0} ms, load {load_ms:.0} ms, embed 82 texts (batch 32) {embed_ms:.0} ms; \
         wasm memory high-water {} at start (earlier tests count), {} after load \
         ({:.2}× the {} file), {} after embedding",
        t1 - t0,
        mb(start_memory),
        mb(loaded_memory),
        loaded_memory / file_bytes,
        mb(file_bytes),
        mb(wasm_memory_bytes()),
    ));
    assert!(min >= 0.999, "browser mpnet q8_0 min cosine {min}");

    // Written by build.sh with the native CLI on the same file.
    let native: Vec<Vec<f32>> = serde_json::from_slice(
        &fetch("/tests/artifacts/native-embeddings.all-mpnet-base-v2.q8_0.json").await,
    )
    .unwrap();
    let max_delta = max_abs_delta(&native, &vectors);
    log(format!(
        "browser mpnet vs native CLI: max |Δ| per component = {max_delta:e}"
    ));
    // The build's bound (browser_common): its integer kernel rounds activations per block of 32.
    assert!(
        max_delta <= NATIVE_COMPONENT_BOUND,
        "wasm and native differ by {max_delta} > {NATIVE_COMPONENT_BOUND}"
    );
}
