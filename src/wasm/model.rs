//! `Model`: a loaded sentence encoder for the page (CPU, or WebGPU with the CPU behind it).

use std::rc::Rc;

use js_sys::Float32Array;
use wasm_bindgen::prelude::*;

use super::{flatten, js_error, js_error_of, to_js};
use crate::backend::memory::{self, ModelShape};
use crate::backend::webgpu::{self, GpuOptions, GpuWithCpuFallback};
use crate::backend::{load_embedder_with_options, BackendKind, BackendStatus, MatmulMode};
use crate::error::ErrorCode;
use crate::model::{cosine, Embedder, LoadOptions, ModelFile};

/// A loaded sentence encoder.
#[wasm_bindgen]
pub struct Model {
    embedder: Embedder,
    /// The GPU encoder with its CPU fallback (models loaded with "webgpu" or "auto").
    gpu: Option<Rc<GpuWithCpuFallback>>,
}

#[wasm_bindgen]
impl Model {
    /// Parses a model file (ours or a llama.cpp BERT embedding GGUF) for the CPU.
    pub fn load(bytes: Vec<u8>) -> Result<Model, JsValue> {
        Model::load_with(bytes, None, None)
    }

    /// [`Model::load`] truncating texts at `max_seq_length` tokens instead of the file's value,
    /// and with `prefix` before every text instead of the file's ("" for none).
    pub fn load_with(
        bytes: Vec<u8>,
        max_seq_length: Option<usize>,
        prefix: Option<String>,
    ) -> Result<Model, JsValue> {
        let options = LoadOptions {
            max_seq_length,
            prefix,
            ..LoadOptions::default()
        };
        Ok(Model {
            embedder: load_embedder_with_options(bytes, BackendKind::Cpu, options)
                .map_err(js_error)?,
            gpu: None,
        })
    }

    /// Parses a model file for a backend: "cpu", "webgpu" (also "gpu") or "auto" (a Promise
    /// of the Model). Without a usable GPU, "auto" runs on the CPU; "webgpu" rejects unless
    /// `cpu_fallback` is true (the page), in which case it runs on the CPU too.
    /// `backend_status()` says which and why. The GPU is used by the `*_async` methods.
    pub async fn load_with_backend(
        bytes: Vec<u8>,
        backend: String,
        cpu_fallback: Option<bool>,
        max_seq_length: Option<usize>,
        prefix: Option<String>,
    ) -> Result<Model, JsValue> {
        let kind: BackendKind = backend.parse().map_err(js_error)?;
        if kind == BackendKind::Cpu {
            return Model::load_with(bytes, max_seq_length, prefix);
        }
        let options = LoadOptions {
            max_seq_length,
            prefix,
            ..LoadOptions::default()
        };
        let file = ModelFile::from_bytes_with(bytes, options).map_err(js_error)?;
        let matmul = MatmulMode::for_model(&file.info, &file.config);
        let fallback = kind.gpu_fallback(cpu_fallback.unwrap_or(false));
        let (embedder, gpu) =
            webgpu::embedder_from_file(file, kind, fallback, matmul, &GpuOptions::from_env())
                .await
                .map_err(js_error)?;
        Ok(Model {
            embedder,
            gpu: Some(gpu),
        })
    }

    /// `{requested: "cpu"|"webgpu"|"auto", active: "cpu"|"webgpu", adapter: {name, backend,
    /// device_type, driver, software, browser_info?} | null, software_adapter,
    /// fallback_reason: string | null, notices: string[]}`.
    pub fn backend_status(&self) -> Result<JsValue, JsValue> {
        let status = match &self.gpu {
            Some(gpu) => gpu.status(),
            None => BackendStatus::cpu_only(),
        };
        to_js(&status)
    }

    /// True when batches may run on the GPU: the caller then uses the `*_async` methods and
    /// never overlaps two of them.
    pub fn is_async(&self) -> bool {
        self.gpu.is_some()
    }

