//! Embeddings of the real model files (built from the pinned wheel) against sentence-transformers.

mod common;

use sr_bench::backend::{load_embedder, BackendKind};
use sr_bench::model::cosine;

const MODEL: &str = "all-MiniLM-L6-v2";

fn min_cosine_against_reference(dtype: &str) -> (f32, String) {
    common::min_cosine_against_reference(MODEL, dtype)
}

#[test]
fn f32_matches_sentence_transformers_on_all_82_texts() {
    // Summation order only: measured ≥ 0.9999995 (printed 1.000000), so 0.99999.
    let (min, text) = min_cosine_against_reference("f32");
    assert!(min >= 0.99999, "f32 min cosine {min} on {text:?}");
}

#[test]
fn q8_0_matches_sentence_transformers_on_all_82_texts() {
    // Measured 0.99946 (MiniLM) / 0.99946 (MPNet) with the 16-bit kernel; 0.9993 rejects the
    // 7-bit kernel that was turned down (0.99924, docs/cpu-kernels.md).
    let (min, text) = min_cosine_against_reference("q8_0");
    assert!(min >= 0.9993, "q8_0 min cosine {min} on {text:?}");
}

#[test]
fn q4_0_parity_is_reported() {
    // Measured 0.876 (on "!!!"); the bound is that less 0.01, for summation order across
    // machines: a q4_0 path that regressed by more fails.
    let (min, text) = min_cosine_against_reference("q4_0");
    assert!(min >= 0.866, "q4_0 min cosine {min} on {text:?}");
}

#[test]
fn long_text_is_truncated_at_max_seq_length() {
    let fixture = common::fixture(MODEL);
    let embedder = load_embedder(common::model_bytes(MODEL, "q8_0"), BackendKind::Cpu).unwrap();
    let longest = fixture
        .items
        .iter()
        .map(|i| embedder.token_count(&i.text))
        .max()
        .unwrap();
    assert_eq!(
        longest, fixture.max_seq_length,
        "the longest fixture text must hit the 256-token limit"
    );
}

#[test]
fn batching_does_not_change_embeddings() {
    let fixture = common::fixture(MODEL);
    let mut embedder = load_embedder(common::model_bytes(MODEL, "q8_0"), BackendKind::Cpu).unwrap();
    let texts: Vec<&str> = fixture
        .items
        .iter()
        .take(20)
        .map(|i| i.text.as_str())
        .collect();
    embedder.set_batch_size(1);
    let one_by_one = embedder.embed(&texts).unwrap();
    embedder.set_batch_size(7);
    let batched = embedder.embed(&texts).unwrap();
    for (a, b) in one_by_one.iter().zip(&batched) {
        let max_diff = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(
            max_diff < 1e-5,
            "padding leaked into the pooling: max |Δ| = {max_diff}"
        );
    }
}

#[test]
fn static_baseline_is_order_invariant() {
    let embedder = load_embedder(common::model_bytes(MODEL, "q8_0"), BackendKind::Cpu).unwrap();
    let v = embedder
        .embed_static(&[
            "Tom likes Taylor Swift.",
            "Taylor Swift likes Tom.",
            "Rain causes floods.",
        ])
        .unwrap();
    assert!(
        cosine(&v[0], &v[1]) > 0.9999,
        "same tokens in another order must give the same vector"
    );
    assert!(
        cosine(&v[0], &v[2]) < 0.9,
        "different words must give a different vector"
    );
    let empty = embedder.embed_static(&[""]).unwrap();
    assert!(
        empty[0].iter().all(|&x| x == 0.0),
        "no tokens → zero vector, not NaN"
    );
}
