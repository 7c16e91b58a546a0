//! A dropped model file is hostile: crafted files (made here from the real ones) must each fail
//! with a JS Error carrying the right `code`, seeded mutations of whole files (the native fuzz's
//! generator) must each load and embed or fail with a code, and the same wasm instance must then
//! load the real file and score a pair as before: a panic aborts a wasm instance, so its
//! surviving proves there was none (`wasm-pack test --headless --chrome --release --test
//! browser_untrusted --features testing`).
#![cfg(target_arch = "wasm32")]

mod browser_common;
mod crafted;

use browser_common::{fetch, log, yield_now};
use candle_core::quantized::gguf_file::Value;
use sr_bench::wasm::{inspect_model, Model};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const OURS: &str = "/www/models/all-MiniLM-L6-v2.q8_0.gguf";
const LLAMA: &str = "/tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.q8_0.gguf";
/// The random nomic-bert checkpoint (`./build.sh fixtures`): the other llama.cpp layout.
const NOMIC: &str = "/tests/artifacts/llama/nomic-bert.q8_0.gguf";
/// The random ModernBERT checkpoint: byte-level BPE, pre-norm, local layers.
const MODERN: &str = "/tests/artifacts/llama/modern-bert.q8_0.gguf";
/// The random Qwen3-Embedding and EmbeddingGemma checkpoints: the decoder-built layouts
/// (grouped-query heads; Qwen's byte-level BPE, Gemma's SentencePiece BPE and Dense head).
const QWEN3: &str = "/tests/artifacts/llama/qwen3.q8_0.gguf";
const GEMMA: &str = "/tests/artifacts/llama/gemma-embedding.q8_0.gguf";
/// Our multilingual file: a SentencePiece Unigram tokenizer with the Precompiled charsmap.
const E5: &str = "/www/models/multilingual-e5-small.q4_0.gguf";

/// The `code` and `message` of the JS Error a failed call gave.
fn code_and_message(error: JsValue) -> (String, String) {
    let error: js_sys::Error = error.dyn_into().expect("a JS Error");
    let code = js_sys::Reflect::get(&error, &"code".into()).unwrap();
    (code.as_string().unwrap_or_default(), error.message().into())
}

fn score(model: &Model) -> f32 {
    model
        .similarity("Tom likes Mary.", "Mary is liked by Tom.")
        .expect("a pair scores")
}

#[wasm_bindgen_test]
async fn crafted_files_fail_with_a_code_and_the_instance_still_scores() {
    let ours = fetch(OURS).await;
    let llama = fetch(LLAMA).await;
    let before = score(&Model::load(ours.clone()).expect("the real file loads"));

    // Our MiniLM file names its tensors as llama.cpp does (format version 2).
    let query = "blk.0.attn_q.weight";
    let mut huge_string = ours.clone();
    huge_string[24..32].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "alignment 0",
            crafted::set_metadata(&ours, "general.alignment", Value::U32(0)),
            "bad-model",
            "general.alignment is 0",
        ),
        (
            "a shape the config does not give",
            crafted::with_tensor_dims(&ours, query, [768, 192]),
            "bad-model",
            "the config says [384, 384]",
        ),
        (
            "a huge hidden size (ours)",
            crafted::with_config_field(&ours, "hidden_size", 1 << 30),
            "bad-model",
            "hidden_size = 1073741824 is outside",
        ),
        (
            "a huge hidden size (llama.cpp)",
            crafted::set_metadata(&llama, "bert.embedding_length", Value::U32(1 << 31)),
            "bad-model",
            "hidden_size = 2147483648 is outside",
        ),
        (
            "a tensor of 2^40 elements",
            crafted::with_tensor_dims(&ours, query, [1 << 20, 1 << 20]),
            "bad-model",
            query,
        ),
        (
            "a 2^60-byte metadata key",
            huge_string,
            "bad-model",
            "metadata key claims 1152921504606846976 bytes",
        ),
        (
            "no vocabulary (llama.cpp)",
            crafted::drop_metadata(&llama, "tokenizer.ggml.tokens"),
            "bad-model",
            "missing metadata 'tokenizer.ggml.tokens'",
        ),
        (
            "no tokenizer (ours)",
            crafted::drop_metadata(&ours, "srbench.tokenizer_json"),
            "bad-model",
            "missing metadata 'srbench.tokenizer_json'",
        ),
        (
            "an architecture we do not run",
            crafted::set_metadata(
                &llama,
                "general.architecture",
                Value::String("llama".into()),
            ),
            "unsupported-architecture",
            "architecture 'llama'",
        ),
    ];
    for (what, bytes, expected_code, expected_message) in cases {
        let total = bytes.len();
        let (code, message) = code_and_message(inspect_model(&bytes, total, None).err().unwrap());
        assert_eq!(code, expected_code, "inspect, {what}: {message}");
        assert!(
            message.contains(expected_message),
            "inspect, {what}: {message}"
        );
        let error = Model::load(bytes)
            .err()
            .unwrap_or_else(|| panic!("{what} loaded"));
        let (code, message) = code_and_message(error);
        assert_eq!(code, expected_code, "load, {what}: {message}");
        assert!(
            message.contains(expected_message),
            "load, {what}: {message}"
        );
        log(format!("{what}: {code}: {message}"));
    }

    // Tokenizer JSONs that `tokenizers` would panic on (aborting this instance): refused.
    for (what, bytes) in crafted::tokenizer_panics(&ours) {
        let error = Model::load(bytes)
            .err()
            .unwrap_or_else(|| panic!("{what} loaded"));
        let (code, message) = code_and_message(error);
        assert_eq!(code, "bad-model", "load, {what}: {message}");
        assert!(
            message.contains("tokenizer JSON"),
            "load, {what}: {message}"
        );
        log(format!("{what}: {code}: {message}"));
    }

    // The same instance, after every failure: the real files load and score as before.
    let after = score(&Model::load(ours).expect("the real file loads after the crafted ones"));
    assert_eq!(before, after);
    let llama_score = score(&Model::load(llama).expect("the llama.cpp file loads"));
    log(format!(
        "pair score: {before} before, {after} after; llama.cpp file {llama_score}"
    ));
    assert!(before > 0.5 && (llama_score - before).abs() < 0.01);
}

