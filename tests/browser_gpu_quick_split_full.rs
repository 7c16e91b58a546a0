//! The whole quick SR split embedded on WebGPU in headless Chromium (SwiftShader, CPU
//! emulation): every cell within ±0.1 of the CPU backend. About 20 minutes on 2 cores, so it
//! runs in `./build.sh test full` only; the gate's GPU proofs are `browser_gpu.rs` (real chunks
//! in Chromium) and the lavapipe tests (`webgpu_*.rs`).
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{fetch, gpu_model, log, MINILM_Q8_0_URL as MODEL_URL};

use serde::Deserialize;
use sr_bench::eval::{sr_path, SR_FILES};
use sr_bench::wasm::{Evaluation, Model};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The `quick` SR split (1,011 rows, every SR file) embedded on the GPU gives every cell within
/// ±0.1 of the same run on the CPU backend. SwiftShader emulates the GPU on the CPU: this is the
/// slowest browser test (minutes), and the only one that runs a whole split through the GPU.
#[wasm_bindgen_test]
async fn quick_sr_split_on_the_gpu_is_within_a_tenth_of_the_cpu_on_every_cell() {
    let gpu = gpu_model().await;
    let cpu = Model::load(fetch(MODEL_URL).await).unwrap();
    let mut files = Vec::new();
    for name in SR_FILES {
        files.push((name, fetch(&format!("/data/{}", sr_path(name))).await));
    }
    let new_eval = || {
        let mut eval = Evaluation::new("quick", "model").unwrap();
        for (name, csv) in &files {
            eval.add_sr_file(name, csv).unwrap();
        }
        let total = eval.prepare(&cpu).unwrap();
        (eval, total)
    };

    let (mut on_cpu, _) = new_eval();
    while !on_cpu.is_done() {
        on_cpu.step(&cpu, 256).unwrap();
    }
    let (mut on_gpu, total) = new_eval();
    #[derive(Deserialize)]
    struct Chunk {
        start: usize,
        texts: Vec<String>,
    }
    let started = js_sys::Date::now();
    while !on_gpu.is_done() {
        let chunk: Chunk = serde_wasm_bindgen::from_value(on_gpu.next_chunk(64).unwrap()).unwrap();
        let vectors = gpu.embed_async(chunk.texts.clone()).await.unwrap().to_vec();
        on_gpu
            .accept_embeddings(chunk.start, chunk.texts.len(), &vectors)
            .unwrap();
    }
    let seconds = (js_sys::Date::now() - started) / 1e3;
    log(format!(
        "quick SR split on the GPU (SwiftShader: CPU emulation): {total} sentences in \
             {seconds:.0} s, {:.1} sentences/s",
        total as f64 / seconds
    ));

    let report = |mut eval: Evaluation| -> serde_json::Value {
        serde_wasm_bindgen::from_value(eval.finish("all-MiniLM-L6-v2", "q8_0", None).unwrap())
            .unwrap()
    };
    let (cpu_report, gpu_report) = (report(on_cpu), report(on_gpu));
    let mut worst = 0f64;
    for dim in ["structure", "relation"] {
        for file in SR_FILES {
            for metric in ["spearman", "pearson"] {
                let g = gpu_report["results"][dim][file][metric].as_f64().unwrap();
                let c = cpu_report["results"][dim][file][metric].as_f64().unwrap();
                assert!(
                    (g - c).abs() <= 0.1,
                    "{dim}/{file}/{metric}: GPU {g} vs CPU {c}"
                );
                worst = worst.max((g - c).abs());
            }
        }
    }
    log(format!(
        "quick SR split: GPU vs CPU max |Δ| over 24 cells = {worst:.4}"
    ));
}
