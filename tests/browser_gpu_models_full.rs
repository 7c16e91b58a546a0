//! Every model file the page offers, on WebGPU in headless Chromium (SwiftShader, a software
//! adapter): MPNet f32 and q8_0 (relative-position bias, quantized blocks dequantized in the
//! matmul kernel) and MiniLM f32 and q8_0, against sentence-transformers on the reference texts.
//! SwiftShader emulates the GPU on the CPU (MPNet: a few sentences a second), so the texts are
//! the fixture's short ones; long texts and every kernel are covered natively on lavapipe
//! (tests/webgpu_kernels.rs). MiniLM's quick split on the GPU is tests/browser_gpu.rs.
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{fetch, fixture, log, rows};

use serde::Deserialize;
use sr_bench::model::cosine;
use sr_bench::wasm::Model;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Fixture texts of at most this many tokens (special tokens included).
const MAX_TOKENS: usize = 16;

#[derive(Deserialize)]
struct Status {
    active: String,
    software_adapter: bool,
}

/// `model`'s `dtype` file on the GPU vs sentence-transformers on the fixture's short texts:
/// fails below `min_cosine`.
async fn check(model: &str, dtype: &str, min_cosine: f32) {
    let url = format!("/www/models/{model}.{dtype}.gguf");
    let gpu = Model::load_with_backend(fetch(&url).await, "gpu".into(), None, None, None)
        .await
        .expect("a WebGPU adapter (webdriver.json passes --enable-unsafe-webgpu)");
    let status: Status = serde_wasm_bindgen::from_value(gpu.backend_status().unwrap()).unwrap();
    assert_eq!(
        status.active, "webgpu",
        "{model} {dtype} must run on the GPU"
    );
    assert!(
        status.software_adapter,
        "SwiftShader must be reported as software"
    );
    let fixture = fixture(model).await;
    let (texts, want): (Vec<String>, Vec<&[f32]>) = fixture
        .items
        .iter()
        .filter(|i| gpu.token_count(&i.text) <= MAX_TOKENS)
        .map(|i| (i.text.clone(), i.embedding.as_slice()))
        .unzip();
    assert!(texts.len() >= 10, "{} short texts", texts.len());
    let started = js_sys::Date::now();
    let got = gpu.embed_async(texts.clone()).await.unwrap().to_vec();
    let seconds = (js_sys::Date::now() - started) / 1e3;
    let min = rows(&got, gpu.dim(), texts.len())
        .iter()
        .zip(&want)
        .map(|(g, w)| cosine(g, w))
        .fold(f32::INFINITY, f32::min);
    let still: Status = serde_wasm_bindgen::from_value(gpu.backend_status().unwrap()).unwrap();
    assert_eq!(still.active, "webgpu", "no fallback may happen");
    log(format!(
        "{model} {dtype} on WebGPU (SwiftShader) vs sentence-transformers, {} texts of ≤ \
             {MAX_TOKENS} tokens in {seconds:.0} s: min cosine {min:.6}",
        texts.len()
    ));
    assert!(
        min >= min_cosine,
        "{model} {dtype}: GPU vs sentence-transformers min cosine {min}"
    );
}

#[wasm_bindgen_test]
async fn mpnet_f32_on_webgpu_matches_sentence_transformers() {
    check("all-mpnet-base-v2", "f32", 0.9995).await;
}

#[wasm_bindgen_test]
async fn mpnet_q8_0_on_webgpu_matches_sentence_transformers() {
    check("all-mpnet-base-v2", "q8_0", 0.999).await;
}

#[wasm_bindgen_test]
async fn minilm_q8_0_on_webgpu_matches_sentence_transformers() {
    check("all-MiniLM-L6-v2", "q8_0", 0.999).await;
}

#[wasm_bindgen_test]
async fn minilm_f32_on_webgpu_matches_sentence_transformers() {
    check("all-MiniLM-L6-v2", "f32", 0.9995).await;
}
