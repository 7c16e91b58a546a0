//! Pairwise accuracy (`sr-bench eval`'s `pairwise`): recomputed here from the per-pair cosines
//! the CLI writes (`--pairs-csv`) by code of its own — not the report's function — and held
//! equal to the report's to 0.01. The quick split in the gate (MiniLM q8_0 and its
//! syntax-blind baseline); the full split of MiniLM q8_0, MPNet q8_0 and multilingual-e5-small
//! q4_0 in the full tier.
#![cfg(not(target_arch = "wasm32"))]

mod cli_common;
mod common;

use std::collections::HashMap;
use std::path::Path;

use cli_common::sr_bench;
use serde_json::Value;
use sr_bench::eval::SR_FILES;

/// A row's two rewrites: structure then relation, each (gold, cosine).
type Sides = [Option<(f64, f64)>; 2];

/// Per SR file: (rows kept, right answers with ties as ½), from the pairs CSV alone.
fn recount(csv_path: &Path, min_gap: f64) -> HashMap<String, (usize, f64)> {
    // (file, line) → [structure (gold, cosine), relation (gold, cosine)]
    let mut rows: HashMap<(String, u64), Sides> = HashMap::new();
    let mut reader = csv::Reader::from_path(csv_path).unwrap();
    for record in reader.records() {
        let r = record.unwrap();
        let side = match &r[1] {
            "structure" => 0,
            "relation" => 1,
            _ => continue,
        };
        let key = (r[0].to_string(), r[2].parse().unwrap());
        let value: (f64, f64) = (r[5].parse().unwrap(), r[6].parse().unwrap());
        rows.entry(key).or_default()[side] = Some(value);
    }
    let mut out: HashMap<String, (usize, f64)> = HashMap::new();
    for ((file, _), sides) in rows {
        let [Some((gs, cs)), Some((gr, cr))] = sides else {
            continue;
        };
        if (gs - gr).abs() + 1e-12 < min_gap {
            continue;
        }
        // Same sign of the two differences: the closer rewrite is the better one.
        let score = match ((cs - cr) * (gs - gr)).partial_cmp(&0.0).unwrap() {
            std::cmp::Ordering::Greater => 1.0,
            std::cmp::Ordering::Equal => 0.5,
            std::cmp::Ordering::Less => 0.0,
        };
        let entry = out.entry(file).or_default();
        entry.0 += 1;
        entry.1 += score;
    }
    out
}

/// Runs `eval` on `model` (extra args appended) and checks its `pairwise` against [`recount`];
/// returns the report.
fn checked(model: &Path, split: &str, extra: &[&str], min_gap: f64) -> Value {
    let name = model.file_name().unwrap().to_string_lossy().into_owned();
    let dir = std::env::temp_dir().join(format!("pairwise-{name}-{split}-{}", extra.join("")));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, csv) = (dir.join("report.json"), dir.join("pairs.csv"));
    let (data, model) = (common::data_dir(), model.to_str().unwrap());
    let outputs = [
        "--json",
        json.to_str().unwrap(),
        "--pairs-csv",
        csv.to_str().unwrap(),
    ];
    let run = [
        "eval",
        "--model",
        model,
        "--data",
        data.to_str().unwrap(),
        "--split",
        split,
    ];
    let (ok, stdout, stderr) = sr_bench(&[&run[..], &outputs, extra].concat());
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Pairwise accuracy"), "{stdout}");
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let pairwise = &report["pairwise"];
    assert_eq!(pairwise["min_gap"].as_f64(), Some(min_gap));
    assert_eq!(pairwise["chance"].as_f64(), Some(50.0));
    let counts = recount(&csv, min_gap);
    let (mut n_all, mut correct_all) = (0, 0.0);
    let mut line = format!("{} ({}, {split})", report["model"], report["dtype"]);
    for file in SR_FILES {
        let (n, correct) = counts.get(file).copied().unwrap_or_default();
        let cell = &pairwise["files"][file];
        if n == 0 {
            // A file not scored, or without a row kept: no accuracy.
            assert!(
                cell.is_null() || cell["accuracy"].is_null(),
                "{file}: {cell}"
            );
            continue;
        }
        assert_eq!(cell["n"].as_u64(), Some(n as u64), "{file}");
        let accuracy = 100.0 * correct / n as f64;
        let reported = cell["accuracy"].as_f64().unwrap();
        assert!(
            (reported - accuracy).abs() <= 0.01,
            "{file}: {reported} vs {accuracy}"
        );
        let [lo, hi] = [0, 1].map(|i| cell["ci95"][i].as_f64().unwrap());
        assert!(
            lo <= reported && reported <= hi,
            "{file}: {lo} {reported} {hi}"
        );
        line += &format!(" {file} {accuracy:.2} (n {n})");
        n_all += n;
        correct_all += correct;
    }
    let all = 100.0 * correct_all / n_all as f64;
    assert_eq!(pairwise["all"]["n"].as_u64(), Some(n_all as u64));
    assert!((pairwise["all"]["accuracy"].as_f64().unwrap() - all).abs() <= 0.01);
    println!("{line}; all {all:.2} (n {n_all})");
    report
}

