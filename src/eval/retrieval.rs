//! Retrieval from graded pairs: what fine-tuning on SR-style pairs may cost a model at search.
//!
//! STS-B test as a retrieval task: the corpus is every distinct sentence of its pairs; each
//! sentence of a pair scored ≥ 4 (of 5: "mostly equivalent" or better) is a query, and its
//! partners in such pairs are the relevant documents. A model ranks the whole corpus but the
//! query itself by cosine; nDCG@10 (binary gains, log₂ discount) and MRR@10 are averaged over
//! the queries. Every sentence outside the query's pairs competes, so a model that scores
//! near-paraphrases high but everything else higher fails here even where its Spearman is fine:
//! the trade the SR-style training may make.
//!
//! The ranking is also written in TREC format (`run`, `qrels`), so `trec_eval` or `pytrec_eval`
//! can check the figures (the tests do, to 1e-6). Ties are broken as trec_eval breaks them:
//! by document id, the larger first.

use std::cmp::Ordering;
use std::fmt::Write;

use serde::Serialize;

/// The ranking depth of both measures.
pub const DEPTH: usize = 10;
/// A partner is relevant when the pair's gold score is at least this (STS-B's 0–5 scale).
pub const MIN_GOLD: f64 = 4.0;

/// The measures of one retrieval set (fractions 0–1, as trec_eval prints them).
#[derive(Debug, Clone, Serialize)]
pub struct RetrievalScores {
    pub ndcg_at_10: f64,
    pub mrr_at_10: f64,
    /// Queries (sentences with at least one relevant partner).
    pub queries: usize,
    /// Distinct sentences ranked for each query (itself excluded).
    pub documents: usize,
    /// The gold score at which a partner counts as relevant.
    pub min_gold: f64,
    /// The ranking and judgements in TREC format, for `--trec`; not in the JSON.
    #[serde(skip)]
    pub trec: TrecFiles,
}

/// A TREC run (`qid Q0 docid rank score tag`, the top [`DEPTH`] per query) and its qrels
/// (`qid 0 docid 1`).
#[derive(Debug, Clone, Default)]
pub struct TrecFiles {
    pub run: String,
    pub qrels: String,
}

/// The report's `retrieval`: one entry per retrieval set evaluated.
#[derive(Debug, Clone, Serialize)]
pub struct RetrievalReport {
    /// STS-B test as retrieval (see the module's notes).
    pub stsb_test: RetrievalScores,
}

/// Scores the retrieval set made of `pairs` (sentence ids and gold scores): `score(a, b)` is
/// the model's similarity of sentences `a` and `b`. `None` when no pair reaches [`MIN_GOLD`].
pub fn evaluate(
    pairs: &[(usize, usize, f64)],
    score: impl Fn(usize, usize) -> f64,
) -> Option<RetrievalScores> {
    let mut documents: Vec<usize> = pairs.iter().flat_map(|&(a, b, _)| [a, b]).collect();
    documents.sort_unstable();
    documents.dedup();
    // Relevant partners per query, by position in `documents` (the TREC ids).
    let position = |id: usize| documents.binary_search(&id).expect("a pair's sentence");
    let mut relevant: Vec<Vec<usize>> = vec![Vec::new(); documents.len()];
    for &(a, b, gold) in pairs {
        let (a, b) = (position(a), position(b));
        if gold >= MIN_GOLD && a != b {
            relevant[a].push(b);
            relevant[b].push(a);
        }
    }
    let mut trec = TrecFiles::default();
    let (mut ndcg, mut rr, mut queries) = (0.0, 0.0, 0);
    for (q, rel) in relevant.iter_mut().enumerate() {
        if rel.is_empty() {
            continue;
        }
        rel.sort_unstable();
        rel.dedup();
        queries += 1;
        let top = top_k(q, documents.len(), |d| score(documents[q], documents[d]));
        let hits: Vec<bool> = top
            .iter()
            .map(|(d, _)| rel.binary_search(d).is_ok())
            .collect();
        ndcg += ndcg_at(&hits, rel.len());
        rr += hits
            .iter()
            .position(|&h| h)
            .map_or(0.0, |i| 1.0 / (i + 1) as f64);
        for (rank, (d, s)) in top.iter().enumerate() {
            let _ = writeln!(trec.run, "q{q} Q0 d{d} {} {s:.17e} sr-bench", rank + 1);
        }
        for d in rel.iter() {
            let _ = writeln!(trec.qrels, "q{q} 0 d{d} 1");
        }
    }
    (queries > 0).then(|| RetrievalScores {
        ndcg_at_10: ndcg / queries as f64,
        mrr_at_10: rr / queries as f64,
        queries,
        documents: documents.len() - 1,
        min_gold: MIN_GOLD,
        trec,
    })
}

/// The [`DEPTH`] best documents for query `q` among `0..n` (itself excluded), best first; ties
/// by TREC id as trec_eval orders them (`d10` before `d9`: string order, the larger first).
fn top_k(q: usize, n: usize, score: impl Fn(usize) -> f64) -> Vec<(usize, f64)> {
    let better = |a: &(usize, f64), b: &(usize, f64)| -> Ordering {
        b.1.total_cmp(&a.1)
            .then_with(|| format!("d{}", b.0).cmp(&format!("d{}", a.0)))
    };
    let mut top: Vec<(usize, f64)> = Vec::with_capacity(DEPTH + 1);
    for d in (0..n).filter(|&d| d != q) {
        let candidate = (d, score(d));
        if top.len() == DEPTH && better(&candidate, &top[DEPTH - 1]) != Ordering::Less {
            continue;
        }
        let at = top.partition_point(|t| better(t, &candidate) == Ordering::Less);
        top.insert(at, candidate);
        top.truncate(DEPTH);
    }
    top
}

/// nDCG of a ranking whose first entries are `hits`, with `relevant` relevant documents in
/// all: binary gains discounted by log₂(rank + 1), over the ideal ranking's.
fn ndcg_at(hits: &[bool], relevant: usize) -> f64 {
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 = hits
        .iter()
        .enumerate()
        .filter(|(_, &h)| h)
        .map(|(i, _)| discount(i))
        .sum();
    let ideal: f64 = (0..relevant.min(DEPTH)).map(discount).sum();
    dcg / ideal
}

#[cfg(test)]
mod tests;
