//! Tests of scoring: cosines back to their pairs, cells, rank gaps, the real benchmark.

use super::super::testing::{never, small_plan, varied_file, FakeEncoder};
use super::super::{run, EvalPlan};
use super::{cosine, rank_gaps};
use crate::eval::data::testing::{read_data, real_sr_files};
use crate::eval::data::{parse_czech_sts, parse_stsb, SR_SCORE_MAX};
use crate::eval::metrics::average_ranks;
use crate::eval::report::{Cell, Dimension, PairResult, Report};
use crate::eval::runner::plan::{Group, PlannedPair};
use crate::eval::split::Split;

#[test]
fn cosines_come_back_to_their_own_pairs() {
    let report = run(
        small_plan(),
        &FakeEncoder::default(),
        4,
        &mut |_| {},
        &never(),
    )
    .unwrap();
    let pairs = report.pairs.unwrap();
    let labels: Vec<(&str, &str, usize)> = pairs
        .iter()
        .map(|p| (p.file.as_str(), p.dimension.as_str(), p.line))
        .collect();
    assert_eq!(
        labels,
        [
            ("stsb", "structure", 2),
            ("stsb", "relation", 2),
            ("sickr", "structure", 2),
            ("sickr", "structure", 3),
            ("sickr", "structure", 4),
            ("sickr", "relation", 2),
            ("sickr", "relation", 3),
            ("sickr", "relation", 4),
            ("stsb_test", "similarity", 1),
        ]
    );
    assert_eq!(pairs[4].sentence1, "c d e");
    assert_eq!(pairs[4].sentence2, "a b");
    assert_eq!(pairs[4].gold, 3.0);
    for pair in &pairs {
        let expected = cosine(
            &FakeEncoder::vector(&pair.sentence1),
            &FakeEncoder::vector(&pair.sentence2),
        );
        assert_eq!(pair.cosine, expected, "{pair:?}");
    }
    assert_eq!(report.results.structure.get("sickr").unwrap().n, 3);
    assert_eq!(report.stsb_test.unwrap().n, 1);
}

/// The fake encoder's report on 40 cqa rows and 30 twitter rows.
fn two_file_report() -> Report {
    let files = vec![varied_file("cqa", 40), varied_file("twitter", 30)];
    run(
        EvalPlan::new(files, None, Split::Full).unwrap(),
        &FakeEncoder::default(),
        16,
        &mut |_| {},
        &never(),
    )
    .unwrap()
}

#[test]
fn report_cells_use_the_metrics_on_their_own_pairs() {
    let report = two_file_report();
    let pairs = report.pairs.as_ref().unwrap();
    let of = |file: &str, dim: &str| -> (Vec<f64>, Vec<f64>) {
        pairs
            .iter()
            .filter(|p| p.file == file && p.dimension == dim)
            .map(|p| (p.gold, p.cosine))
            .unzip()
    };
    let (gold, cos) = of("twitter", "relation");
    let cell = report.results.relation.get("twitter").unwrap();
    assert_eq!(cell.n, 30);
    assert_eq!(
        cell.spearman,
        (crate::eval::metrics::spearman(&gold, &cos) * 10000.0).round() / 100.0
    );
    let (gold_s, cos_s) = of("cqa", "structure");
    let expected = Cell::compute(&gold_s, &cos_s, SR_SCORE_MAX);
    assert_eq!(report.results.structure.get("cqa"), Some(&expected));
    assert!(report.stsb_test.is_none());
}

#[test]
fn full_real_benchmark_plan_and_run() {
    let stsb = parse_stsb("stsb-en-test", &read_data("stsb/stsb-en-test.csv")).unwrap();
    let czech =
        parse_czech_sts("free-test.tsv", &read_data("czech-news-sts/free-test.tsv")).unwrap();
    let plan = EvalPlan::new(real_sr_files(), Some(stsb), Split::Full)
        .unwrap()
        .with_czech(czech);
    assert_eq!(plan.pair_count(), 2 * 9289 + 1379 + 1200);
    let unique = plan.sentences().len();
    let encoder = FakeEncoder::default();
    let report = run(plan, &encoder, 256, &mut |_| {}, &never()).unwrap();
    assert_eq!(
        encoder.calls.borrow().iter().map(Vec::len).sum::<usize>(),
        unique
    );
    let counts: Vec<usize> = report
        .results
        .relation
        .files
        .iter()
        .map(|(_, c)| c.n)
        .collect();
    assert_eq!(counts, [1152, 3854, 334, 1820, 2041, 88]);
    assert_eq!(report.stsb_test.as_ref().unwrap().n, 1379);
    assert_eq!(report.czech_news_sts.as_ref().unwrap().n, 1200);

    let quick = EvalPlan::new(real_sr_files(), None, Split::Quick).unwrap();
    assert_eq!(quick.pair_count(), 2 * 1011);
}

#[test]
fn rank_gap_is_cosine_rank_minus_gold_rank_within_each_group() {
    let pair = |group, gold| PlannedPair {
        group,
        line: 0,
        left: 0,
        right: 0,
        gold,
    };
    let cqa = Group::Sr(0, Dimension::Structure);
    let cqa_relation = Group::Sr(0, Dimension::Relation);
    // cqa/structure: gold 1, 2, 2, 5 -> ranks 1, 2.5, 2.5, 4;
    //                cosine .9, .1, .5, .5 -> ranks 4, 1, 2.5, 2.5.
    // Interleaved with another group whose ranks are its own (gold 0, 3; cosine .2, .1).
    let pairs = [
        pair(cqa, 1.0),
        pair(cqa_relation, 0.0),
        pair(cqa, 2.0),
        pair(cqa, 2.0),
        pair(cqa_relation, 3.0),
        pair(cqa, 5.0),
        pair(Group::StsbTest, 4.0),
    ];
    let cosines = [0.9, 0.2, 0.1, 0.5, 0.1, 0.5, 0.3];
    assert_eq!(
        rank_gaps(&pairs, &cosines),
        [3.0, 1.0, -1.5, 0.0, -1.0, -1.5, 0.0]
    );
}

#[test]
fn report_pairs_carry_their_rank_gap() {
    let report = two_file_report();
    let pairs = report.pairs.as_ref().unwrap();
    for (file, dimension) in [("cqa", "structure"), ("twitter", "relation")] {
        let group: Vec<&PairResult> = pairs
            .iter()
            .filter(|p| p.file == file && p.dimension == dimension)
            .collect();
        let gold: Vec<f64> = group.iter().map(|p| p.gold).collect();
        let cos: Vec<f64> = group.iter().map(|p| p.cosine).collect();
        let (gold_ranks, cos_ranks) = (average_ranks(&gold), average_ranks(&cos));
        for (i, pair) in group.iter().enumerate() {
            assert_eq!(pair.rank_gap, cos_ranks[i] - gold_ranks[i], "{pair:?}");
        }
        assert!(group.iter().any(|p| p.rank_gap != 0.0));
    }
    let json = serde_json::to_value(&pairs[0]).unwrap();
    assert!(json["rank_gap"].is_f64());
}
