//! Shared by the browser tests (wasm-bindgen-test in headless Chromium).
#![allow(dead_code)]

pub mod random;

use serde::Deserialize;

use sr_bench::wasm::Model;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    /// `console.log`, in a window and in a worker alike.
    #[wasm_bindgen(js_namespace = console, js_name = log)]
    fn console_log(message: &str);
}

/// The default model's q8_0 file, as wasm-bindgen-test-runner serves it.
pub const MINILM_Q8_0_URL: &str = "/www/models/all-MiniLM-L6-v2.q8_0.gguf";

/// GET from the crate root, which wasm-bindgen-test-runner serves (model files, data, fixtures),
/// with the global scope's `fetch`: the same in a window and in a worker (which has no `window`).
pub async fn fetch(url: &str) -> Vec<u8> {
    let global = js_sys::global();
    let fetch: js_sys::Function = js_sys::Reflect::get(&global, &JsValue::from_str("fetch"))
        .unwrap()
        .dyn_into()
        .unwrap();
    let promise: js_sys::Promise = fetch
        .call1(&global, &JsValue::from_str(url))
        .unwrap()
        .dyn_into()
        .unwrap();
    // The Response through js_sys: web-sys as a test dependency would add features to the
    // web-sys wgpu builds, and so rebuild wgpu for the tests.
    let response = JsFuture::from(promise).await.expect("fetch");
    let field = |name: &str| js_sys::Reflect::get(&response, &JsValue::from_str(name)).unwrap();
    assert!(
        field("ok").as_bool() == Some(true),
        "GET {url} → {:?}: run ./build.sh build first",
        field("status").as_f64()
    );
    let array_buffer: js_sys::Function = field("arrayBuffer").dyn_into().unwrap();
    let promise: js_sys::Promise = array_buffer.call0(&response).unwrap().dyn_into().unwrap();
    let buffer = JsFuture::from(promise).await.unwrap();
    js_sys::Uint8Array::new(&buffer).to_vec()
}

/// Lowercase hex sha256 of `bytes` (a model file as fetched).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An artefact build.sh wrote with the native CLI (`tests/artifacts/NAME`), after checking in
/// `tests/artifacts/provenance.json` that it was made from `model_url`'s file with the bytes
/// whose sha256 is `model_sha256`: a stale artefact fails the test, never compares.
pub async fn artefact(name: &str, model_url: &str, model_sha256: &str) -> Vec<u8> {
    let provenance: serde_json::Value =
        serde_json::from_slice(&fetch("/tests/artifacts/provenance.json").await)
            .expect("tests/artifacts/provenance.json is JSON: run ./build.sh test");
    let entry = &provenance[name];
    let (model, sha) = (entry["model"].as_str(), entry["model_sha256"].as_str());
    assert_eq!(
        model,
        Some(model_url.trim_start_matches('/')),
        "tests/artifacts/{name} is not recorded as made from {model_url}: run ./build.sh test"
    );
    assert_eq!(
        sha,
        Some(model_sha256),
        "tests/artifacts/{name} is stale: it was made from a {model_url} with sha256 {sha:?}, \
         the file now has {model_sha256}; run ./build.sh test (it makes the artefacts again)"
    );
    fetch(&format!("/tests/artifacts/{name}")).await
}

/// sentence-transformers' embeddings of 82 texts (tests/fixtures, copied from ../shared/reference).
#[derive(Deserialize)]
pub struct Fixture {
    pub items: Vec<FixtureItem>,
}

#[derive(Deserialize)]
pub struct FixtureItem {
    pub text: String,
    pub embedding: Vec<f32>,
}

/// The reference fixture of `model` (e.g. "all-MiniLM-L6-v2").
pub async fn fixture(model: &str) -> Fixture {
    let bytes = fetch(&format!("/tests/fixtures/{model}.json")).await;
    serde_json::from_slice(&bytes).expect("the fixture is valid JSON")
}

/// Bytes of this module's linear memory: its high-water mark (wasm memory never shrinks).
pub fn wasm_memory_bytes() -> f64 {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().dyn_into().unwrap();
    let buffer: js_sys::ArrayBuffer = memory.buffer().dyn_into().unwrap();
    buffer.byte_length() as f64
}

pub fn mb(bytes: f64) -> String {
    format!("{:.0} MB", bytes / 1e6)
}

pub fn log(message: String) {
    console_log(&message);
}

/// `flat` (row-major) as `n` rows of `dim`; fails unless it holds exactly that, so a short or
/// empty result can never pass a comparison by zipping nothing.
pub fn rows(flat: &[f32], dim: usize, n: usize) -> Vec<&[f32]> {
    assert!(n > 0 && dim > 0, "nothing to compare: {n} rows of {dim}");
    assert_eq!(flat.len(), n * dim, "expected {n} rows of {dim} values");
    flat.chunks(dim).collect()
}

/// Largest |Δ| per component between the browser's vectors and the native CLI's. The wasm build
/// multiplies q8_0 / q4_0 with the 16-bit kernel (src/backend/cpu/qgemm.rs): activations rounded
/// to 16 bits per block of 32, a relative 2⁻¹⁶ per input (measured ≤ 3.4e-5 against a CLI on
/// candle's f32 gemm; a CLI on x86-64 with AVX2 runs the same kernel).
pub const NATIVE_COMPONENT_BOUND: f32 = 1e-4;

/// Largest difference of a quick-split score (correlation × 100, 2 decimals) from the native
/// CLI's: one unit of the last decimal.
pub const NATIVE_SCORE_BOUND: f64 = 0.01;

/// The largest |a − b| over two sets of rows of the same shape (checked).
pub fn max_abs_delta(a: &[Vec<f32>], b: &[&[f32]]) -> f32 {
    assert_eq!(a.len(), b.len(), "different row counts");
    assert!(!a.is_empty(), "no rows to compare");
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len(), "different row widths");
            x.iter().zip(y.iter()).map(|(p, q)| (p - q).abs())
        })
        .fold(0f32, f32::max)
}

#[derive(Deserialize)]
struct GpuStatus {
    active: String,
    software_adapter: bool,
}

/// MiniLM q8_0 on WebGPU (SwiftShader in headless Chromium), checked to be reported as a
/// software adapter.
pub async fn gpu_model() -> Model {
    let model =
        Model::load_with_backend(fetch(MINILM_Q8_0_URL).await, "gpu".into(), None, None, None)
            .await
            .expect("a WebGPU adapter (webdriver.json passes --enable-unsafe-webgpu)");
    let status: GpuStatus =
        serde_wasm_bindgen::from_value(model.backend_status().unwrap()).unwrap();
    assert_eq!(status.active, "webgpu");
    assert!(
        status.software_adapter,
        "headless Chromium's adapter is SwiftShader: it must be reported as software"
    );
    model
}

/// Gives the browser's event loop a turn (a `setTimeout(0)`), so that a long synchronous
/// test loop does not look like a hung renderer to ChromeDriver (it gives up after 30 s).
pub async fn yield_now() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let global = js_sys::global();
        let set_timeout: js_sys::Function =
            js_sys::Reflect::get(&global, &JsValue::from_str("setTimeout"))
                .unwrap()
                .dyn_into()
                .unwrap();
        set_timeout
            .call2(&global, &resolve, &JsValue::from(0))
            .unwrap();
    });
    JsFuture::from(promise).await.unwrap();
}
