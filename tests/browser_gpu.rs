//! The WebGPU backend in headless Chromium (`--enable-unsafe-webgpu` in webdriver.json gives
//! SwiftShader, a software adapter): encoder parity with the CPU backend and a GPU-driven
//! evaluation chunk. Kernel-level tests run natively on lavapipe (tests/webgpu_kernels.rs); the
//! whole quick split through SwiftShader is `browser_gpu_quick_split_full.rs` (full tier).
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{fetch, fixture, gpu_model, log, rows, MINILM_Q8_0_URL as MODEL_URL};

use serde::Deserialize;
use sr_bench::eval::{sr_path, SR_FILES};
use sr_bench::model::cosine;
use sr_bench::wasm::{Evaluation, Model};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn gpu_encoder_in_the_browser_matches_the_cpu_backend() {
    let gpu = gpu_model().await;
    let cpu = Model::load(fetch(MODEL_URL).await).unwrap();
    let fixture = fixture("all-MiniLM-L6-v2").await;
    // SwiftShader runs at ~0.4 sentences/s on 256-token texts and ~4 s a short one on 2 cores:
    // the long-text case is covered on lavapipe natively, every fixture text up to 64 tokens in
    // the full tier (browser_gpu_models_full.rs); here the first 8 of them.
    let texts: Vec<String> = fixture
        .items
        .iter()
        .map(|i| i.text.clone())
        .filter(|t| cpu.token_count(t) <= 64)
        .take(8)
        .collect();
    assert_eq!(texts.len(), 8);
    let on_gpu = gpu.embed_async(texts.clone()).await.unwrap().to_vec();
    let on_cpu = cpu.embed(texts.clone()).unwrap().to_vec();
    let min = rows(&on_gpu, gpu.dim(), texts.len())
        .iter()
        .zip(rows(&on_cpu, cpu.dim(), texts.len()))
        .map(|(g, c)| cosine(g, c))
        .fold(f32::INFINITY, f32::min);
    log(format!(
        "WebGPU (SwiftShader) vs CPU, {} texts: min cosine {min:.7}",
        texts.len()
    ));
    // Same arithmetic up to summation order: measured 1.000000 natively (lavapipe), so 0.99999.
    assert!(min >= 0.99999, "GPU vs CPU min cosine {min}");
}

#[wasm_bindgen_test]
async fn an_evaluation_chunk_embedded_on_the_gpu_is_accepted_like_a_cpu_one() {
    let gpu = gpu_model().await;
    let cpu = Model::load(fetch(MODEL_URL).await).unwrap();
    let mut eval = Evaluation::new("quick", "model").unwrap();
    for name in SR_FILES {
        eval.add_sr_file(name, &fetch(&format!("/data/{}", sr_path(name))).await)
            .unwrap();
    }
    eval.prepare(&cpu).unwrap();
    #[derive(Deserialize)]
    struct Chunk {
        start: usize,
        texts: Vec<String>,
    }
    // A chunk of 8 (the page asks for 32: the same code path, a quarter of SwiftShader's time).
    let chunk: Chunk = serde_wasm_bindgen::from_value(eval.next_chunk(8).unwrap()).unwrap();
    assert_eq!(chunk.texts.len(), 8);
    let on_gpu = gpu.embed_async(chunk.texts.clone()).await.unwrap().to_vec();
    let on_cpu = cpu.embed(chunk.texts.clone()).unwrap().to_vec();
    let min = rows(&on_gpu, gpu.dim(), chunk.texts.len())
        .iter()
        .zip(rows(&on_cpu, cpu.dim(), chunk.texts.len()))
        .map(|(g, c)| cosine(g, c))
        .fold(f32::INFINITY, f32::min);
    log(format!(
        "WebGPU vs CPU on an evaluation chunk: min cosine {min:.7}"
    ));
    assert!(
        min >= 0.99999,
        "GPU vs CPU on an evaluation chunk: min cosine {min}"
    );
    let done = eval
        .accept_embeddings(chunk.start, chunk.texts.len(), &on_gpu)
        .unwrap();
    assert_eq!(done, 8);
}
