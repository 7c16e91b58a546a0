//! The quiz: a person against the model on the questions pairwise accuracy asks
//! ([`super::pairwise`]). Each question shows two pairs of texts whose gold scores differ by at
//! least `min_gap`; the person picks the pair that is closer in meaning, the model the pair
//! with the higher cosine, the syntax-blind baseline likewise with its own.
//!
//! - **SR** (English models): an original sentence and its two rewrites from one SR row
//!   (relation and structure), so both pairs share the original: "which rewrite is closer in
//!   meaning to the original?"
//! - **Czech** (multilingual models): two pairs of Czech News STS, each with the mean of its
//!   nine annotators (0–6): "which pair means more nearly the same?"
//!
//! The questions are drawn with [`SplitMix64`] from a seed, so a class opening the same link
//! (the seed is in it) gets the same questions in the same order, the same option shown
//! first, on every device and in the CLI (`sr-bench quiz`). Texts longer than
//! [`MAX_TEXT_CHARS`] are left out: a class reads every option.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

pub mod class;

use super::pairwise::{outcome, Accuracy};
use super::rng::SplitMix64;
use super::{CzechFile, SrFile};

/// Questions in a quiz unless asked otherwise.
pub const DEFAULT_QUESTIONS: usize = 12;
/// The most questions one quiz may have.
pub const MAX_QUESTIONS: usize = 100;
/// Longest text (in characters) a question may show.
pub const MAX_TEXT_CHARS: usize = 200;
/// The `file` of a Czech question.
pub const CZECH_FILE: &str = "czech-news-sts";

/// Which data the questions come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuizSet {
    /// One SR row: an original and its two rewrites.
    Sr,
    /// Two Czech News STS pairs.
    Czech,
}

impl QuizSet {
    /// The set's name, as the JSON and `--set` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            QuizSet::Sr => "sr",
            QuizSet::Czech => "czech",
        }
    }
}

impl std::str::FromStr for QuizSet {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "sr" => Ok(QuizSet::Sr),
            "czech" => Ok(QuizSet::Czech),
            other => bail!("unknown quiz set '{other}': expected 'sr' or 'czech'"),
        }
    }
}

/// One of a question's two pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuizOption {
    /// The pair's first text (for SR, the original sentence: the same in both options).
    pub a: String,
    /// The pair's second text (for SR, the rewrite).
    pub b: String,
    /// Its gold score (SR 0–5, Czech 0–6).
    pub gold: f64,
    /// For SR, `relation` or `structure`; for Czech, `pair`.
    pub kind: &'static str,
    /// The 1-based line of its row in the data file.
    pub line: usize,
}

/// One question: two options in the order shown, and which one the gold scores prefer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuizQuestion {
    /// The data file (`stsb`, …, `biosses`, or [`CZECH_FILE`]).
    pub file: String,
    pub options: [QuizOption; 2],
    /// 0 or 1: the option with the higher gold score.
    pub answer: usize,
}

/// A drawn quiz (the CLI's JSON and the page's, a contract: extend, never rename).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quiz {
    pub set: QuizSet,
    pub seed: u64,
    pub min_gap: f64,
    /// How many rows (SR) or pairs (Czech) the questions were drawn from.
    pub eligible: usize,
    pub questions: Vec<QuizQuestion>,
}

/// How an encoder did on a quiz: its cosines, its choice per question (`null` for a tie) and
/// its accuracy (ties ½, Wilson interval).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuizScore {
    pub cosines: Vec<[f64; 2]>,
    pub choices: Vec<Option<usize>>,
    pub accuracy: Accuracy,
}

fn fits(texts: &[&str]) -> bool {
    texts.iter().all(|t| t.chars().count() <= MAX_TEXT_CHARS)
}

fn check(n: usize, min_gap: f64, scale: f64) -> Result<()> {
    if n == 0 || n > MAX_QUESTIONS {
        bail!("a quiz has 1 to {MAX_QUESTIONS} questions, not {n}");
    }
    if !(min_gap.is_finite() && min_gap > 0.0 && min_gap <= scale) {
        bail!("--min-gap {min_gap}: a difference of gold scores in (0, {scale}]");
    }
    Ok(())
}

/// A seeded shuffle of `0..len` (Fisher–Yates); the draws take its first rows.
fn shuffled(len: usize, rng: &mut SplitMix64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    for i in 0..len {
        let j = i + rng.below(len - i);
        order.swap(i, j);
    }
    order
}

/// Puts two options in a seeded order; `answer` follows the higher gold score.
fn question(file: &str, pair: [QuizOption; 2], rng: &mut SplitMix64) -> QuizQuestion {
    let [x, y] = pair;
    let options = if rng.below(2) == 0 { [x, y] } else { [y, x] };
    let answer = usize::from(options[1].gold > options[0].gold);
    QuizQuestion {
        file: file.to_owned(),
        options,
        answer,
    }
}

