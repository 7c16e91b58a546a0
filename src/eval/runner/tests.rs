//! Tests of the runner: planning, stepping, claiming, cancelling, checking the encoder.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Result};

use super::testing::{never, small_plan, varied_file, FakeEncoder};
use super::*;
use crate::eval::split::{quick_row_count, Split};

#[test]
fn plan_collects_unique_sentences_across_all_pairs() {
    let plan = small_plan();
    // Files in Table 4 order whatever the input order.
    assert_eq!(plan.sr_file_names(), ["stsb", "sickr"]);
    assert_eq!(
        plan.sentences(),
        ["x y", "x, y", "y x", "a b", "b, a", "a  b", "c d e", "b a", "ab", "e d c"]
    );
    assert_eq!(plan.pair_count(), 2 * 4 + 1);
}

#[test]
fn each_unique_sentence_is_embedded_once_in_length_order() {
    let encoder = FakeEncoder::default();
    let plan = small_plan();
    let unique = plan.sentences().len();
    let mut seen = Vec::new();
    let report = run(plan, &encoder, 3, &mut |p| seen.push(p), &never()).unwrap();
    let calls = encoder.calls.borrow();
    let embedded: Vec<&String> = calls.iter().flatten().collect();
    assert_eq!(embedded.len(), unique);
    let mut distinct = embedded.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), unique);
    // Sorted by length key; equal keys keep first-use order ("x y" before "y x" before "a b").
    let order: Vec<&str> = embedded.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        order,
        ["ab", "x y", "y x", "a b", "b a", "x, y", "b, a", "a  b", "c d e", "e d c"]
    );
    assert_eq!(calls.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 3, 1]);
    assert_eq!(
        seen.iter().map(|p| (p.done, p.total)).collect::<Vec<_>>(),
        [(3, 10), (6, 10), (9, 10), (10, 10)]
    );
    assert_eq!(report.pairs.as_ref().unwrap().len(), 9);
}

#[test]
fn cancel_stops_before_the_next_step() {
    let encoder = FakeEncoder::default();
    let cancel = AtomicBool::new(false);
    let mut steps = 0;
    let err = run(
        small_plan(),
        &encoder,
        2,
        &mut |_| {
            steps += 1;
            cancel.store(true, Ordering::SeqCst);
        },
        &cancel,
    )
    .unwrap_err();
    assert!(err.downcast_ref::<Cancelled>().is_some());
    assert_eq!(err.to_string(), "cancelled");
    assert_eq!(steps, 1);
    assert_eq!(encoder.calls.borrow().len(), 1);
}

#[test]
fn step_api_is_resumable_and_finish_waits_for_the_end() {
    let encoder = FakeEncoder::default();
    let mut run = EvalRun::new(small_plan(), &encoder);
    assert_eq!(run.progress(), Progress { done: 0, total: 10 });
    assert_eq!(
        run.step(&encoder, 7).unwrap(),
        Progress { done: 7, total: 10 }
    );
    assert!(!run.is_done());
    let err = run.clone().finish().unwrap_err().to_string();
    assert_eq!(err, "finish: only 7 of 10 sentences are embedded");
    assert!(run.step(&encoder, 0).is_err());
    assert_eq!(
        run.step(&encoder, 100).unwrap(),
        Progress {
            done: 10,
            total: 10
        }
    );
    assert!(run.is_done());
    // Stepping a finished run changes nothing and calls nobody.
    assert_eq!(
        run.step(&encoder, 5).unwrap(),
        Progress {
            done: 10,
            total: 10
        }
    );
    assert_eq!(encoder.calls.borrow().len(), 2);
    assert!(run.finish().is_ok());
}

#[test]
fn claim_accept_in_any_order_equals_step() {
    let encoder = FakeEncoder::default();
    let mut stepped = EvalRun::new(small_plan(), &encoder);
    while !stepped.is_done() {
        stepped.step(&encoder, 3).unwrap();
    }
    let want = serde_json::to_value(stepped.finish().unwrap()).unwrap();

    let mut run = EvalRun::new(small_plan(), &encoder);
    let mut chunks = Vec::new();
    loop {
        let (start, texts) = run.claim(4).unwrap();
        if texts.is_empty() {
            break;
        }
        let vectors: Vec<Vec<f32>> = texts.iter().map(|t| FakeEncoder::vector(t)).collect();
        chunks.push((start, vectors));
    }
    assert_eq!(run.claimed(), 10);
    // Longest first: the first chunk is the end of the length order.
    assert_eq!(chunks[0].0, 6);
    assert!(
        run.accept(0, vec![vec![1.0; 32]; 20]).is_err(),
        "outside the run"
    );
    chunks.reverse();
    let (start, vectors) = chunks.pop().unwrap();
    assert_eq!(run.accept(start, vectors.clone()).unwrap().done, 4);
    assert!(run.accept(start, vectors).is_err(), "accepted twice");
    for (start, vectors) in chunks {
        run.accept(start, vectors).unwrap();
    }
    assert!(run.is_done());
    let got = serde_json::to_value(run.finish().unwrap()).unwrap();
    assert_eq!(got, want);

    // A run driven by step() cannot be claimed from, and claims are checked.
    let mut run = EvalRun::new(small_plan(), &encoder);
    run.step(&encoder, 2).unwrap();
    assert!(run.claim(2).is_err());
    let mut run = EvalRun::new(small_plan(), &encoder);
    assert!(run.claim(0).is_err());
    assert!(run.accept(0, vec![vec![1.0; 32]]).is_err(), "not claimed");
}

