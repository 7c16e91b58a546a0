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

/// `--integer-matmul`: the page's 16-bit integer kernel natively (x86-64 with AVX2). Its vectors
/// keep the q8_0 parity bound against sentence-transformers, stay within the page-vs-CLI bound
/// (10⁻⁴ per component) of the default f32 products, and differ from them (the kernel ran).
/// Batching: candle's ~10⁻⁷ of summation order can flip an activation's 16-bit rounding (one
/// step is 2⁻¹⁵ of its block's largest value), so one by one and in batches of 7 agree to 10⁻⁴
/// (padding reaching the pooling would move a vector by ~10⁻²).
#[cfg(target_arch = "x86_64")]
#[test]
fn the_integer_kernel_keeps_parity_and_batching() {
    use sr_bench::backend::load_embedder_with_options;
    use sr_bench::model::LoadOptions;
    if !std::arch::is_x86_feature_detected!("avx2") {
        eprintln!("no AVX2: --integer-matmul runs candle's products here; nothing to check");
        return;
    }
    let fixture = common::fixture(MODEL);
    let texts: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    let options = LoadOptions {
        integer_matmul: true,
        ..LoadOptions::default()
    };
    let bytes = common::model_bytes(MODEL, "q8_0");
    let mut integer = load_embedder_with_options(bytes.clone(), BackendKind::Cpu, options).unwrap();
    let default = load_embedder(bytes, BackendKind::Cpu).unwrap();
    let (ours, theirs) = (
        integer.embed(&texts).unwrap(),
        default.embed(&texts).unwrap(),
    );
    let max_abs = |a: &[Vec<f32>], b: &[Vec<f32>]| {
        a.iter()
            .zip(b)
            .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
            .fold(0f32, f32::max)
    };
    let moved = max_abs(&ours, &theirs);
    println!("--integer-matmul against the f32 products: max |Δ| {moved:e} per component");
    assert!(moved > 0.0 && moved < 1e-4, "max |Δ| {moved}");
    let worst = fixture
        .items
        .iter()
        .zip(&ours)
        .map(|(item, v)| cosine(v, &item.embedding))
        .fold(f32::INFINITY, f32::min);
    println!("--integer-matmul: min cosine vs sentence-transformers {worst:.7}");
    assert!(worst >= 0.9993, "min cosine {worst}");
    integer.set_batch_size(1);
    let one_by_one = integer.embed(&texts[..20]).unwrap();
    integer.set_batch_size(7);
    let batched = integer.embed(&texts[..20]).unwrap();
    let batching = max_abs(&one_by_one, &batched);
    assert!(
        batching < 1e-4,
        "padding leaked into the pooling: max |Δ| {batching}"
    );
}
