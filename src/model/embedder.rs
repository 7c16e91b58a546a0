//! Texts → sentence embeddings: tokenize, sort by length, batch, run the backend, restore order.
//! Also the syntax-blind baseline (mean of the model's static input token embeddings).
//! Backend-neutral: the maths is behind [`EncoderBackend`] and [`TokenTable`].

use std::future::Future;
use std::task::{Context, Poll, Waker};

use anyhow::{anyhow, bail, Result};

use super::{
    l2_normalize, EncoderBackend, ModelFile, ModelInfo, TextTokenizer, TokenBatch, TokenTable,
};
use crate::error::{coded, ErrorCode, ResultExt};

/// Sentences per forward pass. Inputs are sorted by length first, so padding stays small.
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// Padded tokens per forward pass, in units of the model's `max_seq_length`: activations
/// (attention scores grow with `batch × seq²`) stay bounded when long texts meet a big batch.
/// 8 × 384 tokens is MPNet's worst case at 463 MB of wasm memory (README, "Memory"), while
/// short SR sentences (≈14 tokens) still run 32 at a time. Capped by [`BATCH_TOKENS`].
pub const BATCH_TOKENS_PER_MAX_SEQ: usize = 8;

/// Padded tokens per forward pass at most, whatever the file's context length: BERT's 8 × 512.
/// Without it a 2,048-token context (Qwen3, Gemma, nomic-bert) allowed 16,384, so 27 short
/// texts joined a 450-token paragraph's batch and were padded to its length: one `embed` of
/// 59 short texts and a paragraph took 4.6 s where two calls took 0.5 s.
pub const BATCH_TOKENS: usize = 4096;

/// Attention score cells (`sentences × longest length²`) per forward pass at most: BERT's
/// 8 × 512². Long texts of a long-context file then share a batch only as BERT's would.
pub const BATCH_ATTENTION: usize = 8 * 512 * 512;

/// The padded tokens one forward pass may hold for a context of `max_seq_length` tokens (the
/// batching's bound, and the memory estimate's).
pub fn batch_tokens(max_seq_length: usize) -> usize {
    (BATCH_TOKENS_PER_MAX_SEQ * max_seq_length.max(1)).min(BATCH_TOKENS)
}

/// What a batch of `sentences` padded to `longest` tokens holds: its padded tokens and its
/// attention score cells per head (`sentences × longest²`) — what its activations grow with,
/// bounded by [`Batching`] per batch and natively by the CPU's batches in flight.
pub fn batch_cost(sentences: usize, longest: usize) -> [usize; 2] {
    [sentences * longest, sentences * longest * longest]
}

/// How length-sorted inputs are cut into forward passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    pub max_sentences: usize,
    /// Bound on `sentences × longest length` (padded tokens) of one batch; a single text
    /// longer than this still forms a batch of one.
    pub max_tokens: usize,
    /// Bound on `sentences × longest length²` (attention score cells per head) of one batch.
    pub max_attention: usize,
}

impl Batching {
    pub fn for_model(info: &ModelInfo) -> Self {
        Self {
            max_sentences: DEFAULT_BATCH_SIZE,
            max_tokens: batch_tokens(info.max_seq_length),
            max_attention: BATCH_ATTENTION,
        }
    }

    /// Consecutive runs of `order` (indices sorted by ascending `len`), one per batch.
    pub fn split<'a>(&self, order: &'a [usize], len: impl Fn(usize) -> usize) -> Vec<&'a [usize]> {
        let mut batches = Vec::new();
        let mut start = 0;
        for end in 1..=order.len() {
            let count = end - start;
            // Sorted ascending: the newest text is the longest, so it sets the padded length.
            let longest = len(order[end - 1]);
            let [tokens, cells] = batch_cost(count, longest);
            let fits = count <= self.max_sentences
                && tokens <= self.max_tokens
                && cells <= self.max_attention;
            if !fits && count > 1 {
                batches.push(&order[start..end - 1]);
                start = end - 1;
            }
        }
        if start < order.len() {
            batches.push(&order[start..]);
        }
        batches
    }
}

