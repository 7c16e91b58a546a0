//! Folders with a SentencePiece-Unigram vocabulary through our own converter (`sr-bench
//! convert --from`): transformers' XLMRobertaModel (positions from pad_token_id + 1, run as
//! BERT with the table's first rows cut) and a BertModel reading the same vocabulary, both
//! random-initialised with a Unigram tokenizer trained on the SR texts (`./build.sh fixtures`,
//! tests/reference/random_encoders.py). Each converted file must give the reference tokenizer's
//! ids and transformers' embeddings (mean pooled as sentence-transformers) of the 82 fixture
//! texts and two of 256+ tokens (cut at 256, as sentence-transformers cuts).
#![cfg(not(target_arch = "wasm32"))]

mod cli_common;
mod common;
mod convert_common;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sr_bench::backend::{load_embedder, BackendKind};
use sr_bench::model::cosine;

#[derive(Deserialize)]
struct Reference {
    items: Vec<Item>,
    folder_sha256: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    ids: Vec<u32>,
    embedding: Vec<f32>,
}

fn artifacts() -> PathBuf {
    common::root().join("tests/artifacts/llama")
}

/// The folder and its reference, the folder's files checked against the sha256 the reference
/// was made with.
fn folder(name: &str) -> (PathBuf, Reference) {
    let path = artifacts().join(format!("{name}.reference.json"));
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}: run ./build.sh fixtures", path.display()));
    let reference: Reference = serde_json::from_slice(&bytes).unwrap();
    let dir = artifacts().join(format!("{name}.hf"));
    for (file, sha) in &reference.folder_sha256 {
        let got = common::sha256_hex(&dir.join(file)).unwrap();
        assert_eq!(
            &got, sha,
            "{name}.hf/{file} is not the one the reference was made from"
        );
    }
    (dir, reference)
}

/// Converts `name`'s folder to `dtype`; returns the file and the converter's stderr.
fn converted(name: &str, dtype: &str) -> (PathBuf, String) {
    let (dir, _) = folder(name);
    let out = convert_common::temp_dir(&format!("unigram-{name}-{dtype}"));
    let (ok, _, stderr) = convert_common::convert_from(&dir, &out, &["--dtype", dtype]);
    assert!(ok, "{name} {dtype}: {stderr}");
    (out.join(format!("{name}.hf.{dtype}.gguf")), stderr)
}

/// Min cosine against the reference over every text, after checking every text's ids.
fn min_cosine(name: &str, file: &Path) -> f32 {
    let (_, reference) = folder(name);
    let embedder = load_embedder(std::fs::read(file).unwrap(), BackendKind::Cpu).unwrap();
    for item in &reference.items {
        let ids = embedder.tokenizer().encode(&item.text).unwrap();
        assert_eq!(ids, item.ids, "{name}: {:?}", item.text);
    }
    let texts: Vec<&str> = reference.items.iter().map(|i| i.text.as_str()).collect();
    let got = embedder.embed(&texts).unwrap();
    reference
        .items
        .iter()
        .zip(&got)
        .map(|(item, v)| cosine(v, &item.embedding))
        .fold(f32::INFINITY, f32::min)
}

#[test]
fn an_xlm_roberta_folder_converts_and_matches_transformers() {
    let (file, stderr) = converted("xlm-roberta", "f32");
    assert!(
        stderr.contains(
            "positions count from pad_token_id + 1 = 2: the table's first 2 rows are cut"
        ) && stderr.contains("max_position_embeddings 512 in the file"),
        "{stderr}"
    );
    let info = sr_bench::model::ModelFile::from_bytes(std::fs::read(&file).unwrap())
        .unwrap()
        .info;
    assert_eq!(
        (info.architecture.name(), info.max_seq_length),
        ("bert", 256)
    );
    let f32 = min_cosine("xlm-roberta", &file);
    let (file, _) = converted("xlm-roberta", "q8_0");
    let q8 = min_cosine("xlm-roberta", &file);
    println!("XLMRobertaModel folder: min cosine vs transformers f32 {f32:.7}, q8_0 {q8:.7}");
    assert!(f32 >= 0.99999, "{f32}");
    assert!(q8 >= 0.9993, "{q8}");
}

#[test]
fn a_bert_folder_with_a_unigram_vocabulary_converts_and_matches_transformers() {
    let (file, stderr) = converted("bert-unigram", "f32");
    assert!(!stderr.contains("positions count"), "{stderr}");
    let f32 = min_cosine("bert-unigram", &file);
    println!("BertModel folder with a Unigram vocabulary: min cosine vs transformers f32 {f32:.7}");
    assert!(f32 >= 0.99999, "{f32}");
}

/// A folder whose tokenizer_config.json names `XLMRobertaTokenizer` (real XLM-R folders do):
/// transformers 5 runs its own pipeline over the tokenizer.json's vocabulary — no normaliser
/// here (the folder's has no Precompiled step), a split at whitespace, Metaspace — so the
/// converted file must give that tokenizer's ids, on the fixture texts and on texts with
/// leading, trailing and repeated whitespace of every kind.
#[test]
fn an_xlm_roberta_tokenizer_class_folder_tokenizes_as_transformers() {
    #[derive(Deserialize)]
    struct WhitespaceIds {
        texts: Vec<String>,
        ids: Vec<Vec<u32>>,
    }
    let (file, stderr) = converted("xlm-roberta-class", "f32");
    assert!(stderr.contains("XLMRobertaTokenizer"), "{stderr}");
    let f32 = min_cosine("xlm-roberta-class", &file);
    let path = artifacts().join("xlm-roberta-class.whitespace-ids.json");
    let reference: WhitespaceIds = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let embedder = load_embedder(std::fs::read(&file).unwrap(), BackendKind::Cpu).unwrap();
    for (text, ids) in reference.texts.iter().zip(&reference.ids) {
        assert_eq!(&embedder.tokenizer().encode(text).unwrap(), ids, "{text:?}");
    }
    // The same folder read as its tokenizer.json alone keeps a trailing "▁" where the class
    // drops it: the two pipelines differ, so the ids above test the class's.
    let (as_stored, _) = converted("xlm-roberta", "f32");
    let stored = load_embedder(std::fs::read(as_stored).unwrap(), BackendKind::Cpu).unwrap();
    let differ = reference
        .texts
        .iter()
        .filter(|t| {
            stored.tokenizer().encode(t).unwrap() != embedder.tokenizer().encode(t).unwrap()
        })
        .count();
    println!(
        "XLMRobertaTokenizer folder: min cosine vs transformers f32 {f32:.7}; {} whitespace texts \
         exact, {differ} of them tokenized otherwise by the tokenizer.json alone",
        reference.texts.len()
    );
    assert!(differ > 0);
    assert!(f32 >= 0.99999, "{f32}");
}
