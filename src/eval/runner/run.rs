//! [`EvalRun`]: a run in progress, embedded by [`EvalRun::step`] or handed out with
//! [`EvalRun::claim`] / [`EvalRun::accept`]; [`run`] drives it natively.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context, Result};

use super::{Cancelled, EvalPlan, Progress, SentenceEncoder};
use crate::eval::report::Report;

/// A run in progress: owns its plan and the embeddings made so far (no borrows, so a
/// wasm-bindgen struct can hold it between calls).
#[derive(Debug, Clone)]
pub struct EvalRun {
    pub(super) plan: EvalPlan,
    /// Sentence ids in embedding order: by length key, ties in first-use order.
    pub(super) order: Vec<usize>,
    /// Each sentence id's length key (its token count for a model's encoder).
    keys: Vec<usize>,
    /// Embedding per sentence id; empty until embedded.
    pub(super) embeddings: Vec<Vec<f32>>,
    /// How many ids of `order` are embedded.
    pub(super) done: usize,
    /// Embedding size, known after the first step.
    dim: Option<usize>,
    /// Sentences handed out by [`EvalRun::claim`], counted from the long end of `order`.
    claimed: usize,
}

impl EvalRun {
    /// Starts a run: orders the plan's unique sentences by `encoder.length_key` (stable), so
    /// each chunk holds sentences of similar length and pads little.
    pub fn new(plan: EvalPlan, encoder: &dyn SentenceEncoder) -> Self {
        let keys: Vec<usize> = plan
            .sentences
            .iter()
            .map(|s| encoder.length_key(s))
            .collect();
        let mut order: Vec<usize> = (0..plan.sentences.len()).collect();
        order.sort_by_key(|&id| keys[id]);
        let embeddings = vec![Vec::new(); plan.sentences.len()];
        EvalRun {
            plan,
            order,
            keys,
            embeddings,
            done: 0,
            dim: None,
            claimed: 0,
        }
    }

    /// The sentences' length keys (token counts, for a model's encoder) in embedding order,
    /// ascending: what the run's work is counted from.
    pub fn sorted_lengths(&self) -> Vec<usize> {
        self.order.iter().map(|&id| self.keys[id]).collect()
    }

    /// Sentences embedded so far, of the total.
    pub fn progress(&self) -> Progress {
        Progress {
            done: self.done,
            total: self.order.len(),
        }
    }

    /// Whether every sentence is embedded (then [`EvalRun::finish`] may be called).
    pub fn is_done(&self) -> bool {
        self.done == self.order.len()
    }

    /// Embeds the next (up to) `max_sentences` sentences in one `embed` call. A no-op once
    /// done. Checks what the encoder returns: one finite vector per text, all of one size.
    pub fn step(
        &mut self,
        encoder: &dyn SentenceEncoder,
        max_sentences: usize,
    ) -> Result<Progress> {
        if max_sentences == 0 {
            bail!("step: max_sentences must be at least 1");
        }
        let end = (self.done + max_sentences).min(self.order.len());
        let ids = &self.order[self.done..end];
        if ids.is_empty() {
            return Ok(self.progress());
        }
        let texts: Vec<&str> = ids
            .iter()
            .map(|&id| self.plan.sentences[id].as_str())
            .collect();
        let vectors = encoder.embed(&texts).with_context(|| {
            format!(
                "embedding sentences {}..{} of {}",
                self.done,
                end,
                self.order.len()
            )
        })?;
        if vectors.len() != texts.len() {
            bail!(
                "the encoder returned {} embeddings for {} sentences",
                vectors.len(),
                texts.len()
            );
        }
        // The first chunk fixes the size; `vectors` is non-empty here.
        let expected_dim = self.dim.unwrap_or(vectors[0].len());
        self.store(self.done, vectors, expected_dim)?;
        self.done = end;
        Ok(self.progress())
    }

    /// Hands out the next (up to) `max_sentences` sentences for someone else to embed (a pool
    /// of workers, another engine): returns the chunk's position, to give back to
    /// [`EvalRun::accept`] with its embeddings, and its texts. Chunks are length-sorted and go
    /// out longest first, so the last chunks of a dynamically balanced pool are the short,
    /// quick ones. Chunks may be accepted in any order. Empty once everything is handed out.
    /// A run is driven either by [`EvalRun::step`] or by `claim`/`accept`, not both.
    pub fn claim(&mut self, max_sentences: usize) -> Result<(usize, Vec<&str>)> {
        if max_sentences == 0 {
            bail!("claim: max_sentences must be at least 1");
        }
        if self.done > self.claimed {
            bail!("claim: this run is being driven by step()");
        }
        let end = self.order.len() - self.claimed;
        let start = end.saturating_sub(max_sentences);
        self.claimed += end - start;
        let texts = self.order[start..end]
            .iter()
            .map(|&id| self.plan.sentences[id].as_str())
            .collect();
        Ok((start, texts))
    }

