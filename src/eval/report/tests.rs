//! Tests of the report's JSON contract and the pairs CSV.

use super::*;
use crate::eval::data::SR_FILES;
use crate::eval::runner::testing::{fake_report, six_varied_files, sr_file, varied_stsb};

/// Byte offsets of `keys` (as `"key":`) in `json`, to check their order.
fn positions(json: &str, keys: &[&str]) -> Vec<usize> {
    keys.iter()
        .map(|key| {
            json.find(&format!("\"{key}\":"))
                .unwrap_or_else(|| panic!("{key} missing in {json}"))
        })
        .collect()
}

fn is_sorted(values: &[usize]) -> bool {
    values.windows(2).all(|w| w[0] < w[1])
}

#[test]
fn json_follows_the_contract() {
    let mut report = fake_report(six_varied_files(), Some(varied_stsb(30)));
    report.model = "all-MiniLM-L6-v2".into();
    report.dtype = "q8_0".into();
    report.pairs = None;
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.starts_with(r#"{"model":"all-MiniLM-L6-v2","dtype":"q8_0","split":"full","results":{"structure":{"stsb":{"n":20,"spearman":"#), "{json}");
    let top = positions(&json, &["model", "dtype", "split", "results", "stsb_test"]);
    assert!(is_sorted(&top));
    assert!(!json.contains("\"pairs\""));
    assert!(!json.contains("czech_news_sts"));

    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    for dimension in ["structure", "relation"] {
        let dim = match dimension {
            "structure" => Dimension::Structure,
            _ => Dimension::Relation,
        };
        let dim_json = serde_json::to_string(&value["results"][dimension]).unwrap();
        let mut keys: Vec<&str> = SR_FILES.to_vec();
        keys.push("avg_spearman");
        // serde_json::Value sorts keys; check the order in the typed value's own text.
        let section = serde_json::to_string(report.results.dimension(dim)).unwrap();
        assert!(is_sorted(&positions(&section, &keys)), "{section}");
        assert_eq!(dim_json.matches("\"n\":20").count(), 6);
        let cells = &value["results"][dimension];
        let spearmans: Vec<f64> = SR_FILES
            .iter()
            .map(|f| cells[f]["spearman"].as_f64().unwrap())
            .collect();
        let mean = spearmans.iter().sum::<f64>() / 6.0;
        let avg = cells["avg_spearman"].as_f64().unwrap();
        assert!((avg - mean).abs() <= 0.006, "{avg} vs {mean}");
        for file in SR_FILES {
            let cell = &cells[file];
            let typed = report.results.dimension(dim).get(file).unwrap();
            let section = serde_json::to_string(typed).unwrap();
            assert!(is_sorted(&positions(
                &section,
                &["n", "spearman", "pearson", "spearman_ci95", "mse", "rmse"]
            )));
            for key in ["spearman", "pearson"] {
                let v = cell[key].as_f64().unwrap();
                assert_eq!(v, (v * 100.0).round() / 100.0, "{key} {v} not 2 decimals");
                assert!((-100.0..=100.0).contains(&v));
            }
            let ci = cell["spearman_ci95"].as_array().unwrap();
            assert!(ci[0].as_f64().unwrap() <= ci[1].as_f64().unwrap());
        }
    }
    let stsb = &value["stsb_test"];
    assert_eq!(stsb["n"], 30);
    assert!(stsb["spearman"].is_f64() && stsb["pearson"].is_f64());
}

#[test]
fn missing_stsb_is_null_and_pairs_are_included_until_removed() {
    let mut report = fake_report(six_varied_files(), None);
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["stsb_test"].is_null());
    assert!(json.as_object().unwrap().contains_key("stsb_test"));
    let pairs = json["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2 * 6 * 20);
    let first = &pairs[0];
    for key in [
        "file",
        "dimension",
        "line",
        "sentence1",
        "sentence2",
        "gold",
        "cosine",
    ] {
        assert!(first.get(key).is_some(), "{key}");
    }
    assert_eq!(first["file"], "stsb");
    assert_eq!(first["dimension"], "structure");
    let taken = report.pairs.take().unwrap();
    assert_eq!(taken.len(), 240);
    assert!(serde_json::to_value(&report)
        .unwrap()
        .get("pairs")
        .is_none());
}

#[test]
fn undefined_statistics_serialise_as_null() {
    // Every structure score is 3: Spearman and Pearson are undefined for that dimension.
    let rows: Vec<(String, String, f64, String, f64)> = (0..5)
        .map(|i| {
            (
                format!("s {i}"),
                format!("r {i}{i}"),
                i as f64,
                format!("t {i}"),
                3.0,
            )
        })
        .collect();
    let borrowed: Vec<_> = rows
        .iter()
        .map(|(a, b, c, d, e)| (a.as_str(), b.as_str(), *c, d.as_str(), *e))
        .collect();
    let report = fake_report(vec![sr_file("cqa", &borrowed)], None);
    let json = serde_json::to_value(&report).unwrap();
    let cell = &json["results"]["structure"]["cqa"];
    assert!(cell["spearman"].is_null() && cell["pearson"].is_null());
    assert!(cell["spearman_ci95"][0].is_null());
    assert!(cell["mse"].is_f64());
    assert!(json["results"]["structure"]["avg_spearman"].is_null());
    assert!(json["results"]["relation"]["cqa"]["spearman"].is_f64());
}

#[test]
fn cell_rounds_and_scales_the_metrics() {
    // Same vectors as the metrics tests: scipy spearman 0.98164981..., pearson 0.97308524...
    let gold = [1.0, 2.0, 2.0, 3.0, 5.0, 5.0, 5.0, 0.0, 4.0, 4.0];
    let cos = [0.10, 0.35, 0.20, 0.50, 0.90, 0.70, 0.80, 0.05, 0.60, 0.65];
    let cell = Cell::compute(&gold, &cos, 5.0);
    assert_eq!(cell.n, 10);
    assert_eq!(cell.spearman, 98.16);
    assert_eq!(cell.pearson, 97.31);
    // np.mean((np.array(gold)/5 - np.array(cos))**2) = 0.026750000000000006, sqrt 0.163554...
    assert_eq!(cell.mse, 0.02675);
    assert_eq!(cell.rmse, 0.163554);
}

#[test]
fn pairs_csv_quotes_and_orders_columns() {
    let pairs = [PairResult {
        file: "sickr".into(),
        dimension: "relation".into(),
        line: 7,
        sentence1: "A, \"quoted\" one".into(),
        sentence2: "plain".into(),
        gold: 4.0,
        cosine: 0.5,
        rank_gap: 0.0,
    }];
    let csv = String::from_utf8(pairs_csv(&pairs).unwrap()).unwrap();
    assert_eq!(
        csv,
        "file,dimension,line,sentence1,sentence2,gold,cosine\n\
         sickr,relation,7,\"A, \"\"quoted\"\" one\",plain,4,0.5\n"
    );
    // And it reads back with the benchmark's own CSV settings.
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let record = reader.records().next().unwrap().unwrap();
    assert_eq!(&record[3], "A, \"quoted\" one");
}

#[test]
fn stamp_names_the_baseline_and_adds_the_papers_row_for_the_model_only() {
    let mut report = fake_report(six_varied_files(), None);
    assert_eq!(report.encoder, Encoder::Model);
    assert!(report.paper.is_none());

    report.stamp("all-MiniLM-L6-v2", "q8_0", Encoder::Model, "query: ");
    assert_eq!(report.model, "all-MiniLM-L6-v2");
    assert_eq!(report.dtype, "q8_0");
    assert_eq!(report.prefix, "query: ");
    let paper = report.paper.as_ref().expect("the paper has MiniLM");
    assert_eq!(paper.structure["stsb"], 17.84);
    assert_eq!(paper.relation["avg"], 19.85);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["encoder"], "model");
    // The same shape as sr-scores.json's paper_table4[model] always had.
    let table: serde_json::Value =
        serde_json::from_str(include_str!("../paper_table4.json")).unwrap();
    assert_eq!(json["paper"], table["paper_table4"]["all-MiniLM-L6-v2"]);

    report.stamp("all-MiniLM-L6-v2", "q8_0", Encoder::Static, "query: ");
    assert_eq!(report.model, "all-MiniLM-L6-v2 (static baseline)");
    assert_eq!(report.prefix, "", "the baseline reads no prefix");
    assert_eq!(report.encoder, Encoder::Static);
    assert!(
        report.paper.is_none(),
        "the paper has no row for the baseline"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["encoder"], "static");
    assert!(json.get("paper").is_none());

    report.stamp("my-model", "f32", Encoder::Model, "");
    assert_eq!(report.model, "my-model");
    assert!(report.paper.is_none(), "unknown to the paper");
    assert_eq!(
        report_model_name("m", Encoder::Static),
        "m (static baseline)"
    );
    assert_eq!(report_model_name("m", Encoder::Model), "m");
}

