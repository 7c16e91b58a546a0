//! Natively, several batches of one `embed` call at once, each whole on one of rayon's threads:
//! the page's pool of helpers (one batch each), in one process.
//!
//! Why: run one after another, each batch's attention, norms and element-wise steps ran on one
//! core while the others waited for the next product (MiniLM q8_0 on 2 cores: 1.43 of 2 cores
//! busy). Each batch gives the same numbers on any thread (its products split rows, never sums).
//!
//! Memory: the batches in flight hold at most one largest batch's padded tokens and attention
//! cells ([`BATCH_TOKENS`], [`BATCH_ATTENTION`]) together: short texts run one per thread, long
//! ones a few or one at a time as before (their products still use every core), so the peak
//! stays what one full batch needs, whatever the number of cores.

use anyhow::Result;
use rayon::prelude::*;

use crate::model::{TokenBatch, BATCH_ATTENTION, BATCH_TOKENS};

/// `encode` on every batch, in order, consecutive batches at once within the memory bound.
pub(super) fn encode_all<T: Send>(
    batches: &[TokenBatch],
    encode: impl Fn(&TokenBatch) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(batches.len());
    for group in groups(batches, rayon::current_num_threads()) {
        out.extend(group.par_iter().map(&encode).collect::<Result<Vec<_>>>()?);
    }
    Ok(out)
}

/// Padded tokens and attention cells (per head) of one batch: what its activations grow with.
fn cost(b: &TokenBatch) -> [usize; 2] {
    [b.batch * b.seq_len, b.batch * b.seq_len * b.seq_len]
}

/// Consecutive runs of `batches` to run at once on `threads` threads: at most `threads` of a
/// run are in flight, so a run holds at most `min(Σ cost, threads × largest cost)`, kept within
/// one largest batch's. Short batches then form one long run (no waiting at run boundaries);
/// long ones runs of a few, or of one when a batch alone is past the bound.
fn groups(batches: &[TokenBatch], threads: usize) -> Vec<&[TokenBatch]> {
    const BOUND: [usize; 2] = [BATCH_TOKENS, BATCH_ATTENTION];
    let mut groups = Vec::new();
    let (mut start, mut sum, mut max) = (0, [0; 2], [0; 2]);
    for (i, b) in batches.iter().enumerate() {
        let c = cost(b);
        let fits = (0..2).all(|j| {
            let in_flight = (sum[j] + c[j]).min(threads * max[j].max(c[j]));
            in_flight <= BOUND[j]
        });
        if i > start && !fits {
            groups.push(&batches[start..i]);
            (start, sum, max) = (i, [0; 2], [0; 2]);
        }
        for j in 0..2 {
            sum[j] += c[j];
            max[j] = max[j].max(c[j]);
        }
    }
    if start < batches.len() {
        groups.push(&batches[start..]);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(sentences: usize, seq_len: usize) -> TokenBatch {
        let rows = vec![vec![1u32; seq_len]; sentences];
        TokenBatch::from_rows(&rows, 0)
    }

    fn sizes(groups: &[&[TokenBatch]]) -> Vec<Vec<(usize, usize)>> {
        groups
            .iter()
            .map(|g| g.iter().map(|b| (b.batch, b.seq_len)).collect())
            .collect()
    }

    fn lengths(groups: &[&[TokenBatch]]) -> Vec<usize> {
        groups.iter().map(|g| g.len()).collect()
    }

    #[test]
    fn short_batches_run_as_one_group_while_every_thread_s_batch_fits() {
        // 32 × 16 = 512 padded tokens each: two threads hold 1,024 of 4,096 at once.
        let batches: Vec<_> = (0..20).map(|_| batch(32, 16)).collect();
        assert_eq!(lengths(&groups(&batches, 2)), [20]);
        // Sixteen threads would hold 8,192: groups of eight (4,096) instead.
        assert_eq!(lengths(&groups(&batches, 16)), [8, 8, 4]);
        assert_eq!(lengths(&groups(&batches, 1)), [20]);
    }

    #[test]
    fn long_batches_run_alone_and_order_is_kept() {
        let batches = vec![batch(32, 16), batch(8, 512), batch(1, 5000), batch(2, 10)];
        // 512 + 4,096 tokens is past the bound; a batch past it alone is a group of one.
        assert_eq!(
            sizes(&groups(&batches, 2)),
            [
                vec![(32, 16)],
                vec![(8, 512)],
                vec![(1, 5000)],
                vec![(2, 10)]
            ]
        );
    }

    #[test]
    fn attention_cells_bound_a_group_too() {
        // 1,024 tokens each (three fit in 4,096), but 1,024² cells each: two fill 8 × 512².
        let batches: Vec<_> = (0..3).map(|_| batch(1, 1024)).collect();
        assert_eq!(lengths(&groups(&batches, 3)), [2, 1]);
        // With two threads only two are ever in flight.
        assert_eq!(lengths(&groups(&batches, 2)), [3]);
    }

    #[test]
    fn every_result_comes_back_in_order_and_an_error_stops_the_call() {
        let batches: Vec<_> = (1..=30).map(|n| batch(n, 3)).collect();
        let out = encode_all(&batches, |b| Ok(b.batch)).unwrap();
        assert_eq!(out, (1..=30).collect::<Vec<_>>());
        let failed = encode_all(&batches, |b| {
            anyhow::ensure!(b.batch != 17, "batch 17 failed");
            Ok(b.batch)
        });
        assert_eq!(failed.unwrap_err().to_string(), "batch 17 failed");
        assert!(encode_all(&[], |b| Ok(b.batch)).unwrap().is_empty());
    }
}
