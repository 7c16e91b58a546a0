//! Every random-initialised checkpoint (nomic-bert, ModernBERT, Qwen2, Qwen3, EmbeddingGemma,
//! the T5 encoder; f32 and q8_0) on WebGPU in headless Chromium (SwiftShader) against
//! transformers and the CPU backend on all reference texts, ModernBERT's past its local window
//! included (~9 min on 2 cores). The gate's `browser_llama` runs the same cases on a sample.
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::random::{every_checkpoint_on_webgpu, Texts};

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn every_checkpoint_on_webgpu_in_the_browser_matches_transformers_on_all_texts() {
    every_checkpoint_on_webgpu(Texts::All).await;
}
