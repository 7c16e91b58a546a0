//! Plain-text report in the layout of the paper's Table 4: files as columns and the average
//! last, one row per dimension, the paper's value and the difference beneath each cell; then
//! STS-B test against the sentence-transformers reference, and Czech News STS if present
//! ([`format_czech`]: model, random human and oracle side by side, with the paper's figures).

use crate::eval::czech::{
    CzechReport, PAPER_CROSS_ENCODER_PEARSON, PAPER_CROSS_ENCODER_SPEARMAN, PAPER_ORACLE_MSE,
    PAPER_RANDOM_HUMAN_PEARSON, PAPER_RANDOM_HUMAN_SPEARMAN,
};
use crate::eval::metrics::round_to;
use crate::eval::paper::{paper_reference, PaperRow, PaperScores};
use crate::eval::report::{Dimension, OwnPairsReport, Report};
use crate::eval::split::Split;

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
    if !report.prefix.is_empty() {
        out += &format!("every text read with the prefix {:?}\n", report.prefix);
    }
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
            let paper_values = paper_dimension(&reference.table4, dimension);
            let paper: Vec<Option<f64>> = files
                .iter()
                .map(|name| paper_values.get(name))
                .chain([if all_six {
                    paper_values.get("avg")
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

    if let Some(pairwise) = &report.pairwise {
        out += &format!(
            "\nPairwise accuracy: % of rows (gold scores >= {} apart) where the rewrite closer to the \
             original is the one with the higher gold score; a coin: {}\n",
            pairwise.min_gap,
            number(crate::eval::pairwise::CHANCE, false)
        );
        let mut header = format!("{:<LABEL_WIDTH$}", "");
        for name in files.iter().copied().chain(["all"]) {
            header += &format!("{name:>CELL_WIDTH$}");
        }
        out += header.trim_end();
        out += "\n";
        let accuracy = |a: &crate::eval::pairwise::Accuracy| {
            a.accuracy.map_or("-".into(), |v| number(v, false))
        };
        let cells = |p: &crate::eval::pairwise::PairwiseReport| -> Vec<String> {
            let mut cells: Vec<String> = p.files.iter().map(|(_, a)| accuracy(a)).collect();
            cells.push(accuracy(&p.all));
            cells
        };
        out += &row("pairwise", &cells(pairwise));
        if let Some(baseline) = &pairwise.baseline {
            out += &row("  baseline", &cells(baseline));
        }
        let mut counts: Vec<String> = pairwise
            .files
            .iter()
            .map(|(_, a)| a.n.to_string())
            .collect();
        counts.push(pairwise.all.n.to_string());
        out += &row("  rows", &counts);
        if let Some([lo, hi]) = pairwise.all.ci95 {
            out += &format!(
                "  all files: 95 % interval {} to {}\n",
                number(lo, false),
                number(hi, false)
            );
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
    if let Some(r) = &report.retrieval {
        let r = &r.stsb_test;
        out += &format!(
            "STS-B test as retrieval ({} queries, {} documents; relevant: gold >= {}): nDCG@10 {}, MRR@10 {}\n",
            r.queries,
            r.documents,
            r.min_gold,
            number(100.0 * r.ndcg_at_10, false),
            number(100.0 * r.mrr_at_10, false)
        );
    }
    if let Some(czech) = &report.czech_news_sts {
        out += "\n";
        out += &format_czech(czech);
    }
    out
}

fn paper_dimension(row: &PaperRow, dimension: Dimension) -> &PaperScores {
    match dimension {
        Dimension::Structure => &row.structure,
        Dimension::Relation => &row.relation,
    }
}

/// Model, random human and oracle side by side, with the paper's figures.
pub fn format_czech(report: &CzechReport) -> String {
    let mut out = format!(
        "Czech News STS, context-free test ({} pairs; gold = mean of 9 annotators, 0-6)\n",
        report.n
    );
    out += &format!(
        "{:<14}{:>9}{:>10}{:>11}{:>11}{:>10}{:>10}\n",
        "", "Pearson", "Spearman", "MSE 0-1", "RMSE 0-1", "MSE 0-6", "RMSE 0-6"
    );
    for (label, a) in [
        ("model", &report.model),
        ("random human", &report.random_human),
    ] {
        out += &format!(
            "{:<14}{:>9.2}{:>10.2}{:>11.4}{:>11.4}{:>10.4}{:>10.4}\n",
            label, a.pearson, a.spearman, a.mse_unit, a.rmse_unit, a.mse_raw, a.rmse_raw
        );
    }
    let o = &report.oracle;
    out += &format!(
        "{:<14}{:>9}{:>10}{:>11.4}{:>11.4}{:>10.4}{:>10.4}\n",
        "oracle bound", "-", "-", o.mse_unit, o.rmse_unit, o.mse_raw, o.rmse_raw
    );
    out += &format!(
        "paper: random human Pearson {PAPER_RANDOM_HUMAN_PEARSON:.1}, Spearman \
         {PAPER_RANDOM_HUMAN_SPEARMAN:.1} (per annotator; here per score column);\n       \
         oracle MSE bound {PAPER_ORACLE_MSE} on 0-6 (here {:.4}); best fine-tuned \
         cross-encoder Pearson {PAPER_CROSS_ENCODER_PEARSON}, Spearman \
         {PAPER_CROSS_ENCODER_SPEARMAN}\n",
        o.mse_raw
    );
    out
}

/// A user's own pairs: Spearman, its interval and Pearson (×100), MSE/RMSE on score / scale.
pub fn format_own(report: &OwnPairsReport) -> String {
    let mut out = format!(
        "{} ({} layout): Spearman and Pearson x100 of cosine vs the file's scores; MSE on \
         score / {}\n",
        report.name, report.layout, report.scale_max
    );
    out += &format!(
        "{:<12}{:>7}{:>10}{:>18}{:>9}{:>10}{:>10}\n",
        "", "n", "Spearman", "95% CI", "Pearson", "MSE", "RMSE"
    );
    for (label, cell) in [
        ("similarity", &report.similarity),
        ("structure", &report.structure),
        ("relation", &report.relation),
    ] {
        let Some(c) = cell else { continue };
        out += &format!(
            "{:<12}{:>7}{:>10.2}{:>18}{:>9.2}{:>10.4}{:>10.4}\n",
            label,
            c.n,
            c.spearman,
            format!("[{:.2}, {:.2}]", c.spearman_ci95[0], c.spearman_ci95[1]),
            c.pearson,
            c.mse,
            c.rmse
        );
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
    use crate::eval::czech::czech_report;
    use crate::eval::data::{parse_czech_sts, testing::read_data};
    use crate::eval::runner::testing::{fake_report, six_varied_files, varied_file, varied_stsb};

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

    #[test]
    fn formatter_puts_model_human_and_oracle_side_by_side() {
        let file =
            parse_czech_sts("free-test.tsv", &read_data("czech-news-sts/free-test.tsv")).unwrap();
        let cosines: Vec<f64> = file.pairs.iter().map(|p| p.mean_score / 6.0).collect();
        let report = czech_report(&file, &cosines).unwrap();
        assert_eq!(report.model.pearson, 100.0);
        assert_eq!(report.model.mse_raw, 0.0);
        let text = format_czech(&report);
        assert!(text.contains("model            100.00    100.00"), "{text}");
        assert!(text.contains("random human      84.31     81.15"), "{text}");
        assert!(text.contains("oracle bound"), "{text}");
        assert!(text.contains("0.1582"), "{text}");
        assert!(text.contains("0.1731"), "{text}");
    }
}