/// Texts tokenized, sorted by length and cut into padded batches (with each row's input index).
pub fn plan_batches(
    tokenizer: &TextTokenizer,
    texts: &[&str],
    batching: Batching,
) -> Result<Vec<(Vec<usize>, TokenBatch)>> {
    let tokens = texts
        .iter()
        .map(|t| tokenizer.encode(t))
        .collect::<Result<Vec<_>>>()?;
    // Sorting by length keeps each batch's padding (wasted compute) small.
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| tokens[i].len());
    Ok(batching
        .split(&order, |i| tokens[i].len())
        .into_iter()
        .map(|indices| {
            let rows: Vec<Vec<u32>> = indices.iter().map(|&i| tokens[i].clone()).collect();
            (
                indices.to_vec(),
                TokenBatch::from_rows(&rows, tokenizer.pad_id()),
            )
        })
        .collect())
}

/// What embedding some texts costs: their tokens, the tokens after padding each batch, and the
/// forward passes' operations ([`ModelInfo::forward_flops`]) — what GFLOP/s figures divide.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Work {
    pub tokens: usize,
    pub padded_tokens: usize,
    pub flops: f64,
}

impl Work {
    /// The work of texts of `lengths` (token counts, sorted ascending) in `batching`'s batches.
    pub fn of_sorted_lengths(info: &ModelInfo, batching: Batching, lengths: &[usize]) -> Self {
        let order: Vec<usize> = (0..lengths.len()).collect();
        let mut work = Work::default();
        for batch in batching.split(&order, |i| lengths[i]) {
            let seq = batch.iter().map(|&i| lengths[i]).max().unwrap_or(0);
            work.tokens += batch.iter().map(|&i| lengths[i]).sum::<usize>();
            work.padded_tokens += batch.len() * seq;
            work.flops += info.forward_flops(batch.len(), seq);
        }
        work
    }
}

/// Name of the token embedding table in every supported architecture.
pub const WORD_EMBEDDINGS: &str = "embeddings.word_embeddings.weight";

/// A loaded sentence encoder: tokenizer + backend + the static token table for the baseline.
pub struct Embedder {
    pub info: ModelInfo,
    tokenizer: TextTokenizer,
    tokens: Box<dyn TokenTable>,
    backend: Box<dyn EncoderBackend>,
    batching: Batching,
}

impl Embedder {
    pub fn new(
        file: &ModelFile,
        tokens: Box<dyn TokenTable>,
        backend: Box<dyn EncoderBackend>,
    ) -> Result<Self> {
        let mut tokenizer = TextTokenizer::from_json(
            &file.tokenizer_json,
            file.info.max_seq_length,
            file.config.pad_token_id as u32,
            file.info.vocab_size,
        )
        .code(ErrorCode::BadModel)?;
        tokenizer.set_prefix(&file.info.prefix);
        let mut batching = Batching::for_model(&file.info);
        if let Some(sentences) = backend.max_sentences() {
            batching.max_sentences = sentences;
        }
        Ok(Self {
            info: file.info.clone(),
            tokenizer,
            tokens,
            backend,
            batching,
        })
    }

    /// Puts `prefix` before every text the model embeds from now on ("" for none; the
    /// baseline never sees it). Refused when too long or holding control characters.
    pub fn set_prefix(&mut self, prefix: &str) -> Result<()> {
        super::check_prefix(prefix).code(ErrorCode::BadRequest)?;
        self.tokenizer.set_prefix(prefix);
        self.info.prefix = prefix.to_string();
        Ok(())
    }

    /// Caps the sentences per forward pass (the padded-token bound stays).
    pub fn set_batch_size(&mut self, batch_size: usize) {
        self.batching.max_sentences = batch_size.max(1);
    }

    pub fn batching(&self) -> Batching {
        self.batching
    }

