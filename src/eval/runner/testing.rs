//! Test helpers other modules' tests borrow: a fake encoder and synthetic SR / STS-B files.

use std::cell::RefCell;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{run, EvalPlan, SentenceEncoder};
use crate::eval::data::{SrFile, SrRow, StsFile, StsPair, SR_FILES};
use crate::eval::report::Report;
use crate::eval::split::Split;

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

pub(crate) fn never() -> AtomicBool {
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

/// Two SR files and one STS-B test pair sharing sentences: ten unique sentences.
pub(crate) fn small_plan() -> EvalPlan {
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
