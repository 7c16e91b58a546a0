//! Token-pair contributions: why two sentences score what they score.
//!
//! With mean pooling the cosine is exactly a sum over token pairs:
//! `cos(A, B) = Σᵢ Σⱼ hᵢ·gⱼ / (n·m·‖ā‖·‖b̄‖)`, where `hᵢ`, `gⱼ` are the last layer's token vectors
//! over the mask (special tokens included), `n`, `m` their counts and `ā`, `b̄` their means.
//! The baseline's map uses the static token vectors (no special tokens) in the same formula.
//! For other poolings (CLS, last, max) no such sum exists: the map is the token-to-token
//! cosine matrix instead (`kind: "token_cosine"`).

use anyhow::{bail, Result};
use serde::Serialize;

use crate::model::{cosine, Embedder, Pieces, Pooling};

/// What the matrix holds.
pub const CONTRIBUTIONS: &str = "contributions";
/// The token-to-token cosine matrix (models that do not mean-pool).
pub const TOKEN_COSINE: &str = "token_cosine";

/// A pair's explanation: rows are A's tokens, columns B's.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// The pipeline's cosine of the pair (what the page and `similarity` show).
    pub cosine: f64,
    /// The model's pooling ("mean", "cls", "last", "max"); "mean" for the baseline.
    pub pooling: String,
    /// [`CONTRIBUTIONS`] (the entries sum to `cosine`) or [`TOKEN_COSINE`].
    pub kind: &'static str,
    /// "model" or "static" (the syntax-blind baseline).
    pub encoder: &'static str,
    pub tokens_a: Vec<String>,
    pub tokens_b: Vec<String>,
    /// `contributions[i][j]`: A's token `i` with B's token `j`.
    pub contributions: Vec<Vec<f64>>,
    /// Sum of each row.
    pub row_totals: Vec<f64>,
    /// Sum of each column.
    pub column_totals: Vec<f64>,
    /// Sum of all entries (equals `cosine` for [`CONTRIBUTIONS`]).
    pub total: f64,
    /// Per token of A, the index of its word in `words.tokens_a` (special tokens are words).
    pub word_of_a: Vec<usize>,
    pub word_of_b: Vec<usize>,
    /// The same map with word pieces summed into words (`None` inside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words: Option<Box<Explanation>>,
}

/// One side of a pair: token labels, their word groups, their vectors.
struct Side {
    tokens: Vec<String>,
    word_of: Vec<usize>,
    word_labels: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

impl Side {
    fn new(pieces: Pieces, vectors: Vec<Vec<f32>>) -> Result<Self> {
        if vectors.len() != pieces.tokens.len() {
            bail!(
                "{} token vectors for {} tokens",
                vectors.len(),
                pieces.tokens.len()
            );
        }
        let (word_of, word_labels) = group_words(&pieces);
        Ok(Self {
            tokens: pieces.tokens,
            word_of,
            word_labels,
            vectors,
        })
    }
}

/// Each token's word index and the words' labels: pieces of one pre-tokenizer word share a
/// word (labelled with the text it covers); each special token is a word of its own.
fn group_words(pieces: &Pieces) -> (Vec<usize>, Vec<String>) {
    let mut labels: Vec<String> = Vec::new();
    let mut last: Option<u32> = None;
    let word_of = pieces
        .words
        .iter()
        .zip(&pieces.tokens)
        .map(|(word, token)| {
            match word {
                Some((id, _)) if last == Some(*id) => {}
                Some((id, text)) => {
                    labels.push(text.clone());
                    last = Some(*id);
                }
                None => {
                    labels.push(token.clone());
                    last = None;
                }
            }
            labels.len() - 1
        })
        .collect();
    (word_of, labels)
}

/// Explains the model's cosine of `a` and `b`: contributions for mean pooling, the
/// token-to-token cosine matrix otherwise. The model's backend must provide token states
/// (the CPU does; a GPU model answers from its CPU backend).
pub fn explain(embedder: &Embedder, a: &str, b: &str) -> Result<Explanation> {
    let tokenizer = embedder.tokenizer();
    let mut states = embedder.token_states(&[a, b])?.into_iter();
    let side_a = Side::new(tokenizer.encode_pieces(a, true)?, states.next().unwrap())?;
    let side_b = Side::new(tokenizer.encode_pieces(b, true)?, states.next().unwrap())?;
    let pooled = embedder.embed(&[a, b])?;
    let pooling = embedder.info.pooling_mode();
    let kind = match pooling {
        Pooling::Mean => CONTRIBUTIONS,
        _ => TOKEN_COSINE,
    };
    let cos = f64::from(cosine(&pooled[0], &pooled[1]));
    Ok(build(
        &side_a,
        &side_b,
        cos,
        pooling.as_str(),
        kind,
        "model",
    ))
}

/// The syntax-blind baseline's map: the static token vectors (no special tokens) in the
/// mean-pooling formula; a permutation of A's words permutes its identical rows.
pub fn explain_static(embedder: &Embedder, a: &str, b: &str) -> Result<Explanation> {
    let side = |text: &str| -> Result<Side> {
        let pieces = embedder.tokenizer().encode_pieces(text, false)?;
        let vectors = embedder.static_token_vectors(&pieces.ids)?;
        Side::new(pieces, vectors)
    };
    let (side_a, side_b) = (side(a)?, side(b)?);
    let pooled = embedder.embed_static(&[a, b])?;
    let cos = f64::from(cosine(&pooled[0], &pooled[1]));
    Ok(build(
        &side_a,
        &side_b,
        cos,
        "mean",
        CONTRIBUTIONS,
        "static",
    ))
}

fn build(
    a: &Side,
    b: &Side,
    cosine: f64,
    pooling: &str,
    kind: &'static str,
    encoder: &'static str,
) -> Explanation {
    let contributions = match kind {
        CONTRIBUTIONS => mean_contributions(&a.vectors, &b.vectors),
        _ => token_cosines(&a.vectors, &b.vectors),
    };
    let tokens = Explanation::assemble(
        cosine,
        pooling,
        kind,
        encoder,
        (a.tokens.clone(), b.tokens.clone()),
        contributions,
        (a.word_of.clone(), b.word_of.clone()),
    );
    let words = tokens.grouped(&a.word_labels, &b.word_labels);
    Explanation {
        words: Some(Box::new(words)),
        ..tokens
    }
}

/// `hᵢ·gⱼ / (n·m·‖ā‖·‖b̄‖)` in f64; all zeros when a side has no token or a zero mean.
fn mean_contributions(a: &[Vec<f32>], b: &[Vec<f32>]) -> Vec<Vec<f64>> {
    let mean = |rows: &[Vec<f32>]| -> Vec<f64> {
        let dim = rows.first().map_or(0, Vec::len);
        let mut sum = vec![0f64; dim];
        for row in rows {
            sum.iter_mut()
                .zip(row)
                .for_each(|(s, &x)| *s += f64::from(x));
        }
        sum.iter().map(|s| s / rows.len() as f64).collect()
    };
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let scale = a.len() as f64 * b.len() as f64 * norm(&mean(a)) * norm(&mean(b));
    let scale = if scale > 0.0 { scale } else { f64::INFINITY };
    a.iter()
        .map(|h| b.iter().map(|g| dot(h, g) / scale).collect())
        .collect()
}

/// Cosine of every token of A with every token of B.
fn token_cosines(a: &[Vec<f32>], b: &[Vec<f32>]) -> Vec<Vec<f64>> {
    a.iter()
        .map(|h| b.iter().map(|g| f64::from(cosine(h, g))).collect())
        .collect()
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum()
}

impl Explanation {
    fn assemble(
        cosine: f64,
        pooling: &str,
        kind: &'static str,
        encoder: &'static str,
        (tokens_a, tokens_b): (Vec<String>, Vec<String>),
        contributions: Vec<Vec<f64>>,
        (word_of_a, word_of_b): (Vec<usize>, Vec<usize>),
    ) -> Self {
        let row_totals: Vec<f64> = contributions.iter().map(|r| r.iter().sum()).collect();
        let column_totals = (0..tokens_b.len())
            .map(|j| contributions.iter().map(|r| r[j]).sum())
            .collect();
        Self {
            cosine,
            pooling: pooling.to_string(),
            kind,
            encoder,
            tokens_a,
            tokens_b,
            contributions,
            total: row_totals.iter().sum(),
            row_totals,
            column_totals,
            word_of_a,
            word_of_b,
            words: None,
        }
    }

