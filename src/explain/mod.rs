//! Why a model scores what it scores: token-pair contributions, word-order edits and probes,
//! and a layer-by-layer view. Library code shared by the CLI (`explain`, `probe`) and the page
//! (wasm): the probes are stepped a chunk at a time, like the benchmark's `EvalRun`.
//!
//! - [`contributions`]: [`explain`] / [`explain_static`] → [`Explanation`].
//! - [`words`]: [`shuffle_words`], [`reverse_words`], [`swap_words`].
//! - [`pairs`]: the pairs a probe scores, in chunks; per-result Spearman.
//! - [`layers`]: [`LayerProbe`] (Spearman per layer), [`layer_cosines`].
//! - [`shuffle`]: [`ShuffleProbe`] (STS-B and SR with shuffled words).

pub mod contributions;
pub mod layers;
pub mod pairs;
pub mod shuffle;
pub mod words;

pub use contributions::{explain, explain_static, Explanation, CONTRIBUTIONS, TOKEN_COSINE};
pub use layers::{layer_cosines, LayerProbe, LayerReport, LayerScores};
pub use pairs::{ProbePairs, ProbeProgress};
pub use shuffle::{ShuffleProbe, ShuffleReport};
pub use words::{pair_seed, reverse_words, shuffle_words, swap_words};
