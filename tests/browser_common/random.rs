//! The random-initialised checkpoints (`./build.sh fixtures`, tests/reference/random_encoders.py)
//! in Chromium: their references, files, and the WebGPU cases (SwiftShader) shared by the gate's
//! `browser_llama` (a sample of the texts) and the full tier's `browser_gpu_checkpoints_full`
//! (all of them).

use super::{fetch, log, rows, sha256_hex};
use sr_bench::wasm::Model;

/// transformers' embeddings of the reference texts by a random checkpoint, with the sha256 of
/// each file they were made from (tests/reference/random_encoders.py).
#[derive(serde::Deserialize)]
pub struct RandomEncoder {
    pub files: std::collections::BTreeMap<String, RandomFile>,
    pub items: Vec<RandomItem>,
}

#[derive(serde::Deserialize)]
pub struct RandomFile {
    pub file: String,
    pub sha256: String,
}

#[derive(serde::Deserialize)]
pub struct RandomItem {
    pub text: String,
    pub ids: Vec<u32>,
    pub embedding: Vec<f32>,
}

/// `architecture`'s reference and its file of `dtype` (checked to be the one the reference was
/// made from).
pub async fn random_file(architecture: &str, dtype: &str) -> (RandomEncoder, Vec<u8>) {
    let url = format!("/tests/artifacts/llama/{architecture}.reference.json");
    let reference: RandomEncoder = serde_json::from_slice(&fetch(&url).await)
        .expect("the reference is JSON: run ./build.sh fixtures");
    let entry = &reference.files[dtype];
    let bytes = fetch(&format!("/tests/artifacts/llama/{}", entry.file)).await;
    assert_eq!(
        sha256_hex(&bytes),
        entry.sha256,
        "{} is not the file its reference was made from: run ./build.sh fixtures",
        entry.file
    );
    (reference, bytes)
}

#[derive(serde::Deserialize)]
struct Status {
    active: String,
}

/// Which reference texts a WebGPU case embeds.
#[derive(Clone, Copy)]
pub enum Texts {
    /// The gate's: one file per architecture (see [`ON_WEBGPU`]) on the first six sentences and
    /// the nine edge cases of the 82 fixture texts
    /// (items 72–80: empty, one letter, punctuation, accents, emoji, Czech, stray whitespace,
    /// tab and newline, numbers). SwiftShader runs a case's 82 texts in ~45 s on 2 slow cores;
    /// the long texts and every kernel past them are the gate's natively on lavapipe
    /// (tests/modern_encoders.rs), the same WGSL.
    Sample,
    /// All reference texts (ModernBERT's past its local window).
    All,
}

/// `architecture`'s file of `dtype` on WebGPU (SwiftShader) against transformers and against
/// the CPU backend: the min cosines.
async fn random_on_webgpu(architecture: &str, dtype: &str, which: Texts) -> (f32, f32) {
    let (mut reference, bytes) = random_file(architecture, dtype).await;
    if let Texts::Sample = which {
        assert!(
            reference.items.len() >= 82 && reference.items[72].text.is_empty(),
            "{architecture}: items 72–80 of the reference are the fixture's edge cases"
        );
        let edge: Vec<RandomItem> = reference.items.drain(72..81).collect();
        reference.items.truncate(6);
        reference.items.extend(edge);
    }
    let gpu = Model::load_with_backend(bytes.clone(), "gpu".into(), None, None, None)
        .await
        .expect("a WebGPU adapter (webdriver.json passes --enable-unsafe-webgpu)");
    let cpu = Model::load_with(bytes, None, None).expect("the file loads");
    let texts: Vec<String> = reference.items.iter().map(|i| i.text.clone()).collect();
    let started = js_sys::Date::now();
    let got = gpu.embed_async(texts.clone()).await.unwrap().to_vec();
    let seconds = (js_sys::Date::now() - started) / 1e3;
    let status: Status = serde_wasm_bindgen::from_value(gpu.backend_status().unwrap()).unwrap();
    assert_eq!(
        status.active, "webgpu",
        "{architecture} {dtype} must run on the GPU"
    );
    let want = cpu.embed(texts).unwrap().to_vec();
    let n = reference.items.len();
    let got = rows(&got, gpu.dim(), n);
    let min = |pairs: Vec<f32>| pairs.into_iter().fold(f32::INFINITY, f32::min);
    let vs_reference = min(reference
        .items
        .iter()
        .zip(&got)
        .map(|(item, g)| sr_bench::model::cosine(g, &item.embedding))
        .collect());
    let vs_cpu = min(got
        .iter()
        .zip(rows(&want, cpu.dim(), n))
        .map(|(g, w)| sr_bench::model::cosine(g, w))
        .collect());
    log(format!(
        "browser WebGPU (SwiftShader), {architecture} {dtype}: {n} texts in {seconds:.1} s, min \
         cosine vs transformers {vs_reference:.7}, vs the CPU backend {vs_cpu:.7}"
    ));
    (vs_reference, vs_cpu)
}

/// The WebGPU cases (SwiftShader), by (architecture, dtype, in the gate), with the min cosine
/// each keeps against transformers; every case also equals the CPU backend to 0.99999. The
/// gate runs one file per architecture, f32 and q8_0 alternating (loading a file on
/// SwiftShader, its pipelines compiled, is most of a case's time on a sample); both dtypes of
/// every architecture run natively on lavapipe in the gate, the same WGSL.
const ON_WEBGPU: &[(&str, &str, bool, f32)] = &[
    ("nomic-bert", "f32", true, 0.99999),
    ("nomic-bert", "q8_0", false, 0.9993),
    ("modern-bert", "f32", false, 0.99999),
    ("modern-bert", "q8_0", true, 0.9993),
    ("qwen2", "f32", true, 0.99999),
    ("qwen2", "q8_0", false, 0.998),
    ("qwen3", "f32", false, 0.99999),
    ("qwen3", "q8_0", true, 0.999),
    ("gemma-embedding", "f32", true, 0.99999),
    ("gemma-embedding", "q8_0", false, 0.999),
    ("t5encoder", "f32", false, 0.99999),
    ("t5encoder", "q8_0", true, 0.9993),
];

/// The cases of [`ON_WEBGPU`] (the gate's on a sample of the texts, all of them on all texts);
/// panics naming each case that falls short.
pub async fn every_checkpoint_on_webgpu(which: Texts) {
    let mut failed = Vec::new();
    for &(architecture, dtype, gate, bound) in ON_WEBGPU {
        if matches!(which, Texts::Sample) && !gate {
            continue;
        }
        let (reference, cpu) = random_on_webgpu(architecture, dtype, which).await;
        if reference < bound {
            failed.push(format!("{architecture} {dtype}: {reference} < {bound}"));
        }
        if cpu < 0.99999 {
            failed.push(format!("{architecture} {dtype} GPU vs CPU: {cpu}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
