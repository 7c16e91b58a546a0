//! The benchmark runner: one code path for the browser and the command line.
//!
//! [`EvalPlan`] gathers the pairs to score and the unique sentences they need. [`EvalRun`]
//! embeds those sentences a chunk at a time ([`EvalRun::step`]), so a Web Worker can yield to
//! its event loop between chunks and notice a cancel message; [`run`] is the native loop over
//! the same steps. [`EvalRun::finish`] turns the embeddings into cosines and a [`Report`].
//!
//! Memory: the run holds one f32 embedding per unique sentence (about 30k sentences for the
//! full SR benchmark with STS-B test and Czech: ~45 MB at 384 dimensions, ~90 MB at 768).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::eval::czech::czech_report;
use crate::eval::data::{CzechFile, SrFile, StsFile, SR_FILES, SR_SCORE_MAX, STSB_SCORE_MAX};
use crate::eval::report::{Cell, Dimension, DimensionResults, PairResult, Report, SrResults};
use crate::eval::split::Split;

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

/// The error [`run`] returns when its cancel flag is set; find it with
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
/// Dimension label of the plain STS pairs (STS-B test, Czech) in per-pair output.
pub const SIMILARITY_LABEL: &str = "similarity";

/// Which result a pair counts towards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    /// Index into `EvalPlan::sr_names`, and the dimension.
    Sr(usize, Dimension),
    StsbTest,
    Czech,
}

/// One pair to score: two sentence ids and the gold score on its file's own scale.
#[derive(Debug, Clone)]
struct PlannedPair {
    group: Group,
    line: usize,
    left: usize,
    right: usize,
    gold: f64,
}

/// The pairs of a run and the unique sentences they need.
#[derive(Debug, Clone)]
pub struct EvalPlan {
    split: Split,
    /// SR files in Table 4 order.
    sr_names: Vec<String>,
    czech: Option<CzechFile>,
    sentences: Vec<String>,
    sentence_ids: HashMap<String, usize>,
    pairs: Vec<PlannedPair>,
}

impl EvalPlan {
    /// Plans the SR pairs (sentence1 with its structure variant and with its relation
    /// variant) of the rows `split` keeps, and all STS-B test pairs if given. SR files may be
    /// any subset of [`SR_FILES`], in any order (results follow Table 4's order); unknown or
    /// repeated names are errors, and so is a plan with nothing to evaluate.
    pub fn new(
        mut sr_files: Vec<SrFile>,
        stsb_test: Option<StsFile>,
        split: Split,
    ) -> Result<Self> {
        for (i, file) in sr_files.iter().enumerate() {
            if !SR_FILES.contains(&file.name.as_str()) {
                bail!(
                    "unknown SR file '{}': expected one of {}",
                    file.name,
                    SR_FILES.join(", ")
                );
            }
            if sr_files[..i].iter().any(|other| other.name == file.name) {
                bail!("SR file '{}' given twice", file.name);
            }
        }
        sr_files.sort_by_key(|file| SR_FILES.iter().position(|name| *name == file.name));

        let mut plan = EvalPlan {
            split,
            sr_names: sr_files.iter().map(|file| file.name.clone()).collect(),
            czech: None,
            sentences: Vec::new(),
            sentence_ids: HashMap::new(),
            pairs: Vec::new(),
        };
        let total_rows: usize = sr_files.iter().map(|file| file.rows.len()).sum();
        for (file_index, file) in sr_files.iter().enumerate() {
            let kept = split.rows(&file.name, file.rows.len(), total_rows);
            for dimension in [Dimension::Structure, Dimension::Relation] {
                for &row_index in &kept {
                    let row = &file.rows[row_index];
                    let (variant, gold) = match dimension {
                        Dimension::Structure => (&row.structure, row.structure_score),
                        Dimension::Relation => (&row.relation, row.relation_score),
                    };
                    let group = Group::Sr(file_index, dimension);
                    plan.add_pair(group, row.line, &row.sentence1, variant, gold);
                }
            }
        }
        if let Some(stsb) = &stsb_test {
            for pair in &stsb.pairs {
                let (s1, s2) = (&pair.sentence1, &pair.sentence2);
                plan.add_pair(Group::StsbTest, pair.line, s1, s2, pair.score);
            }
        }
        if plan.pairs.is_empty() {
            bail!("nothing to evaluate: no SR rows and no STS-B test pairs");
        }
        Ok(plan)
    }

