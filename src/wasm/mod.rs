//! The thin wasm-bindgen layer the web app calls: converts types, holds no logic.
//! Every failure becomes a JS `Error` with a plain message (no panics cross the boundary).

use js_sys::Float32Array;
use serde::Serialize;
use wasm_bindgen::prelude::*;

use std::rc::Rc;

use crate::backend::webgpu::{self, AutoEncoder, GpuOptions};
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
    /// The GPU encoder with its CPU fallback (models loaded with backend "gpu" or "auto").
    gpu: Option<Rc<AutoEncoder>>,
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
            gpu: None,
        })
    }

    /// Parses a model file for a backend: "cpu", "gpu" (WebGPU required) or "auto" (WebGPU
    /// when the browser gives an adapter, else the CPU; `backend_status()` says which and why).
    /// Returns a Promise of the Model. The GPU is used by the `*_async` methods.
    pub async fn load_with_backend(bytes: Vec<u8>, backend: String) -> Result<Model, JsError> {
        let kind: BackendKind = backend.parse().map_err(js_error)?;
        if kind == BackendKind::Cpu {
            return Model::load(bytes);
        }
        let (embedder, auto) = webgpu::load_embedder_async(bytes, kind, &GpuOptions::from_env())
            .await
            .map_err(js_error)?;
        Ok(Model {
            embedder,
            gpu: Some(auto),
        })
    }

    /// `{requested, active: "gpu"|"cpu", adapter: {name, backend, device_type, driver,
    /// software} | null, software_adapter, fallback_reason: string | null, notices: string[]}`;
    /// for a CPU-only model `{requested: "cpu", active: "cpu", adapter: null, …}`.
    pub fn backend_status(&self) -> Result<JsValue, JsError> {
        let status = match &self.gpu {
            Some(auto) => auto.status(),
            None => webgpu::BackendStatus {
                requested: "cpu".into(),
                active: "cpu".into(),
                adapter: None,
                software_adapter: false,
                fallback_reason: None,
                notices: vec![],
            },
        };
        status
            .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
            .map_err(|e| JsError::new(&e.to_string()))
    }

    /// Like `embed`, on the GPU (a Promise of the Float32Array); a GPU failure redoes the
    /// batch on the CPU (see `backend_status()`). CPU models answer from the CPU.
    pub async fn embed_async(&self, texts: Vec<String>) -> Result<Float32Array, JsError> {
        Ok(flatten(self.embed_texts_async(&texts).await?))
    }

    /// Like `similarity`, on the GPU (a Promise of the cosine).
    pub async fn similarity_async(&self, a: String, b: String) -> Result<f32, JsError> {
        let v = self.embed_texts_async(&[a, b]).await?;
        Ok(cosine(&v[0], &v[1]))
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

impl Model {
    async fn embed_texts_async(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, JsError> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        match &self.gpu {
            Some(auto) => auto
                .embed_async(self.embedder.tokenizer(), &refs, self.embedder.batching())
                .await
                .map_err(js_error),
            None => self.embedder.embed(&refs).map_err(js_error),
        }
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

    /// For embedding elsewhere (a pool of workers, each with its own `Model`): hands out the
    /// next (up to) `max_sentences` sentences, longest first, as `{start, texts}`; `texts` is
    /// empty once all are handed out. Give the vectors back with `accept_embeddings(start, …)`,
    /// in any order. Drive a run either with `step` or with `next_chunk`/`accept_embeddings`.
    pub fn next_chunk(&mut self, max_sentences: usize) -> Result<JsValue, JsError> {
        #[derive(Serialize)]
        struct Chunk<'a> {
            start: usize,
            texts: Vec<&'a str>,
        }
        let (start, texts) = self.run_mut()?.claim(max_sentences).map_err(js_error)?;
        serde_wasm_bindgen::to_value(&Chunk { start, texts })
            .map_err(|e| JsError::new(&e.to_string()))
    }

    /// Takes the embeddings (row-major `count × dim`, L2-normalised) of the chunk that
    /// `next_chunk` returned at `start`; returns how many sentences are done so far.
    pub fn accept_embeddings(
        &mut self,
        start: usize,
        count: usize,
        embeddings: &[f32],
    ) -> Result<usize, JsError> {
        if count == 0 || embeddings.len() % count != 0 || embeddings.is_empty() {
            return Err(JsError::new(&format!(
                "accept_embeddings: {} values do not make {count} embeddings",
                embeddings.len()
            )));
        }
        let dim = embeddings.len() / count;
        let vectors = embeddings.chunks(dim).map(<[f32]>::to_vec).collect();
        let progress = self.run_mut()?.accept(start, vectors).map_err(js_error)?;
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

/// Benchmarks only: this machine's wasm simd128 mul+add peak, GFLOP/s on one thread.
#[wasm_bindgen]
pub fn simd_peak_gflops(iterations: u64) -> f64 {
    crate::backend::cpu::peak::simd_mul_add_gflops(iterations, js_sys::Date::now)
}

/// Benchmarks only: GFLOP/s of the CPU backend's f32 and integer (q8_0) matrix products on an
/// `m×k · k×n` shape, as `[f32, q8_0]`.
#[wasm_bindgen]
pub fn matmul_gflops(m: usize, n: usize, k: usize, repeats: usize) -> Result<Vec<f64>, JsError> {
    let (dense, quant) =
        crate::backend::cpu::peak::matmul_gflops(m, n, k, repeats, js_sys::Date::now)
            .map_err(js_error)?;
    Ok(vec![dense, quant])
}
