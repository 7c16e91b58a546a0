//! `sr-bench compare`: several `eval --json` reports side by side.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::eval::{
    check_against_reference, check_against_report, compare_csv, compare_row, compare_table, Cells,
    CompareRow, REFERENCES,
};

/// Reads each report (errors name the file and the missing field).
fn read_rows(reports: &[PathBuf]) -> Result<Vec<CompareRow>> {
    reports
        .iter()
        .map(|path| {
            let bytes = super::read_file(path)?;
            let json: serde_json::Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not JSON", path.display()))?;
            compare_row(&json).with_context(|| format!("{}", path.display()))
        })
        .collect()
}

/// Prints every report's cells against `reference` (a measurement of sr-scores.json, or the
/// path of another report); an error when one leaves `tolerance`.
pub(super) fn check(
    reports: &[PathBuf],
    reference: &str,
    tolerance: f64,
    cells: Cells,
) -> Result<()> {
    let reference_report = if REFERENCES.contains(&reference) {
        None
    } else {
        let rows = read_rows(&[PathBuf::from(reference)]).with_context(|| {
            format!(
                "--reference is neither a measurement ({}) nor a readable report",
                REFERENCES.join(", ")
            )
        })?;
        rows.into_iter().next()
    };
    let mut outside = Vec::new();
    for row in read_rows(reports)? {
        let check = match &reference_report {
            Some(other) => check_against_report(&row, other, tolerance, cells)?,
            None => check_against_reference(&row, reference, tolerance, cells)?,
        };
        println!("{}", check.table());
        if !check.passed() {
            outside.push(row.label);
        }
    }
    anyhow::ensure!(
        outside.is_empty(),
        "outside ±{tolerance} of {reference}: {}",
        outside.join("; ")
    );
    Ok(())
}

/// Prints the reports side by side, or as CSV.
pub(super) fn compare(reports: &[PathBuf], csv: bool) -> Result<()> {
    let rows = read_rows(reports)?;
    if csv {
        print!("{}", compare_csv(&rows)?);
    } else {
        print!("{}", compare_table(&rows));
    }
    Ok(())
}