    /// The work of embedding `texts` in one [`Self::embed`] call (the same length-sorted batches).
    pub fn work(&self, texts: &[&str]) -> Result<Work> {
        let mut lengths = texts
            .iter()
            .map(|t| Ok(self.tokenizer.encode(t)?.len()))
            .collect::<Result<Vec<_>>>()?;
        lengths.sort_unstable();
        Ok(Work::of_sorted_lengths(&self.info, self.batching, &lengths))
    }

    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// L2-normalised embeddings, one per text, in input order. Blocks until every batch is
    /// done (in the browser a GPU backend answers this from the CPU: use [`Self::embed_async`]).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let pipeline = self.pipeline(texts, Wait::Block);
        let mut pipeline = std::pin::pin!(pipeline);
        let mut context = Context::from_waker(Waker::noop());
        match pipeline.as_mut().poll(&mut context) {
            Poll::Ready(result) => result,
            // Blocking calls await only ready futures, so one poll finishes the pipeline.
            Poll::Pending => Err(anyhow!("a blocking embed call waited on the GPU")),
        }
    }

    /// [`Self::embed`] with every batch awaited instead of blocked on: the GPU's path.
    pub async fn embed_async(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.pipeline(texts, Wait::Await).await
    }

    /// The one embedding pipeline: tokenize, sort by length, batch, encode, restore order.
    async fn pipeline(&self, texts: &[&str], wait: Wait) -> Result<Vec<Vec<f32>>> {
        let mut out = vec![Vec::new(); texts.len()];
        let (indices, batches): (Vec<_>, Vec<_>) =
            plan_batches(&self.tokenizer, texts, self.batching)?
                .into_iter()
                .unzip();
        // All batches at once: a GPU backend keeps two in flight.
        let vectors = match wait {
            Wait::Block => self.backend.encode_many(&batches)?,
            Wait::Await => self.backend.encode_many_async(&batches).await?,
        };
        if vectors.len() != batches.len() {
            bail!(
                "the {} backend returned {} results for {} batches",
                self.backend.name(),
                vectors.len(),
                batches.len()
            );
        }
        for (indices, vectors) in indices.into_iter().zip(vectors) {
            self.place(&mut out, indices, vectors)?;
        }
        // Weights or parameters that give NaN or infinity (a damaged or hostile file) are an
        // error: a NaN must never reach a cosine, a score or a report.
        if let Some(i) = out.iter().position(|v| !v.iter().all(|x| x.is_finite())) {
            return Err(coded(
                ErrorCode::BadModel,
                format!(
                    "the model gave non-finite values (NaN or infinity) for text {} of {}: its \
                     weights or parameters are broken",
                    i + 1,
                    out.len()
                ),
            ));
        }
        Ok(out)
    }

    /// The syntax-blind baseline: the mean of the static input embeddings of a text's tokens
    /// (special tokens excluded, no transformer layer), L2-normalised. Order-invariant by
    /// construction, like the averaged word2vec of the Czech News STS paper.
    pub fn embed_static(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts
            .iter()
            .map(|text| {
                let ids = self.tokenizer.encode_without_special_tokens(text)?;
                if ids.is_empty() {
                    return Ok(vec![0.0; self.info.dim]);
                }
                let mut mean = self.tokens.mean_row(&ids)?;
                l2_normalize(&mut mean);
                Ok(mean)
            })
            .collect()
    }

    /// Per text, the last layer's token vectors over its mask (special tokens included),
    /// batched as [`Self::embed`] batches. The backend must provide them (the CPU does).
    pub fn token_states(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        self.per_text(texts, |batch| self.backend.token_states(batch))
    }

    /// Per text, per layer (0 = the embedding output), the sentence vector pooled as the
    /// model pools, L2-normalised: the last layer's is [`Self::embed`]'s. One forward pass.
    pub fn embed_layers(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        self.per_text(texts, |batch| self.backend.encode_layers(batch))
    }

    /// The static token vectors of a text's tokens (no special tokens): the baseline's.
    pub fn static_token_vectors(&self, ids: &[u32]) -> Result<Vec<Vec<f32>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.tokens.rows(ids)
    }

    /// Runs `run` on the length-sorted batches of `texts`; its rows back in input order.
    fn per_text<T: Default + Clone>(
        &self,
        texts: &[&str],
        run: impl Fn(&TokenBatch) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        let mut out = vec![T::default(); texts.len()];
        for (indices, batch) in plan_batches(&self.tokenizer, texts, self.batching)? {
            self.place(&mut out, indices, run(&batch)?)?;
        }
        Ok(out)
    }

    /// Puts a batch's rows (one per text, in batch order) at their texts' input positions.
    fn place<T>(&self, out: &mut [T], indices: Vec<usize>, rows: Vec<T>) -> Result<()> {
        if rows.len() != indices.len() {
            bail!(
                "the {} backend returned {} embeddings for a batch of {}",
                self.backend.name(),
                rows.len(),
                indices.len()
            );
        }
        for (i, row) in indices.into_iter().zip(rows) {
            out[i] = row;
        }
        Ok(())
    }

    /// Token count including special tokens, after truncation (the batching key).
    pub fn token_count(&self, text: &str) -> usize {
        self.tokenizer.encode(text).map(|t| t.len()).unwrap_or(0)
    }
}

