//! Word-order edits of a sentence, one implementation for the CLI, the probes and the page.
//! Words are the text split on whitespace (punctuation stays with its word) and are joined
//! with single spaces.

use anyhow::{bail, Result};

use crate::eval::rng::SplitMix64;

fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

/// A seeded random permutation of the words: Fisher–Yates driven by SplitMix64 seeded with
/// `seed`, so a seed always gives the same sentence (and may give the original back).
pub fn shuffle_words(text: &str, seed: u64) -> String {
    let mut words = words(text);
    let mut rng = SplitMix64::new(seed);
    for i in (1..words.len()).rev() {
        words.swap(i, rng.below(i + 1));
    }
    words.join(" ")
}

/// The words in reverse order.
pub fn reverse_words(text: &str) -> String {
    let mut words = words(text);
    words.reverse();
    words.join(" ")
}

/// The words with the `i`-th and `j`-th (0-based) exchanged.
pub fn swap_words(text: &str, i: usize, j: usize) -> Result<String> {
    let mut words = words(text);
    if i >= words.len() || j >= words.len() {
        bail!(
            "swap_words: positions {i} and {j} must both be below the word count {}",
            words.len()
        );
    }
    words.swap(i, j);
    Ok(words.join(" "))
}

/// The shuffle seed of the pair named `key` in a probe run with `seed`: each pair gets its
/// own permutation, fixed by the run's seed.
pub fn pair_seed(seed: u64, key: u64) -> u64 {
    let mut rng = SplitMix64::new(seed ^ key.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    rng.next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_are_permutations_fixed_by_their_seed() {
        let text = "Tom likes Taylor Swift a lot these days.";
        let sorted = |t: &str| {
            let mut w = words(t).into_iter().map(String::from).collect::<Vec<_>>();
            w.sort();
            w
        };
        let want = sorted(text);
        let shuffled: Vec<String> = (0..20).map(|seed| shuffle_words(text, seed)).collect();
        assert!(shuffled.iter().all(|s| sorted(s) == want));
        assert_eq!(shuffled[3], shuffle_words(text, 3));
        assert!(shuffled.iter().any(|s| s != &shuffled[0]));
        assert_eq!(shuffle_words("  one  ", 9), "one");
        assert_eq!(shuffle_words("", 9), "");
    }

    #[test]
    fn reverse_and_swap() {
        assert_eq!(reverse_words("a b  c"), "c b a");
        assert_eq!(
            swap_words("Tom likes Taylor", 0, 2).unwrap(),
            "Taylor likes Tom"
        );
        assert!(swap_words("Tom likes", 0, 2).is_err());
    }
}
