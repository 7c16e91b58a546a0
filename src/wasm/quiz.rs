//! The page's quiz ([`crate::eval::quiz`]): drawn here from the data bytes the engine fetched,
//! scored here from the cosines the engine computed, so the page draws and marks exactly as
//! `sr-bench quiz` does.

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::data::parse_sr_files;
use super::{js_error, to_js};
use crate::error::{ErrorCode, ResultExt};
use crate::eval::{self, quiz};

/// A drawn quiz.
#[wasm_bindgen]
pub struct QuizRun {
    quiz: quiz::Quiz,
}

#[wasm_bindgen]
impl QuizRun {
    /// `set` "sr" (`files`: the six SR CSVs in `SR_FILES` order) or "czech" (`files`: the
    /// Czech News STS test TSV); `seed` as in the page's link.
    #[wasm_bindgen(constructor)]
    pub fn new(
        set: &str,
        seed: u32,
        questions: usize,
        min_gap: f64,
        files: Vec<Uint8Array>,
    ) -> Result<QuizRun, JsValue> {
        let set: quiz::QuizSet = set.parse().code(ErrorCode::BadRequest).map_err(js_error)?;
        let seed = u64::from(seed);
        let drawn = match set {
            quiz::QuizSet::Sr => quiz::draw_sr(&parse_sr_files(&files)?, seed, questions, min_gap),
            quiz::QuizSet::Czech => {
                let bytes = files.first().map(Uint8Array::to_vec).unwrap_or_default();
                let file = eval::parse_czech_sts("czech-news-sts/free-test.tsv", &bytes)
                    .code(ErrorCode::Data)
                    .map_err(js_error)?;
                quiz::draw_czech(&file, seed, questions, min_gap)
            }
        };
        let quiz = drawn.code(ErrorCode::BadRequest).map_err(js_error)?;
        Ok(QuizRun { quiz })
    }

    /// The quiz as `sr-bench quiz` prints it (without answers).
    pub fn quiz(&self) -> Result<JsValue, JsValue> {
        to_js(&self.quiz)
    }

    /// The texts to score, `[a, b, a, b, …]`: two pairs per question in the order shown.
    pub fn texts(&self) -> Vec<String> {
        self.quiz
            .pairs()
            .into_iter()
            .flat_map(|(a, b)| [a.to_owned(), b.to_owned()])
            .collect()
    }

    /// An encoder's answers from its cosine of each pair of [`QuizRun::texts`].
    pub fn score(&self, cosines: Vec<f64>) -> Result<JsValue, JsValue> {
        let score = self
            .quiz
            .score(&cosines)
            .code(ErrorCode::BadRequest)
            .map_err(js_error)?;
        to_js(&score)
    }
}
