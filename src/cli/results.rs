//! `sr-bench results`: the site's Results view from the project's recorded rows
//! (`docs/results/*.json`, written by `bench/results.sh`: an `eval --json` report with the
//! command, the model file's sha256, the date and the machine that produced it) and the
//! paper's Table 4, checked and joined into one JSON file (`results.json` of the site).

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::eval::{compare_row, paper_table4, PaperRow};

#[derive(clap::Args)]
pub(crate) struct ResultsArgs {
    /// The folder of recorded rows (one JSON file per row).
    #[arg(default_value = "docs/results")]
    dir: PathBuf,
    /// Where the joined JSON goes ("-": stdout).
    #[arg(long, default_value = "-")]
    out: PathBuf,
}

/// One recorded row: a report and what produced it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Row {
    pub id: String,
    pub command: String,
    pub model_file: String,
    pub model_sha256: String,
    /// YYYY-MM-DD (UTC).
    pub date: String,
    pub machine: String,
    pub report: Value,
}

/// The site's `results.json`.
#[derive(Serialize)]
struct Joined {
    /// The project's rows, in file-name order.
    rows: Vec<Row>,
    /// The paper's Table 4, by model.
    paper: std::collections::BTreeMap<String, PaperRow>,
}

/// Reads and checks one row file; errors name the file and the field.
fn read_row(path: &Path) -> Result<Row> {
    let bytes = super::read_file(path)?;
    let row: Row = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{}: not a recorded row (see bench/results.sh)",
            path.display()
        )
    })?;
    let named = |what: String| format!("{}: {what}", path.display());
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    ensure!(
        stem.as_deref() == Some(row.id.as_str()),
        named(format!("the id '{}' is not the file's name", row.id))
    );
    ensure!(
        row.model_sha256.len() == 64 && row.model_sha256.bytes().all(|b| b.is_ascii_hexdigit()),
        named("model_sha256 is not a SHA-256 in hex".into())
    );
    let date = row.date.as_bytes();
    ensure!(
        date.len() == 10
            && date[4] == b'-'
            && date[7] == b'-'
            && row.date.chars().filter(char::is_ascii_digit).count() == 8,
        named(format!("date '{}' is not YYYY-MM-DD", row.date))
    );
    for (field, value) in [("command", &row.command), ("machine", &row.machine)] {
        ensure!(!value.trim().is_empty(), named(format!("{field} is empty")));
    }
    compare_row(&row.report).with_context(|| named("its report".into()))?;
    if row.report.get("pairs").is_some() {
        bail!(named(
            "the report holds every pair: record it with --json (which leaves them out)".into()
        ));
    }
    Ok(row)
}

pub(crate) fn run(a: ResultsArgs) -> Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(&a.dir)
        .with_context(|| format!("cannot list {}", a.dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    ensure!(
        !files.is_empty(),
        "{}: no recorded rows (*.json)",
        a.dir.display()
    );
    let rows = files
        .iter()
        .map(|p| read_row(p))
        .collect::<Result<Vec<_>>>()?;
    let text = serde_json::to_string(&Joined {
        rows,
        paper: paper_table4(),
    })?;
    if a.out == Path::new("-") {
        println!("{text}");
    } else {
        std::fs::write(&a.out, text)
            .with_context(|| format!("cannot write {}", a.out.display()))?;
        eprintln!("wrote {} ({} rows)", a.out.display(), files.len());
    }
    Ok(())
}