    /// Adds the Czech News STS test set: its pairs are scored, and the report compares the
    /// model with a random human annotator and the oracle bound ([`crate::eval::czech`]).
    /// Always used whole, whatever the split.
    pub fn with_czech(mut self, czech: CzechFile) -> Self {
        for pair in &czech.pairs {
            let (s1, s2) = (&pair.sentence1, &pair.sentence2);
            self.add_pair(Group::Czech, pair.line, s1, s2, pair.mean_score);
        }
        self.czech = Some(czech);
        self
    }

    /// A plan of the Czech News STS test set alone (`sr-bench eval-czech`).
    pub fn czech_only(czech: CzechFile) -> Result<Self> {
        if czech.pairs.is_empty() {
            bail!("nothing to evaluate: {} has no pairs", czech.name);
        }
        let plan = EvalPlan {
            split: Split::Full,
            sr_names: Vec::new(),
            czech: None,
            sentences: Vec::new(),
            sentence_ids: HashMap::new(),
            pairs: Vec::new(),
        };
        Ok(plan.with_czech(czech))
    }

    /// The split this plan was made with.
    pub fn split(&self) -> Split {
        self.split
    }

    /// The SR files in the plan, in Table 4 order.
    pub fn sr_file_names(&self) -> &[String] {
        &self.sr_names
    }

    /// The unique sentences to embed, in first-use order.
    pub fn sentences(&self) -> &[String] {
        &self.sentences
    }

    /// Pairs to score across all files and dimensions.
    pub fn pair_count(&self) -> usize {
        self.pairs.len()
    }

    fn add_pair(&mut self, group: Group, line: usize, left: &str, right: &str, gold: f64) {
        let left = self.sentence_id(left);
        let right = self.sentence_id(right);
        self.pairs.push(PlannedPair {
            group,
            line,
            left,
            right,
            gold,
        });
    }

    /// The id of a sentence, adding it on first sight: each distinct text is embedded once.
    fn sentence_id(&mut self, text: &str) -> usize {
        if let Some(&id) = self.sentence_ids.get(text) {
            return id;
        }
        let id = self.sentences.len();
        self.sentences.push(text.to_string());
        self.sentence_ids.insert(text.to_string(), id);
        id
    }
}

