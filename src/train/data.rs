//! What `sr-bench train` learns from, without leaks: STS-B train, the SR-style pairs of the
//! paper's §4.2 and the shuffled sentences of §4.1, or a file of the user's, each cleaned of
//! every pair that shares a text with a test set we report.
//!
//! The split is fixed: SR-style pairs come from SICK-R and CQA (their rows' relational and
//! structural variants with the gold scores); the benchmark reports SR on the other four files
//! (STS-B, AskUbuntu, Twitter, BIOSSES) and STS-B test. SR's stsb.csv is built from STS-B
//! sentences and STS-B's own splits share sentences (257 texts of train are in test), so a
//! training pair is dropped when either text occurs in a reported set.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::eval::{
    check_pairs_size, parse_pairs, parse_sr, parse_stsb, sr_path, OwnPairs, SrFile, StsFile,
    STSB_SCORE_MAX, STSB_TEST_PATH,
};
use crate::explain::shuffle_words;

/// STS-B train, where `build.sh` puts it.
pub const STSB_TRAIN_PATH: &str = "stsb/stsb-en-train.csv";
/// STS-B dev: the checkpoint of the epoch that scores best on it is kept.
pub const STSB_DEV_PATH: &str = "stsb/stsb-en-dev.csv";
/// The SR files whose rows become SR-style training pairs (§4.2).
pub const AUGMENT_FROM: [&str; 2] = ["sickr", "cqa"];
/// The SR files reported after training (never trained on).
pub const HELD_OUT: [&str; 4] = ["stsb", "askubuntu", "twitter", "biosses"];

/// The training data a run asks for (`--train`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrainData {
    /// STS-B train: the control.
    Stsb,
    /// STS-B train plus the SR-style pairs of [`AUGMENT_FROM`] (§4.2).
    StsbSr,
    /// STS-B train with sentence 2's words shuffled, seeded (§4.1).
    StsbShuffled,
    /// A file in the STS layout (or the SR files' layout), scores 0–5.
    File(String),
}

impl TrainData {
    /// `stsb`, `stsb+sr`, `stsb-shuffled`, or a file's path.
    pub fn parse(text: &str) -> Self {
        match text {
            "stsb" => Self::Stsb,
            "stsb+sr" => Self::StsbSr,
            "stsb-shuffled" => Self::StsbShuffled,
            path => Self::File(path.to_string()),
        }
    }

    /// The name recorded in the file and the log.
    pub fn name(&self) -> String {
        match self {
            Self::Stsb => "stsb".into(),
            Self::StsbSr => "stsb+sr".into(),
            Self::StsbShuffled => "stsb-shuffled".into(),
            Self::File(path) => format!(
                "file:{}",
                Path::new(path)
                    .file_name()
                    .map_or(path.as_str().into(), |n| n.to_string_lossy())
            ),
        }
    }
}

/// One training pair: two texts and the label the cosine is pulled towards (score / 5).
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub text_a: String,
    pub text_b: String,
    pub label: f64,
}

/// The training pairs, with what was dropped for sharing a text with a reported test set.
#[derive(Debug, Clone)]
pub struct TrainingSet {
    pub pairs: Vec<Pair>,
    /// Pairs dropped because a text occurs in a reported test set.
    pub dropped: usize,
}

fn read(data: &Path, relative: &str) -> Result<Vec<u8>> {
    let path = data.join(relative);
    std::fs::read(&path).with_context(|| {
        format!(
            "cannot read {} (run ./build.sh build to fetch the data, or pass --data)",
            path.display()
        )
    })
}

fn stsb(data: &Path, relative: &str) -> Result<StsFile> {
    parse_stsb(relative, &read(data, relative)?)
}

fn sr(data: &Path, name: &str) -> Result<SrFile> {
    parse_sr(name, &read(data, &sr_path(name))?)
}

