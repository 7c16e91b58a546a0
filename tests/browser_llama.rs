//! Genuine llama.cpp embedding files (`./build.sh fixtures`) in headless Chromium: loaded as they
//! are, truncated at 256 tokens as sentence-transformers does, they match its embeddings.
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{fetch, fixture, log, rows};

use sr_bench::wasm::Model;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The min cosine over the 82 reference texts of the llama.cpp file of `dtype`.
async fn min_cosine(dtype: &str) -> f32 {
    let url = format!("/tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.{dtype}.gguf");
    let model = Model::load_with(fetch(&url).await, Some(256)).expect("the llama.cpp file loads");
    let fixture = fixture("all-MiniLM-L6-v2").await;
    let texts: Vec<String> = fixture.items.iter().map(|i| i.text.clone()).collect();
    let flat = model.embed(texts).expect("embed").to_vec();
    let min = fixture
        .items
        .iter()
        .zip(rows(&flat, model.dim(), fixture.items.len()))
        .map(|(item, v)| sr_bench::model::cosine(v, &item.embedding))
        .fold(f32::INFINITY, f32::min);
    log(format!(
        "browser, llama.cpp {dtype}: min cosine vs sentence-transformers = {min:.7}"
    ));
    min
}

#[wasm_bindgen_test]
async fn llama_cpp_f32_file_in_the_browser_matches_sentence_transformers() {
    let min = min_cosine("f32").await;
    assert!(min >= 0.9999, "{min}");
}

#[wasm_bindgen_test]
async fn llama_cpp_q8_0_file_in_the_browser_matches_sentence_transformers() {
    let min = min_cosine("q8_0").await;
    assert!(min >= 0.999, "{min}");
}
