//! `Evaluation`: one benchmark run driven step by step from a worker, and the report helpers.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::data::{parse_sr_files, DataIntake};
use super::{js_error, js_error_of, to_js, Model};
use crate::error::{ErrorCode, ResultExt};
use crate::eval::{self, Encoder, EvalPlan, EvalRun, Split};
use crate::model::Work;
use crate::scoring::Scored;

/// One benchmark run, driven step by step from a worker so it can report progress and be
/// cancelled between steps.
#[wasm_bindgen]
pub struct Evaluation {
    split: Split,
    encoder: Encoder,
    data: DataIntake,
    run: Option<EvalRun>,
}

fn not_prepared(call: &str) -> JsValue {
    js_error_of(
        ErrorCode::BadRequest,
        format!("call prepare(model) before {call}()"),
    )
}

/// A chunk handed out for embedding elsewhere: its position in the run and its texts.
#[derive(Serialize)]
struct Chunk<'a> {
    start: usize,
    texts: Vec<&'a str>,
}

#[wasm_bindgen]
impl Evaluation {
    /// `split`: "quick" | "full"; `encoder`: "model" | "static" (the syntax-blind baseline).
    #[wasm_bindgen(constructor)]
    pub fn new(split: &str, encoder: &str) -> Result<Evaluation, JsValue> {
        Ok(Evaluation {
            split: split
                .parse()
                .code(ErrorCode::BadRequest)
                .map_err(js_error)?,
            encoder: encoder
                .parse()
                .code(ErrorCode::BadRequest)
                .map_err(js_error)?,
            data: DataIntake::default(),
            run: None,
        })
    }

    /// Adds one SR CSV (`name` one of stsb, sickr, askubuntu, cqa, twitter, biosses).
    pub fn add_sr_file(&mut self, name: &str, bytes: &[u8]) -> Result<(), JsValue> {
        self.data.add_sr_file(name, bytes)
    }

    /// Sets the STS-B test CSV (scored alongside SR).
    pub fn set_stsb_test(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        self.data.set_stsb_test(bytes)
    }

    /// Adds Czech News STS (`free-test.tsv`): scored whole, with the random annotator and
    /// the oracle bound in the report's `czech_news_sts` (as `sr-bench eval-czech`).
    pub fn set_czech_news_sts(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        self.data.set_czech(bytes)
    }

    /// Takes a user's own pairs file (CSV or TSV, STS or SR layout; `name` is quoted in
    /// errors, which name the line and column): the run then scores it alone, every row, into
    /// the report's `own_pairs`. Code `data` for a file that cannot be read.
    pub fn set_own_pairs(&mut self, name: &str, bytes: &[u8]) -> Result<(), JsValue> {
        self.data.set_own(name, bytes)
    }

    /// Plans the run; returns the number of unique sentences to embed.
    pub fn prepare(&mut self, model: &Model) -> Result<usize, JsValue> {
        let (sr_files, stsb_test) = self.data.take();
        let czech = self.data.take_czech();
        let benchmark_empty = sr_files.is_empty() && stsb_test.is_none();
        let plan = match (self.data.take_own(), czech, benchmark_empty) {
            (Some(own), _, _) => EvalPlan::own_only(own),
            (None, Some(czech), true) => EvalPlan::czech_only(czech),
            (None, Some(czech), false) => {
                EvalPlan::new(sr_files, stsb_test, self.split).map(|p| p.with_czech(czech))
            }
            (None, None, _) => EvalPlan::new(sr_files, stsb_test, self.split),
        }
        .code(ErrorCode::Data)
        .map_err(js_error)?;
        let run = EvalRun::new(plan, &Scored::new(model.embedder(), self.encoder));
        let total = run.progress().total;
        self.run = Some(run);
        Ok(total)
    }

    fn run_mut(&mut self, call: &str) -> Result<&mut EvalRun, JsValue> {
        self.run.as_mut().ok_or_else(|| not_prepared(call))
    }

    /// Embeds up to `max_sentences` more; returns how many are done so far.
    pub fn step(&mut self, model: &Model, max_sentences: usize) -> Result<usize, JsValue> {
        let encoder = Scored::new(model.embedder(), self.encoder);
        let progress = self
            .run_mut("step")?
            .step(&encoder, max_sentences)
            .map_err(js_error)?;
        Ok(progress.done)
    }

