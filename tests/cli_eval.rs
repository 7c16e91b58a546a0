//! `sr-bench eval` and `eval-czech` on the real q8_0 model and the real data.

mod common;

use std::process::Command;

use serde_json::Value;

const MODEL: &str = "all-MiniLM-L6-v2";
use sr_bench::eval::SR_FILES as FILES;

fn sr_bench(args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sr-bench"))
        .args(args)
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "sr-bench {args:?} failed: {stderr}");
    (stdout, stderr)
}

#[test]
fn eval_quick_writes_the_report_schema_and_reproduces_stsb_test() {
    // `eval --split quick --json FILE` (shared with the other tests that read this report).
    let report = common::quick_report_json(MODEL, "q8_0", "model");
    assert_eq!(report["model"], MODEL);
    assert_eq!(report["dtype"], "q8_0");
    assert_eq!(report["split"], "quick");
    assert_eq!(report["encoder"], "model");
    assert_eq!(
        report["paper"]["structure"]["stsb"], 17.84,
        "the paper's Table 4 row rides along"
    );
    let expected_n = [124, 415, 36, 196, 220, 20];
    for dim in ["structure", "relation"] {
        let results = &report["results"][dim];
        for (file, n) in FILES.iter().zip(expected_n) {
            let cell = &results[file];
            assert_eq!(cell["n"], n, "{dim}/{file} n");
            for metric in ["spearman", "pearson"] {
                let v = cell[metric]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{dim}/{file}/{metric} is a number"));
                assert!(
                    (-100.0..=100.0).contains(&v) && ((v * 100.0).round() - v * 100.0).abs() < 1e-6,
                    "×100, 2 decimals: {v}"
                );
            }
        }
        let mean: f64 = FILES
            .iter()
            .map(|f| results[f]["spearman"].as_f64().unwrap())
            .sum::<f64>()
            / 6.0;
        assert!((results["avg_spearman"].as_f64().unwrap() - mean).abs() <= 0.01);
    }
    // STS-B test is used whole in every split: it must reproduce sentence-transformers (82.03).
    let stsb = report["stsb_test"]["spearman"].as_f64().unwrap();
    assert!((stsb - 82.03).abs() <= 0.5, "STS-B test Spearman {stsb}");
    assert!(
        report.get("pairs").is_none(),
        "per-pair rows stay out of the CLI's JSON"
    );
}

/// `eval --split quick --files biosses --no-stsb-test --json -` and `extra`: the report from
/// stdout and the table from stderr.
fn quick_biosses(model: &std::path::Path, extra: &[&str]) -> (Value, String) {
    let data = common::data_dir();
    let mut args = vec![
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
        "-",
    ];
    args.extend_from_slice(extra);
    let (json, table) = sr_bench(&args);
    let report = serde_json::from_str(&json).expect("stdout is the JSON report");
    (report, table)
}

/// `--json -`: the report on stdout, the table on stderr; `--files` and `--no-stsb-test` keep
/// only what was asked (the quick split of one file alone takes its rows by the same rule:
/// biosses' 88 rows are under the 1,000-row target, so all of them).
#[test]
fn eval_json_to_stdout_of_one_file_without_stsb_test() {
    let (report, table) = quick_biosses(&common::model_path(MODEL, "q8_0"), &[]);
    for dim in ["structure", "relation"] {
        let results = report["results"][dim].as_object().unwrap();
        let mut keys: Vec<&str> = results.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["avg_spearman", "biosses"], "{dim}");
        assert_eq!(results["biosses"]["n"], 88);
    }
    assert!(report["stsb_test"].is_null(), "{}", report["stsb_test"]);
    assert!(
        table.contains("paper") && table.contains("biosses"),
        "the Table 4 layout goes to stderr with --json -: {table}"
    );
}

