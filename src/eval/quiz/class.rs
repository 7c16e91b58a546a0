//! A class's quiz answers together (the teacher's view of `sr-bench serve --class`): how each
//! student did, how far they agree with one another — the Czech News STS paper's
//! inter-annotator method (Sido et al.: one annotator against the mean of the others), here for
//! two-way picks: a student against the majority of the rest — and how often the class's
//! majority picks what the benchmark's gold scores prefer.
//!
//! JSON (a contract: extend, never rename), percentages ×100 with 2 decimals:
//! ```text
//! {"answered": N, "questions": Q,
//!  "accuracy": SPREAD,                 // each student's share of picks the gold prefers
//!  "agreement_with_rest": SPREAD|null, // each student's share of questions where they pick as
//!                                      // the majority of the others (a tie among them ½); ≥ 2 students
//!  "majority_vs_gold": x|null,         // the class majority's pick = the gold's (a tied vote ½)
//!  "per_question": [{"right": r, "answered": n}, …],
//!  "students": [{"accuracy": x, "agreement_with_rest": x|null}, …]}   // in arrival order, no ids
//! SPREAD = {"mean", "sd", "min", "max"}   // sd: the population's (÷ N)
//! ```

use anyhow::{bail, Result};
use serde::Serialize;

use super::Quiz;
use crate::eval::metrics::round_to;

/// Mean, population standard deviation, least and most of a list of percentages.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    pub mean: f64,
    pub sd: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        Some(Spread {
            mean: round_to(mean, 2),
            sd: round_to(sd, 2),
            min: round_to(min, 2),
            max: round_to(max, 2),
        })
    }
}

/// One student, without anything that names them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Student {
    pub accuracy: f64,
    pub agreement_with_rest: Option<f64>,
}

/// One question: how many students picked what the gold prefers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionTally {
    pub right: usize,
    pub answered: usize,
}

/// The class's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassFigures {
    pub answered: usize,
    pub questions: usize,
    pub accuracy: Option<Spread>,
    pub agreement_with_rest: Option<Spread>,
    pub majority_vs_gold: Option<f64>,
    pub per_question: Vec<QuestionTally>,
    pub students: Vec<Student>,
}

/// 1 when `pick` is the majority of `votes_for_1` ones among `voters`, 0 when it is not, ½ on a tie.
fn with_majority(pick: u8, votes_for_1: usize, voters: usize) -> f64 {
    let ones = 2 * votes_for_1;
    match ones.cmp(&voters) {
        std::cmp::Ordering::Equal => 0.5,
        std::cmp::Ordering::Greater => f64::from(pick == 1),
        std::cmp::Ordering::Less => f64::from(pick == 0),
    }
}

/// Checks one student's picks against the quiz: one 0 or 1 per question.
pub fn check_picks(quiz: &Quiz, picks: &[u8]) -> Result<()> {
    if picks.len() != quiz.questions.len() {
        bail!(
            "{} picks for a quiz of {} questions",
            picks.len(),
            quiz.questions.len()
        );
    }
    if let Some(p) = picks.iter().find(|&&p| p > 1) {
        bail!("a pick is 0 or 1 (the option shown first or second), not {p}");
    }
    Ok(())
}

