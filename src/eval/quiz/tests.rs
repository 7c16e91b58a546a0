use super::*;
use crate::eval::{parse_czech_sts, parse_sr};

/// An SR file of `rows` rows; row i has gold scores (i % 6, 5 - i % 6), so gaps 5, 3, 1, 1, 3, 5.
fn sr(name: &str, rows: usize) -> SrFile {
    let mut csv = String::from("sentence1,relation,relationscore,structure,structurescore\n");
    for i in 0..rows {
        csv += &format!(
            "Original {i}.,Relation {i}.,{},Structure {i}.,{}\n",
            i % 6,
            5 - i % 6
        );
    }
    parse_sr(name, csv.as_bytes()).unwrap()
}

/// A Czech News STS file of `rows` pairs with mean scores 0, 1, …, 6, 0, 1, ….
fn czech(rows: usize) -> CzechFile {
    let mut tsv = String::new();
    for i in 0..rows {
        let s = i % 7;
        let notes = vec![s.to_string(); 9].join(",");
        tsv += &format!("Věta {i} A.\tVěta {i} B.\t{s}\t{notes}\t{s}\n");
    }
    parse_czech_sts("free-test.tsv", tsv.as_bytes()).unwrap()
}

#[test]
fn a_seed_draws_the_same_questions_and_another_seed_others() {
    let files = [sr("stsb", 60), sr("sickr", 60)];
    let a = draw_sr(&files, 7, 12, 2.0).unwrap();
    assert_eq!(a, draw_sr(&files, 7, 12, 2.0).unwrap());
    assert_ne!(a.questions, draw_sr(&files, 8, 12, 2.0).unwrap().questions);
    assert_eq!(a.eligible, 80, "gaps 5 and 3 in four of six rows");
    assert_eq!(a.questions.len(), 12);
}

#[test]
fn every_question_is_two_rewrites_of_one_row_far_enough_apart() {
    let quiz = draw_sr(&[sr("stsb", 300)], 1, 100, 2.0).unwrap();
    let mut first_is_relation = 0;
    let mut lines = std::collections::BTreeSet::new();
    for q in &quiz.questions {
        let [x, y] = &q.options;
        assert_eq!(x.a, y.a, "the original in both options");
        assert_eq!(x.line, y.line);
        assert!(lines.insert(x.line), "a row asked twice");
        assert!((x.gold - y.gold).abs() >= 2.0);
        assert_eq!(q.options[q.answer].gold, x.gold.max(y.gold));
        assert_ne!(x.kind, y.kind);
        first_is_relation += usize::from(x.kind == "relation");
    }
    assert!(
        (25..=75).contains(&first_is_relation),
        "the order is drawn: {first_is_relation} of 100"
    );
}

#[test]
fn long_texts_and_close_scores_are_left_out() {
    let long = "x".repeat(MAX_TEXT_CHARS + 1);
    let csv = format!(
        "sentence1,relation,relationscore,structure,structurescore\nShort.,Rel.,1,Str.,5\n{long},Rel.,1,Str.,5\nShort.,Rel.,2,Str.,3\n"
    );
    let file = parse_sr("stsb", csv.as_bytes()).unwrap();
    let quiz = draw_sr(std::slice::from_ref(&file), 3, 1, 2.0).unwrap();
    assert_eq!(quiz.eligible, 1);
    assert_eq!(quiz.questions[0].options[0].line, 2);
    let err = draw_sr(&[file], 3, 2, 2.0).unwrap_err().to_string();
    assert!(err.contains("only 1 SR rows"), "{err}");
}

#[test]
fn a_question_count_or_gap_out_of_range_is_refused() {
    let files = [sr("stsb", 60)];
    for (n, gap) in [
        (0, 2.0),
        (MAX_QUESTIONS + 1, 2.0),
        (12, 0.0),
        (12, 5.5),
        (12, f64::NAN),
    ] {
        assert!(draw_sr(&files, 1, n, gap).is_err(), "n {n}, gap {gap}");
    }
    assert!(
        draw_czech(&czech(70), 1, 12, 6.5).is_err(),
        "the Czech scale is 0–6"
    );
}

#[test]
fn czech_questions_use_each_pair_once_and_far_enough_apart() {
    let quiz = draw_czech(&czech(140), 5, 30, 2.0).unwrap();
    assert_eq!(quiz.set, QuizSet::Czech);
    let mut lines = std::collections::BTreeSet::new();
    for q in &quiz.questions {
        assert_eq!(q.file, CZECH_FILE);
        let [x, y] = &q.options;
        assert!((x.gold - y.gold).abs() >= 2.0);
        assert!(
            lines.insert(x.line) && lines.insert(y.line),
            "a pair used twice"
        );
        assert_eq!(q.options[q.answer].gold, x.gold.max(y.gold));
    }
    assert_eq!(quiz, draw_czech(&czech(140), 5, 30, 2.0).unwrap());
    let err = draw_czech(&czech(14), 5, 30, 2.0).unwrap_err().to_string();
    assert!(err.contains("can be drawn"), "{err}");
}

#[test]
fn the_higher_cosine_is_the_choice_ties_count_half() {
    let quiz = draw_sr(&[sr("stsb", 60)], 2, 3, 2.0).unwrap();
    let right = |q: &QuizQuestion| {
        if q.answer == 0 {
            [0.9, 0.1]
        } else {
            [0.1, 0.9]
        }
    };
    let wrong = |q: &QuizQuestion| {
        if q.answer == 0 {
            [0.1, 0.9]
        } else {
            [0.9, 0.1]
        }
    };
    let q = &quiz.questions;
    let cosines: Vec<f64> = [right(&q[0]), wrong(&q[1]), [0.5, 0.5]].concat();
    let score = quiz.score(&cosines).unwrap();
    assert_eq!(
        score.choices,
        vec![Some(q[0].answer), Some(1 - q[1].answer), None]
    );
    assert_eq!(score.accuracy.correct, 1.5);
    assert_eq!(score.accuracy.accuracy, Some(50.0));
    assert_eq!(quiz.pairs().len(), 6);
    assert!(quiz.score(&cosines[..4]).is_err(), "two cosines a question");
    let mut nan = cosines.clone();
    nan[2] = f64::NAN;
    assert!(quiz.score(&nan).unwrap_err().to_string().contains("NaN"));
}
