//! The explainers in Chromium (`wasm-pack test --headless --chrome --release --test
//! browser_explain`): the contribution matrix sums to the pipeline's cosine within 1e-5 for
//! MiniLM q8_0 and MPNet q8_0, the word-order edits, the per-layer cosines and a small probe.
//! In a dedicated worker, as the web app runs the model (MPNet is slow in wasm).
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::fetch;

use serde_json::Value;
use sr_bench::wasm::{reverse_words, shuffle_words, swap_words, Model, Probe};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

const PAIRS: [(&str, &str); 2] = [
    ("Tom likes Taylor Swift.", "Taylor Swift likes Tom."),
    (
        "Unbelievably, the committee approved it.",
        "The committee approved it reluctantly.",
    ),
];

fn json(value: JsValue) -> Value {
    let text: String = js_sys::JSON::stringify(&value).unwrap().into();
    serde_json::from_str(&text).unwrap()
}

fn matrix_sum(e: &Value) -> f64 {
    e["contributions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap())
        .map(|v| v.as_f64().unwrap())
        .sum()
}

async fn check_sums(url: &str) {
    let model = Model::load(fetch(url).await).expect("model loads");
    for (a, b) in PAIRS {
        let e = json(model.explain(a, b).expect("explain"));
        let pipeline = f64::from(model.similarity(a, b).unwrap());
        let sum = matrix_sum(&e);
        assert_eq!(e["kind"], "contributions");
        assert!(
            (sum - pipeline).abs() < 1e-5,
            "{url} {a:?}: Σ {sum} vs {pipeline}"
        );
        assert!(
            (matrix_sum(&e["words"]) - sum).abs() < 1e-9,
            "words keep the sum"
        );
        let s = json(model.explain_static(a, b).unwrap());
        let pipeline = f64::from(model.static_similarity(a, b).unwrap());
        assert!(
            (matrix_sum(&s) - pipeline).abs() < 1e-5,
            "{url} static {a:?}"
        );
        let layers = model.layer_cosines(a, b).unwrap();
        let last = *layers.last().unwrap();
        assert!((last - f64::from(model.similarity(a, b).unwrap())).abs() < 1e-5);
    }
}

#[wasm_bindgen_test]
async fn minilm_q8_0_contributions_sum_to_the_cosine() {
    check_sums("/www/models/all-MiniLM-L6-v2.q8_0.gguf").await;
}

#[wasm_bindgen_test]
async fn mpnet_q8_0_contributions_sum_to_the_cosine() {
    check_sums("/www/models/all-mpnet-base-v2.q8_0.gguf").await;
}

#[wasm_bindgen_test]
fn word_order_edits() {
    let text = "Tom likes Taylor Swift.";
    assert_eq!(
        shuffle_words(text, 7.0).unwrap(),
        shuffle_words(text, 7.0).unwrap()
    );
    assert!(shuffle_words(text, -1.0).is_err());
    assert_eq!(reverse_words(text), "Swift. Taylor likes Tom");
    assert_eq!(swap_words(text, 0, 3).unwrap(), "Swift. likes Taylor Tom");
    assert!(swap_words(text, 0, 4).is_err());
}

#[wasm_bindgen_test]
async fn a_layer_probe_steps_to_a_report() {
    let model = Model::load(fetch("/www/models/all-MiniLM-L6-v2.q8_0.gguf").await).unwrap();
    let csv = fetch("/data/stsb/stsb-en-test.csv").await;
    let head: Vec<u8> = csv
        .split(|&b| b == b'\n')
        .take(80)
        .collect::<Vec<_>>()
        .join(&b'\n');
    let mut probe = Probe::new("layers", "quick", 0).unwrap();
    probe.set_stsb_test(&head).unwrap();
    let total = probe.prepare().unwrap();
    while !probe.is_done() {
        assert!(probe.step(&model).unwrap() <= total);
    }
    let report = json(probe.finish(&model).unwrap());
    assert_eq!(report["layers"].as_array().unwrap().len(), 7);
    assert!(report["layers"][6]["stsb_test"].is_f64());
    assert!(Probe::new("attention", "quick", 0).is_err());
}
