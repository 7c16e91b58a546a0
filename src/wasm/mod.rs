//! The thin wasm-bindgen layer the web app calls: converts types, holds no logic.
//! Every failure becomes a JS `Error` with a plain `message` and the `code` Rust chose
//! ([`crate::error::ErrorCode`]; the page's `ERR` lists the same strings). No panic crosses
//! the boundary.

mod data;
mod evaluation;
mod explain;
mod model;
mod quiz;

pub use evaluation::{pairs_csv, sentence_sample, Evaluation};
pub use explain::{reverse_words, shuffle_words, swap_words, Probe};
pub use model::{estimate_worker_bytes, inspect_model, Model};
pub use quiz::QuizRun;

use js_sys::{Float32Array, Reflect};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::error::{code_of, ErrorCode};

/// An `Error` with `message` and `code` for the page.
fn js_error(e: anyhow::Error) -> JsValue {
    let error = js_sys::Error::new(&format!("{e:#}"));
    // Setting a property on a fresh Error cannot fail.
    let _ = Reflect::set(&error, &"code".into(), &code_of(&e).as_str().into());
    error.into()
}

/// A failure of this layer itself (serialization), with its code.
fn js_error_of(code: ErrorCode, message: impl std::fmt::Display) -> JsValue {
    js_error(crate::error::coded(code, message))
}

/// Plain JS objects (not Maps) for the page and its JSON exports.
fn to_js(value: &impl Serialize) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_error_of(ErrorCode::Engine, e))
}

fn flatten(vectors: Vec<Vec<f32>>) -> Float32Array {
    let flat: Vec<f32> = vectors.into_iter().flatten().collect();
    Float32Array::from(flat.as_slice())
}

#[wasm_bindgen(start)]
fn start() {
    // Only for bugs: every expected failure is returned as an Error.
    console_error_panic_hook::set_once();
}

/// Benchmarks only: this machine's wasm simd128 mul+add peak, GFLOP/s on one thread.
#[cfg(feature = "bench")]
#[wasm_bindgen]
pub fn simd_peak_gflops(iterations: u64) -> f64 {
    crate::backend::cpu::peak::simd_mul_add_gflops(iterations, js_sys::Date::now)
}

/// Benchmarks only: this machine's `i32x4.dot_i16x8_s` + add peak, G multiply-adds × 2 per
/// second on one thread (the 16-bit kernel's ceiling).
#[cfg(feature = "bench")]
#[wasm_bindgen]
pub fn int_dot_peak_gops(iterations: u64) -> f64 {
    crate::backend::cpu::peak::int_dot_gops(iterations, js_sys::Date::now)
}

/// Benchmarks only: GFLOP/s of the CPU backend's matrix products on an `m×k · k×n` shape, as
/// `[f32, int16 × q8_0]` (see `peak::matmul_gflops`).
#[cfg(feature = "bench")]
#[wasm_bindgen]
pub fn matmul_gflops(m: usize, n: usize, k: usize, repeats: usize) -> Result<Vec<f64>, JsValue> {
    crate::backend::cpu::peak::matmul_gflops(m, n, k, repeats, js_sys::Date::now)
        .map(|g| g.to_vec())
        .map_err(js_error)
}
