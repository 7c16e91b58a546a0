//! `sr-bench quiz` on the real data and the real q8_0 MiniLM: the same questions for a seed,
//! each one an SR row as the file has it (read here with the csv crate, not the parser), the
//! model's answers from its own `similarity` cosines, and clear refusals.

mod common;

use std::process::{Command, Output};

use serde_json::Value;

fn sr_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sr-bench"))
        .args(args)
        .output()
        .expect("runs")
}

fn quiz(args: &[&str]) -> Value {
    let data = common::data_dir();
    let mut all = vec!["quiz", "--data", data.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = sr_bench(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Record `line` (1-based, the header is line 1) of an SR file, read with the csv crate.
fn sr_record(file: &str, line: usize) -> csv::StringRecord {
    let path = common::data_dir().join(format!("sr/{file}.csv"));
    let mut reader = csv::Reader::from_path(&path).unwrap();
    reader
        .records()
        .map(Result::unwrap)
        .find(|r| r.position().unwrap().line() as usize == line)
        .unwrap_or_else(|| panic!("{file}.csv has no record at line {line}"))
}

#[test]
fn a_seed_draws_sr_rows_as_the_files_have_them() {
    let a = quiz(&["--seed", "31"]);
    assert_eq!(a, quiz(&["--seed", "31"]), "the same seed, the same quiz");
    assert_ne!(a["questions"], quiz(&["--seed", "32"])["questions"]);
    let questions = a["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 12);
    for q in questions {
        let record = sr_record(
            q["file"].as_str().unwrap(),
            q["options"][0]["line"].as_u64().unwrap() as usize,
        );
        let (relation, structure) = (
            record[2].parse::<f64>().unwrap(),
            record[4].parse::<f64>().unwrap(),
        );
        assert!((relation - structure).abs() >= 2.0, "{record:?}");
        for o in q["options"].as_array().unwrap() {
            assert_eq!(o["a"], record[0]);
            let (text, gold) = match o["kind"].as_str().unwrap() {
                "relation" => (&record[1], relation),
                "structure" => (&record[3], structure),
                other => panic!("kind {other}"),
            };
            assert_eq!(
                (o["b"].as_str().unwrap(), o["gold"].as_f64().unwrap()),
                (text, gold)
            );
        }
        let answer = q["answer"].as_u64().unwrap() as usize;
        assert_eq!(
            q["options"][answer]["gold"].as_f64().unwrap(),
            relation.max(structure)
        );
    }
}

#[test]
fn the_models_answers_are_its_own_cosines() {
    let model = common::model_path("all-MiniLM-L6-v2", "q8_0");
    let model = model.to_str().unwrap();
    let answered = quiz(&["--seed", "5", "--questions", "4", "--model", model]);
    let mut correct = 0.0;
    for (i, q) in answered["questions"].as_array().unwrap().iter().enumerate() {
        let cosines: Vec<f64> = (0..2)
            .map(|k| {
                let o = &q["options"][k];
                let out = sr_bench(&[
                    "similarity",
                    "--model",
                    model,
                    o["a"].as_str().unwrap(),
                    o["b"].as_str().unwrap(),
                ]);
                String::from_utf8(out.stdout)
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap()
            })
            .collect();
        let reported = &answered["model"]["cosines"][i];
        for k in 0..2 {
            assert!(
                (reported[k].as_f64().unwrap() - cosines[k]).abs() <= 1e-6,
                "question {i}: {reported} vs {cosines:?}"
            );
        }
        let choice = answered["model"]["choices"][i].as_u64();
        let expect = (cosines[0] != cosines[1]).then(|| u64::from(cosines[1] > cosines[0]));
        assert_eq!(choice, expect);
        correct += match choice {
            None => 0.5,
            Some(c) if c == q["answer"].as_u64().unwrap() => 1.0,
            Some(_) => 0.0,
        };
    }
    assert_eq!(
        answered["model"]["accuracy"]["correct"].as_f64().unwrap(),
        correct
    );
    assert_eq!(answered["baseline"]["choices"].as_array().unwrap().len(), 4);
}

#[test]
fn czech_questions_and_refusals() {
    let czech = quiz(&["--seed", "3", "--set", "czech", "--questions", "5"]);
    assert_eq!(czech["set"], "czech");
    for q in czech["questions"].as_array().unwrap() {
        assert_eq!(q["file"], "czech-news-sts");
        let gold: Vec<f64> = (0..2)
            .map(|k| q["options"][k]["gold"].as_f64().unwrap())
            .collect();
        assert!((gold[0] - gold[1]).abs() >= 2.0);
    }
    for (args, says) in [
        (
            &["--seed", "1", "--questions", "0"][..],
            "1 to 100 questions",
        ),
        (&["--seed", "1", "--min-gap", "9"][..], "--min-gap 9"),
        (
            &["--seed", "1", "--set", "french"][..],
            "unknown quiz set 'french'",
        ),
        (
            &["--seed", "1", "--data", "/nonexistent"][..],
            "/nonexistent",
        ),
    ] {
        let data = common::data_dir();
        let mut all = vec!["quiz"];
        if !args.contains(&"--data") {
            all.extend(["--data", data.to_str().unwrap()]);
        }
        all.extend_from_slice(args);
        let out = sr_bench(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(says),
            "{args:?}: {stderr}"
        );
    }
}