    /// For embedding elsewhere (a pool of workers, each with its own `Model`): hands out the
    /// next (up to) `max_sentences` sentences, longest first, as `{start, texts}`; `texts` is
    /// empty once all are handed out. Give the vectors back with `accept_embeddings(start, …)`,
    /// in any order. Drive a run either with `step` or with `next_chunk`/`accept_embeddings`.
    pub fn next_chunk(&mut self, max_sentences: usize) -> Result<JsValue, JsValue> {
        let (start, texts) = self
            .run_mut("next_chunk")?
            .claim(max_sentences)
            .map_err(js_error)?;
        to_js(&Chunk { start, texts })
    }

    /// `next_chunk` bounded by padded tokens too: at most `max_tokens` (the chunk's longest
    /// sentence × its size), so chunks of long and short texts cost about the same.
    pub fn next_chunk_within(
        &mut self,
        max_sentences: usize,
        max_tokens: usize,
    ) -> Result<JsValue, JsValue> {
        let (start, texts) = self
            .run_mut("next_chunk_within")?
            .claim_within(max_sentences, max_tokens)
            .map_err(js_error)?;
        to_js(&Chunk { start, texts })
    }

    /// Takes the embeddings (row-major `count × dim`, L2-normalised) of the chunk that
    /// `next_chunk` returned at `start`; returns how many sentences are done so far.
    pub fn accept_embeddings(
        &mut self,
        start: usize,
        count: usize,
        embeddings: &[f32],
    ) -> Result<usize, JsValue> {
        if count == 0 || !embeddings.len().is_multiple_of(count) || embeddings.is_empty() {
            return Err(js_error_of(
                ErrorCode::BadRequest,
                format!(
                    "accept_embeddings: {} values do not make {count} embeddings",
                    embeddings.len()
                ),
            ));
        }
        let dim = embeddings.len() / count;
        let vectors = embeddings.chunks(dim).map(<[f32]>::to_vec).collect();
        let progress = self
            .run_mut("accept_embeddings")?
            .accept(start, vectors)
            .map_err(js_error)?;
        Ok(progress.done)
    }

    /// The run's floating-point operations on `model` (its sentences in the model's
    /// length-sorted batches; chunks handed to helpers are cut from the same order, so their
    /// batches differ only at chunk edges; 0 for the syntax-blind baseline, which runs no
    /// layer): what the page's GFLOP/s figures divide.
    pub fn forward_flops(&self, model: &Model) -> Result<f64, JsValue> {
        let run = self
            .run
            .as_ref()
            .ok_or_else(|| not_prepared("forward_flops"))?;
        if self.encoder == Encoder::Static {
            return Ok(0.0);
        }
        let embedder = model.embedder();
        let lengths = run.sorted_lengths();
        Ok(Work::of_sorted_lengths(&embedder.info, embedder.batching(), &lengths).flops)
    }

    pub fn is_done(&self) -> bool {
        self.run.as_ref().is_some_and(EvalRun::is_done)
    }

    /// The report (the CLI's JSON schema, per-pair scores included), named and annotated by
    /// the same rule as the CLI's (`encoder`, `paper`); `prefix`: the text the model read
    /// before every input (`Model.info().prefix`), recorded for the model, never the baseline.
    pub fn finish(
        &mut self,
        model_name: &str,
        dtype: &str,
        prefix: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let run = self.run.take().ok_or_else(|| not_prepared("finish"))?;
        let mut report = run.finish().map_err(js_error)?;
        report.stamp(
            model_name,
            dtype,
            self.encoder,
            prefix.as_deref().unwrap_or_default(),
        );
        let json = serde_json::to_value(&report).map_err(|e| js_error_of(ErrorCode::Engine, e))?;
        to_js(&json)
    }
}

/// The per-pair CSV of a report (`file,dimension,line,sentence1,sentence2,gold,cosine`).
#[wasm_bindgen]
pub fn pairs_csv(report: JsValue) -> Result<String, JsValue> {
    let report: serde_json::Value = serde_wasm_bindgen::from_value(report)
        .map_err(|e| js_error_of(ErrorCode::BadRequest, format!("pairs_csv: {e}")))?;
    eval::pairs_csv_from_json(&report)
        .code(ErrorCode::BadRequest)
        .map_err(js_error)
}

/// `count` SR sentences spread over the six files (benchmarks).
#[wasm_bindgen]
pub fn sentence_sample(
    csvs: Vec<js_sys::Uint8Array>,
    count: usize,
) -> Result<Vec<String>, JsValue> {
    Ok(eval::sentence_sample(&parse_sr_files(&csvs)?, count))
}
