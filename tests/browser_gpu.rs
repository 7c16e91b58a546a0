//! The WebGPU backend in headless Chromium (`--enable-unsafe-webgpu` in webdriver.json gives
//! SwiftShader, a software adapter): encoder parity with the CPU backend and a GPU-driven
//! evaluation chunk. Kernel-level tests run natively on lavapipe (tests/webgpu_kernels.rs).
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{fetch, fixture, rows};

use serde::Deserialize;
use sr_bench::model::cosine;
use sr_bench::wasm::{Evaluation, Model};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const MODEL_URL: &str = "/www/models/all-MiniLM-L6-v2.q8_0.gguf";

#[derive(Deserialize)]
struct Status {
    active: String,
    software_adapter: bool,
}

async fn gpu_model() -> Model {
    let model = Model::load_with_backend(fetch(MODEL_URL).await, "gpu".into(), None, None)
        .await
        .expect("a WebGPU adapter (webdriver.json passes --enable-unsafe-webgpu)");
    let status: Status = serde_wasm_bindgen::from_value(model.backend_status().unwrap()).unwrap();
    assert_eq!(status.active, "webgpu");
    assert!(
        status.software_adapter,
        "headless Chromium's adapter is SwiftShader: it must be reported as software"
    );
    model
}

#[wasm_bindgen_test]
async fn gpu_encoder_in_the_browser_matches_the_cpu_backend() {
    let gpu = gpu_model().await;
    let cpu = Model::load(fetch(MODEL_URL).await).unwrap();
    let fixture = fixture("all-MiniLM-L6-v2").await;
    // SwiftShader runs at ~0.4 sentences/s on 256-token texts: the long-text case is covered on
    // lavapipe natively; here every text up to 64 tokens.
    let texts: Vec<String> = fixture
        .items
        .iter()
        .map(|i| i.text.clone())
        .filter(|t| cpu.token_count(t) <= 64)
        .collect();
    assert!(texts.len() >= 70, "{} texts", texts.len());
    let on_gpu = gpu.embed_async(texts.clone()).await.unwrap().to_vec();
    let on_cpu = cpu.embed(texts.clone()).unwrap().to_vec();
    let min = rows(&on_gpu, gpu.dim(), texts.len())
        .iter()
        .zip(rows(&on_cpu, cpu.dim(), texts.len()))
        .map(|(g, c)| cosine(g, c))
        .fold(f32::INFINITY, f32::min);
    web_sys::console::log_1(
        &format!(
            "WebGPU (SwiftShader) vs CPU, {} texts: min cosine {min:.7}",
            texts.len()
        )
        .into(),
    );
    assert!(min >= 0.9995, "GPU vs CPU min cosine {min}");
}

#[wasm_bindgen_test]
async fn an_evaluation_chunk_embedded_on_the_gpu_is_accepted_like_a_cpu_one() {
    let gpu = gpu_model().await;
    let cpu = Model::load(fetch(MODEL_URL).await).unwrap();
    let mut eval = Evaluation::new("quick", "model").unwrap();
    for name in ["stsb", "sickr", "askubuntu", "cqa", "twitter", "biosses"] {
        eval.add_sr_file(name, &fetch(&format!("/data/sr/{name}.csv")).await)
            .unwrap();
    }
    eval.prepare(&cpu).unwrap();
    #[derive(Deserialize)]
    struct Chunk {
        start: usize,
        texts: Vec<String>,
    }
    let chunk: Chunk = serde_wasm_bindgen::from_value(eval.next_chunk(32).unwrap()).unwrap();
    assert_eq!(chunk.texts.len(), 32);
    let on_gpu = gpu.embed_async(chunk.texts.clone()).await.unwrap().to_vec();
    let on_cpu = cpu.embed(chunk.texts.clone()).unwrap().to_vec();
    let min = rows(&on_gpu, gpu.dim(), chunk.texts.len())
        .iter()
        .zip(rows(&on_cpu, cpu.dim(), chunk.texts.len()))
        .map(|(g, c)| cosine(g, c))
        .fold(f32::INFINITY, f32::min);
    assert!(
        min >= 0.9995,
        "GPU vs CPU on an evaluation chunk: min cosine {min}"
    );
    let done = eval
        .accept_embeddings(chunk.start, chunk.texts.len(), &on_gpu)
        .unwrap();
    assert_eq!(done, 32);
}

/// The `quick` SR split (1,011 rows, every SR file) embedded on the GPU gives every cell within
/// ±0.1 of the same run on the CPU backend. SwiftShader emulates the GPU on the CPU: this is the
/// slowest browser test (minutes), and the only one that runs a whole split through the GPU.
#[wasm_bindgen_test]
async fn quick_sr_split_on_the_gpu_is_within_a_tenth_of_the_cpu_on_every_cell() {
    let gpu = gpu_model().await;
    let cpu = Model::load(fetch(MODEL_URL).await).unwrap();
    let mut files = Vec::new();
    for name in ["stsb", "sickr", "askubuntu", "cqa", "twitter", "biosses"] {
        files.push((name, fetch(&format!("/data/sr/{name}.csv")).await));
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
    web_sys::console::log_1(
        &format!(
            "quick SR split on the GPU (SwiftShader: CPU emulation): {total} sentences in \
             {seconds:.0} s, {:.1} sentences/s",
            total as f64 / seconds
        )
        .into(),
    );

    let report = |mut eval: Evaluation| -> serde_json::Value {
        serde_wasm_bindgen::from_value(eval.finish("all-MiniLM-L6-v2", "q8_0").unwrap()).unwrap()
    };
    let (cpu_report, gpu_report) = (report(on_cpu), report(on_gpu));
    let mut worst = 0f64;
    for dim in ["structure", "relation"] {
        for file in ["stsb", "sickr", "askubuntu", "cqa", "twitter", "biosses"] {
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
    web_sys::console::log_1(
        &format!("quick SR split: GPU vs CPU max |Δ| over 24 cells = {worst:.4}").into(),
    );
}
