//! The Results view's data: `sr-bench results` joins every recorded row of docs/results (and the
//! paper's Table 4) and refuses a damaged row naming its file; the recorded quick-split row of
//! MiniLM q8_0 is measured again here and found equal (every Table 4 cell, STS-B test,
//! retrieval, pairwise accuracy), on the same model file (its sha256).
#![cfg(not(target_arch = "wasm32"))]

mod cli_common;
mod common;

use std::path::Path;

use serde_json::Value;

const QUICK_ROW: &str = "all-MiniLM-L6-v2.q8_0.quick";

/// A change that damages a row.
type Edit = Box<dyn Fn(&mut Value)>;

fn recorded() -> std::path::PathBuf {
    common::root().join("docs/results")
}

#[test]
fn results_joins_every_recorded_row_and_the_paper() {
    let dir = cli_common::temp_dir("results", "join");
    let out = dir.join("results.json");
    let (ok, _, stderr) = cli_common::sr_bench(&[
        "results",
        recorded().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let joined: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(recorded())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let ids: Vec<&str> = joined["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, files);
    assert!(ids.contains(&QUICK_ROW));
    for model in ["all-MiniLM-L6-v2", "all-mpnet-base-v2"] {
        assert!(
            joined["paper"][model]["relation"]["avg"].is_number(),
            "{model}"
        );
    }

    // Damaged rows: each refused, naming the file and what is wrong.
    let good: Value = serde_json::from_slice(
        &std::fs::read(recorded().join(format!("{QUICK_ROW}.json"))).unwrap(),
    )
    .unwrap();
    let cases: [(&str, Edit, &str); 4] = [
        ("not-json", Box::new(|_| {}), "not a recorded row"),
        (
            "sha",
            Box::new(|r| r["model_sha256"] = "abc".into()),
            "model_sha256",
        ),
        (
            "date",
            Box::new(|r| r["date"] = "yesterday".into()),
            "YYYY-MM-DD",
        ),
        (
            "report",
            Box::new(|r| r["report"]["results"] = Value::Null),
            "its report",
        ),
    ];
    for (name, edit, says) in cases {
        let bad = dir.join(name);
        std::fs::create_dir_all(&bad).unwrap();
        let file = bad.join(format!("{name}.json"));
        let mut row = good.clone();
        row["id"] = name.into();
        edit(&mut row);
        let text = if name == "not-json" {
            "{\"id\": ".to_string()
        } else {
            row.to_string()
        };
        std::fs::write(&file, text).unwrap();
        let (ok, _, stderr) = cli_common::sr_bench(&["results", bad.to_str().unwrap()]);
        assert!(
            !ok && stderr.contains(file.to_str().unwrap()) && stderr.contains(says),
            "{name}: {stderr}"
        );
    }
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (ok, _, stderr) = cli_common::sr_bench(&["results", empty.to_str().unwrap()]);
    assert!(!ok && stderr.contains("no recorded rows"), "{stderr}");
}

/// Every figure a row shows, with its path: Table 4 cells and averages, STS-B test, retrieval,
/// pairwise accuracy.
fn figures(report: &Value) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    for dim in ["structure", "relation"] {
        for (file, cell) in report["results"][dim].as_object().unwrap() {
            let v = if file == "avg_spearman" {
                cell.as_f64()
            } else {
                cell["spearman"].as_f64()
            };
            out.push((format!("{dim}.{file}"), v));
        }
    }
    out.push(("stsb_test".into(), report["stsb_test"]["spearman"].as_f64()));
    for m in ["ndcg_at_10", "mrr_at_10"] {
        // Fractions: ×100 to share the tolerance of the Spearman cells.
        let v = report["retrieval"]["stsb_test"][m]
            .as_f64()
            .map(|v| 100.0 * v);
        out.push((format!("retrieval.{m}"), v));
    }
    out.push((
        "pairwise".into(),
        report["pairwise"]["all"]["accuracy"].as_f64(),
    ));
    out
}

#[test]
fn the_recorded_quick_row_is_measured_again() {
    let row: Value = serde_json::from_slice(
        &std::fs::read(recorded().join(format!("{QUICK_ROW}.json"))).unwrap(),
    )
    .unwrap();
    let model = common::model_path("all-MiniLM-L6-v2", "q8_0");
    let sha = sr_bench::convert::sha256_hex(&std::fs::read(&model).unwrap());
    assert_eq!(
        row["model_sha256"],
        sha,
        "the recorded row is of another file than {}: record it again (bench/results.sh)",
        model.display()
    );
    let dir = cli_common::temp_dir("results", "quick");
    let json = dir.join("report.json");
    let (ok, _, stderr) = cli_common::eval_to_json(&model, &["--split", "quick"], &json);
    assert!(ok, "{stderr}");
    let now: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let (recorded, measured) = (figures(&row["report"]), figures(&now));
    assert_eq!(recorded.len(), measured.len());
    assert_eq!(recorded.len(), 18, "{recorded:?}");
    for ((path, a), (_, b)) in recorded.iter().zip(&measured) {
        let (a, b) = (a.unwrap_or(f64::NAN), b.unwrap_or(f64::NAN));
        assert!(
            (a - b).abs() <= 0.01,
            "{path}: recorded {a}, measured now {b}"
        );
    }
    eprintln!(
        "{} figures of {QUICK_ROW} measured again, all within 0.01 ({})",
        recorded.len(),
        Path::new(&model).display()
    );
}