    /// [`EvalRun::claim`] bounded by padded tokens as well: the chunk's longest sentence (its
    /// first: chunks go out longest first) times the chunk's size stays within `max_tokens`,
    /// so a chunk of long texts is small and one of short texts large, each about the same
    /// work (at least one sentence, at most `max_sentences`).
    pub fn claim_within(
        &mut self,
        max_sentences: usize,
        max_tokens: usize,
    ) -> Result<(usize, Vec<&str>)> {
        if max_tokens == 0 {
            bail!("claim_within: max_tokens must be at least 1");
        }
        let end = self.order.len() - self.claimed;
        let fit = match end {
            0 => max_sentences,
            _ => (max_tokens / self.keys[self.order[end - 1]].max(1)).max(1),
        };
        self.claim(max_sentences.min(fit))
    }

    /// Sentences handed out by [`EvalRun::claim`] so far.
    pub fn claimed(&self) -> usize {
        self.claimed
    }

    /// Takes the embeddings of the chunk [`EvalRun::claim`] returned at `start`, one vector per
    /// text in the chunk's order, with the same checks as [`EvalRun::step`] (one finite vector
    /// per text, all of one size). Accepting a chunk twice, or one never claimed, is an error.
    pub fn accept(&mut self, start: usize, vectors: Vec<Vec<f32>>) -> Result<Progress> {
        let end = start
            .checked_add(vectors.len())
            .filter(|&end| end <= self.order.len())
            .with_context(|| format!("accept: sentences {start}.. are outside the run"))?;
        if start < self.order.len() - self.claimed {
            bail!("accept: sentences {start}..{end} were not claimed");
        }
        let ids = &self.order[start..end];
        if let Some(&id) = ids.iter().find(|&&id| !self.embeddings[id].is_empty()) {
            bail!(
                "accept: the embedding of {:?} was already given",
                self.plan.sentences[id]
            );
        }
        let expected_dim = match (self.dim, vectors.first()) {
            (Some(dim), _) => dim,
            (None, Some(first)) => first.len(),
            (None, None) => return Ok(self.progress()),
        };
        self.store(start, vectors, expected_dim)?;
        self.done += end - start;
        Ok(self.progress())
    }

    /// Checks the vectors of the sentences at `order[start..]` (one finite vector of
    /// `expected_dim` values per sentence) and keeps them; nothing is kept on an error.
    fn store(&mut self, start: usize, vectors: Vec<Vec<f32>>, expected_dim: usize) -> Result<()> {
        let ids = &self.order[start..start + vectors.len()];
        for (&id, vector) in ids.iter().zip(&vectors) {
            let text = &self.plan.sentences[id];
            if vector.is_empty() {
                bail!("the embedding of {text:?} is empty");
            }
            if vector.len() != expected_dim {
                bail!(
                    "the embedding of {text:?} has {} values, expected {expected_dim}",
                    vector.len()
                );
            }
            if !vector.iter().all(|v| v.is_finite()) {
                bail!("the embedding of {text:?} holds a NaN or infinite value");
            }
        }
        for (&id, vector) in ids.iter().zip(vectors) {
            self.embeddings[id] = vector;
        }
        self.dim = Some(expected_dim);
        Ok(())
    }
}

/// Runs a plan to the end natively: steps of `chunk` sentences, `on_progress` after each,
/// and `cancel` checked before each (a set flag returns the [`Cancelled`] error).
pub fn run(
    plan: EvalPlan,
    encoder: &dyn SentenceEncoder,
    chunk: usize,
    on_progress: &mut dyn FnMut(Progress),
    cancel: &AtomicBool,
) -> Result<Report> {
    let mut run = EvalRun::new(plan, encoder);
    while !run.is_done() {
        if cancel.load(Ordering::SeqCst) {
            return Err(Cancelled.into());
        }
        on_progress(run.step(encoder, chunk)?);
    }
    run.finish()
}
