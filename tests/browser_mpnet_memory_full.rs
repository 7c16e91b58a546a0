//! The wasm memory all-mpnet-base-v2 q8_0 takes, in a fresh instance (this binary holds only
//! this test, so no earlier test has grown the memory): the figures README § Memory quotes.
//! Runs in a dedicated Web Worker, as the page's embedding helpers do.
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{fetch, fixture, log, mb, wasm_memory_bytes};

use sr_bench::backend::{load_embedder, BackendKind};
use sr_bench::eval::sr_path;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

const MODEL_URL: &str = "/www/models/all-mpnet-base-v2.q8_0.gguf";

/// README § Memory, in MB: after load, SR sentences at batch 8 and at 32, 384-token texts.
const README_MB: [(&str, f64); 4] = [
    ("after load", 171.0),
    ("SR sentences, batch 8", 197.0),
    ("SR sentences, batch 32", 274.0),
    ("384-token texts", 416.0),
];
/// wasm memory grows in 64 KiB pages by allocator decisions that are deterministic for the same
/// build and inputs; the margin allows for allocator and dependency changes, not for a regression.
const MARGIN: f64 = 0.10;

#[wasm_bindgen_test]
async fn mpnet_q8_0_wasm_memory_matches_the_readme_in_a_fresh_instance() {
    let start = wasm_memory_bytes();
    let bytes = fetch(MODEL_URL).await;
    let file_bytes = bytes.len() as f64;
    let mut embedder = load_embedder(bytes, BackendKind::Cpu).expect("model loads");
    let mut measured = vec![wasm_memory_bytes()];
    log(format!(
        "mpnet q8_0 wasm memory: {} at start, {} after load ({:.2}× the {} file)",
        mb(start),
        mb(measured[0]),
        measured[0] / file_bytes,
        mb(file_bytes)
    ));

    // The benchmark's workload: SR sentences, batch 8 then the default 32 (memory only grows,
    // so the smaller batch goes first).
    let mut files = Vec::new();
    for name in sr_bench::eval::SR_FILES {
        let csv = fetch(&format!("/data/{}", sr_path(name))).await;
        files.push(sr_bench::eval::parse_sr(name, &csv).unwrap());
    }
    let sentences = sr_bench::eval::sentence_sample(&files, 256);
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    for batch in [8, sr_bench::model::DEFAULT_BATCH_SIZE] {
        embedder.set_batch_size(batch);
        let t = js_sys::Date::now();
        embedder.embed(&refs).unwrap();
        let seconds = (js_sys::Date::now() - t) / 1e3;
        measured.push(wasm_memory_bytes());
        log(format!(
            "mpnet q8_0: {} SR sentences at batch {batch}: {:.1} sentences/s, wasm memory {}",
            refs.len(),
            refs.len() as f64 / seconds,
            mb(wasm_memory_bytes())
        ));
    }

    // Worst case: every text at the 384-token limit; one batch of each size.
    let fixture = fixture("all-mpnet-base-v2").await;
    let longest = fixture
        .items
        .iter()
        .map(|i| i.text.as_str())
        .max_by_key(|t| t.len())
        .unwrap();
    let long = format!("{longest} {longest}");
    assert_eq!(embedder.token_count(&long), 384);
    let mut at_batch_8 = 0.0;
    // 16 asked for, but the padded-token bound (8 × 384) cuts it into two batches of 8.
    for batch in [1, 4, 8, 16] {
        embedder.set_batch_size(batch);
        let texts = vec![long.as_str(); batch];
        let t = js_sys::Date::now();
        embedder.embed(&texts).unwrap();
        log(format!(
            "mpnet q8_0: batch of {batch} × 384 tokens: {:.0} ms, wasm memory high-water {}",
            js_sys::Date::now() - t,
            mb(wasm_memory_bytes()),
        ));
        if batch == 8 {
            at_batch_8 = wasm_memory_bytes();
        }
    }
    let after_16 = wasm_memory_bytes();
    measured.push(after_16);
    assert!(
        after_16 <= at_batch_8 * 1.05,
        "the token bound should cap activations at 8 × 384 tokens: {} after 16 texts vs {} after 8",
        mb(after_16),
        mb(at_batch_8)
    );

    assert_eq!(measured.len(), README_MB.len());
    for ((what, readme), bytes) in README_MB.iter().zip(&measured) {
        let got = bytes / 1e6;
        assert!(
            (got - readme).abs() <= MARGIN * readme,
            "{what}: {got:.0} MB in a fresh instance, the README says {readme:.0} MB (±{:.0} %)",
            MARGIN * 100.0
        );
    }
}