/// How the pipeline waits for a batch.
#[derive(Clone, Copy)]
enum Wait {
    Block,
    Await,
}

#[cfg(test)]
mod tests {
    use super::Batching;

    fn split(batching: Batching, lens: &[usize]) -> Vec<Vec<usize>> {
        let order: Vec<usize> = (0..lens.len()).collect();
        batching
            .split(&order, |i| lens[i])
            .into_iter()
            .map(<[usize]>::to_vec)
            .collect()
    }

    #[test]
    fn short_texts_fill_batches_by_sentence_count() {
        let b = Batching {
            max_sentences: 3,
            max_tokens: 1000,
            max_attention: usize::MAX,
        };
        assert_eq!(
            split(b, &[5, 5, 6, 7, 9, 9, 10]),
            [vec![0, 1, 2], vec![3, 4, 5], vec![6]]
        );
    }

    #[test]
    fn long_texts_are_cut_by_padded_tokens() {
        let b = Batching {
            max_sentences: 32,
            max_tokens: 100,
            max_attention: usize::MAX,
        };
        // 4 × 20 = 80 fits; a fifth text of 30 would pad to 5 × 30 = 150.
        assert_eq!(
            split(b, &[10, 20, 20, 20, 30, 30, 30, 40, 200]),
            [vec![0, 1, 2, 3], vec![4, 5, 6], vec![7], vec![8]]
        );
    }

    /// The work of length-sorted texts is that of the batches `split` makes of them.
    #[test]
    fn work_counts_tokens_padding_and_flops_per_batch() {
        let info = crate::model::ModelInfo {
            num_attention_heads: 2,
            vocab_size: 10,
            max_seq_length: 16,
            ..crate::model::info::test_info(8, 16, 2)
        };
        let b = Batching {
            max_sentences: 2,
            max_tokens: 100,
            max_attention: usize::MAX,
        };
        let work = super::Work::of_sorted_lengths(&info, b, &[3, 4, 5]);
        assert_eq!((work.tokens, work.padded_tokens), (12, 2 * 4 + 5));
        assert_eq!(
            work.flops,
            info.forward_flops(2, 4) + info.forward_flops(1, 5)
        );
        assert_eq!(
            super::Work::of_sorted_lengths(&info, b, &[]),
            super::Work::default()
        );
    }

    #[test]
    fn long_texts_are_cut_by_attention_cells() {
        let b = Batching {
            max_sentences: 32,
            max_tokens: 10_000,
            max_attention: 3 * 100 * 100,
        };
        // Three of 100 tokens fit 30,000 cells; a fourth would make 40,000.
        assert_eq!(split(b, &[100; 5]), [vec![0, 1, 2], vec![3, 4]]);
    }

    /// A long-context file (2,048 tokens, Qwen3's and Gemma's) batches short texts apart from a
    /// paragraph, as a 512-token BERT does: the budget no longer grows with the context.
    #[test]
    fn a_long_context_does_not_pad_short_texts_to_a_paragraph() {
        let info = |max_seq_length| crate::model::ModelInfo {
            max_seq_length,
            ..crate::model::info::test_info(8, 16, 2)
        };
        let mut lens = vec![14; 59];
        lens.push(450);
        for context in [512, 2048, 8192, 32_768] {
            let b = Batching::for_model(&info(context));
            let batches = split(b, &lens);
            assert_eq!(
                batches.last().unwrap(),
                &vec![59],
                "context {context}: the paragraph alone"
            );
            assert_eq!(
                batches.len(),
                3,
                "context {context}: 32 + 27 short, then the paragraph"
            );
        }
        assert_eq!(super::batch_tokens(384), 8 * 384, "MPNet as before");
        assert_eq!(super::batch_tokens(2048), super::BATCH_TOKENS);
    }

    #[test]
    fn empty_input_gives_no_batch() {
        let b = Batching {
            max_sentences: 32,
            max_tokens: 2048,
            max_attention: usize::MAX,
        };
        assert!(split(b, &[]).is_empty());
    }
}