#[test]
fn quick_split_pairwise_accuracy_equals_a_recount_from_the_pairs() {
    let model = common::model_path("all-MiniLM-L6-v2", "q8_0");
    let report = checked(&model, "quick", &[], 2.0);
    let model_all = report["pairwise"]["all"]["accuracy"].as_f64().unwrap();
    let baseline = checked(&model, "quick", &["--baseline", "static"], 2.0);
    let baseline_all = baseline["pairwise"]["all"]["accuracy"].as_f64().unwrap();
    // The model's report carries the baseline's on the same rows (the static run's figures).
    let beside = &report["pairwise"]["baseline"];
    assert_eq!(beside["all"]["accuracy"].as_f64(), Some(baseline_all));
    assert_eq!(beside["all"]["n"], report["pairwise"]["all"]["n"]);
    assert!(
        baseline["pairwise"].get("baseline").is_none(),
        "a baseline run has none beside it"
    );
    // A looser gap keeps more rows (one file, to keep the gate short).
    let only_sickr = ["--min-gap", "1", "--files", "sickr", "--no-stsb-test"];
    let loose = checked(&model, "quick", &only_sickr, 1.0);
    let sickr = |r: &Value| r["pairwise"]["files"]["sickr"]["n"].as_u64().unwrap();
    assert!(
        sickr(&loose) > sickr(&report),
        "gap 1 keeps more rows than gap 2"
    );
    println!("MiniLM q8_0 quick: model {model_all:.2}, syntax-blind baseline {baseline_all:.2}");
}

#[test]
fn a_gap_outside_the_scale_is_refused() {
    let model = common::model_path("all-MiniLM-L6-v2", "q8_0");
    for gap in ["0", "-1", "5.5", "NaN", "two"] {
        let gap_arg = format!("--min-gap={gap}");
        let model = model.to_str().unwrap();
        let (ok, _, stderr) = sr_bench(&["eval", "--model", model, "--split", "quick", &gap_arg]);
        assert!(!ok, "--min-gap {gap} was accepted");
        assert!(stderr.contains("min-gap"), "{gap}: {stderr}");
    }
}

#[test]
#[ignore = "full tier (./build.sh test full): three models on the full split (~10 min)"]
fn full_split_pairwise_accuracy_of_three_models_equals_a_recount() {
    for (model, dtype) in [
        ("all-MiniLM-L6-v2", "q8_0"),
        ("all-mpnet-base-v2", "q8_0"),
        ("multilingual-e5-small", "q4_0"),
    ] {
        checked(&common::model_path(model, dtype), "full", &[], 2.0);
    }
    checked(
        &common::model_path("all-MiniLM-L6-v2", "q8_0"),
        "full",
        &["--baseline", "static"],
        2.0,
    );
}
