//! Several runs side by side: one row per report (as JSON, the schema of [`crate::eval::report`])
//! in Table 4's layout: the six SR files and the average per dimension, then STS-B test.
//! The CLI (`sr-bench compare`) prints [`compare_table`] or [`compare_csv`]; the page calls
//! [`compare_rows`] / [`compare_csv`] through wasm for its compare view and CSV export. Checks
//! against a reference, cell by cell, are in `check.rs`.

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::eval::data::SR_FILES;
use crate::eval::report::Dimension;

mod check;

pub use check::{check_against_reference, check_against_report, Cells, ReferenceCheck};

/// One report's figures. Spearman ×100 as the report has them; `None` where the report has
/// `null` (an undefined statistic) or, for a file, no cell (that file was not evaluated).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRow {
    /// `model · dtype · split · encoder`, then the text prefix in quotes when the run had one
    /// (runs that differ only in their instruction are told apart).
    pub label: String,
    pub model: String,
    pub dtype: String,
    /// `full` or `quick`.
    pub split: String,
    /// `model` or `static` (reports older than the field: `model`).
    pub encoder: String,
    /// Structure: Spearman per SR file in [`SR_FILES`] order, then `avg_spearman` (7 values).
    pub structure: Vec<Option<f64>>,
    /// Relation: the same.
    pub relation: Vec<Option<f64>>,
    /// `stsb_test.spearman`; `None` when STS-B test was not evaluated.
    pub stsb_test_spearman: Option<f64>,
    /// Pairwise accuracy ×100 per SR file in [`SR_FILES`] order, then over all files (7
    /// values); `None` where the report has none (older reports, a file without a kept row).
    pub pairwise: Vec<Option<f64>>,
}

/// Follows `path` (dot-separated) from `report`, if it is there.
fn optional_field<'a>(report: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(report, |v, key| v.get(key))
}

/// Follows `path` (dot-separated) from `report`; an error naming the missing field.
fn field<'a>(report: &'a Value, path: &str) -> Result<&'a Value> {
    optional_field(report, path)
        .ok_or_else(|| anyhow!("not an sr-bench eval report: missing field '{path}'"))
}

fn text(report: &Value, path: &str) -> Result<String> {
    field(report, path)?
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("not an sr-bench eval report: field '{path}' is not a string"))
}

/// A number or `null` (→ `None`); anything else is an error naming the field.
fn number(value: &Value, path: &str) -> Result<Option<f64>> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(n.as_f64()),
        _ => Err(anyhow!(
            "not an sr-bench eval report: field '{path}' is not a number"
        )),
    }
}