/// Every text of the test sets the benchmark reports: STS-B test and [`HELD_OUT`]'s rows.
pub fn reported_texts(data: &Path) -> Result<HashSet<String>> {
    let mut texts: HashSet<String> = HashSet::new();
    for p in stsb(data, STSB_TEST_PATH)?.pairs {
        texts.insert(p.sentence1);
        texts.insert(p.sentence2);
    }
    for name in HELD_OUT {
        for r in sr(data, name)?.rows {
            texts.extend([r.sentence1, r.relation, r.structure]);
        }
    }
    Ok(texts)
}

/// STS-B dev's pairs (model selection after each epoch).
pub fn dev_set(data: &Path) -> Result<StsFile> {
    stsb(data, STSB_DEV_PATH)
}

fn sts_pairs(file: &StsFile) -> Vec<Pair> {
    file.pairs
        .iter()
        .map(|p| Pair {
            text_a: p.sentence1.clone(),
            text_b: p.sentence2.clone(),
            label: p.score / STSB_SCORE_MAX,
        })
        .collect()
}

fn sr_pairs(file: &SrFile) -> Vec<Pair> {
    file.rows
        .iter()
        .flat_map(|r| {
            [
                (&r.relation, r.relation_score),
                (&r.structure, r.structure_score),
            ]
            .map(|(b, s)| Pair {
                text_a: r.sentence1.clone(),
                text_b: b.clone(),
                label: s / STSB_SCORE_MAX,
            })
        })
        .collect()
}

/// A user's training file: the STS layout (or the SR files'), every score within 0–5.
fn user_pairs(path: &str) -> Result<Vec<Pair>> {
    let name = Path::new(path)
        .file_name()
        .map_or(path.into(), |n| n.to_string_lossy().into_owned());
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot read the training file '{path}'"))?;
    check_pairs_size(&name, meta.len())?;
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read the training file '{path}'"))?;
    let parsed = parse_pairs(&name, &bytes)?;
    let out_of_range = |line: usize, score: f64| -> Result<()> {
        if !(0.0..=STSB_SCORE_MAX).contains(&score) {
            bail!("'{name}' line {line}: the score {score} is outside 0–5 (training pulls the cosine towards score / 5)");
        }
        Ok(())
    };
    match &parsed {
        OwnPairs::Sts(f) => {
            for p in &f.pairs {
                out_of_range(p.line, p.score)?;
            }
            Ok(sts_pairs(f))
        }
        OwnPairs::Sr(f) => {
            for r in &f.rows {
                out_of_range(r.line, r.relation_score)?;
                out_of_range(r.line, r.structure_score)?;
            }
            Ok(sr_pairs(f))
        }
    }
}

/// The pairs `which` names, from the data folder `data`, without a text of a reported test
/// set. `seed` drives §4.1's shuffles (pair `i`'s sentence 2 with seed `seed + i`).
pub fn training_set(data: &Path, which: &TrainData, seed: u64) -> Result<TrainingSet> {
    let reported = reported_texts(data)?;
    let train = || stsb(data, STSB_TRAIN_PATH);
    let mut pairs = match which {
        // The shuffles come after the leak filter, below.
        TrainData::Stsb | TrainData::StsbShuffled => sts_pairs(&train()?),
        TrainData::StsbSr => {
            let mut pairs = sts_pairs(&train()?);
            for name in AUGMENT_FROM {
                pairs.extend(sr_pairs(&sr(data, name)?));
            }
            pairs
        }
        TrainData::File(path) => user_pairs(path)?,
    };
    let before = pairs.len();
    pairs.retain(|p| !reported.contains(&p.text_a) && !reported.contains(&p.text_b));
    let dropped = before - pairs.len();
    if pairs.is_empty() {
        bail!("no training pairs left: all {before} share a text with a reported test set (STS-B test or SR's {})", HELD_OUT.join(", "));
    }
    // Shuffled after the leak filter: the filter judges the texts as published.
    if *which == TrainData::StsbShuffled {
        for (i, p) in pairs.iter_mut().enumerate() {
            p.text_b = shuffle_words(&p.text_b, seed.wrapping_add(i as u64));
        }
    }
    Ok(TrainingSet { pairs, dropped })
}
