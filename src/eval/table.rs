//! Plain-text report in the layout of the paper's Table 4: files as columns and the average
//! last, one row per dimension, the paper's value and the difference beneath each cell; then
//! STS-B test against the sentence-transformers reference, and Czech News STS if present.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::eval::czech::format_czech;
use crate::eval::report::{round_to, Dimension, Report};
use crate::eval::split::Split;

/// The paper's Table 4 and the STS-B test reference (fixture shared with the tests).
const SCORES_FIXTURE: &str = include_str!("../../tests/fixtures/sr-scores.json");

#[derive(Deserialize)]
struct ScoresFixture {
    paper_table4: BTreeMap<String, PaperTable4>,
    stsb_test_spearman_sentence_transformers_fp32: BTreeMap<String, f64>,
}

/// One model's row pair of the paper's Table 4 (Spearman ×100).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PaperTable4 {
    /// File name (and `"avg"`) to Spearman, structure dimension.
    pub structure: BTreeMap<String, f64>,
    /// File name (and `"avg"`) to Spearman, relation dimension.
    pub relation: BTreeMap<String, f64>,
}

impl PaperTable4 {
    fn dimension(&self, dimension: Dimension) -> &BTreeMap<String, f64> {
        match dimension {
            Dimension::Structure => &self.structure,
            Dimension::Relation => &self.relation,
        }
    }
}

/// What the paper and the reference implementation report for a model.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperReference {
    /// The model's name as the fixture spells it.
    pub model: String,
    /// Table 4 of the paper.
    pub table4: PaperTable4,
    /// STS-B test Spearman ×100 measured with sentence-transformers in fp32.
    pub stsb_test_spearman: Option<f64>,
}

/// The reference numbers for `model`, matched case-insensitively on its last path segment
/// (`"sentence-transformers/all-MiniLM-L6-v2"` finds `all-MiniLM-L6-v2`); `None` if unknown.
pub fn paper_reference(model: &str) -> Option<PaperReference> {
    let fixture: ScoresFixture = serde_json::from_str(SCORES_FIXTURE).ok()?;
    let wanted = model.rsplit('/').next().unwrap_or(model);
    let (name, table4) = fixture
        .paper_table4
        .into_iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(wanted))?;
    let stsb_test_spearman = fixture
        .stsb_test_spearman_sentence_transformers_fp32
        .get(&name)
        .copied();
    Some(PaperReference {
        model: name,
        table4,
        stsb_test_spearman,
    })
}

const LABEL_WIDTH: usize = 12;
const CELL_WIDTH: usize = 10;

/// The report as text: Table 4 with the paper's values and deltas when the model is known
/// (measured numbers only otherwise), STS-B test, and the Czech section if evaluated.
pub fn format_table(report: &Report) -> String {
    let reference = paper_reference(&report.model);
    let files: Vec<&str> = report
        .results
        .structure
        .files
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    let all_six = files.len() == crate::eval::data::SR_FILES.len();

    let mut out = format!(
        "SR benchmark: {} ({}), {} split. Spearman x100 of cosine vs gold, Table 4 of Zhang et al. 2023\n",
        report.model, report.dtype, report.split
    );
    if report.split == Split::Quick {
        out += "(quick split: a ~1,000-row sample; differences from the paper include sampling error, see spearman_ci95 in the JSON)\n";
    }
    match &reference {
        Some(reference) => {
            out += &format!(
                "beneath each cell: the paper's value for {} and measured - paper\n",
                reference.model
            )
        }
        None => out += "(no published values for this model: measured numbers only)\n",
    }
    out += "\n";

    let mut header = format!("{:<LABEL_WIDTH$}", "");
    for name in files.iter().copied().chain(["avg"]) {
        header += &format!("{name:>CELL_WIDTH$}");
    }
    out += header.trim_end();
    out += "\n";
    let counts: Vec<String> = report
        .results
        .structure
        .files
        .iter()
        .map(|(_, cell)| cell.n.to_string())
        .collect();
    out += &row("n", &counts);

    for dimension in [Dimension::Structure, Dimension::Relation] {
        let results = report.results.dimension(dimension);
        let mut measured: Vec<f64> = results.files.iter().map(|(_, c)| c.spearman).collect();
        measured.push(results.avg_spearman);
        out += &row(
            dimension.as_str(),
            &measured
                .iter()
                .map(|v| number(*v, false))
                .collect::<Vec<_>>(),
        );
        if let Some(reference) = &reference {
            let paper_values = reference.table4.dimension(dimension);
            let paper: Vec<Option<f64>> = files
                .iter()
                .map(|name| paper_values.get(*name).copied())
                .chain([if all_six {
                    paper_values.get("avg").copied()
                } else {
                    None
                }])
                .collect();
            let show = |values: Vec<Option<f64>>, signed: bool| -> Vec<String> {
                values
                    .into_iter()
                    .map(|v| v.map_or("-".to_string(), |v| number(v, signed)))
                    .collect()
            };
            let deltas = measured
                .iter()
                .zip(&paper)
                .map(|(m, p)| p.map(|p| m - p))
                .collect();
            out += &row("  paper", &show(paper, false));
            out += &row("  delta", &show(deltas, true));
        }
    }

    if let Some(stsb) = &report.stsb_test {
        out += &format!(
            "\nSTS-B test ({} pairs): Spearman {}, Pearson {}",
            stsb.n,
            number(stsb.spearman, false),
            number(stsb.pearson, false)
        );
        match reference.as_ref().and_then(|r| r.stsb_test_spearman) {
            Some(expected) => {
                out += &format!(
                    "; reference Spearman {expected:.2} (sentence-transformers fp32), delta {}\n",
                    number(stsb.spearman - expected, true)
                )
            }
            None => out += "\n",
        }
    }
    if let Some(czech) = &report.czech_news_sts {
        out += "\n";
        out += &format_czech(czech);
    }
    out
}