#[test]
fn encoder_parses_model_and_static_only() {
    assert_eq!("model".parse::<Encoder>().unwrap(), Encoder::Model);
    assert_eq!("static".parse::<Encoder>().unwrap(), Encoder::Static);
    assert_eq!(Encoder::Static.to_string(), "static");
    assert_eq!(
        "gpu".parse::<Encoder>().unwrap_err().to_string(),
        "unknown encoder 'gpu': expected model or static"
    );
}

#[test]
fn new_fields_come_after_the_old_ones_and_change_no_number() {
    let mut report = fake_report(six_varied_files(), Some(varied_stsb(30)));
    let before = serde_json::to_value(&report).unwrap();
    report.stamp("all-mpnet-base-v2", "f32", Encoder::Model, "");
    report.pairs = None;
    let json = serde_json::to_string(&report).unwrap();
    let top = positions(
        &json,
        &[
            "model",
            "dtype",
            "split",
            "results",
            "stsb_test",
            "encoder",
            "paper",
        ],
    );
    assert!(is_sorted(&top), "{json}");
    let after: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(after["results"], before["results"]);
    assert_eq!(after["stsb_test"], before["stsb_test"]);
}

#[test]
fn pairs_csv_of_a_report_parses_back_with_plain_newlines() {
    let report = fake_report(six_varied_files(), Some(varied_stsb(30)));
    let pairs = report.pairs.as_ref().unwrap();
    let csv = String::from_utf8(pairs_csv(pairs).unwrap()).unwrap();
    assert!(!csv.contains('\r'));
    assert_eq!(csv.matches('\n').count(), pairs.len() + 1);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(reader.headers().unwrap(), PAIRS_CSV_HEADER.to_vec());
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), pairs.len());
    for (record, pair) in records.iter().zip(pairs) {
        assert_eq!(record.len(), 7);
        assert_eq!(&record[0], pair.file);
        assert_eq!(record[2].parse::<usize>().unwrap(), pair.line);
        assert_eq!(&record[4], pair.sentence2);
        assert_eq!(record[5].parse::<f64>().unwrap(), pair.gold);
        assert_eq!(record[6].parse::<f64>().unwrap(), pair.cosine);
    }

    // The same text from the report as JSON (what the page holds).
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(pairs_csv_from_json(&json).unwrap(), csv);
    let mut summary = report.clone();
    summary.pairs = None;
    let err = pairs_csv_from_json(&serde_json::to_value(&summary).unwrap()).unwrap_err();
    assert_eq!(err.to_string(), "the report has no per-pair results");
}
