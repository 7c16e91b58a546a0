//! `sr-bench compare`: several `eval --json` reports side by side.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::eval::{compare_csv, compare_row, compare_table};

/// Reads each report (errors name the file and the missing field) and prints the table, or CSV.
pub(super) fn compare(reports: &[PathBuf], csv: bool) -> Result<()> {
    let rows = reports
        .iter()
        .map(|path| {
            let bytes = super::read_file(path)?;
            let json: serde_json::Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not JSON", path.display()))?;
            compare_row(&json).with_context(|| format!("{}", path.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    if csv {
        print!("{}", compare_csv(&rows)?);
    } else {
        print!("{}", compare_table(&rows));
    }
    Ok(())
}