fn row(label: &str, cells: &[String]) -> String {
    let mut line = format!("{label:<LABEL_WIDTH$}");
    for cell in cells {
        line += &format!("{cell:>CELL_WIDTH$}");
    }
    line.trim_end().to_string() + "\n"
}

/// Two decimals, an explicit sign for deltas, `-` for an undefined value.
fn number(value: f64, signed: bool) -> String {
    // Round first so -0.004 prints as +0.00 (adding 0.0 turns -0.0 into 0.0).
    let value = round_to(value, 2) + 0.0;
    match (value.is_finite(), signed) {
        (false, _) => "-".to_string(),
        (true, true) => format!("{value:+.2}"),
        (true, false) => format!("{value:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::runner::tests::{fake_report, six_varied_files, varied_file, varied_stsb};

    #[test]
    fn fixture_values_are_found_by_model_name() {
        let mini = paper_reference("all-MiniLM-L6-v2").unwrap();
        assert_eq!(mini.table4.structure["stsb"], 17.84);
        assert_eq!(mini.table4.relation["avg"], 19.85);
        assert_eq!(mini.stsb_test_spearman, Some(82.03));
        let mpnet = paper_reference("sentence-transformers/ALL-MPNET-BASE-V2").unwrap();
        assert_eq!(mpnet.model, "all-mpnet-base-v2");
        assert_eq!(mpnet.table4.structure["biosses"], 23.94);
        assert_eq!(mpnet.stsb_test_spearman, Some(83.42));
        assert!(paper_reference("bert-base-uncased").is_none());
    }

    #[test]
    fn table_shows_measured_paper_and_delta_in_table4_layout() {
        let mut report = fake_report(six_varied_files(), Some(varied_stsb(30)));
        report.model = "all-MiniLM-L6-v2".into();
        report.dtype = "f32".into();
        let text = format_table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("SR benchmark: all-MiniLM-L6-v2 (f32), full split."));
        let header = lines
            .iter()
            .position(|l| l.trim_start().starts_with("stsb"))
            .unwrap();
        assert_eq!(
            lines[header],
            "                  stsb     sickr askubuntu       cqa   twitter   biosses       avg"
        );
        assert_eq!(
            lines[header + 1],
            "n                   20        20        20        20        20        20"
        );
        assert!(lines[header + 2].starts_with("structure "));
        assert_eq!(
            lines[header + 3],
            "  paper          17.84     15.89      7.68     18.27      6.51     12.76     13.15"
        );
        assert!(lines[header + 4].starts_with("  delta "));
        assert!(lines[header + 5].starts_with("relation "));
        assert_eq!(
            lines[header + 6],
            "  paper           0.35     14.60     13.99     27.86     14.05     48.29     19.85"
        );
        // delta = measured - paper, per column.
        let numbers = |line: &str| -> Vec<f64> {
            line.split_whitespace()
                .skip(1)
                .map(|v| v.parse().unwrap())
                .collect()
        };
        let measured = numbers(lines[header + 5]);
        let paper = numbers(lines[header + 6]);
        let delta = numbers(lines[header + 7]);
        for ((m, p), d) in measured.iter().zip(&paper).zip(&delta) {
            assert!((m - p - d).abs() < 0.0051, "{m} - {p} != {d}");
        }
        let stsb = report.stsb_test.as_ref().unwrap();
        assert!(text.contains(&format!(
            "STS-B test (30 pairs): Spearman {:.2}, Pearson {:.2}; reference Spearman 82.03 (sentence-transformers fp32), delta ",
            stsb.spearman, stsb.pearson
        )), "{text}");
    }

    #[test]
    fn unknown_model_and_partial_files_show_measured_numbers_only() {
        let mut report = fake_report(vec![varied_file("cqa", 20)], None);
        report.model = "my-model".into();
        let text = format_table(&report);
        assert!(text.contains("(no published values for this model: measured numbers only)"));
        assert!(!text.contains("paper "));
        assert!(!text.contains("STS-B"));
        // A known model on a subset: no paper average to compare with.
        report.model = "all-mpnet-base-v2".into();
        let text = format_table(&report);
        let paper_line = text.lines().find(|l| l.starts_with("  paper")).unwrap();
        assert_eq!(paper_line, "  paper          24.03         -");
    }

    #[test]
    fn quick_split_is_flagged_and_deltas_have_signs() {
        let mut report = fake_report(six_varied_files(), None);
        report.split = Split::Quick;
        report.model = "all-MiniLM-L6-v2".into();
        let text = format_table(&report);
        assert!(text.contains("(quick split: a ~1,000-row sample;"));
        assert_eq!(number(-0.004, true), "+0.00");
        assert_eq!(number(1.234, true), "+1.23");
        assert_eq!(number(-1.235, false), "-1.24");
        assert_eq!(number(f64::NAN, true), "-");
    }
}
