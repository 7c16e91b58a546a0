//! Shared by the browser tests (wasm-bindgen-test in headless Chromium).
#![allow(dead_code)]

use serde::Deserialize;

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

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
    let response: web_sys::Response = JsFuture::from(promise)
        .await
        .expect("fetch")
        .dyn_into()
        .unwrap();
    assert!(
        response.ok(),
        "GET {url} → {}: run ./build.sh build first",
        response.status()
    );
    let buffer = JsFuture::from(response.array_buffer().unwrap())
        .await
        .unwrap();
    js_sys::Uint8Array::new(&buffer).to_vec()
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
