//! Natively, several batches of one `embed` call at once, each whole on one of rayon's threads:
//! the page's pool of helpers (one batch each), in one process.
//!
//! Why: run one after another, each batch's attention, norms and element-wise steps ran on one
//! core while the others waited for the next product (MiniLM q8_0 on 2 cores: 1.43 of 2 cores
//! busy). Each batch gives the same numbers on any thread (its products split rows, never sums).
//!
//! Memory: a batch starts only while the batches in flight, with it, hold at most one largest
//! batch's padded tokens and attention cells ([`BATCH_TOKENS`], [`BATCH_ATTENTION`]): short
//! texts run one per thread, long ones a few or one at a time (their products still use every
//! core), so the peak stays what one full batch needs, whatever the number of cores. Each batch
//! that ends starts what then fits: no thread waits at a barrier between groups of batches.

use std::sync::{Mutex, PoisonError};

use anyhow::Result;

use crate::model::{batch_cost, TokenBatch, BATCH_ATTENTION, BATCH_TOKENS};

/// What the batches in flight may hold together: one largest batch's padded tokens and
/// attention cells (per head).
const BOUND: [usize; 2] = [BATCH_TOKENS, BATCH_ATTENTION];

/// `encode` on every batch, results in order, several batches at once within [`BOUND`].
pub(super) fn encode_all<T: Send>(
    batches: &[TokenBatch],
    encode: impl Fn(&TokenBatch) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    encode_within(batches, BOUND, encode)
}

/// [`encode_all`] within `bound`. A batch starts when its cost fits beside those in flight
/// (or alone, when nothing is: a batch past the bound runs by itself), and each batch that
/// ends starts what now fits: no thread waits for another at a barrier, and nothing blocks a
/// thread of rayon's (a thread waiting inside a product may take up a started batch, never one
/// past the bound). After an error no new batch starts; the first failed batch's error is
/// returned.
fn encode_within<T: Send>(
    batches: &[TokenBatch],
    bound: [usize; 2],
    encode: impl Fn(&TokenBatch) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let run = Run {
        batches,
        bound,
        encode: &encode,
        state: Mutex::new(State {
            next: 0,
            in_flight: [0; 2],
            failed: false,
        }),
        results: Mutex::new((0..batches.len()).map(|_| None).collect()),
    };
    rayon::scope(|scope| run.start_what_fits(scope));
    let results = run
        .results
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let (mut out, mut first_error) = (Vec::with_capacity(batches.len()), None);
    for result in results.into_iter().flatten() {
        match result {
            Ok(v) => out.push(v),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None if out.len() == batches.len() => Ok(out),
        None => anyhow::bail!("{} of {} batches ran", out.len(), batches.len()),
    }
}

struct Run<'a, T, F> {
    batches: &'a [TokenBatch],
    bound: [usize; 2],
    encode: &'a F,
    state: Mutex<State>,
    results: Mutex<Vec<Option<Result<T>>>>,
}

/// The next batch to start, the cost of those started and not ended, whether one failed.
struct State {
    next: usize,
    in_flight: [usize; 2],
    failed: bool,
}

