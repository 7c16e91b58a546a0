//! `eval` and `eval-czech`'s run and output: a plan run with progress on stderr, the report
//! stamped with the model, its table printed and its JSON written.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::eval::{Encoder, EvalPlan, Progress, Report};
use crate::model::Embedder;
use crate::scoring::Scored;

/// Sentences per `embed` call of a run: a call's batches run several at once on the CPU
/// (`backend/cpu/concurrent.rs`) and the call waits for its slowest, so fewer, larger calls
/// wait less (the quick split, MiniLM q8_0, 2 cores: 15.6 s with 256, 14.5 s with 1,024);
/// progress still shows every second or so.
const CHUNK: usize = 1024;

/// Runs a plan with progress on stderr; stamps the report with the model (or its baseline).
pub(super) fn evaluate(embedder: &Embedder, plan: EvalPlan, encoder: Encoder) -> Result<Report> {
    let scored = Scored::new(embedder, encoder);
    let start = Instant::now();
    let mut show = |p: Progress| {
        let rate = p.done as f64 / start.elapsed().as_secs_f64().max(1e-9);
        let eta = (p.total - p.done) as f64 / rate.max(1e-9);
        eprint!(
            "\rembedded {}/{} sentences  {rate:.1}/s  ETA {eta:.0} s   ",
            p.done, p.total
        );
    };
    let mut report = crate::eval::run(plan, &scored, CHUNK, &mut show, &AtomicBool::new(false))?;
    let seconds = start.elapsed().as_secs_f64();
    eprintln!("\rdone in {seconds:.1} s{:40}", "");
    let info = &embedder.info;
    report.stamp(&info.name, &info.dtype, encoder, &info.prefix);
    Ok(report)
}

/// " with prefix \"query: \"" for a report whose texts had one, else "".
pub(super) fn prefix_note(prefix: &str) -> String {
    match prefix.is_empty() {
        true => String::new(),
        false => format!(" with prefix {prefix:?}"),
    }
}

/// Writes every scored pair of `report` as CSV to `path`, if given.
pub(super) fn write_pairs_csv(report: &Report, path: Option<&Path>) -> Result<()> {
    let Some(path) = path else { return Ok(()) };
    let pairs = report.pairs.as_deref().unwrap_or_default();
    std::fs::write(path, crate::eval::pairs_csv(pairs)?)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes STS-B test's retrieval run and qrels in TREC format into `dir`, if given.
pub(super) fn write_trec(report: &Report, dir: Option<&Path>) -> Result<()> {
    let Some(dir) = dir else { return Ok(()) };
    let scores = &report
        .retrieval
        .as_ref()
        .context("no retrieval was scored (it comes from STS-B test)")?
        .stsb_test;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, text) in [
        ("stsb_test.run", &scores.trec.run),
        ("stsb_test.qrels", &scores.trec.qrels),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Prints the Table 4 layout; writes the JSON report (without per-pair rows) if asked.
pub(super) fn write_report(report: &Report, json: Option<&Path>) -> Result<()> {
    write_json(&crate::eval::format_table(report), report, json)
}

/// Prints `table`; writes the JSON report (without per-pair rows) if asked.
pub(super) fn write_json(table: &str, report: &Report, json: Option<&Path>) -> Result<()> {
    let mut summary = report.clone();
    summary.pairs = None;
    let text = serde_json::to_string_pretty(&summary)?;
    match json {
        Some(p) if p == Path::new("-") => {
            eprintln!("{table}");
            println!("{text}");
        }
        Some(p) => {
            println!("{table}");
            std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?;
        }
        None => println!("{table}"),
    }
    Ok(())
}
