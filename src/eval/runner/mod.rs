//! The benchmark runner: one code path for the browser and the command line.
//!
//! [`EvalPlan`] gathers the pairs to score and the unique sentences they need. [`EvalRun`]
//! embeds those sentences a chunk at a time ([`EvalRun::step`]), so a Web Worker can yield to
//! its event loop between chunks and notice a cancel message; [`run()`] is the native loop over
//! the same steps. [`EvalRun::finish`] turns the embeddings into cosines and a
//! [`crate::eval::Report`].
//!
//! - `plan`: [`EvalPlan`], the pairs and their unique sentences.
//! - `run`: [`EvalRun`] (step, claim/accept, progress) and the native loop [`run()`].
//! - `score`: [`EvalRun::finish`], cosines to cells, pairs and the report.
//! - `testing` (tests only): the fake encoder and the synthetic files other modules' tests use.
//!
//! Memory: the run holds one f32 embedding per unique sentence (about 30k sentences for the
//! full SR benchmark with STS-B test and Czech: ~45 MB at 384 dimensions, ~90 MB at 768).

mod plan;
mod run;
mod score;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use std::fmt;

use anyhow::Result;
use serde::Serialize;

pub(crate) use plan::sort_sr_files;
pub use plan::EvalPlan;
pub use run::{run, EvalRun};
/// The runner's pair cosine (f64), shared with the probes so their scores match its own.
pub(crate) use score::cosine as cosine64;

/// Implemented by the model layer. Embeddings are L2-normalised.
pub trait SentenceEncoder {
    /// One embedding per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Grouping key for batching (the token count); sentences are embedded sorted by this key.
    fn length_key(&self, text: &str) -> usize;
}

/// How many of the run's unique sentences are embedded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Sentences embedded so far.
    pub done: usize,
    /// Unique sentences in the run.
    pub total: usize,
}

/// The error [`run()`] returns when its cancel flag is set; find it with
/// `err.downcast_ref::<Cancelled>()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// File label of STS-B test pairs in per-pair output.
pub const STSB_TEST_LABEL: &str = "stsb_test";
/// File label of Czech News STS pairs in per-pair output.
pub const CZECH_LABEL: &str = "czech_news_sts";
/// File label of a user's own pairs in per-pair output.
pub const OWN_LABEL: &str = "own_pairs";
/// Dimension label of the plain STS pairs (STS-B test, Czech) in per-pair output.
pub const SIMILARITY_LABEL: &str = "similarity";
