//! The explainers for the page: token-pair maps, per-layer cosines, word-order edits, and the
//! step-driven probes of the benchmark panel (`Probe`).

use wasm_bindgen::prelude::*;

use super::data::DataIntake;
use super::{js_error, js_error_of, to_js, Model};
use crate::error::{ErrorCode, ResultExt};
use crate::eval::Split;
use crate::explain::{self, LayerProbe, ProbePairs, ShuffleProbe};

#[wasm_bindgen]
impl Model {
    /// The token-pair map of `a` (rows) and `b` (columns): `{cosine, pooling, kind:
    /// "contributions"|"token_cosine", encoder: "model", tokens_a, tokens_b, contributions,
    /// row_totals, column_totals, total, word_of_a, word_of_b, words: {same, by words}}`.
    /// For "contributions" the entries sum to `cosine` (mean pooling); other poolings give the
    /// token-to-token cosine matrix. Runs on the CPU (a GPU model uses its CPU backend).
    pub fn explain(&self, a: &str, b: &str) -> Result<JsValue, JsValue> {
        to_js(&explain::explain(self.embedder(), a, b).map_err(js_error)?)
    }

    /// The syntax-blind baseline's map (static token vectors, no special tokens), same shape.
    pub fn explain_static(&self, a: &str, b: &str) -> Result<JsValue, JsValue> {
        to_js(&explain::explain_static(self.embedder(), a, b).map_err(js_error)?)
    }

    /// The pair's cosine after each layer (layer 0 = the embedding output; the last equals
    /// `similarity` up to rounding), pooled as the model pools.
    pub fn layer_cosines(&self, a: &str, b: &str) -> Result<Vec<f64>, JsValue> {
        explain::layer_cosines(self.embedder(), a, b).map_err(js_error)
    }
}

/// The words of `text` (split on whitespace) in a random order fixed by `seed` (a safe integer).
#[wasm_bindgen]
pub fn shuffle_words(text: &str, seed: f64) -> Result<String, JsValue> {
    if !(seed >= 0.0 && seed.fract() == 0.0 && seed <= 9_007_199_254_740_991.0) {
        return Err(js_error_of(
            ErrorCode::BadRequest,
            format!("shuffle_words: the seed must be a non-negative integer, not {seed}"),
        ));
    }
    Ok(explain::shuffle_words(text, seed as u64))
}

/// The words of `text` in reverse order.
#[wasm_bindgen]
pub fn reverse_words(text: &str) -> String {
    explain::reverse_words(text)
}

/// `text` with its `i`-th and `j`-th words (0-based) exchanged.
#[wasm_bindgen]
pub fn swap_words(text: &str, i: usize, j: usize) -> Result<String, JsValue> {
    explain::swap_words(text, i, j)
        .code(ErrorCode::BadRequest)
        .map_err(js_error)
}

enum Running {
    Layers(LayerProbe),
    Shuffle(ShuffleProbe),
}

/// A probe for the benchmark panel, stepped from a worker: `new Probe(kind, split, seeds)`,
/// `add_sr_file` / `set_stsb_test`, `prepare()` → pairs, `step(model)` → pairs done (one
/// chunk of ≤ 64 pairs per call), `is_done()`, `finish(model)` → the CLI's JSON.
#[wasm_bindgen]
pub struct Probe {
    kind: String,
    split: Split,
    seeds: usize,
    data: DataIntake,
    running: Option<Running>,
}

fn not_prepared(call: &str) -> JsValue {
    js_error_of(
        ErrorCode::BadRequest,
        format!("call prepare() before {call}()"),
    )
}

#[wasm_bindgen]
impl Probe {
    /// `kind`: "layers" | "shuffle"; `split`: "quick" | "full" (SR rows); `seeds`: shuffle
    /// seeds 0..seeds (ignored for "layers").
    #[wasm_bindgen(constructor)]
    pub fn new(kind: &str, split: &str, seeds: usize) -> Result<Probe, JsValue> {
        if kind != "layers" && kind != "shuffle" {
            return Err(js_error_of(
                ErrorCode::BadRequest,
                format!("unknown probe '{kind}': expected layers or shuffle"),
            ));
        }
        Ok(Probe {
            kind: kind.to_string(),
            split: split
                .parse()
                .code(ErrorCode::BadRequest)
                .map_err(js_error)?,
            seeds,
            data: DataIntake::default(),
            running: None,
        })
    }

    /// Adds one SR CSV (`name` one of stsb, sickr, askubuntu, cqa, twitter, biosses); none for
    /// an STS-B-only shuffle probe.
    pub fn add_sr_file(&mut self, name: &str, bytes: &[u8]) -> Result<(), JsValue> {
        self.data.add_sr_file(name, bytes)
    }

    /// Sets the STS-B test CSV.
    pub fn set_stsb_test(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        self.data.set_stsb_test(bytes)
    }

    /// Plans the pairs; returns how many.
    pub fn prepare(&mut self) -> Result<usize, JsValue> {
        let (files, stsb_test) = self.data.take();
        let pairs = ProbePairs::new(files, stsb_test, self.split)
            .code(ErrorCode::Data)
            .map_err(js_error)?;
        let total = pairs.pairs.len();
        self.running = Some(if self.kind == "layers" {
            Running::Layers(LayerProbe::new(pairs))
        } else {
            Running::Shuffle(
                ShuffleProbe::new(pairs, self.seeds)
                    .code(ErrorCode::BadRequest)
                    .map_err(js_error)?,
            )
        });
        Ok(total)
    }

    /// Scores the next chunk of pairs; returns how many pairs are done.
    pub fn step(&mut self, model: &Model) -> Result<usize, JsValue> {
        let progress = match self.running.as_mut().ok_or_else(|| not_prepared("step"))? {
            Running::Layers(probe) => probe.step(model.embedder()),
            Running::Shuffle(probe) => probe.step(model.embedder()),
        };
        Ok(progress.map_err(js_error)?.done)
    }

    pub fn is_done(&self) -> bool {
        match &self.running {
            Some(Running::Layers(probe)) => probe.is_done(),
            Some(Running::Shuffle(probe)) => probe.is_done(),
            None => false,
        }
    }

    /// The result, as `sr-bench probe layers|shuffle --json` writes it.
    pub fn finish(&mut self, model: &Model) -> Result<JsValue, JsValue> {
        let json = match self.running.take().ok_or_else(|| not_prepared("finish"))? {
            Running::Layers(probe) => {
                serde_json::to_value(probe.finish(model.embedder()).map_err(js_error)?)
            }
            Running::Shuffle(probe) => {
                serde_json::to_value(probe.finish(model.embedder()).map_err(js_error)?)
            }
        };
        to_js(&json.map_err(|e| js_error_of(ErrorCode::Engine, e))?)
    }
}