    /// The map with each word's pieces summed (rows and columns): totals are kept. For a
    /// token-cosine map the word entry is the sum of its pieces' cosines too.
    pub fn grouped(&self, words_a: &[String], words_b: &[String]) -> Explanation {
        let mut sums = vec![vec![0f64; words_b.len()]; words_a.len()];
        for (i, row) in self.contributions.iter().enumerate() {
            for (j, value) in row.iter().enumerate() {
                sums[self.word_of_a[i]][self.word_of_b[j]] += value;
            }
        }
        Explanation::assemble(
            self.cosine,
            &self.pooling,
            self.kind,
            self.encoder,
            (words_a.to_vec(), words_b.to_vec()),
            sums,
            ((0..words_a.len()).collect(), (0..words_b.len()).collect()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_contributions_sum_to_the_cosine_of_the_means() {
        let a = vec![vec![1.0f32, 0.0, 2.0], vec![0.5, -1.0, 0.0]];
        let b = vec![
            vec![0.0f32, 1.0, 1.0],
            vec![2.0, 0.0, -1.0],
            vec![1.0, 1.0, 1.0],
        ];
        let total: f64 = mean_contributions(&a, &b).iter().flatten().sum();
        let mean = |rows: &[Vec<f32>]| -> Vec<f32> {
            (0..3)
                .map(|k| rows.iter().map(|r| r[k]).sum::<f32>() / rows.len() as f32)
                .collect()
        };
        let want = f64::from(cosine(&mean(&a), &mean(&b)));
        assert!((total - want).abs() < 1e-6, "{total} vs {want}");
    }

    #[test]
    fn pieces_group_into_words_and_specials_stand_alone() {
        let word = |id: u32, text: &str| Some((id, text.to_string()));
        let pieces = Pieces {
            ids: vec![101, 1, 2, 3, 102],
            tokens: ["[CLS]", "play", "##ing", "!", "[SEP]"]
                .map(String::from)
                .to_vec(),
            words: vec![
                None,
                word(0, "playing"),
                word(0, "playing"),
                word(1, "!"),
                None,
            ],
        };
        let (word_of, labels) = group_words(&pieces);
        assert_eq!(word_of, [0, 1, 1, 2, 3]);
        assert_eq!(labels, ["[CLS]", "playing", "!", "[SEP]"]);
    }
}
