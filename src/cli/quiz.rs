//! `sr-bench quiz`: the questions of the page's quiz for a seed (the same on every device), and
//! with `--model` how the model and the syntax-blind baseline answer them. A class's teacher
//! can print the questions; the tests check the page against it.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

use super::{load_model, parse_data_file, sr_files, LoadArgs};
use crate::backend::BackendKind;
use crate::eval::quiz::{self, Quiz, QuizScore, QuizSet};
use crate::eval::{default_data_dir, Encoder, SentenceEncoder};
use crate::scoring::Scored;

#[derive(Args)]
pub struct QuizArgs {
    /// The seed the questions are drawn with (the page's link carries it: `quiz=SEED`).
    #[arg(long)]
    seed: u64,
    /// How many questions (1–100).
    #[arg(long, default_value_t = quiz::DEFAULT_QUESTIONS)]
    questions: usize,
    /// sr: an SR row's two rewrites of one sentence; czech: two Czech News STS pairs.
    #[arg(long, default_value = "sr")]
    set: QuizSet,
    /// Only questions whose two gold scores differ by at least this much.
    #[arg(long, value_name = "N", default_value_t = crate::eval::pairwise::DEFAULT_MIN_GAP)]
    min_gap: f64,
    /// Data folder holding sr/*.csv and czech-news-sts/free-test.tsv;
    /// default: $SR_BENCH_DATA, else data, else ../shared/data.
    #[arg(long, default_value_os_t = default_data_dir())]
    data: PathBuf,
    /// Also answer with this .gguf model (and its syntax-blind baseline).
    #[arg(long)]
    model: Option<PathBuf>,
    #[arg(long, default_value = "cpu")]
    backend: BackendKind,
    #[command(flatten)]
    load: LoadArgs,
}

/// The JSON printed: the quiz, and with a model the two encoders' answers.
#[derive(Serialize)]
struct Answered {
    #[serde(flatten)]
    quiz: Quiz,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<QuizScore>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<QuizScore>,
}

pub fn run(args: QuizArgs) -> Result<()> {
    let quiz = match args.set {
        QuizSet::Sr => quiz::draw_sr(
            &sr_files(&args.data)?,
            args.seed,
            args.questions,
            args.min_gap,
        )?,
        QuizSet::Czech => {
            let czech = parse_data_file(
                &args.data,
                "czech-news-sts/free-test.tsv",
                crate::eval::parse_czech_sts,
            )?;
            quiz::draw_czech(&czech, args.seed, args.questions, args.min_gap)?
        }
    };
    let (model, baseline) = match &args.model {
        None => (None, None),
        Some(path) => {
            let embedder = load_model(path, args.backend, &args.load)?;
            let answer = |encoder| -> Result<QuizScore> {
                let scored = Scored::new(&embedder, encoder);
                // A pair per call, as the page's `similarity`: the same batches, so the same
                // cosines to the last bit, and the same choices on a near tie.
                let cosines = quiz
                    .pairs()
                    .into_iter()
                    .map(|(a, b)| {
                        let v = scored.embed(&[a, b])?;
                        Ok(f64::from(crate::model::cosine(&v[0], &v[1])))
                    })
                    .collect::<Result<Vec<f64>>>()?;
                quiz.score(&cosines)
            };
            (
                Some(answer(Encoder::Model)?),
                Some(answer(Encoder::Static)?),
            )
        }
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&Answered {
            quiz,
            model,
            baseline
        })?
    );
    Ok(())
}
