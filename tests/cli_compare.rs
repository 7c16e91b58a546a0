//! `sr-bench compare` over real `eval --split quick --json` reports (MiniLM q8_0, its static
//! baseline, and an f32 run of one SR file without STS-B test): every cell of the table and of the
//! CSV equals the report it read, `-` where the report has none.

mod cli_common;
mod common;

use cli_common::sr_bench;

use std::path::{Path, PathBuf};

use serde_json::Value;

const MODEL: &str = "all-MiniLM-L6-v2";
use sr_bench::eval::SR_FILES as FILES;

fn temp_dir(name: &str) -> PathBuf {
    cli_common::temp_dir("compare", name)
}

/// `eval --split quick --files biosses --no-stsb-test --json FILE` (every row of biosses, 88):
/// a report with one file's cells and no STS-B test; returns its path.
fn one_file_report(dir: &Path) -> PathBuf {
    let path = dir.join("f32-biosses.json");
    let model = common::model_path(MODEL, "f32");
    let data = common::data_dir();
    let (ok, _, stderr) = sr_bench(&[
        "eval",
        "--model",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--split",
        "quick",
        "--files",
        "biosses",
        "--no-stsb-test",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    path
}

/// The values a row must show, read straight from the report: 6 files + avg per dimension,
/// then STS-B test (None for null or absent; the avg only for a run of all six files).
fn expected(report: &Value) -> Vec<Option<f64>> {
    let mut values = Vec::new();
    for dimension in ["structure", "relation"] {
        let results = &report["results"][dimension];
        for file in FILES {
            values.push(results[file]["spearman"].as_f64());
        }
        let every_file = FILES.iter().all(|f| results.get(f).is_some());
        values.push(results["avg_spearman"].as_f64().filter(|_| every_file));
    }
    values.push(report["stsb_test"]["spearman"].as_f64());
    values
}

fn label(report: &Value) -> String {
    ["model", "dtype", "split", "encoder"]
        .map(|k| report[k].as_str().unwrap().to_string())
        .join(" · ")
}

#[test]
fn compare_shows_every_report_cell_as_table_and_csv() {
    let dir = temp_dir("reports");
    let paths = [
        common::quick_report(MODEL, "q8_0", "model"),
        common::quick_report(MODEL, "q8_0", "static"),
        one_file_report(&dir),
    ];
    let reports: Vec<Value> = paths
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect();
    let args: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();

    let (ok, table, stderr) = sr_bench(&[&["compare"], args.as_slice()].concat());
    assert!(ok, "{stderr}");
    println!("{table}");
    let lines: Vec<&str> = table.lines().collect();
    let header = lines
        .iter()
        .find(|l| l.starts_with("report"))
        .expect("a header line");
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        [&["report"][..], &FILES, &["avg"], &FILES, &["avg", "test"]].concat()
    );
    assert!(lines
        .iter()
        .any(|l| l.contains("structure") && l.contains("relation")));
    for report in &reports {
        let label = label(report);
        let row = lines
            .iter()
            .find(|l| l.starts_with(&format!("{label} ")))
            .unwrap_or_else(|| panic!("no row for {label}"));
        let cells: Vec<&str> = row[label.len()..].split_whitespace().collect();
        let want: Vec<String> = expected(report)
            .iter()
            .map(|v| v.map_or("-".to_string(), |v| format!("{v:.2}")))
            .collect();
        assert_eq!(cells, want, "{label}");
    }
    assert!(
        table.contains("all-MiniLM-L6-v2 (static baseline) · q8_0 · quick · static"),
        "{table}"
    );
    // The pairwise block: one row per report, the accuracy over all files last.
    let block = table
        .split("Pairwise accuracy")
        .nth(1)
        .expect("a pairwise block");
    for report in &reports {
        let label = label(report);
        let row = block
            .lines()
            .find(|l| l.starts_with(&format!("{label} ")))
            .unwrap_or_else(|| panic!("no pairwise row for {label}"));
        let all = report["pairwise"]["all"]["accuracy"]
            .as_f64()
            .map_or("-".to_string(), |v| format!("{v:.2}"));
        assert_eq!(row.split_whitespace().last(), Some(all.as_str()), "{row}");
    }

    let (ok, csv, stderr) = sr_bench(&[&["compare", "--csv"], args.as_slice()].concat());
    assert!(ok, "{stderr}");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    assert_eq!(&header[0], "label");
    assert_eq!(&header[5], "structure_stsb");
    assert_eq!(&header[19], "stsb_test_spearman");
    // Pairwise accuracy per SR file and over all, after the Spearman columns.
    let pairwise_columns: Vec<String> = FILES
        .iter()
        .chain(&["all"])
        .map(|f| format!("pairwise_{f}"))
        .collect();
    assert_eq!(header.iter().skip(20).collect::<Vec<_>>(), pairwise_columns);
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), reports.len());
    for (record, report) in records.iter().zip(&reports) {
        assert_eq!(&record[0], label(report));
        for (i, key) in ["model", "dtype", "split", "encoder"].iter().enumerate() {
            assert_eq!(&record[i + 1], report[key].as_str().unwrap());
        }
        let values: Vec<Option<f64>> = record
            .iter()
            .skip(5)
            .map(|v| (!v.is_empty()).then(|| v.parse().unwrap()))
            .collect();
        assert_eq!(values[..15], expected(report), "{}", &record[0]);
        let pairwise: Vec<Option<f64>> = FILES
            .iter()
            .map(|f| report["pairwise"]["files"][f]["accuracy"].as_f64())
            .chain([report["pairwise"]["all"]["accuracy"].as_f64()])
            .collect();
        assert_eq!(values[15..], pairwise, "{}", &record[0]);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_file_that_is_not_a_report_is_named_with_the_missing_field() {
    let dir = temp_dir("bad");
    let not_report = dir.join("manifest.json");
    std::fs::write(&not_report, r#"{"models": []}"#).unwrap();
    let (ok, _, stderr) = sr_bench(&["compare", not_report.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "{}: not an sr-bench eval report: missing field 'model'",
            not_report.display()
        )),
        "{stderr}"
    );
    let partial = dir.join("partial.json");
    std::fs::write(
        &partial,
        r#"{"model": "m", "dtype": "f32", "split": "quick", "results": {"structure": {}}}"#,
    )
    .unwrap();
    let (ok, _, stderr) = sr_bench(&["compare", partial.to_str().unwrap(), "--csv"]);
    assert!(
        !ok && stderr.contains("missing field 'results.structure.avg_spearman'"),
        "{stderr}"
    );
    let not_json = dir.join("notes.txt");
    std::fs::write(&not_json, "hello").unwrap();
    let (ok, _, stderr) = sr_bench(&["compare", not_json.to_str().unwrap()]);
    assert!(!ok && stderr.contains("notes.txt is not JSON"), "{stderr}");
    let (ok, _, stderr) = sr_bench(&["compare"]);
    assert!(!ok && stderr.contains("REPORT"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn compare_reference_passes_within_the_tolerance_and_fails_outside_it() {
    let dir = temp_dir("reference");
    let reference =
        sr_bench::eval::reference_spearman("sentence_transformers_fp32", MODEL).unwrap();
    // The reference's own cells, structure/stsb moved by +0.03.
    let cells = |values: &[f64], shift: f64| -> Value {
        let mut cells = serde_json::Map::new();
        for (i, (file, v)) in FILES.iter().zip(values).enumerate() {
            let v = if i == 0 { v + shift } else { *v };
            cells.insert(
                file.to_string(),
                serde_json::json!({ "n": 1, "spearman": v }),
            );
        }
        cells.insert("avg_spearman".into(), 0.0.into());
        Value::Object(cells)
    };
    let report = serde_json::json!({"model": MODEL, "dtype": "f32", "split": "full",
        "results": {"structure": cells(&reference.structure, 0.03),
                    "relation": cells(&reference.relation, 0.0)},
        "stsb_test": {"spearman": reference.stsb_test.unwrap()}});
    let path = dir.join("report.json");
    std::fs::write(&path, report.to_string()).unwrap();
    let path = path.to_str().unwrap();
    let check = |tolerance: &str| {
        sr_bench(&[
            "compare",
            "--reference",
            "sentence_transformers_fp32",
            "--tolerance",
            tolerance,
            path,
        ])
    };
    let (ok, stdout, stderr) = check("0.05");
    assert!(ok, "{stdout}{stderr}");
    assert_eq!(stdout.matches("  ok").count(), 13, "{stdout}");
    assert!(stdout.contains("max |delta| = 0.03"), "{stdout}");
    let (ok, stdout, stderr) = check("0.01");
    assert!(!ok, "0.03 is outside ±0.01: {stdout}");
    let outside: Vec<&str> = stdout.lines().filter(|l| l.ends_with("OUTSIDE")).collect();
    assert_eq!(outside.len(), 1, "{stdout}");
    assert!(outside[0].starts_with("structure/stsb"), "{stdout}");
    assert!(
        stderr.contains("outside ±0.01 of sentence_transformers_fp32"),
        "{stderr}"
    );
    // A run of the SR set alone (no STS-B test, as the browser benchmarks' pool runs): an
    // error by default, its 12 SR cells checked with --sr-only.
    let mut sr_only = report.clone();
    sr_only["stsb_test"] = Value::Null;
    let sr_path = dir.join("sr-only.json");
    std::fs::write(&sr_path, sr_only.to_string()).unwrap();
    let sr_path = sr_path.to_str().unwrap();
    let reference_args = ["compare", "--reference", "sentence_transformers_fp32"];
    let (ok, _, stderr) = sr_bench(&[&reference_args[..], &[sr_path]].concat());
    assert!(!ok && stderr.contains("no STS-B test result"), "{stderr}");
    let (ok, stdout, stderr) = sr_bench(&[&reference_args[..], &["--sr-only", sr_path]].concat());
    assert!(ok, "{stdout}{stderr}");
    assert_eq!(stdout.matches("  ok").count(), 12, "{stdout}");
    assert!(!stdout.contains("stsb_test"), "{stdout}");
    let strict = ["--sr-only", "--tolerance", "0.01", sr_path];
    let (ok, stdout, _) = sr_bench(&[&reference_args[..], &strict[..]].concat());
    assert!(!ok && stdout.contains("OUTSIDE"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--reference` given another report (the CPU's run of a split, say, for the GPU's): every
/// cell and average within the tolerance passes, one outside it fails and is named.
#[test]
fn compare_against_another_report_checks_every_cell_and_average() {
    let dir = temp_dir("against-report");
    let report = |relation_avg: f64| {
        let mut results = serde_json::Map::new();
        for (dimension, base) in [("structure", 10.0), ("relation", -5.0)] {
            let mut cells = serde_json::Map::new();
            for (i, file) in FILES.iter().enumerate() {
                let v = base + i as f64;
                cells.insert(file.to_string(), serde_json::json!({"n": 9, "spearman": v}));
            }
            let avg = if dimension == "relation" {
                relation_avg
            } else {
                12.5
            };
            cells.insert("avg_spearman".into(), avg.into());
            results.insert(dimension.into(), Value::Object(cells));
        }
        serde_json::json!({"model": MODEL, "dtype": "q8_0", "split": "quick",
            "results": results, "stsb_test": {"spearman": 82.0}})
    };
    let write = |name: &str, value: Value| {
        let path = dir.join(name);
        std::fs::write(&path, value.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (cpu, gpu) = (
        write("cpu.json", report(-2.5)),
        write("gpu.json", report(-2.42)),
    );
    let check = |tolerance: &str| {
        sr_bench(&[
            "compare",
            "--reference",
            &cpu,
            "--tolerance",
            tolerance,
            &gpu,
        ])
    };
    let (ok, stdout, stderr) = check("0.1");
    assert!(ok, "{stdout}{stderr}");
    assert_eq!(stdout.matches("  ok").count(), 15, "{stdout}");
    assert!(stdout.contains("max |delta| = 0.08"), "{stdout}");
    let (ok, stdout, _) = check("0.05");
    assert!(!ok, "0.08 is outside ±0.05: {stdout}");
    let outside: Vec<&str> = stdout.lines().filter(|l| l.ends_with("OUTSIDE")).collect();
    assert_eq!(outside.len(), 1, "{stdout}");
    assert!(outside[0].starts_with("relation/avg"), "{stdout}");
    let missing = dir.join("missing.json");
    let (ok, _, stderr) = sr_bench(&["compare", "--reference", missing.to_str().unwrap(), &gpu]);
    assert!(!ok && stderr.contains("neither a measurement"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
