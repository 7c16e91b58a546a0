//! Shared by the native integration tests: the built model files and the reference fixture.
#![allow(dead_code)]

use std::path::PathBuf;

use serde::Deserialize;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A model file built by `./build.sh` (from the pinned wheel); fails loudly when absent.
pub fn model_path(name: &str, dtype: &str) -> PathBuf {
    let path = root()
        .join("www/models")
        .join(format!("{name}.{dtype}.gguf"));
    assert!(
        path.exists(),
        "{} is missing: run ./build.sh build first (it converts the pinned wheel)",
        path.display()
    );
    path
}

pub fn model_bytes(name: &str, dtype: &str) -> Vec<u8> {
    std::fs::read(model_path(name, dtype)).expect("model file is readable")
}

#[derive(Deserialize)]
pub struct Fixture {
    pub max_seq_length: usize,
    pub items: Vec<FixtureItem>,
}

#[derive(Deserialize)]
pub struct FixtureItem {
    pub text: String,
    pub embedding: Vec<f32>,
}

/// sentence-transformers' embeddings of 82 texts (copied from ../shared/reference).
pub fn fixture(name: &str) -> Fixture {
    let path = root().join("tests/fixtures").join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).expect("fixture exists"))
        .expect("fixture is valid JSON")
}

/// The data folder by the CLI's own rule ([`sr_bench::eval::default_data_dir`]:
/// `$SR_BENCH_DATA`, else `data` filled by build.sh, else `../shared/data`).
pub fn data_dir() -> PathBuf {
    let dir = sr_bench::eval::default_data_dir();
    assert!(
        dir.join("sr").exists(),
        "{} has no sr/: run ./build.sh build first",
        dir.display()
    );
    dir
}

/// Embeds the 82 fixture texts of `model` with its `dtype` file on the CPU and returns
/// (min cosine vs sentence-transformers, the first 40 characters of that text), printing both
/// with the embedding time.
pub fn min_cosine_against_reference(model: &str, dtype: &str) -> (f32, String) {
    let fixture = fixture(model);
    let embedder = sr_bench::backend::load_embedder(
        model_bytes(model, dtype),
        sr_bench::backend::BackendKind::Cpu,
    )
    .expect("model loads");
    let texts: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    let start = std::time::Instant::now();
    let vectors = embedder.embed(&texts).expect("embedding works");
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(vectors.len(), 82);
    let mut worst = (f32::INFINITY, String::new());
    for (item, v) in fixture.items.iter().zip(&vectors) {
        assert_eq!(v.len(), item.embedding.len(), "dimension");
        let c = sr_bench::model::cosine(v, &item.embedding);
        if c < worst.0 {
            worst = (c, item.text.chars().take(40).collect());
        }
    }
    println!(
        "{model} {dtype}: min cosine vs sentence-transformers over 82 texts = {:.7} ({:?}); \
         embedded in {seconds:.1} s",
        worst.0, worst.1
    );
    worst
}
