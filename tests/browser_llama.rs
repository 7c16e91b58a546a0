//! Genuine llama.cpp embedding files (`./build.sh fixtures`) in headless Chromium: loaded as they
//! are, truncated at 256 tokens as sentence-transformers does, they match its embeddings; the
//! random-initialised nomic-bert and ModernBERT checkpoints match transformers' embeddings of
//! the same texts (ModernBERT's also of texts past its local window), on the CPU and on WebGPU
//! (SwiftShader); so do Qwen3-Embedding's decoder (causal, grouped-query, last-token pooling)
//! and EmbeddingGemma's (bidirectional Gemma 3 blocks, a SentencePiece vocabulary, a Dense
//! head), on both too.
#![cfg(target_arch = "wasm32")]

mod browser_common;
mod crafted;
use browser_common::random::{every_checkpoint_on_webgpu, random_file, RandomEncoder, Texts};
use browser_common::{fetch, fixture, log, rows};

use sr_bench::wasm::Model;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The min cosine over the 82 reference texts of the llama.cpp file of `dtype`.
async fn min_cosine(dtype: &str) -> f32 {
    let url = format!("/tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.{dtype}.gguf");
    let model =
        Model::load_with(fetch(&url).await, Some(256), None).expect("the llama.cpp file loads");
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

/// The min cosine over the reference texts of `architecture`'s file of `dtype` against
/// transformers.
async fn random_min_cosine(architecture: &str, dtype: &str) -> f32 {
    let (reference, bytes) = random_file(architecture, dtype).await;
    min_cosine_of(&reference, bytes, &format!("{architecture} {dtype}"))
}

/// [`random_min_cosine`] of the file `bytes` (called `label`) against `reference`.
fn min_cosine_of(reference: &RandomEncoder, bytes: Vec<u8>, label: &str) -> f32 {
    let model = Model::load_with(bytes, None, None).expect("the file loads");
    let texts: Vec<String> = reference.items.iter().map(|i| i.text.clone()).collect();
    // The ids themselves are checked natively (modern_encoders); here their count.
    for item in &reference.items {
        assert_eq!(
            model.token_count(&item.text),
            item.ids.len(),
            "{:?}",
            item.text
        );
    }
    let flat = model.embed(texts).expect("embed").to_vec();
    let min = reference
        .items
        .iter()
        .zip(rows(&flat, model.dim(), reference.items.len()))
        .map(|(item, v)| sr_bench::model::cosine(v, &item.embedding))
        .fold(f32::INFINITY, f32::min);
    log(format!(
        "browser, {label}: min cosine vs transformers over {} texts = {min:.7}",
        reference.items.len()
    ));
    min
}

/// Every random checkpoint's files in Chromium's wasm engine, by (architecture, dtype), with
/// the min cosine each keeps against transformers: the native bounds (modern_encoders), as the
/// wasm kernels are the native ones' arithmetic summed in another order.
const IN_THE_BROWSER: &[(&str, &str, f32)] = &[
    ("nomic-bert", "f32", 0.99999),
    ("nomic-bert", "q8_0", 0.9993),
    ("modern-bert", "f32", 0.99999),
    ("modern-bert", "q8_0", 0.9993),
    ("qwen2", "f32", 0.99999),
    ("qwen2", "q8_0", 0.998),
    ("qwen3", "f32", 0.9999),
    ("qwen3", "q8_0", 0.999),
    ("gemma-embedding", "f32", 0.9999),
    ("gemma-embedding", "q8_0", 0.999),
    ("t5encoder", "f32", 0.99999),
    ("t5encoder", "q8_0", 0.9993),
];

#[wasm_bindgen_test]
async fn every_checkpoint_in_the_browser_matches_transformers() {
    let mut failed = Vec::new();
    for &(architecture, dtype, bound) in IN_THE_BROWSER {
        let min = random_min_cosine(architecture, dtype).await;
        if min < bound {
            failed.push(format!("{architecture} {dtype}: {min} < {bound}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// A Q4_K_M file (llama-quantize's mix, made here from the f32 file) converted to q8_0 as it
/// loads in the page's engine.
#[wasm_bindgen_test]
async fn gemma_embedding_q4_k_m_file_in_the_browser_matches_transformers() {
    let (reference, f32_file) = random_file("gemma-embedding", "f32").await;
    let file = crafted::k_quants(&f32_file, crafted::KMix::Q4KM);
    let min = min_cosine_of(&reference, file, "gemma-embedding q4_k_m");
    // natively 0.9635639.
    assert!(min >= 0.953, "{min}");
}

/// Every checkpoint on WebGPU in Chromium (SwiftShader) on the gate's sample of the texts; the
/// full tier's `browser_gpu_checkpoints_full` runs all of them.
#[wasm_bindgen_test]
async fn every_checkpoint_on_webgpu_in_the_browser_matches_transformers() {
    every_checkpoint_on_webgpu(Texts::Sample).await;
}
