//! The tokenizer a converted file carries: the folder's tokenizer.json as its class runs it in
//! transformers, with padding off and truncation at `max_seq_length` (as sentence-transformers
//! tokenizes), checked to load and to fit the embedding table.

use anyhow::{anyhow, bail, Context, Result};

use super::folder::{self, TokenizerPipeline};

/// A tokenizer.json with padding off and truncation at `max_seq_length`: as
/// sentence-transformers tokenizes.
pub(super) fn prepared_tokenizer(json: &[u8], max_seq_length: usize) -> Result<String> {
    let mut tokenizer: serde_json::Value =
        serde_json::from_slice(json).context("tokenizer.json is not valid JSON")?;
    tokenizer["padding"] = serde_json::Value::Null;
    tokenizer["truncation"] = serde_json::json!({
        "direction": "Right", "max_length": max_seq_length, "strategy": "LongestFirst", "stride": 0
    });
    Ok(serde_json::to_string(&tokenizer)?)
}

/// An XLM-R tokenizer.json as sentence-transformers runs it: transformers' XLM-R tokenizer
/// keeps the file's Precompiled charsmap (no other normaliser step), vocabulary and template
/// but builds the rest itself ([`crate::model::xlm_r_steps`]: split at whitespace, then
/// Metaspace), so leading, trailing and repeated whitespace is dropped where the
/// tokenizer.json alone keeps a trailing "▁". `require_precompiled`: a tokenizer without the
/// charsmap is an error (multilingual-e5's must have it).
pub(super) fn as_xlm_r_tokenizer(
    mut hf: serde_json::Value,
    what: &str,
    add_prefix_space: bool,
    require_precompiled: bool,
) -> Result<String> {
    let normalizer = &hf["normalizer"];
    let precompiled = match normalizer["type"].as_str() {
        Some("Precompiled") => Some(normalizer.clone()),
        Some("Sequence") => normalizer["normalizers"]
            .as_array()
            .and_then(|steps| steps.iter().find(|s| s["type"] == "Precompiled"))
            .cloned(),
        _ => None,
    };
    if precompiled.is_none() && require_precompiled {
        bail!("{what}: no Precompiled normalizer");
    }
    let precompiled = precompiled.unwrap_or(serde_json::Value::Null);
    let (normalizer, pre_tokenizer, decoder) =
        crate::model::xlm_r_steps(precompiled, add_prefix_space, true);
    hf["normalizer"] = normalizer;
    hf["pre_tokenizer"] = pre_tokenizer;
    hf["decoder"] = decoder;
    Ok(hf.to_string())
}

/// The folder's tokenizer.json as its class runs it in transformers ([`TokenizerPipeline`]).
pub(super) fn folder_tokenizer(json: &[u8], pipeline: TokenizerPipeline) -> Result<Vec<u8>> {
    match pipeline {
        TokenizerPipeline::AsStored => Ok(json.to_vec()),
        TokenizerPipeline::XlmR { add_prefix_space } => {
            let hf = serde_json::from_slice(json).context("tokenizer.json is not valid JSON")?;
            Ok(as_xlm_r_tokenizer(hf, folder::TOKENIZER, add_prefix_space, false)?.into_bytes())
        }
    }
}

/// The tokenizer loads, and its ids fit the embedding table.
pub(super) fn check_tokenizer(json: &str, config_json: &str) -> Result<()> {
    let tokenizer = tokenizers::Tokenizer::from_bytes(json.as_bytes())
        .map_err(|e| anyhow!("tokenizer.json cannot be loaded: {e}"))?;
    let config = crate::model::EncoderConfig::from_json(config_json)?;
    let tokens = tokenizer.get_vocab_size(true);
    if tokens > config.vocab_size {
        bail!(
            "tokenizer.json has {tokens} tokens but the embedding table has {} rows",
            config.vocab_size
        );
    }
    Ok(())
}