/// One report's row (see [`CompareRow`]); errors name the missing or mistyped field.
pub fn compare_row(report: &Value) -> Result<CompareRow> {
    let model = text(report, "model")?;
    let dtype = text(report, "dtype")?;
    let split = text(report, "split")?;
    let encoder = match report.get("encoder") {
        None => "model".to_string(),
        Some(_) => text(report, "encoder")?,
    };
    let dimension = |dimension: Dimension| -> Result<Vec<Option<f64>>> {
        let base = format!("results.{}", dimension.as_str());
        let results = field(report, &base)?;
        let mut values = SR_FILES
            .iter()
            .map(|file| match results.get(file) {
                None | Some(Value::Null) => Ok(None),
                Some(_) => {
                    let path = format!("{base}.{file}.spearman");
                    number(field(report, &path)?, &path)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let avg = format!("{base}.avg_spearman");
        let avg_value = number(field(report, &avg)?, &avg)?;
        // A run of some files only (`eval --files`) averages those: not Table 4's avg.
        let every_file = SR_FILES.iter().all(|file| results.get(file).is_some());
        values.push(avg_value.filter(|_| every_file));
        Ok(values)
    };
    let structure = dimension(Dimension::Structure)?;
    let relation = dimension(Dimension::Relation)?;
    // Reports older than the field, and runs without a prefix, have none.
    let prefix = match report.get("prefix") {
        None | Some(Value::Null) => String::new(),
        Some(_) => text(report, "prefix")?,
    };
    let stsb_test_spearman = match field(report, "stsb_test")? {
        Value::Null => None,
        _ => number(field(report, "stsb_test.spearman")?, "stsb_test.spearman")?,
    };
    // Reports older than the field have no pairwise accuracy.
    let pairwise = SR_FILES
        .iter()
        .map(|file| format!("pairwise.files.{file}.accuracy"))
        .chain(["pairwise.all.accuracy".to_string()])
        .map(|path| match optional_field(report, &path) {
            None => Ok(None),
            Some(value) => number(value, &path),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(CompareRow {
        label: match prefix.is_empty() {
            true => [model.as_str(), &dtype, &split, &encoder].join(" · "),
            false => format!(
                "{} · {prefix:?}",
                [model.as_str(), &dtype, &split, &encoder].join(" · ")
            ),
        },
        model,
        dtype,
        split,
        encoder,
        structure,
        relation,
        stsb_test_spearman,
        pairwise,
    })
}

/// The rows of several reports (`eval --json` files or the page's runs), in their order.
/// An error names the report (1-based) and the missing field.
pub fn compare_rows(reports: &[Value]) -> Result<Vec<CompareRow>> {
    reports
        .iter()
        .enumerate()
        .map(|(i, report)| compare_row(report).with_context(|| format!("report {}", i + 1)))
        .collect()
}

/// The value columns after the label: `structure_<file>`…, `structure_avg`, the same for
/// relation, `stsb_test_spearman`, then `pairwise_<file>`…, `pairwise_all`.
fn value_columns() -> Vec<String> {
    let mut columns = Vec::new();
    for dimension in [Dimension::Structure, Dimension::Relation] {
        for file in SR_FILES.iter().copied().chain(["avg"]) {
            columns.push(format!("{}_{file}", dimension.as_str()));
        }
    }
    columns.push("stsb_test_spearman".into());
    for file in SR_FILES.iter().copied().chain(["all"]) {
        columns.push(format!("pairwise_{file}"));
    }
    columns
}

fn values(row: &CompareRow) -> impl Iterator<Item = Option<f64>> + '_ {
    row.structure
        .iter()
        .chain(&row.relation)
        .copied()
        .chain([row.stsb_test_spearman])
}

/// The rows as CSV: the header `label,model,dtype,split,encoder,structure_stsb,…,
/// structure_avg,relation_stsb,…,relation_avg,stsb_test_spearman,pairwise_stsb,…,
/// pairwise_all`, one line per row, numbers
/// as the reports have them (shortest form that reads back equal), empty where `None`.
pub fn compare_csv(rows: &[CompareRow]) -> Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["label", "model", "dtype", "split", "encoder"]
        .map(String::from)
        .to_vec();
    header.extend(value_columns());
    writer.write_record(&header)?;
    for row in rows {
        let mut record = vec![
            row.label.clone(),
            row.model.clone(),
            row.dtype.clone(),
            row.split.clone(),
            row.encoder.clone(),
        ];
        record.extend(
            values(row)
                .chain(row.pairwise.iter().copied())
                .map(|v| v.map_or(String::new(), |v| v.to_string())),
        );
        writer
            .write_record(&record)
            .context("writing the compare CSV")?;
    }
    let bytes = writer.into_inner().context("finishing the compare CSV")?;
    String::from_utf8(bytes).context("the compare CSV is not UTF-8")
}

const CELL_WIDTH: usize = 10;

/// The rows as text: a label column, then structure's six files and avg, relation's, and
/// STS-B test, Spearman ×100 with 2 decimals (`-` where `None`).
pub fn compare_table(rows: &[CompareRow]) -> String {
    let label_width = rows
        .iter()
        .map(|r| r.label.chars().count())
        .chain([6])
        .max()
        .unwrap_or(6)
        + 2;
    let group = CELL_WIDTH * (SR_FILES.len() + 1);
    let mut out = "SR benchmark comparison: Spearman x100 of cosine vs gold in the layout of \
                   Table 4 (Zhang et al. 2023); STS-B test Spearman last\n\n"
        .to_string();
    let groups = format!(
        "{:label_width$}{:>group$}{:>group$}{:>CELL_WIDTH$}",
        "", "structure", "relation", "STS-B"
    );
    out += groups.trim_end();
    out += "\n";
    let mut header = format!("{:<label_width$}", "report");
    for _ in 0..2 {
        for file in SR_FILES.iter().copied().chain(["avg"]) {
            header += &format!("{file:>CELL_WIDTH$}");
        }
    }
    header += &format!("{:>CELL_WIDTH$}", "test");
    out += &header;
    out += "\n";
    for row in rows {
        let mut line = format!("{:<label_width$}", row.label);
        for value in values(row) {
            let cell = value.map_or("-".to_string(), |v| format!("{v:.2}"));
            line += &format!("{cell:>CELL_WIDTH$}");
        }
        out += &line;
        out += "\n";
    }
    if rows.iter().any(|r| r.pairwise.iter().any(Option::is_some)) {
        out +=
            "\nPairwise accuracy: % of SR rows where the rewrite closer to the original has the \
                higher gold score (a coin: 50.00)\n";
        let mut header = format!("{:<label_width$}", "report");
        for file in SR_FILES.iter().copied().chain(["all"]) {
            header += &format!("{file:>CELL_WIDTH$}");
        }
        out += &header;
        out += "\n";
        for row in rows {
            let mut line = format!("{:<label_width$}", row.label);
            for value in &row.pairwise {
                let cell = value.map_or("-".to_string(), |v| format!("{v:.2}"));
                line += &format!("{cell:>CELL_WIDTH$}");
            }
            out += line.trim_end();
            out += "\n";
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(model: &str, structure_stsb: Value, stsb_test: Value) -> Value {
        let cells = |first: Value| {
            let mut d = serde_json::Map::new();
            for (i, f) in SR_FILES.iter().enumerate() {
                let v = if i == 0 {
                    first.clone()
                } else {
                    json!(i as f64 + 0.25)
                };
                d.insert(f.to_string(), json!({"n": 3, "spearman": v}));
            }
            d.insert("avg_spearman".into(), json!(12.5));
            Value::Object(d)
        };
        json!({"model": model, "dtype": "q8_0", "split": "quick", "encoder": "model",
               "results": {"structure": cells(structure_stsb), "relation": cells(json!(-3.5))},
               "stsb_test": stsb_test})
    }

    #[test]
    fn rows_carry_every_value_and_nulls_become_none() {
        let rows = compare_rows(&[
            report("a", json!(17.84), json!({"spearman": 82.03})),
            report("b", Value::Null, Value::Null),
        ])
        .unwrap();
        assert_eq!(rows[0].label, "a · q8_0 · quick · model");
        // A run with an instruction says which (two runs of one model told apart).
        let mut prompted = report("a", json!(17.84), json!({"spearman": 82.03}));
        prompted["prefix"] = json!("task: sentence similarity | query: ");
        let mut plain = report("a", json!(17.84), Value::Null);
        plain["prefix"] = json!("");
        let rows2 = compare_rows(&[prompted, plain]).unwrap();
        assert_eq!(
            rows2[0].label,
            "a · q8_0 · quick · model · \"task: sentence similarity | query: \""
        );
        assert_eq!(rows2[1].label, "a · q8_0 · quick · model");
        assert_eq!(
            rows[0].structure,
            [17.84, 1.25, 2.25, 3.25, 4.25, 5.25, 12.5].map(Some)
        );
        assert_eq!(rows[0].relation[0], Some(-3.5));
        assert_eq!(rows[0].stsb_test_spearman, Some(82.03));
        assert_eq!(
            (rows[1].structure[0], rows[1].stsb_test_spearman),
            (None, None)
        );
        let table = compare_table(&rows);
        assert!(
            table.contains("17.84") && table.contains("82.03"),
            "{table}"
        );
        let csv = compare_csv(&rows).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("label,model,dtype,split,encoder,structure_stsb,"));
        assert!(lines[0].ends_with(
            ",relation_avg,stsb_test_spearman,pairwise_stsb,pairwise_sickr,pairwise_askubuntu,\
             pairwise_cqa,pairwise_twitter,pairwise_biosses,pairwise_all"
        ));
        // Reports without pairwise accuracy (older ones) leave its columns empty.
        assert!(lines[1].ends_with(",12.5,82.03,,,,,,,"), "{}", lines[1]);
        assert_eq!(rows[0].pairwise, [None; 7]);
        let mut with_pairwise = report("p", json!(1.0), Value::Null);
        with_pairwise["pairwise"] = json!({"min_gap": 2.0, "chance": 50.0,
            "files": {"stsb": {"n": 4, "correct": 3.0, "accuracy": 75.0, "ci95": [30.06, 95.44]}},
            "all": {"n": 4, "correct": 3.0, "accuracy": 75.0, "ci95": [30.06, 95.44]}});
        let row = compare_row(&with_pairwise).unwrap();
        assert_eq!(row.pairwise[0], Some(75.0));
        assert_eq!((row.pairwise[1], row.pairwise[6]), (None, Some(75.0)));
        assert!(compare_table(&[row]).contains("Pairwise accuracy"));
        assert!(lines[2].contains(",quick,model,,1.25,"), "{}", lines[2]);
    }

    #[test]
    fn errors_name_the_report_and_the_missing_field() {
        let mut bad = report("a", json!(1.0), Value::Null);
        bad["results"]["relation"]
            .as_object_mut()
            .unwrap()
            .remove("avg_spearman");
        let error = compare_rows(&[report("ok", json!(1.0), Value::Null), bad]).unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains("report 2"), "{message}");
        assert!(
            message.contains("missing field 'results.relation.avg_spearman'"),
            "{message}"
        );
        let error = compare_row(&json!({"hello": 1})).unwrap_err();
        assert!(format!("{error:#}").contains("missing field 'model'"));
        let error = compare_row(&json!([1, 2])).unwrap_err();
        assert!(format!("{error:#}").contains("missing field 'model'"));
    }

    #[test]
    fn a_reference_check_covers_every_cell_and_fails_outside_the_tolerance() {
        let st = crate::eval::reference_spearman("sentence_transformers_fp32", "all-MiniLM-L6-v2")
            .unwrap();
        assert_eq!((st.structure[0], st.relation[2]), (17.84, 13.0));
        assert_eq!(st.stsb_test, Some(82.03));
        let as_cells = |v: &[f64]| {
            let mut d = serde_json::Map::new();
            for (file, x) in SR_FILES.iter().zip(v) {
                d.insert(file.to_string(), json!({"n": 3, "spearman": x}));
            }
            d.insert("avg_spearman".into(), json!(0.0));
            Value::Object(d)
        };
        let mut structure = st.structure.clone();
        structure[3] += 0.04;
        let report = json!({"model": "all-MiniLM-L6-v2", "dtype": "f32", "split": "full",
            "results": {"structure": as_cells(&structure), "relation": as_cells(&st.relation)},
            "stsb_test": {"spearman": 82.08}});
        let row = compare_row(&report).unwrap();
        let check = check_against_reference(&row, "sentence_transformers_fp32", 0.05, Cells::Every)
            .unwrap();
        assert_eq!(check.cells.len(), 13, "12 SR cells and STS-B test");
        assert!(check.passed(), "{}", check.table());
        assert!((check.worst() - 0.05).abs() < 1e-9);
        let strict =
            check_against_reference(&row, "sentence_transformers_fp32", 0.045, Cells::Every)
                .unwrap();
        assert!(!strict.passed());
        let table = strict.table();
        assert!(
            table.contains("stsb_test") && table.contains("OUTSIDE"),
            "{table}"
        );
        // onnxruntime has no STS-B test figure: the 12 SR cells only.
        let onnx =
            check_against_reference(&row, "onnx_int8_onnxruntime", 5.0, Cells::Every).unwrap();
        assert_eq!(onnx.cells.len(), 12);
        // A missing cell is an error, never skipped.
        let mut quick = row.clone();
        quick.stsb_test_spearman = None;
        let error =
            check_against_reference(&quick, "sentence_transformers_fp32", 0.05, Cells::Every);
        assert!(format!("{:#}", error.unwrap_err()).contains("no STS-B test result"));
        // An SR-only run is checked on its 12 SR cells when asked for explicitly.
        let sr_only =
            check_against_reference(&quick, "sentence_transformers_fp32", 0.05, Cells::SrOnly)
                .unwrap();
        assert_eq!(sr_only.cells.len(), 12);
        assert!(sr_only.cells.iter().all(|(cell, ..)| cell != "stsb_test"));
        let mut outside = quick.clone();
        outside.relation[2] = outside.relation[2].map(|v| v + 1.0);
        let check =
            check_against_reference(&outside, "sentence_transformers_fp32", 0.5, Cells::SrOnly)
                .unwrap();
        assert!(!check.passed(), "{}", check.table());
        assert!(check_against_reference(&row, "paper", 0.05, Cells::Every).is_err());
    }

    #[test]
    fn a_run_of_some_files_has_no_table4_average_and_is_checked_on_what_it_ran() {
        let mut partial = report("m", json!(17.84), Value::Null);
        for dimension in ["structure", "relation"] {
            let cells = partial["results"][dimension].as_object_mut().unwrap();
            cells.retain(|k, _| k == "biosses" || k == "askubuntu" || k == "avg_spearman");
        }
        let row = compare_row(&partial).unwrap();
        // askubuntu and biosses only; their own average is not Table 4's.
        assert_eq!(row.structure[2], Some(2.25));
        assert_eq!(
            (row.structure[0], row.structure[6], row.relation[6]),
            (None, None, None)
        );
        let ran = check_against_report(&row, &row, 0.01, Cells::Evaluated).unwrap();
        assert_eq!(ran.cells.len(), 4, "{}", ran.table());
        assert!(ran.passed());
        // Against a run of all six: every cell is an error for it, what it ran passes.
        let all = compare_row(&report("m", json!(17.84), json!({"spearman": 82.03}))).unwrap();
        assert!(check_against_report(&row, &all, 0.01, Cells::Every).is_err());
        let ran = check_against_report(&row, &all, 0.01, Cells::Evaluated).unwrap();
        assert_eq!(ran.cells.len(), 4, "{}", ran.table());
        assert!(ran.passed());
        // A run without any SR cell has nothing to check.
        let mut empty = row.clone();
        empty.structure = vec![None; 7];
        empty.relation = vec![None; 7];
        let error = check_against_report(&empty, &row, 0.01, Cells::Evaluated).unwrap_err();
        assert!(format!("{error:#}").contains("no SR cell"), "{error:#}");
    }

    #[test]
    fn a_report_checked_against_another_compares_every_cell_and_average() {
        let cpu = compare_row(&report("m", json!(17.84), json!({"spearman": 82.03}))).unwrap();
        let mut gpu = cpu.clone();
        gpu.label = "m · q8_0 · quick · model (gpu)".into();
        gpu.relation[6] = Some(12.57);
        let check = check_against_report(&gpu, &cpu, 0.1, Cells::Every).unwrap();
        assert_eq!(
            check.cells.len(),
            15,
            "6 files + avg per dimension, STS-B test"
        );
        assert!(check.passed(), "{}", check.table());
        assert!((check.worst() - 0.07).abs() < 1e-9);
        assert!(check.table().contains("relation/avg"));
        assert!(!check_against_report(&gpu, &cpu, 0.05, Cells::Every)
            .unwrap()
            .passed());
        // Another model or split is an error; so is a cell the reference has and the row lacks.
        let mut other = cpu.clone();
        other.split = "full".into();
        assert!(check_against_report(&gpu, &other, 0.1, Cells::Every).is_err());
        gpu.stsb_test_spearman = None;
        let error = check_against_report(&gpu, &cpu, 0.1, Cells::Every).unwrap_err();
        assert!(format!("{error:#}").contains("no STS-B test result"));
        let sr_only = check_against_report(&gpu, &cpu, 0.1, Cells::SrOnly).unwrap();
        assert_eq!(sr_only.cells.len(), 14, "6 files + avg per dimension");
        assert!(sr_only.passed(), "{}", sr_only.table());
    }
}