#[test]
fn chunks_within_a_token_budget_shrink_for_long_texts_and_grow_for_short() {
    let encoder = FakeEncoder::default();
    let mut run = EvalRun::new(small_plan(), &encoder);
    let lengths = run.sorted_lengths();
    let budget = 2 * lengths.last().unwrap() + 1;
    let mut sizes = Vec::new();
    let mut chunks = Vec::new();
    loop {
        let (start, texts) = run.claim_within(8, budget).unwrap();
        if texts.is_empty() {
            break;
        }
        // Padded tokens: the chunk's longest (its first: longest first) times its size.
        let longest = lengths[start + texts.len() - 1];
        assert!(
            texts.len() * longest <= budget || texts.len() == 1,
            "{texts:?}"
        );
        sizes.push(texts.len());
        let vectors: Vec<Vec<f32>> = texts.iter().map(|t| FakeEncoder::vector(t)).collect();
        chunks.push((start, vectors));
    }
    assert_eq!(sizes.iter().sum::<usize>(), lengths.len());
    assert_eq!(sizes[0], 2, "the longest texts two at a time: {sizes:?}");
    assert!(
        sizes.iter().max() > sizes.first(),
        "shorter texts, bigger chunks: {sizes:?}"
    );
    for (start, vectors) in chunks {
        run.accept(start, vectors).unwrap();
    }
    assert!(run.is_done());
    // A budget below one text still hands out one; a zero budget is refused.
    let mut run = EvalRun::new(small_plan(), &encoder);
    assert_eq!(run.claim_within(8, 1).unwrap().1.len(), 1);
    assert!(run.claim_within(8, 0).is_err());
}

/// An encoder that returns whatever it is told to.
struct BrokenEncoder(fn(&[&str]) -> Vec<Vec<f32>>);

impl SentenceEncoder for BrokenEncoder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok((self.0)(texts))
    }
    fn length_key(&self, _: &str) -> usize {
        0
    }
}

fn step_error(encoder: BrokenEncoder) -> String {
    let mut run = EvalRun::new(small_plan(), &encoder);
    format!("{:#}", run.step(&encoder, 100).unwrap_err())
}

#[test]
fn encoder_output_is_checked() {
    let err = step_error(BrokenEncoder(|texts| vec![vec![1.0]; texts.len() - 1]));
    assert_eq!(err, "the encoder returned 9 embeddings for 10 sentences");
    let err = step_error(BrokenEncoder(|texts| {
        (0..texts.len()).map(|i| vec![1.0; 2 + i / 9]).collect()
    }));
    assert_eq!(err, "the embedding of \"e d c\" has 3 values, expected 2");
    let err = step_error(BrokenEncoder(|texts| {
        vec![vec![f32::NAN, 1.0]; texts.len()]
    }));
    assert_eq!(
        err,
        "the embedding of \"x y\" holds a NaN or infinite value"
    );
    let err = step_error(BrokenEncoder(|texts| vec![Vec::new(); texts.len()]));
    assert_eq!(err, "the embedding of \"x y\" is empty");
}

#[test]
fn embedding_size_must_stay_the_same_across_steps() {
    struct Growing(RefCell<usize>);
    impl SentenceEncoder for Growing {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            *self.0.borrow_mut() += 1;
            Ok(vec![vec![1.0; *self.0.borrow()]; texts.len()])
        }
        fn length_key(&self, _: &str) -> usize {
            0
        }
    }
    let encoder = Growing(RefCell::new(0));
    let mut run = EvalRun::new(small_plan(), &encoder);
    run.step(&encoder, 5).unwrap();
    let err = run.step(&encoder, 5).unwrap_err().to_string();
    assert!(err.ends_with("has 2 values, expected 1"), "{err}");
}

#[test]
fn encoder_errors_and_zero_vectors_are_reported() {
    struct Failing;
    impl SentenceEncoder for Failing {
        fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>> {
            bail!("out of memory")
        }
        fn length_key(&self, _: &str) -> usize {
            0
        }
    }
    let err = run(small_plan(), &Failing, 4, &mut |_| {}, &never()).unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        "embedding sentences 0..4 of 10: out of memory"
    );
    let zeros = BrokenEncoder(|texts| vec![vec![0.0, 0.0]; texts.len()]);
    let err = run(small_plan(), &zeros, 4, &mut |_| {}, &never()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cosine of \"x y\" and \"x, y\" is undefined (a zero embedding)"
    );
}

#[test]
fn plan_rejects_unknown_repeated_and_empty_inputs() {
    let err = |files, stsb| {
        EvalPlan::new(files, stsb, Split::Full)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(vec![varied_file("sts", 3)], None),
        "unknown SR file 'sts': expected one of stsb, sickr, askubuntu, cqa, twitter, biosses"
    );
    assert_eq!(
        err(vec![varied_file("cqa", 3), varied_file("cqa", 3)], None),
        "SR file 'cqa' given twice"
    );
    assert_eq!(
        err(Vec::new(), None),
        "nothing to evaluate: no SR rows and no STS-B test pairs"
    );
}

#[test]
fn quick_plan_takes_the_quick_rows_of_both_dimensions() {
    let files = vec![varied_file("sickr", 6000), varied_file("biosses", 30)];
    let plan = EvalPlan::new(files, None, Split::Quick).unwrap();
    assert_eq!(plan.split(), Split::Quick);
    // sickr: round(1000 * 6000 / 6030) = 995; biosses: round(4.98) = 5, raised to 20.
    assert_eq!(quick_row_count(6000, 6030), 995);
    assert_eq!(quick_row_count(30, 6030), 20);
    assert_eq!(plan.pair_count(), 2 * (995 + 20));
}
