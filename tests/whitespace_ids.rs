//! Every vocabulary kind read from a llama.cpp file gives the ids of the model's own tokenizer
//! (transformers' `AutoTokenizer`, as sentence-transformers loads it; recorded by
//! tests/reference/random_encoders.py and e5_reference.py) on texts with leading, trailing and
//! repeated whitespace of every kind (tests/fixtures/whitespace-texts.json): one case per
//! vocabulary kind and split.

mod common;

use std::path::PathBuf;

use serde::Deserialize;
use sr_bench::model::ModelFile;

/// A llama.cpp file and the reference ids of its model's own tokenizer.
struct Case {
    vocabulary: &'static str,
    file: Vec<u8>,
    reference: PathBuf,
}

#[derive(Deserialize)]
struct Ids {
    texts: Vec<String>,
    ids: Vec<Vec<u32>>,
}

fn llama(name: &str) -> PathBuf {
    common::root().join("tests/artifacts/llama").join(name)
}

fn random(architecture: &str) -> (Vec<u8>, PathBuf) {
    let file = common::RandomEncoder::load(architecture).bytes("f32");
    (file, llama(&format!("{architecture}.whitespace-ids.json")))
}

fn cases() -> Vec<Case> {
    let case = |vocabulary, (file, reference)| Case {
        vocabulary,
        file,
        reference,
    };
    let minilm = std::fs::read(common::llama_path("f32")).unwrap();
    let e5 = common::root().join("tests/artifacts/e5");
    let xlm_r = std::fs::read(e5.join("multilingual-e5-small.llamacpp.f16.gguf"))
        .expect("./build.sh fixtures makes the e5 reference");
    vec![
        case(
            "WordPiece (bert, all-MiniLM-L6-v2)",
            (minilm, llama("all-MiniLM-L6-v2.whitespace-ids.json")),
        ),
        case("WordPiece (nomic-bert)", random("nomic-bert")),
        case(
            "byte-level BPE, GPT-2's split (modern-bert)",
            random("modern-bert"),
        ),
        case("byte-level BPE, Qwen2's split (qwen3)", random("qwen3")),
        case(
            "SentencePiece BPE (gemma-embedding)",
            random("gemma-embedding"),
        ),
        case(
            "SentencePiece Unigram, T5's (t5encoder)",
            random("t5encoder"),
        ),
        case(
            "SentencePiece Unigram, XLM-R's (multilingual-e5-small)",
            (xlm_r, e5.join("multilingual-e5-small.whitespace-ids.json")),
        ),
    ]
}

#[test]
fn every_llama_cpp_vocabulary_gives_the_reference_ids_on_whitespace() {
    let mut wrong = Vec::new();
    for case in cases() {
        let tokenizer = common::tokenizer_of(&ModelFile::from_bytes(case.file).unwrap());
        let bytes = std::fs::read(&case.reference)
            .unwrap_or_else(|e| panic!("{}: {e}", case.reference.display()));
        let want: Ids = serde_json::from_slice(&bytes).unwrap();
        assert!(want.texts.len() >= 20, "{}", case.reference.display());
        for (text, ids) in want.texts.iter().zip(&want.ids) {
            let got = tokenizer.encode(text).unwrap();
            if &got != ids {
                wrong.push(format!(
                    "{}: {text:?}: {got:?}, want {ids:?}",
                    case.vocabulary
                ));
            }
        }
        println!("{}: {} texts", case.vocabulary, want.texts.len());
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