impl ClassFigures {
    /// From every student's picks (checked with [`check_picks`]).
    pub fn from_picks(quiz: &Quiz, students: &[Vec<u8>]) -> Result<ClassFigures> {
        for picks in students {
            check_picks(quiz, picks)?;
        }
        let q = quiz.questions.len();
        let n = students.len();
        let ones: Vec<usize> = (0..q)
            .map(|i| students.iter().filter(|p| p[i] == 1).count())
            .collect();
        let per_question: Vec<QuestionTally> = (0..q)
            .map(|i| QuestionTally {
                right: students
                    .iter()
                    .filter(|p| usize::from(p[i]) == quiz.questions[i].answer)
                    .count(),
                answered: n,
            })
            .collect();
        let percent = |x: f64| round_to(100.0 * x / q as f64, 2);
        let figures: Vec<Student> = students
            .iter()
            .map(|picks| {
                let right = (0..q)
                    .filter(|&i| usize::from(picks[i]) == quiz.questions[i].answer)
                    .count();
                let agreement = (n >= 2).then(|| {
                    let sum: f64 = (0..q)
                        .map(|i| with_majority(picks[i], ones[i] - usize::from(picks[i]), n - 1))
                        .sum();
                    percent(sum)
                });
                Student {
                    accuracy: percent(right as f64),
                    agreement_with_rest: agreement,
                }
            })
            .collect();
        let majority_vs_gold = (n > 0).then(|| {
            let gold = (0..q).map(|i| with_majority(quiz.questions[i].answer as u8, ones[i], n));
            percent(gold.sum())
        });
        let accuracies: Vec<f64> = figures.iter().map(|s| s.accuracy).collect();
        let agreements: Vec<f64> = figures
            .iter()
            .filter_map(|s| s.agreement_with_rest)
            .collect();
        Ok(ClassFigures {
            answered: n,
            questions: q,
            accuracy: Spread::of(&accuracies),
            agreement_with_rest: Spread::of(&agreements),
            majority_vs_gold,
            per_question,
            students: figures,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::quiz::{QuizOption, QuizQuestion, QuizSet};

    /// A quiz of `answers.len()` questions whose gold answers are `answers`.
    fn quiz(answers: &[usize]) -> Quiz {
        let option = |gold| QuizOption {
            a: "a".into(),
            b: "b".into(),
            gold,
            kind: "pair",
            line: 2,
        };
        Quiz {
            set: QuizSet::Sr,
            seed: 1,
            min_gap: 2.0,
            eligible: 10,
            questions: answers
                .iter()
                .map(|&answer| QuizQuestion {
                    file: "stsb".into(),
                    options: if answer == 0 {
                        [option(5.0), option(1.0)]
                    } else {
                        [option(1.0), option(5.0)]
                    },
                    answer,
                })
                .collect(),
        }
    }

    #[test]
    fn three_students_by_hand() {
        let q = quiz(&[0, 1, 1, 0]);
        // A: all right. B: right on 1 and 2. C: right on 0, 1, 2.
        let class = [vec![0, 1, 1, 0], vec![1, 1, 1, 1], vec![0, 1, 1, 1]];
        let f = ClassFigures::from_picks(&q, &class).unwrap();
        assert_eq!(f.answered, 3);
        let acc: Vec<f64> = f.students.iter().map(|s| s.accuracy).collect();
        assert_eq!(acc, vec![100.0, 50.0, 75.0]);
        // A vs {B, C}: q0 B1 C0 tie ½ · q1 both 1: agree · q2 agree · q3 both 1, A 0: disagree → 2.5/4.
        // B vs {A, C}: q0 both 0, B 1: 0 · q1 1 · q2 1 · q3 A0 C1 tie ½ → 2.5/4.
        // C vs {A, B}: q0 tie ½ · 1 · 1 · q3 tie ½ → 3/4.
        let agree: Vec<f64> = f
            .students
            .iter()
            .map(|s| s.agreement_with_rest.unwrap())
            .collect();
        assert_eq!(agree, vec![62.5, 62.5, 75.0]);
        // Majority per question: q0 0 (2 of 3) = gold · q1 1 = gold · q2 1 = gold · q3 1 ≠ gold 0.
        assert_eq!(f.majority_vs_gold, Some(75.0));
        assert_eq!(
            f.per_question.iter().map(|t| t.right).collect::<Vec<_>>(),
            vec![2, 3, 3, 1]
        );
        let spread = f.accuracy.unwrap();
        assert_eq!((spread.mean, spread.min, spread.max), (75.0, 50.0, 100.0));
        assert_eq!(spread.sd, 20.41, "population sd of 100, 50, 75");
    }

    #[test]
    fn one_student_has_no_rest_and_an_empty_class_no_figures() {
        let q = quiz(&[0, 1]);
        let one = ClassFigures::from_picks(&q, &[vec![0, 0]]).unwrap();
        assert_eq!(one.students[0].agreement_with_rest, None);
        assert_eq!(one.agreement_with_rest, None);
        assert_eq!(one.majority_vs_gold, Some(50.0));
        let none = ClassFigures::from_picks(&q, &[]).unwrap();
        assert_eq!((none.accuracy, none.majority_vs_gold), (None, None));
    }

    #[test]
    fn picks_that_do_not_fit_the_quiz_are_refused() {
        let q = quiz(&[0, 1]);
        assert!(check_picks(&q, &[0]).is_err());
        assert!(check_picks(&q, &[0, 2])
            .unwrap_err()
            .to_string()
            .contains("not 2"));
        assert!(ClassFigures::from_picks(&q, &[vec![0, 1, 1]]).is_err());
    }
}
