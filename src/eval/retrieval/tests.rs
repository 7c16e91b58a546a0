use super::*;

/// Similarity from a table: `table[a][b]`.
fn by_table(table: &[[f64; 4]; 4]) -> impl Fn(usize, usize) -> f64 + '_ {
    move |a, b| table[a][b]
}

#[test]
fn measures_equal_hand_computed_values() {
    // Sentences 0–3; 0–1 relevant (gold 4.2), 2–3 not (gold 1). Queries: 0 and 1.
    let pairs = [(0, 1, 4.2), (2, 3, 1.0)];
    // Query 0 ranks 2, 1, 3 (its partner second); query 1 ranks 0 first.
    let table = [
        [1.0, 0.5, 0.9, 0.1],
        [0.5, 1.0, 0.2, 0.3],
        [0.9, 0.2, 1.0, 0.0],
        [0.1, 0.3, 0.0, 1.0],
    ];
    let s = evaluate(&pairs, by_table(&table)).unwrap();
    assert_eq!((s.queries, s.documents), (2, 3));
    let second = 1.0 / 3f64.log2();
    assert!((s.ndcg_at_10 - (second + 1.0) / 2.0).abs() < 1e-12, "{s:?}");
    assert!((s.mrr_at_10 - 0.75).abs() < 1e-12, "{s:?}");
    assert_eq!(
        s.trec.qrels, "q0 0 d1 1\nq1 0 d0 1\n",
        "the judgements in TREC format"
    );
    let first = s.trec.run.lines().next().unwrap();
    assert!(first.starts_with("q0 Q0 d2 1 "), "{first}");
    assert!(
        !s.trec.run.contains("q0 Q0 d0 "),
        "a query never retrieves itself"
    );
}

#[test]
fn relevance_starts_at_four_and_identical_ids_are_no_query() {
    let table = [[0.5; 4]; 4];
    assert!(evaluate(&[(0, 1, 3.99), (2, 3, 0.0)], by_table(&table)).is_none());
    assert!(evaluate(&[(2, 2, 5.0)], by_table(&table)).is_none());
    let s = evaluate(&[(0, 1, 4.0)], by_table(&table)).unwrap();
    assert_eq!(s.queries, 2);
}

#[test]
fn ties_are_broken_as_trec_eval_breaks_them() {
    // Twelve documents all at the same score: trec_eval orders ties by id, the larger string
    // first ("d9" > "d11" > "d10" > "d1"), so query 0 sees d9, d8, …, d2, d11 first.
    let n = 13;
    let pairs: Vec<(usize, usize, f64)> = (1..n)
        .map(|d| (0, d, if d == 11 { 5.0 } else { 0.0 }))
        .collect();
    let s = evaluate(&pairs, |_, _| 0.25).unwrap();
    let q0: Vec<&str> = s
        .trec
        .run
        .lines()
        .filter(|l| l.starts_with("q0 "))
        .map(|l| l.split(' ').nth(2).unwrap())
        .collect();
    assert_eq!(
        q0,
        ["d9", "d8", "d7", "d6", "d5", "d4", "d3", "d2", "d12", "d11"]
    );
    // Query 0's partner at rank 10.
    assert!((s.trec.run.lines().count()) == 20);
    let expected_q0 = 1.0 / 11f64.log2();
    // Query 11 ranks 9, 8, …, 2, 12, 10 (d11 itself left out), missing its partner d0.
    assert!((s.ndcg_at_10 - expected_q0 / 2.0).abs() < 1e-12, "{s:?}");
    assert!((s.mrr_at_10 - 0.1 / 2.0).abs() < 1e-12, "{s:?}");
}
