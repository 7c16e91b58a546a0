//! Two batches in flight in the browser (headless Chromium, SwiftShader): `embed_async`
//! submits batch i+1 before batch i reads back, and gives exactly the embeddings of one batch
//! at a time; `backend_status` reports the GPU memory held. Native: tests/webgpu_memory.rs.
#![cfg(target_arch = "wasm32")]

mod browser_common;
use browser_common::{fetch, fixture, log};

use sr_bench::backend::webgpu::{self, GpuOptions};
use sr_bench::backend::BackendKind;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn two_batches_in_flight_in_the_browser_give_the_embeddings_of_one_at_a_time() {
    let bytes = fetch("/www/models/all-MiniLM-L6-v2.q8_0.gguf").await;
    let fixture = fixture("all-MiniLM-L6-v2").await;
    // SwiftShader is slow: 6 short texts, 3 batches of 2 (each submitted before the previous
    // one reads back).
    let mut items: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    items.sort_by_key(|t| t.len());
    let texts = &items[..6];
    let mut results = Vec::new();
    for one_batch_in_flight in [true, false] {
        let options = GpuOptions {
            one_batch_in_flight,
            ..Default::default()
        };
        let (mut embedder, gpu) =
            webgpu::load_embedder_async(bytes.clone(), BackendKind::WebGpu, &options)
                .await
                .expect("a WebGPU adapter (webdriver.json passes --enable-unsafe-webgpu)");
        embedder.set_batch_size(2);
        let vectors = embedder.embed_async(texts).await.unwrap();
        let status = gpu.status();
        assert_eq!(status.active, "webgpu", "{status:?}");
        let memory = status.gpu_memory.expect("GPU memory in backend_status");
        // The q8_0 blocks stay quantized on the GPU: 12.2 MB of weights (f32 would be 43.4 MB).
        assert!(
            (10_000_000..20_000_000).contains(&memory.weights) && memory.activations > 0,
            "{memory:?}"
        );
        log(format!("one batch in flight: {one_batch_in_flight}; GPU memory {memory:?}; adapter features {:?}", status.adapter.map(|a| a.summary.features)));
        results.push(vectors);
    }
    assert_eq!(
        results[0], results[1],
        "the overlap must not change a value"
    );
}