/// A run in progress: owns its plan and the embeddings made so far (no borrows, so a
/// wasm-bindgen struct can hold it between calls).
#[derive(Debug, Clone)]
pub struct EvalRun {
    plan: EvalPlan,
    /// Sentence ids in embedding order: by length key, ties in first-use order.
    order: Vec<usize>,
    /// Embedding per sentence id; empty until embedded.
    embeddings: Vec<Vec<f32>>,
    /// How many ids of `order` are embedded.
    done: usize,
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
            embeddings,
            done: 0,
            dim: None,
            claimed: 0,
        }
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
        for (text, vector) in texts.iter().zip(&vectors) {
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
        self.done += end - start;
        Ok(self.progress())
    }

    /// Cosine per pair and all metrics. `model` and `dtype` of the report are left empty for
    /// the caller to set; `pairs` holds every pair (take it out to omit it from the JSON).
    /// Takes about half a second natively on the full benchmark, nearly all of it the
    /// bootstrap intervals.
    pub fn finish(self) -> Result<Report> {
        if !self.is_done() {
            bail!(
                "finish: only {} of {} sentences are embedded",
                self.done,
                self.order.len()
            );
        }
        let plan = &self.plan;
        let cosines = plan
            .pairs
            .iter()
            .map(|pair| {
                let cos = cosine(&self.embeddings[pair.left], &self.embeddings[pair.right]);
                if cos.is_finite() {
                    Ok(cos)
                } else {
                    let (a, b) = (&plan.sentences[pair.left], &plan.sentences[pair.right]);
                    bail!("cosine of {a:?} and {b:?} is undefined (a zero embedding)")
                }
            })
            .collect::<Result<Vec<f64>>>()?;

        // Gold and cosine of the pairs of one group, in plan order.
        let group_values = |group: Group| -> (Vec<f64>, Vec<f64>) {
            plan.pairs
                .iter()
                .zip(&cosines)
                .filter(|(pair, _)| pair.group == group)
                .map(|(pair, &cos)| (pair.gold, cos))
                .unzip()
        };
        let dimension_results = |dimension: Dimension| {
            let files = plan
                .sr_names
                .iter()
                .enumerate()
                .map(|(index, name)| {
                    let (gold, cos) = group_values(Group::Sr(index, dimension));
                    (name.clone(), Cell::compute(&gold, &cos, SR_SCORE_MAX))
                })
                .collect();
            DimensionResults::new(files)
        };
        let results = SrResults {
            structure: dimension_results(Dimension::Structure),
            relation: dimension_results(Dimension::Relation),
        };
        let has_stsb = plan.pairs.iter().any(|pair| pair.group == Group::StsbTest);
        let stsb_test = has_stsb.then(|| {
            let (gold, cos) = group_values(Group::StsbTest);
            Cell::compute(&gold, &cos, STSB_SCORE_MAX)
        });
        let czech_news_sts = match &plan.czech {
            Some(file) => Some(czech_report(file, &group_values(Group::Czech).1)?),
            None => None,
        };
        let pairs = plan
            .pairs
            .iter()
            .zip(&cosines)
            .map(|(pair, &cosine)| {
                let (file, dimension) = match pair.group {
                    Group::Sr(index, dimension) => {
                        (plan.sr_names[index].clone(), dimension.as_str())
                    }
                    Group::StsbTest => (STSB_TEST_LABEL.to_string(), SIMILARITY_LABEL),
                    Group::Czech => (CZECH_LABEL.to_string(), SIMILARITY_LABEL),
                };
                PairResult {
                    file,
                    dimension: dimension.to_string(),
                    line: pair.line,
                    sentence1: plan.sentences[pair.left].clone(),
                    sentence2: plan.sentences[pair.right].clone(),
                    gold: pair.gold,
                    cosine,
                }
            })
            .collect();
        Ok(Report {
            model: String::new(),
            dtype: String::new(),
            split: plan.split,
            results,
            stsb_test,
            czech_news_sts,
            pairs: Some(pairs),
        })
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
        if cancel.load(Ordering::Relaxed) {
            return Err(Cancelled.into());
        }
        on_progress(run.step(encoder, chunk)?);
    }
    run.finish()
}