#[test]
fn eval_names_an_unknown_sr_file() {
    let data = common::data_dir();
    let model = common::model_path(MODEL, "q8_0");
    let out = Command::new(env!("CARGO_BIN_EXE_sr-bench"))
        .args(["eval", "--model", model.to_str().unwrap(), "--data"])
        .arg(&data)
        .args(["--files", "biosses,quora"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("unknown SR file 'quora'") && stderr.contains("askubuntu"),
        "{stderr}"
    );
}

#[test]
fn eval_czech_reports_model_human_and_oracle() {
    let model = common::model_path(MODEL, "q8_0");
    let data = common::data_dir();
    let (out, _) = sr_bench(&[
        "eval-czech",
        "--model",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
    ]);
    assert!(out.contains("1200 pairs"), "{out}");
    let row = |label: &str| {
        out.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row in {out}"))
            .to_string()
    };
    assert!(
        row("random human").contains("84.31") && row("random human").contains("81.15"),
        "{out}"
    );
    assert!(row("oracle bound").contains("0.1582"), "{out}");
    let model_pearson: f64 = row("model")
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(model_pearson > 50.0 && model_pearson < 100.0, "{out}");
}

#[test]
fn eval_names_the_missing_data_folder() {
    let model = common::model_path(MODEL, "q8_0");
    let out = Command::new(env!("CARGO_BIN_EXE_sr-bench"))
        .args([
            "eval",
            "--model",
            model.to_str().unwrap(),
            "--data",
            "/nonexistent-data",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("/nonexistent-data/stsb/stsb-en-test.csv"),
        "{stderr}"
    );
}

/// `sr-bench bench` prints the work behind its rate from the batches it runs: tokens, tokens
/// after padding (never fewer), and GFLOP/s; truncating texts shrinks both token counts.
#[test]
fn bench_prints_the_tokens_padding_and_gflops_of_its_batches() {
    let model = common::model_path(MODEL, "q8_0");
    let data = common::data_dir();
    let figures = |max_seq_length: &str| -> (f64, f64, f64) {
        let (out, _) = sr_bench(&[
            "bench",
            "--model",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--sentences",
            "64",
            "--max-seq-length",
            max_seq_length,
        ]);
        assert!(out.contains("tokens") && out.contains("GFLOP/s"), "{out}");
        let line = out
            .lines()
            .find(|l| l.starts_with("all-MiniLM-L6-v2.q8_0.gguf "))
            .unwrap_or_else(|| panic!("no row for the model: {out}"));
        let values: Vec<f64> = line
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(
            values.len(),
            5,
            "load, sentences/s, tokens, padded, GFLOP/s: {line}"
        );
        assert!(values[1] > 0.0 && values[4] > 0.0, "{line}");
        (values[2], values[3], values[4])
    };
    let (tokens, padded, _) = figures("256");
    assert!(
        tokens >= 64.0 * 3.0 && padded >= tokens,
        "{tokens} {padded}"
    );
    let (short_tokens, short_padded, _) = figures("8");
    assert!(short_padded <= 64.0 * 8.0, "{short_padded}");
    assert!(
        short_tokens <= short_padded && short_tokens < tokens,
        "{short_tokens} {tokens}"
    );
}

/// The tests' inputs are pinned: a corrupted data file or a stale model file fails the test that
/// reads it by name, with what to run (tests/common's `check_pins`, the same pins as build.sh).
#[test]
fn a_corrupted_data_file_or_a_stale_model_file_is_named() {
    let dir = std::env::temp_dir().join(format!("sr-bench-pins-{}", std::process::id()));
    let data = dir.join("data");
    for (file, _) in common::pins("data") {
        let to = data.join(&file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(common::data_dir().join(&file), &to).unwrap();
    }
    assert_eq!(common::check_pins("data", &data, None), Ok(()));
    let planted = data.join("sr/biosses.csv");
    let mut bytes = std::fs::read(&planted).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&planted, bytes).unwrap();
    let err = common::check_pins("data", &data, None).unwrap_err();
    assert!(
        err.contains("sr/biosses.csv") && err.contains("stale or corrupted"),
        "{err}"
    );
    assert!(err.contains("./build.sh build"), "{err}");

    // A model file from another conversion (here: a truncated copy) is refused the same way.
    let models = dir.join("models");
    std::fs::create_dir_all(&models).unwrap();
    let file = "all-MiniLM-L6-v2.q8_0.gguf";
    let real = common::model_bytes(MODEL, "q8_0");
    std::fs::write(models.join(file), &real[..real.len() / 2]).unwrap();
    let err = common::check_pins("models", &models, Some(file)).unwrap_err();
    assert!(
        err.contains(file) && err.contains("stale or corrupted"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Reports record the text prefix the model read: our e5 file's "query: " by default, the
/// user's `--prefix` otherwise, and never one for the syntax-blind baseline.
#[test]
fn reports_record_the_prefix_the_model_read() {
    let model = common::model_path("multilingual-e5-small", "q4_0");
    let report = |extra: &[&str]| quick_biosses(&model, extra);
    let spearman = |r: &Value| r["results"]["structure"]["biosses"]["spearman"].as_f64();
    let (default, table) = report(&[]);
    assert_eq!(default["prefix"], "query: ");
    assert!(
        table.contains("every text read with the prefix \"query: \""),
        "{table}"
    );
    let (none, table) = report(&["--prefix", ""]);
    assert_eq!(none["prefix"], "");
    assert!(!table.contains("prefix"), "{table}");
    assert_ne!(spearman(&default), spearman(&none));
    let (baseline, _) = report(&["--baseline", "static"]);
    assert_eq!(baseline["prefix"], "");
}

/// `eval --pairs FILE`: a user's own pairs, scored alone; the JSON's `own_pairs` holds the
/// cells, the per-file layout and scale; a bad file fails with its line and column.
#[test]
fn eval_pairs_scores_a_users_own_file() {
    let model = common::model_path(MODEL, "q8_0");
    let fixtures = common::root().join("tests/fixtures/own-pairs");
    let pairs = |file: &str| -> (Value, String) {
        let path = fixtures.join(file);
        let args = ["eval", "--model", model.to_str().unwrap(), "--pairs"];
        let (json, table) =
            sr_bench(&[&args[..], &[path.to_str().unwrap(), "--json", "-"]].concat());
        let report: Value = serde_json::from_str(&json).unwrap();
        (report, table)
    };
    let (report, table) = pairs("sts.csv");
    let own = &report["own_pairs"];
    assert_eq!(
        (&own["name"], &own["layout"]),
        (&"sts.csv".into(), &"sts".into())
    );
    assert_eq!(
        (&own["scale_max"], &own["similarity"]["n"]),
        (&5.0.into(), &30.into())
    );
    // The cell is the Spearman of the file's scores against `sr-bench embed`'s cosines.
    let rows: Vec<(String, String, f64)> = std::fs::read_to_string(fixtures.join("sts.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(line.as_bytes());
            let record = reader.records().next().unwrap().unwrap();
            (
                record[0].to_string(),
                record[1].to_string(),
                record[2].parse().unwrap(),
            )
        })
        .collect();
    let texts: Vec<&str> = rows
        .iter()
        .flat_map(|(a, b, _)| [a.as_str(), b.as_str()])
        .collect();
    let mut embed = Command::new(env!("CARGO_BIN_EXE_sr-bench"))
        .args(["embed", "--model", model.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    embed
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&texts).unwrap().as_bytes())
        .unwrap();
    let vectors: Vec<Vec<f32>> =
        serde_json::from_slice(&embed.wait_with_output().unwrap().stdout).unwrap();
    let cosines: Vec<f64> = vectors
        .chunks(2)
        .map(|v| f64::from(sr_bench::model::cosine(&v[0], &v[1])))
        .collect();
    let gold: Vec<f64> = rows.iter().map(|r| r.2).collect();
    let want = 100.0 * sr_bench::eval::spearman(&gold, &cosines);
    let got = own["similarity"]["spearman"].as_f64().unwrap();
    assert!((got - want).abs() <= 0.01, "report {got}, by hand {want}");
    assert!(report["results"]["structure"].as_object().unwrap().len() <= 1);
    assert!(table.contains("sts.csv (sts layout)"), "{table}");
    let (report, _) = pairs("sr.tsv");
    let own = &report["own_pairs"];
    assert_eq!(
        (&own["structure"]["n"], &own["relation"]["n"]),
        (&6.into(), &6.into())
    );
    assert!(own.get("similarity").is_none());

    let dir = std::env::temp_dir().join(format!("sr-bench-pairs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "sentence1,sentence2,score\nA,B,1\nC,D,x\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sr-bench"))
        .args(["eval", "--model", model.to_str().unwrap(), "--pairs"])
        .arg(&bad)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("'bad.csv' line 3, column 3 (score): 'x' is not a number"),
        "{stderr}"
    );
    let huge = dir.join("huge.csv");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(50_000_000)
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sr-bench"))
        .args(["eval", "--model", model.to_str().unwrap(), "--pairs"])
        .arg(&huge)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("is 50.0 MB; a pairs file may be at most 16 MB"));
    let _ = std::fs::remove_dir_all(dir);
}