    /// Like `embed`, awaiting the GPU where the model has one (a Promise of the Float32Array);
    /// a GPU failure redoes the batch on the CPU (see `backend_status()`).
    pub async fn embed_async(&self, texts: Vec<String>) -> Result<Float32Array, JsValue> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(flatten(
            self.embedder.embed_async(&refs).await.map_err(js_error)?,
        ))
    }

    /// Like `similarity`, awaiting the GPU where the model has one (a Promise of the cosine).
    pub async fn similarity_async(&self, a: String, b: String) -> Result<f32, JsValue> {
        let v = self
            .embedder
            .embed_async(&[&a, &b])
            .await
            .map_err(js_error)?;
        Ok(cosine(&v[0], &v[1]))
    }

    /// Puts `prefix` before every text the model embeds from now on ("" for none): the
    /// page's prefix field. `info().prefix` then says so.
    pub fn set_prefix(&mut self, prefix: &str) -> Result<(), JsValue> {
        self.embedder.set_prefix(prefix).map_err(js_error)
    }

    /// `{name, architecture, dtype, dim, num_layers, intermediate_size, num_attention_heads,
    /// vocab_size, max_seq_length, prefix, pooling, …}`
    pub fn info(&self) -> Result<JsValue, JsValue> {
        to_js(&self.embedder.info)
    }

    /// Bytes one embedding helper (a wasm instance with this model) needs at its peak.
    pub fn estimate_worker_bytes(&self) -> f64 {
        memory::estimate_worker_bytes(&ModelShape::from(&self.embedder.info)) as f64
    }

    #[wasm_bindgen(getter)]
    pub fn dim(&self) -> usize {
        self.embedder.info.dim
    }

    /// Where batches run now: "cpu" or "webgpu".
    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> String {
        self.embedder.backend_name().to_string()
    }

    /// Row-major `texts.length × dim`, L2-normalised.
    pub fn embed(&self, texts: Vec<String>) -> Result<Float32Array, JsValue> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(flatten(self.embedder.embed(&refs).map_err(js_error)?))
    }

    /// The syntax-blind baseline's embeddings, same layout as `embed`.
    pub fn embed_static(&self, texts: Vec<String>) -> Result<Float32Array, JsValue> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(flatten(
            self.embedder.embed_static(&refs).map_err(js_error)?,
        ))
    }

    /// Cosine similarity of the model's embeddings of `a` and `b`.
    pub fn similarity(&self, a: &str, b: &str) -> Result<f32, JsValue> {
        let v = self.embedder.embed(&[a, b]).map_err(js_error)?;
        Ok(cosine(&v[0], &v[1]))
    }

    /// Cosine similarity of the syntax-blind baseline's embeddings of `a` and `b`.
    pub fn static_similarity(&self, a: &str, b: &str) -> Result<f32, JsValue> {
        let v = self.embedder.embed_static(&[a, b]).map_err(js_error)?;
        Ok(cosine(&v[0], &v[1]))
    }

    /// Floating-point operations of embedding `texts` in one `embed` call (its length-sorted
    /// batches): sentences/s × this / sentences is the GFLOP/s the benchmark rows print.
    pub fn forward_flops(&self, texts: Vec<String>) -> Result<f64, JsValue> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(self.embedder.work(&refs).map_err(js_error)?.flops)
    }

    /// Token count of a text after truncation (special tokens included).
    pub fn token_count(&self, text: &str) -> usize {
        self.embedder.token_count(text)
    }
}

impl Model {
    pub(super) fn embedder(&self) -> &Embedder {
        &self.embedder
    }
}

/// What a model file says about itself, from its first bytes (the header: 16 MB hold any
/// BERT-family vocabulary) and its total size, without loading it: `{info, worker_bytes}`
/// (`info` as `Model.info()`, `worker_bytes` as `estimate_worker_bytes`). Fails with the same
/// coded errors as loading (bad file, unsupported architecture or dtype).
#[wasm_bindgen]
pub fn inspect_model(
    prefix: &[u8],
    total_bytes: usize,
    max_seq_length: Option<usize>,
) -> Result<JsValue, JsValue> {
    #[derive(serde::Serialize)]
    struct Inspected {
        info: crate::model::ModelInfo,
        worker_bytes: f64,
    }
    let options = LoadOptions {
        max_seq_length,
        ..LoadOptions::default()
    };
    let info = ModelFile::inspect(prefix, total_bytes, options).map_err(js_error)?;
    let worker_bytes = memory::estimate_worker_bytes(&ModelShape::from(&info)) as f64;
    to_js(&Inspected { info, worker_bytes })
}

/// Bytes one embedding helper needs for a model described by `info` (the object
/// `Model.info()` returns, or `{dtype, dim, num_layers, intermediate_size, max_seq_length,
/// file_bytes}`), before any model is loaded.
#[wasm_bindgen]
pub fn estimate_worker_bytes(info: JsValue) -> Result<f64, JsValue> {
    let shape: ModelShape = serde_wasm_bindgen::from_value(info)
        .map_err(|e| js_error_of(ErrorCode::BadRequest, format!("model info: {e}")))?;
    Ok(memory::estimate_worker_bytes(&shape) as f64)
}