/// `n` questions from the SR rows whose two gold scores differ by at least `min_gap`.
pub fn draw_sr(files: &[SrFile], seed: u64, n: usize, min_gap: f64) -> Result<Quiz> {
    check(n, min_gap, super::SR_SCORE_MAX)?;
    let rows: Vec<(&str, &super::SrRow)> = files
        .iter()
        .flat_map(|f| f.rows.iter().map(move |r| (f.name.as_str(), r)))
        .filter(|(_, r)| (r.relation_score - r.structure_score).abs() >= min_gap)
        .filter(|(_, r)| fits(&[&r.sentence1, &r.relation, &r.structure]))
        .collect();
    if rows.len() < n {
        bail!("only {} SR rows have gold scores {min_gap} apart and texts of at most {MAX_TEXT_CHARS} characters; {n} questions asked", rows.len());
    }
    let mut rng = SplitMix64::new(seed);
    let order = shuffled(rows.len(), &mut rng);
    let questions = order[..n]
        .iter()
        .map(|&i| {
            let (file, r) = rows[i];
            let option = |b: &str, gold, kind| QuizOption {
                a: r.sentence1.clone(),
                b: b.to_owned(),
                gold,
                kind,
                line: r.line,
            };
            let pair = [
                option(&r.relation, r.relation_score, "relation"),
                option(&r.structure, r.structure_score, "structure"),
            ];
            question(file, pair, &mut rng)
        })
        .collect();
    Ok(Quiz {
        set: QuizSet::Sr,
        seed,
        min_gap,
        eligible: rows.len(),
        questions,
    })
}

/// `n` questions, each two Czech News STS pairs whose mean scores differ by at least
/// `min_gap`; every pair is used at most once. The pairs are shuffled, then each next unused
/// pair is matched with the first later one far enough from it.
pub fn draw_czech(file: &CzechFile, seed: u64, n: usize, min_gap: f64) -> Result<Quiz> {
    check(n, min_gap, super::CZECH_SCORE_MAX)?;
    let pairs: Vec<&super::CzechPair> = file
        .pairs
        .iter()
        .filter(|p| fits(&[&p.sentence1, &p.sentence2]))
        .collect();
    let mut rng = SplitMix64::new(seed);
    let order = shuffled(pairs.len(), &mut rng);
    let mut used = vec![false; order.len()];
    let mut questions = Vec::with_capacity(n);
    let option = |p: &super::CzechPair| QuizOption {
        a: p.sentence1.clone(),
        b: p.sentence2.clone(),
        gold: p.mean_score,
        kind: "pair",
        line: p.line,
    };
    for i in 0..order.len() {
        if questions.len() == n {
            break;
        }
        if used[i] {
            continue;
        }
        let first = pairs[order[i]];
        let partner = (i + 1..order.len()).find(|&j| {
            !used[j] && (pairs[order[j]].mean_score - first.mean_score).abs() >= min_gap
        });
        if let Some(j) = partner {
            used[i] = true;
            used[j] = true;
            questions.push(question(
                CZECH_FILE,
                [option(first), option(pairs[order[j]])],
                &mut rng,
            ));
        }
    }
    if questions.len() < n {
        bail!(
            "only {} questions of Czech News STS pairs {min_gap} apart can be drawn; {n} asked",
            questions.len()
        );
    }
    Ok(Quiz {
        set: QuizSet::Czech,
        seed,
        min_gap,
        eligible: pairs.len(),
        questions,
    })
}

impl Quiz {
    /// Every pair of texts to score, two per question in the order shown: `(a, b)`.
    pub fn pairs(&self) -> Vec<(&str, &str)> {
        self.questions
            .iter()
            .flat_map(|q| q.options.iter().map(|o| (o.a.as_str(), o.b.as_str())))
            .collect()
    }

    /// An encoder's result from its cosines of [`Quiz::pairs`] (two per question).
    pub fn score(&self, cosines: &[f64]) -> Result<QuizScore> {
        if cosines.len() != 2 * self.questions.len() {
            bail!(
                "{} cosines for a quiz of {} questions (two each)",
                cosines.len(),
                self.questions.len()
            );
        }
        if let Some(c) = cosines.iter().find(|c| !c.is_finite()) {
            bail!("a cosine of {c}: the encoder gave no usable vector");
        }
        let cosines: Vec<[f64; 2]> = cosines.chunks(2).map(|c| [c[0], c[1]]).collect();
        let choices = cosines
            .iter()
            .map(|c| (c[0] != c[1]).then(|| usize::from(c[1] > c[0])))
            .collect();
        let outcomes: Vec<f64> = self
            .questions
            .iter()
            .zip(&cosines)
            .map(|(q, &c)| outcome([q.options[0].gold, q.options[1].gold], c))
            .collect();
        Ok(QuizScore {
            cosines,
            choices,
            accuracy: Accuracy::from_outcomes(&outcomes),
        })
    }
}

#[cfg(test)]
mod tests;