/// Cosine similarity in f64. The embeddings are meant to be unit length already; dividing by
/// the norms anyway keeps quantised or slightly denormalised vectors exact.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    dot / (aa.sqrt() * bb.sqrt())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::eval::data::tests::{read_data, real_sr_files};
    use crate::eval::data::{parse_czech_sts, parse_stsb, SrRow, StsPair};
    use crate::eval::split::quick_row_count;
    use std::cell::RefCell;

    /// A bag-of-characters embedding: deterministic, cheap, and different for different
    /// texts, which is all the runner logic needs. Records every `embed` call.
    #[derive(Default)]
    pub(crate) struct FakeEncoder {
        pub(crate) calls: RefCell<Vec<Vec<String>>>,
    }

    impl FakeEncoder {
        pub(crate) fn vector(text: &str) -> Vec<f32> {
            let mut v = [0.0f32; 32];
            v[31] = 1.0;
            for c in text.chars() {
                v[c as usize % 31] += 1.0;
            }
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter().map(|x| x / norm).collect()
        }
    }

    impl SentenceEncoder for FakeEncoder {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            self.calls
                .borrow_mut()
                .push(texts.iter().map(|t| t.to_string()).collect());
            Ok(texts.iter().map(|t| Self::vector(t)).collect())
        }
        fn length_key(&self, text: &str) -> usize {
            text.chars().count()
        }
    }

    /// An SR file whose rows are (sentence1, relation, relation score, structure, structure score).
    pub(crate) fn sr_file(name: &str, rows: &[(&str, &str, f64, &str, f64)]) -> SrFile {
        SrFile {
            name: name.to_string(),
            rows: rows
                .iter()
                .enumerate()
                .map(|(i, &(s1, rel, rs, st, ss))| SrRow {
                    line: i + 2,
                    sentence1: s1.to_string(),
                    relation: rel.to_string(),
                    relation_score: rs,
                    structure: st.to_string(),
                    structure_score: ss,
                })
                .collect(),
        }
    }

    /// Rows whose variants get varied gold scores and texts, so every statistic is defined.
    pub(crate) fn varied_rows(count: usize) -> Vec<(String, String, f64, String, f64)> {
        (0..count)
            .map(|i| {
                (
                    format!("sentence number {i}"),
                    format!("number {i} sentence{}", "!".repeat(i % 4)),
                    (i % 6) as f64,
                    format!("sentence {i} number{}", "?".repeat(i % 3)),
                    ((i * 5) % 6) as f64,
                )
            })
            .collect()
    }

    pub(crate) fn varied_file(name: &str, count: usize) -> SrFile {
        let rows = varied_rows(count);
        let borrowed: Vec<_> = rows
            .iter()
            .map(|(a, b, c, d, e)| (a.as_str(), b.as_str(), *c, d.as_str(), *e))
            .collect();
        sr_file(name, &borrowed)
    }

    fn never() -> AtomicBool {
        AtomicBool::new(false)
    }

    /// A report of the fake encoder over `files` (and STS-B test pairs, if any).
    pub(crate) fn fake_report(files: Vec<SrFile>, stsb_test: Option<StsFile>) -> Report {
        let plan = EvalPlan::new(files, stsb_test, Split::Full).unwrap();
        run(plan, &FakeEncoder::default(), 64, &mut |_| {}, &never()).unwrap()
    }

    /// Twenty varied rows in each of the six SR files.
    pub(crate) fn six_varied_files() -> Vec<SrFile> {
        SR_FILES.iter().map(|name| varied_file(name, 20)).collect()
    }

    /// STS-B test pairs made of the varied rows' texts.
    pub(crate) fn varied_stsb(count: usize) -> StsFile {
        StsFile {
            name: "stsb-en-test".into(),
            pairs: varied_rows(count)
                .into_iter()
                .enumerate()
                .map(|(i, (a, b, score, _, _))| StsPair {
                    line: i + 1,
                    sentence1: a,
                    sentence2: b,
                    score,
                })
                .collect(),
        }
    }

    fn small_plan() -> EvalPlan {
        // "a b" appears as sentence1 twice and as a structure variant once: one embedding.
        let sickr = sr_file(
            "sickr",
            &[
                ("a b", "b a", 1.0, "b, a", 4.0),
                ("a b", "ab", 2.0, "a  b", 5.0),
                ("c d e", "e d c", 0.0, "a b", 3.0),
            ],
        );
        let stsb = sr_file("stsb", &[("x y", "y x", 2.0, "x, y", 5.0)]);
        let stsb_test = StsFile {
            name: "stsb-en-test".into(),
            pairs: vec![StsPair {
                line: 1,
                sentence1: "x y".into(),
                sentence2: "a b".into(),
                score: 0.5,
            }],
        };
        EvalPlan::new(vec![sickr, stsb], Some(stsb_test), Split::Full).unwrap()
    }

    #[test]
    fn plan_collects_unique_sentences_across_all_pairs() {
        let plan = small_plan();
        // Files in Table 4 order whatever the input order.
        assert_eq!(plan.sr_file_names(), ["stsb", "sickr"]);
        assert_eq!(
            plan.sentences(),
            ["x y", "x, y", "y x", "a b", "b, a", "a  b", "c d e", "b a", "ab", "e d c"]
        );
        assert_eq!(plan.pair_count(), 2 * 4 + 1);
    }

    #[test]
    fn each_unique_sentence_is_embedded_once_in_length_order() {
        let encoder = FakeEncoder::default();
        let plan = small_plan();
        let unique = plan.sentences().len();
        let mut seen = Vec::new();
        let report = run(plan, &encoder, 3, &mut |p| seen.push(p), &never()).unwrap();
        let calls = encoder.calls.borrow();
        let embedded: Vec<&String> = calls.iter().flatten().collect();
        assert_eq!(embedded.len(), unique);
        let mut distinct = embedded.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), unique);
        // Sorted by length key; equal keys keep first-use order ("x y" before "y x" before "a b").
        let order: Vec<&str> = embedded.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            order,
            ["ab", "x y", "y x", "a b", "b a", "x, y", "b, a", "a  b", "c d e", "e d c"]
        );
        assert_eq!(calls.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 3, 1]);
        assert_eq!(
            seen.iter().map(|p| (p.done, p.total)).collect::<Vec<_>>(),
            [(3, 10), (6, 10), (9, 10), (10, 10)]
        );
        assert_eq!(report.pairs.as_ref().unwrap().len(), 9);
    }

    #[test]
    fn cosines_come_back_to_their_own_pairs() {
        let report = run(
            small_plan(),
            &FakeEncoder::default(),
            4,
            &mut |_| {},
            &never(),
        )
        .unwrap();
        let pairs = report.pairs.unwrap();
        let labels: Vec<(&str, &str, usize)> = pairs
            .iter()
            .map(|p| (p.file.as_str(), p.dimension.as_str(), p.line))
            .collect();
        assert_eq!(
            labels,
            [
                ("stsb", "structure", 2),
                ("stsb", "relation", 2),
                ("sickr", "structure", 2),
                ("sickr", "structure", 3),
                ("sickr", "structure", 4),
                ("sickr", "relation", 2),
                ("sickr", "relation", 3),
                ("sickr", "relation", 4),
                ("stsb_test", "similarity", 1),
            ]
        );
        assert_eq!(pairs[4].sentence1, "c d e");
        assert_eq!(pairs[4].sentence2, "a b");
        assert_eq!(pairs[4].gold, 3.0);
        for pair in &pairs {
            let expected = cosine(
                &FakeEncoder::vector(&pair.sentence1),
                &FakeEncoder::vector(&pair.sentence2),
            );
            assert_eq!(pair.cosine, expected, "{pair:?}");
        }
        assert_eq!(report.results.structure.get("sickr").unwrap().n, 3);
        assert_eq!(report.stsb_test.unwrap().n, 1);
    }

    #[test]
    fn report_cells_use_the_metrics_on_their_own_pairs() {
        let files = vec![varied_file("cqa", 40), varied_file("twitter", 30)];
        let report = run(
            EvalPlan::new(files, None, Split::Full).unwrap(),
            &FakeEncoder::default(),
            16,
            &mut |_| {},
            &never(),
        )
        .unwrap();
        let pairs = report.pairs.as_ref().unwrap();
        let of = |file: &str, dim: &str| -> (Vec<f64>, Vec<f64>) {
            pairs
                .iter()
                .filter(|p| p.file == file && p.dimension == dim)
                .map(|p| (p.gold, p.cosine))
                .unzip()
        };
        let (gold, cos) = of("twitter", "relation");
        let cell = report.results.relation.get("twitter").unwrap();
        assert_eq!(cell.n, 30);
        assert_eq!(
            cell.spearman,
            (crate::eval::metrics::spearman(&gold, &cos) * 10000.0).round() / 100.0
        );
        let (gold_s, cos_s) = of("cqa", "structure");
        let expected = Cell::compute(&gold_s, &cos_s, SR_SCORE_MAX);
        assert_eq!(report.results.structure.get("cqa"), Some(&expected));
        assert!(report.stsb_test.is_none());
    }

    #[test]
    fn cancel_stops_before_the_next_step() {
        let encoder = FakeEncoder::default();
        let cancel = AtomicBool::new(false);
        let mut steps = 0;
        let err = run(
            small_plan(),
            &encoder,
            2,
            &mut |_| {
                steps += 1;
                cancel.store(true, Ordering::Relaxed);
            },
            &cancel,
        )
        .unwrap_err();
        assert!(err.downcast_ref::<Cancelled>().is_some());
        assert_eq!(err.to_string(), "cancelled");
        assert_eq!(steps, 1);
        assert_eq!(encoder.calls.borrow().len(), 1);
    }

    #[test]
    fn step_api_is_resumable_and_finish_waits_for_the_end() {
        let encoder = FakeEncoder::default();
        let mut run = EvalRun::new(small_plan(), &encoder);
        assert_eq!(run.progress(), Progress { done: 0, total: 10 });
        assert_eq!(
            run.step(&encoder, 7).unwrap(),
            Progress { done: 7, total: 10 }
        );
        assert!(!run.is_done());
        let err = run.clone().finish().unwrap_err().to_string();
        assert_eq!(err, "finish: only 7 of 10 sentences are embedded");
        assert!(run.step(&encoder, 0).is_err());
        assert_eq!(
            run.step(&encoder, 100).unwrap(),
            Progress {
                done: 10,
                total: 10
            }
        );
        assert!(run.is_done());
        // Stepping a finished run changes nothing and calls nobody.
        assert_eq!(
            run.step(&encoder, 5).unwrap(),
            Progress {
                done: 10,
                total: 10
            }
        );
        assert_eq!(encoder.calls.borrow().len(), 2);
        assert!(run.finish().is_ok());
    }

    #[test]
    fn claim_accept_in_any_order_equals_step() {
        let encoder = FakeEncoder::default();
        let mut stepped = EvalRun::new(small_plan(), &encoder);
        while !stepped.is_done() {
            stepped.step(&encoder, 3).unwrap();
        }
        let want = serde_json::to_value(stepped.finish().unwrap()).unwrap();

        let mut run = EvalRun::new(small_plan(), &encoder);
        let mut chunks = Vec::new();
        loop {
            let (start, texts) = run.claim(4).unwrap();
            if texts.is_empty() {
                break;
            }
            let vectors: Vec<Vec<f32>> = texts.iter().map(|t| FakeEncoder::vector(t)).collect();
            chunks.push((start, vectors));
        }
        assert_eq!(run.claimed(), 10);
        // Longest first: the first chunk is the end of the length order.
        assert_eq!(chunks[0].0, 6);
        assert!(
            run.accept(0, vec![vec![1.0; 32]; 20]).is_err(),
            "outside the run"
        );
        chunks.reverse();
        let (start, vectors) = chunks.pop().unwrap();
        assert_eq!(run.accept(start, vectors.clone()).unwrap().done, 4);
        assert!(run.accept(start, vectors).is_err(), "accepted twice");
        for (start, vectors) in chunks {
            run.accept(start, vectors).unwrap();
        }
        assert!(run.is_done());
        let got = serde_json::to_value(run.finish().unwrap()).unwrap();
        assert_eq!(got, want);

        // A run driven by step() cannot be claimed from, and claims are checked.
        let mut run = EvalRun::new(small_plan(), &encoder);
        run.step(&encoder, 2).unwrap();
        assert!(run.claim(2).is_err());
        let mut run = EvalRun::new(small_plan(), &encoder);
        assert!(run.claim(0).is_err());
        assert!(run.accept(0, vec![vec![1.0; 32]]).is_err(), "not claimed");
    }

    /// An encoder that returns whatever it is told to.
    struct BrokenEncoder(fn(&[&str]) -> Vec<Vec<f32>>);

    impl SentenceEncoder for BrokenEncoder {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok((self.0)(texts))
        }
        fn length_key(&self, _: &str) -> usize {
            0
        }
    }

    fn step_error(encoder: BrokenEncoder) -> String {
        let mut run = EvalRun::new(small_plan(), &encoder);
        format!("{:#}", run.step(&encoder, 100).unwrap_err())
    }

    #[test]
    fn encoder_output_is_checked() {
        let err = step_error(BrokenEncoder(|texts| vec![vec![1.0]; texts.len() - 1]));
        assert_eq!(err, "the encoder returned 9 embeddings for 10 sentences");
        let err = step_error(BrokenEncoder(|texts| {
            (0..texts.len()).map(|i| vec![1.0; 2 + i / 9]).collect()
        }));
        assert_eq!(err, "the embedding of \"e d c\" has 3 values, expected 2");
        let err = step_error(BrokenEncoder(|texts| {
            vec![vec![f32::NAN, 1.0]; texts.len()]
        }));
        assert_eq!(
            err,
            "the embedding of \"x y\" holds a NaN or infinite value"
        );
        let err = step_error(BrokenEncoder(|texts| vec![Vec::new(); texts.len()]));
        assert_eq!(err, "the embedding of \"x y\" is empty");
    }

    #[test]
    fn embedding_size_must_stay_the_same_across_steps() {
        struct Growing(RefCell<usize>);
        impl SentenceEncoder for Growing {
            fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
                *self.0.borrow_mut() += 1;
                Ok(vec![vec![1.0; *self.0.borrow()]; texts.len()])
            }
            fn length_key(&self, _: &str) -> usize {
                0
            }
        }
        let encoder = Growing(RefCell::new(0));
        let mut run = EvalRun::new(small_plan(), &encoder);
        run.step(&encoder, 5).unwrap();
        let err = run.step(&encoder, 5).unwrap_err().to_string();
        assert!(err.ends_with("has 2 values, expected 1"), "{err}");
    }

    #[test]
    fn encoder_errors_and_zero_vectors_are_reported() {
        struct Failing;
        impl SentenceEncoder for Failing {
            fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>> {
                bail!("out of memory")
            }
            fn length_key(&self, _: &str) -> usize {
                0
            }
        }
        let err = run(small_plan(), &Failing, 4, &mut |_| {}, &never()).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "embedding sentences 0..4 of 10: out of memory"
        );
        let zeros = BrokenEncoder(|texts| vec![vec![0.0, 0.0]; texts.len()]);
        let err = run(small_plan(), &zeros, 4, &mut |_| {}, &never()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cosine of \"x y\" and \"x, y\" is undefined (a zero embedding)"
        );
    }

    #[test]
    fn plan_rejects_unknown_repeated_and_empty_inputs() {
        let err = |files, stsb| {
            EvalPlan::new(files, stsb, Split::Full)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(vec![varied_file("sts", 3)], None),
            "unknown SR file 'sts': expected one of stsb, sickr, askubuntu, cqa, twitter, biosses"
        );
        assert_eq!(
            err(vec![varied_file("cqa", 3), varied_file("cqa", 3)], None),
            "SR file 'cqa' given twice"
        );
        assert_eq!(
            err(Vec::new(), None),
            "nothing to evaluate: no SR rows and no STS-B test pairs"
        );
    }

    #[test]
    fn quick_plan_takes_the_quick_rows_of_both_dimensions() {
        let files = vec![varied_file("sickr", 6000), varied_file("biosses", 30)];
        let plan = EvalPlan::new(files, None, Split::Quick).unwrap();
        assert_eq!(plan.split(), Split::Quick);
        // sickr: round(1000 * 6000 / 6030) = 995; biosses: round(4.98) = 5, raised to 20.
        assert_eq!(quick_row_count(6000, 6030), 995);
        assert_eq!(quick_row_count(30, 6030), 20);
        assert_eq!(plan.pair_count(), 2 * (995 + 20));
    }

    #[test]
    fn full_real_benchmark_plan_and_run() {
        let stsb = parse_stsb("stsb-en-test", &read_data("stsb/stsb-en-test.csv")).unwrap();
        let czech =
            parse_czech_sts("free-test.tsv", &read_data("czech-news-sts/free-test.tsv")).unwrap();
        let plan = EvalPlan::new(real_sr_files(), Some(stsb), Split::Full)
            .unwrap()
            .with_czech(czech);
        assert_eq!(plan.pair_count(), 2 * 9289 + 1379 + 1200);
        let unique = plan.sentences().len();
        let encoder = FakeEncoder::default();
        let report = run(plan, &encoder, 256, &mut |_| {}, &never()).unwrap();
        assert_eq!(
            encoder.calls.borrow().iter().map(Vec::len).sum::<usize>(),
            unique
        );
        let counts: Vec<usize> = report
            .results
            .relation
            .files
            .iter()
            .map(|(_, c)| c.n)
            .collect();
        assert_eq!(counts, [1152, 3854, 334, 1820, 2041, 88]);
        assert_eq!(report.stsb_test.as_ref().unwrap().n, 1379);
        assert_eq!(report.czech_news_sts.as_ref().unwrap().n, 1200);

        let quick = EvalPlan::new(real_sr_files(), None, Split::Quick).unwrap();
        assert_eq!(quick.pair_count(), 2 * 1011);
    }
}
