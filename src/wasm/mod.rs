//! The thin wasm-bindgen layer the web app calls: converts types, holds no logic.
//! Every failure becomes a JS `Error` with a plain message (no panics cross the boundary).

use js_sys::Float32Array;
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::backend::{load_embedder, BackendKind};
use crate::eval::{self, EvalPlan, EvalRun, SentenceEncoder, Split};
use crate::model::{cosine, Embedder, Representation};

fn js_error(e: anyhow::Error) -> JsError {
    JsError::new(&format!("{e:#}"))
}

#[wasm_bindgen(start)]
fn start() {
    // Only for bugs: every expected failure is returned as an Error.
    console_error_panic_hook::set_once();
}

/// A loaded sentence encoder.
#[wasm_bindgen]
pub struct Model {
    embedder: Embedder,
}

fn flatten(vectors: Vec<Vec<f32>>) -> Float32Array {
    let flat: Vec<f32> = vectors.into_iter().flatten().collect();
    Float32Array::from(flat.as_slice())
}

#[wasm_bindgen]
impl Model {
    /// Parses a model file (GGUF made by `sr-bench convert`).
    pub fn load(bytes: Vec<u8>) -> Result<Model, JsError> {
        Ok(Model {
            embedder: load_embedder(bytes, BackendKind::Cpu).map_err(js_error)?,
        })
    }

    /// `{name, architecture, dtype, dim, num_layers, vocab_size, max_seq_length, pooling, …}`
    pub fn info(&self) -> Result<JsValue, JsError> {
        serde_wasm_bindgen::to_value(&self.embedder.info).map_err(|e| JsError::new(&e.to_string()))
    }

    #[wasm_bindgen(getter)]
    pub fn dim(&self) -> usize {
        self.embedder.info.dim
    }

    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> String {
        self.embedder.backend_name().to_string()
    }

    /// Row-major `texts.length × dim`, L2-normalised.
    pub fn embed(&self, texts: Vec<String>) -> Result<Float32Array, JsError> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(flatten(self.embedder.embed(&refs).map_err(js_error)?))
    }

    /// The syntax-blind baseline's embeddings, same layout as `embed`.
    pub fn embed_static(&self, texts: Vec<String>) -> Result<Float32Array, JsError> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(flatten(
            self.embedder.embed_static(&refs).map_err(js_error)?,
        ))
    }

    /// Cosine similarity of the model's embeddings of `a` and `b`.
    pub fn similarity(&self, a: &str, b: &str) -> Result<f32, JsError> {
        pair_cosine(&self.embedder.as_encoder(Representation::Model), a, b)
    }

    /// Cosine similarity of the syntax-blind baseline's embeddings of `a` and `b`.
    pub fn static_similarity(&self, a: &str, b: &str) -> Result<f32, JsError> {
        pair_cosine(
            &self.embedder.as_encoder(Representation::StaticBaseline),
            a,
            b,
        )
    }

    /// Token count of a text after truncation (special tokens included).
    pub fn token_count(&self, text: &str) -> usize {
        self.embedder.token_count(text)
    }
}

fn pair_cosine(encoder: &dyn SentenceEncoder, a: &str, b: &str) -> Result<f32, JsError> {
    let v = encoder.embed(&[a, b]).map_err(js_error)?;
    Ok(cosine(&v[0], &v[1]))
}

/// One benchmark run, driven step by step from a worker so it can report progress and be
/// cancelled between steps.
#[wasm_bindgen]
pub struct Evaluation {
    split: Split,
    representation: Representation,
    sr_files: Vec<eval::SrFile>,
    stsb_test: Option<eval::StsFile>,
    run: Option<EvalRun>,
}

#[wasm_bindgen]
impl Evaluation {
    /// `split`: "quick" | "full"; `encoder`: "model" | "static" (the syntax-blind baseline).
    #[wasm_bindgen(constructor)]
    pub fn new(split: &str, encoder: &str) -> Result<Evaluation, JsError> {
        Ok(Evaluation {
            split: split.parse().map_err(js_error)?,
            representation: encoder.parse().map_err(js_error)?,
            sr_files: vec![],
            stsb_test: None,
            run: None,
        })
    }

    /// Adds one SR CSV (`name` one of stsb, sickr, askubuntu, cqa, twitter, biosses).
    pub fn add_sr_file(&mut self, name: &str, bytes: &[u8]) -> Result<(), JsError> {
        self.sr_files
            .push(eval::parse_sr(name, bytes).map_err(js_error)?);
        Ok(())
    }

    /// Sets the STS-B test CSV (scored alongside SR).
    pub fn set_stsb_test(&mut self, bytes: &[u8]) -> Result<(), JsError> {
        self.stsb_test = Some(eval::parse_stsb("stsb-en-test.csv", bytes).map_err(js_error)?);
        Ok(())
    }

    /// Plans the run; returns the number of unique sentences to embed.
    pub fn prepare(&mut self, model: &Model) -> Result<usize, JsError> {
        let plan = EvalPlan::new(
            std::mem::take(&mut self.sr_files),
            self.stsb_test.take(),
            self.split,
        )
        .map_err(js_error)?;
        let run = EvalRun::new(plan, &model.embedder.as_encoder(self.representation));
        let total = run.progress().total;
        self.run = Some(run);
        Ok(total)
    }

    fn run_mut(&mut self) -> Result<&mut EvalRun, JsError> {
        self.run
            .as_mut()
            .ok_or_else(|| JsError::new("call prepare(model) before step()"))
    }

    /// Embeds up to `max_sentences` more; returns how many are done so far.
    pub fn step(&mut self, model: &Model, max_sentences: usize) -> Result<usize, JsError> {
        let encoder = model.embedder.as_encoder(self.representation);
        let progress = self
            .run_mut()?
            .step(&encoder, max_sentences)
            .map_err(js_error)?;
        Ok(progress.done)
    }

    pub fn is_done(&self) -> bool {
        self.run.as_ref().is_some_and(EvalRun::is_done)
    }

    /// The report (the CLI's JSON schema, per-pair scores included).
    pub fn finish(&mut self, model_name: &str, dtype: &str) -> Result<JsValue, JsError> {
        let run = self
            .run
            .take()
            .ok_or_else(|| JsError::new("call prepare(model) before finish()"))?;
        let mut report = run.finish().map_err(js_error)?;
        report.model = model_name.to_string();
        report.dtype = dtype.to_string();
        let json = serde_json::to_value(&report).map_err(|e| JsError::new(&e.to_string()))?;
        json.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
            .map_err(|e| JsError::new(&e.to_string()))
    }
}

/// The throughput benchmark's workload: `count` unique SR sentences from the SR CSVs
/// (given in Table 4 order), the same sample `sr-bench bench` uses.
#[wasm_bindgen]
pub fn sentence_sample(
    csvs: Vec<js_sys::Uint8Array>,
    count: usize,
) -> Result<Vec<String>, JsError> {
    let files = csvs
        .iter()
        .zip(eval::SR_FILES)
        .map(|(bytes, name)| eval::parse_sr(name, &bytes.to_vec()))
        .collect::<anyhow::Result<Vec<_>>>()
        .map_err(js_error)?;
    Ok(eval::sentence_sample(&files, count))
}
