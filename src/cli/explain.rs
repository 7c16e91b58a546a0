//! `sr-bench explain`: the token-pair contributions of a pair (or the token-to-token cosine
//! matrix for models that do not mean-pool), as a compact matrix or JSON.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{load_model, LoadArgs};
use crate::backend::BackendKind;
use crate::explain::{explain, explain_static, Explanation, CONTRIBUTIONS};

#[derive(Args)]
pub struct ExplainArgs {
    /// The .gguf model file.
    #[arg(long)]
    model: PathBuf,
    /// Backend: cpu, webgpu (also: gpu) or auto; token states come from the CPU either way.
    #[arg(long, default_value = "cpu")]
    backend: BackendKind,
    #[command(flatten)]
    load: LoadArgs,
    /// Explain the syntax-blind baseline (static token vectors) instead of the model.
    #[arg(long)]
    r#static: bool,
    /// Group word pieces into words (sums of their pieces) in the text output.
    #[arg(long)]
    words: bool,
    /// Print JSON: {"cosine", "pooling", "kind", "tokens_a", "tokens_b", "contributions",
    /// "row_totals", "column_totals", "total", "words": {...}}.
    #[arg(long)]
    json: bool,
    /// Sentence A (the matrix's rows).
    first: String,
    /// Sentence B (the matrix's columns).
    second: String,
}

pub fn run(args: ExplainArgs) -> Result<()> {
    let embedder = load_model(&args.model, args.backend, &args.load)?;
    let explanation = if args.r#static {
        explain_static(&embedder, &args.first, &args.second)?
    } else {
        explain(&embedder, &args.first, &args.second)?
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&explanation)?);
        return Ok(());
    }
    let shown = match (&explanation.words, args.words) {
        (Some(words), true) => words.as_ref(),
        _ => &explanation,
    };
    print!("{}", format_matrix(shown));
    Ok(())
}

/// Rows A's tokens, columns B's, ×1000 (so 0.012 shows as 12), with row and column totals.
pub fn format_matrix(e: &Explanation) -> String {
    let what = if e.kind == CONTRIBUTIONS {
        "contributions ×1000 (they sum to the cosine)"
    } else {
        "token-to-token cosine ×1000 (the model does not mean-pool)"
    };
    let mut out = format!(
        "cosine {:.6}  pooling {}  {} {what}\n",
        e.cosine, e.pooling, e.encoder
    );
    let width = 7;
    let label = |s: &str| s.chars().take(width - 1).collect::<String>();
    let row_label = e
        .tokens_a
        .iter()
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(0)
        .min(16);
    out += &format!("{:row_label$}", "");
    for token in &e.tokens_b {
        out += &format!("{:>width$}", label(token));
    }
    out += &format!("{:>9}\n", "total");
    for (i, token) in e.tokens_a.iter().enumerate() {
        let name: String = token.chars().take(row_label).collect();
        out += &format!("{name:row_label$}");
        for value in &e.contributions[i] {
            out += &format!("{:>width$.0}", value * 1000.0);
        }
        out += &format!("{:>9.1}\n", e.row_totals[i] * 1000.0);
    }
    out += &format!("{:row_label$}", "total");
    for value in &e.column_totals {
        out += &format!("{:>width$.1}", value * 1000.0);
    }
    out += &format!("{:>9.1}\n", e.total * 1000.0);
    out
}