impl<'a, T: Send, F: Fn(&TokenBatch) -> Result<T> + Sync> Run<'a, T, F> {
    /// Starts, in order, every next batch that fits beside those in flight.
    fn start_what_fits<'s>(&'s self, scope: &rayon::Scope<'s>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while !state.failed && state.next < self.batches.len() {
            let i = state.next;
            let c = batch_cost(self.batches[i].batch, self.batches[i].seq_len);
            let alone = state.in_flight == [0; 2];
            if !alone && (0..2).any(|j| state.in_flight[j] + c[j] > self.bound[j]) {
                break;
            }
            state.next += 1;
            (0..2).for_each(|j| state.in_flight[j] += c[j]);
            scope.spawn(move |scope| {
                let result = (self.encode)(&self.batches[i]);
                let failed = result.is_err();
                self.results.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(result);
                {
                    let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                    (0..2).for_each(|j| state.in_flight[j] -= c[j]);
                    state.failed |= failed;
                }
                self.start_what_fits(scope);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use rayon::prelude::*;

    use super::*;

    fn batch(sentences: usize, seq_len: usize) -> TokenBatch {
        let rows = vec![vec![1u32; seq_len]; sentences];
        TokenBatch::from_rows(&rows, 0)
    }

    /// Runs `batches` on 8 threads within `bound`, each batch a few ms long and splitting work
    /// over the pool inside (as products do); returns the most tokens ever running at once and
    /// whether a batch past the bound ever ran beside another.
    fn most_running(batches: &[TokenBatch], bound: [usize; 2]) -> (usize, bool) {
        let (running, most, crowded) = (
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        );
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .unwrap();
        let out = pool.install(|| {
            encode_within(batches, bound, |b| {
                let tokens = b.batch * b.seq_len;
                let now = running.fetch_add(tokens, Ordering::SeqCst) + tokens;
                most.fetch_max(now, Ordering::SeqCst);
                if tokens > bound[0] && now > tokens {
                    crowded.fetch_add(1, Ordering::SeqCst);
                }
                (0..16)
                    .into_par_iter()
                    .for_each(|_| std::thread::sleep(Duration::from_millis(1)));
                std::thread::sleep(Duration::from_millis(3));
                running.fetch_sub(tokens, Ordering::SeqCst);
                Ok(tokens)
            })
        });
        let expected: Vec<_> = batches.iter().map(|b| b.batch * b.seq_len).collect();
        assert_eq!(out.unwrap(), expected, "every result, in order");
        (most.into_inner(), crowded.into_inner() > 0)
    }

    #[test]
    fn batches_run_at_once_within_the_bound_on_any_number_of_threads() {
        // 300 padded tokens each; 1,000 allow three at once, of the pool's eight threads.
        let batches: Vec<_> = (0..24).map(|_| batch(10, 30)).collect();
        let (most, _) = most_running(&batches, [1000, usize::MAX]);
        assert!((600..=900).contains(&most), "{most} tokens running at once");
        // One largest batch's bound lets eight such batches run at once.
        let (most, _) = most_running(&batches, BOUND);
        assert!(most > 900, "{most} tokens running at once");
    }

    #[test]
    fn a_batch_past_the_bound_runs_alone_and_order_is_kept() {
        let batches = vec![
            batch(10, 30),
            batch(10, 30),
            batch(1, 1500),
            batch(10, 30),
            batch(2, 10),
        ];
        let (most, crowded) = most_running(&batches, [1000, usize::MAX]);
        assert_eq!(most, 1500);
        assert!(!crowded, "the 1,500-token batch ran beside another");
    }

    #[test]
    fn attention_cells_bound_the_batches_in_flight_too() {
        // 30² × 10 = 9,000 cells each; 20,000 allow two at once, whatever their tokens.
        let batches: Vec<_> = (0..16).map(|_| batch(10, 30)).collect();
        let (most, _) = most_running(&batches, [usize::MAX, 20_000]);
        assert_eq!(most, 600);
    }

    #[test]
    fn an_error_stops_the_call_and_is_the_first_failed_batch_s() {
        let batches: Vec<_> = (1..=30).map(|n| batch(n, 3)).collect();
        let out = encode_all(&batches, |b| Ok(b.batch)).unwrap();
        assert_eq!(out, (1..=30).collect::<Vec<_>>());
        let started = AtomicUsize::new(0);
        let failed = encode_within(&batches, [3, usize::MAX], |b| {
            started.fetch_add(1, Ordering::SeqCst);
            anyhow::ensure!(b.batch < 17, "batch {} failed", b.batch);
            Ok(b.batch)
        });
        assert_eq!(failed.unwrap_err().to_string(), "batch 17 failed");
        // One batch at a time (each is past 3 tokens): nothing starts after the failure.
        assert_eq!(started.into_inner(), 17);
        assert!(encode_all(&[], |b| Ok(b.batch)).unwrap().is_empty());
    }
}