/// Whole files mutated as the native fuzz mutates them (`crafted::Base::mutate`), per file.
const MUTATIONS: u64 = 150;

/// Seeded mutations of our files (MiniLM, multilingual-e5-small with its Unigram vocabulary)
/// and llama.cpp's (MiniLM, nomic-bert, ModernBERT, Qwen3, EmbeddingGemma) through
/// `Model::load` and `embed`: each embeds
/// a vector of the model's size or fails with a JS Error with a code; then this instance, which
/// a panic would have aborted, still scores a pair as before.
#[wasm_bindgen_test]
async fn mutated_files_load_and_embed_or_fail_with_a_code() {
    let ours = fetch(OURS).await;
    let llama = fetch(LLAMA).await;
    let before = score(&Model::load(ours.clone()).expect("the real file loads"));
    let start = js_sys::Date::now();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for (name, file, seed, mutations) in [
        ("ours q8_0", ours.clone(), 21, MUTATIONS),
        ("llama.cpp q8_0", llama, 22, MUTATIONS),
        ("nomic-bert q8_0", fetch(NOMIC).await, 23, MUTATIONS),
        ("modern-bert q8_0", fetch(MODERN).await, 24, MUTATIONS),
        ("qwen3 q8_0", fetch(QWEN3).await, 26, MUTATIONS / 2),
        (
            "gemma-embedding q8_0",
            fetch(GEMMA).await,
            27,
            MUTATIONS / 2,
        ),
        // A 250,002-piece Unigram vocabulary, 76 MB: each case copies and parses it (~0.5 s).
        ("multilingual-e5-small q4_0", fetch(E5).await, 25, 40),
    ] {
        let base = crafted::Base::new(file);
        for i in 0..mutations {
            let (kind, bytes) = base.mutate(&mut crafted::Rng(seed * 1_000_003 + i));
            let outcome = match Model::load(bytes) {
                Err(error) => format!("load {}", code_and_message(error).0),
                Ok(model) => match model.embed(vec!["Tom likes Mary.".into()]) {
                    Err(error) => format!("embed {}", code_and_message(error).0),
                    Ok(vector) => {
                        assert_eq!(vector.length() as usize, model.dim(), "{name} {i} ({kind})");
                        "embedded".into()
                    }
                },
            };
            // An error without a code (an engine error) is a bug: every refusal says why.
            assert!(
                !outcome.ends_with("engine"),
                "{name}, case {i} ({kind}): {outcome}"
            );
            *counts.entry(format!("{name}: {outcome}")).or_default() += 1;
            yield_now().await;
        }
    }
    let seconds = (js_sys::Date::now() - start) / 1000.0;
    log(format!("mutated files in {seconds:.1} s: {counts:?}"));
    let after = score(&Model::load(ours).expect("the real file loads after the mutations"));
    assert_eq!(before, after);
    let embedded: usize = counts
        .iter()
        .filter(|(k, _)| k.ends_with("embedded"))
        .map(|(_, v)| v)
        .sum();
    assert!(embedded > 0, "{counts:?}");
}
