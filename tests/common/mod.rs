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

/// The data folder filled by build.sh (override with SR_BENCH_DATA).
pub fn data_dir() -> PathBuf {
    let dir = std::env::var_os("SR_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("data"));
    assert!(
        dir.join("sr").exists(),
        "{} has no sr/: run ./build.sh build first",
        dir.display()
    );
    dir
}
