//! What a model folder says, read and checked ([`Settings`]): its config.json, the
//! sentence-transformers files (modules, pooling, max_seq_length, prompts) and the tensors
//! to write; defaults taken for absent files are named in notices.

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use super::{
    ModelFolder, ModuleEntry, CONFIG, MODULES, POOLING_CONFIG, PROMPTS_CONFIG, SAFETENSORS,
    SENTENCE_BERT_CONFIG, TOKENIZER, TOKENIZER_CONFIG,
};
use crate::convert::tensors::{self, TensorPlan};
use crate::model::architecture::{HfModelType, HfPositions};
use crate::model::{Architecture, Pooling};

/// What the folder says about the model, checked: everything the GGUF records besides weights.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The encoder the folder's `model_type` is ([`Architecture::from_hf_model_type`]).
    pub architecture: Architecture,
    /// How token vectors become the sentence vector (the file's `srbench.pooling`).
    pub pooling: Pooling,
    /// A `Normalize` module follows the pooling.
    pub normalize: bool,
    /// Tokens a text is truncated to.
    pub max_seq_length: usize,
    /// Text put before every input (sentence-transformers' default prompt; "" for none).
    pub prefix: String,
    /// Rows cut from the front of the position table: XLM-R (RoBERTa) counts positions from
    /// pad_token_id + 1, BERT from 0, so its first pad_token_id + 1 rows are never read.
    pub position_offset: usize,
    /// config.json as the folder has it (stored in the file verbatim).
    pub config_json: String,
    /// Which safetensors tensors go into the file, under which names.
    pub tensors: TensorPlan,
    /// The tokenizer.json as stored, or the pipeline transformers builds for its class.
    pub tokenizer: TokenizerPipeline,
    /// Defaults taken and things left out, for the user to read (nothing here is an error).
    pub notices: Vec<String>,
}

/// How transformers 5 runs the folder's tokenizer, as `tokenizer_config.json`'s class says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenizerPipeline {
    /// tokenizer.json as it is (`PreTrainedTokenizerFast`, `TokenizersBackend`, BERT's,
    /// MPNet's …, or no tokenizer_config.json).
    #[default]
    AsStored,
    /// `XLMRobertaTokenizer`: transformers keeps the tokenizer.json's vocabulary, template and
    /// Precompiled charsmap (no other normaliser step) and builds the rest itself — a split at
    /// whitespace, then Metaspace with the dummy prefix when `add_prefix_space` (its default).
    XlmR { add_prefix_space: bool },
}

/// `tokenizer_config.json`'s part that decides the pipeline.
#[derive(Deserialize)]
struct TokenizerConfig {
    #[serde(default)]
    tokenizer_class: Option<String>,
    #[serde(default)]
    add_prefix_space: Option<bool>,
}

impl ModelFolder {
    /// Reads and checks what the folder says: architecture, pooling, normalisation, maximum
    /// sequence length, the tensors to write. Defaults taken for absent files are in `notices`.
    pub fn settings(&self) -> Result<Settings> {
        let mut notices = Vec::new();
        let config_json = std::str::from_utf8(self.file(CONFIG)?)
            .context("config.json is not UTF-8")?
            .to_string();
        let raw: serde_json::Value =
            serde_json::from_str(&config_json).context("config.json is not valid JSON")?;
        let (architecture, hf) = architecture(&raw)?;
        let config = crate::model::EncoderConfig::from_json(&config_json)
            .context("config.json is not a supported encoder configuration")?;
        let position_offset = match hf.positions {
            HfPositions::AbsoluteAfterPadding => config.pad_token_id + 1,
            HfPositions::Absolute | HfPositions::AfterPaddingKept => 0,
        };
        if position_offset >= config.max_position_embeddings {
            bail!(
                "config.json: pad_token_id {} leaves no position of the {} in the table",
                config.pad_token_id,
                config.max_position_embeddings
            );
        }
        let position_limit = match hf.positions {
            // MPNet's positions start after the padding index (pad_token_id + 1).
            HfPositions::AfterPaddingKept => config
                .max_position_embeddings
                .saturating_sub(config.pad_token_id + 1),
            HfPositions::Absolute | HfPositions::AbsoluteAfterPadding => {
                config.max_position_embeddings - position_offset
            }
        };
        // The file records the table as the BERT encoder reads it: without the unused rows.
        let config_json = match position_offset {
            0 => config_json,
            offset => {
                let mut cut = raw.clone();
                cut["max_position_embeddings"] = (config.max_position_embeddings - offset).into();
                notices.push(format!(
                    "{} positions count from pad_token_id + 1 = {offset}: the table's first \
                     {offset} rows are cut and the model runs as BERT (max_position_embeddings \
                     {} in the file)",
                    raw["model_type"].as_str().unwrap_or("roberta"),
                    config.max_position_embeddings - offset
                ));
                serde_json::to_string(&cut)?
            }
        };
        let sentence_bert: Option<SentenceBertConfig> = self.json(SENTENCE_BERT_CONFIG)?;
        let max_seq_length = match &sentence_bert {
            Some(c) => c.max_seq_length,
            None => {
                notices.push(format!(
                    "no {SENTENCE_BERT_CONFIG}: max_seq_length = {position_limit} (the \
                     position table); choose another with --max-seq-length when embedding"
                ));
                position_limit
            }
        };
        if max_seq_length == 0 || max_seq_length > position_limit {
            bail!(
                "{SENTENCE_BERT_CONFIG}: max_seq_length {max_seq_length} is outside \
                 1..={position_limit} (the model's position table)"
            );
        }
        let tokenizer: serde_json::Value = self
            .json(TOKENIZER)?
            .ok_or_else(|| anyhow!("missing {TOKENIZER}"))?;
        if sentence_bert.as_ref().is_some_and(|c| c.do_lower_case)
            && tokenizer["normalizer"]["lowercase"] != serde_json::Value::Bool(true)
        {
            bail!(
                "{SENTENCE_BERT_CONFIG}: do_lower_case is not supported unless tokenizer.json \
                 lowercases itself"
            );
        }
        let tokenizer_pipeline = match self.json::<TokenizerConfig>(TOKENIZER_CONFIG)? {
            Some(c) if c.tokenizer_class.as_deref() == Some("XLMRobertaTokenizer") => {
                notices.push(format!(
                    "{TOKENIZER_CONFIG}: XLMRobertaTokenizer, so the tokenizer runs as \
                     transformers builds it (split at whitespace, Metaspace; of the \
                     normalizers only a Precompiled one is kept)"
                ));
                TokenizerPipeline::XlmR {
                    add_prefix_space: c.add_prefix_space.unwrap_or(true),
                }
            }
            _ => TokenizerPipeline::AsStored,
        };
        let pooling = match self.json::<PoolingConfig>(POOLING_CONFIG)? {
            Some(p) => p.mode()?,
            None => {
                notices.push(format!("no {POOLING_CONFIG}: mean pooling"));
                Pooling::Mean
            }
        };
        let normalize = match self.json::<Vec<ModuleEntry>>(MODULES)? {
            Some(modules) => modules.iter().any(|m| m.kind.ends_with("Normalize")),
            None => {
                notices.push(format!(
                    "no {MODULES}: no Normalize module (cosines do not depend on it)"
                ));
                false
            }
        };
        let prefix = match self.json::<PromptsConfig>(PROMPTS_CONFIG)? {
            Some(p) => p.default_prefix(&mut notices)?,
            None => String::new(),
        };
        let tensors = tensors::plan(
            architecture,
            hf.stored_prefix,
            &config,
            self.file(SAFETENSORS)?,
        )?;
        if !tensors.left_out.is_empty() {
            notices.push(format!(
                "left out (not used for embeddings): {}",
                tensors.left_out.join(", ")
            ));
        }
        Ok(Settings {
            architecture,
            pooling,
            normalize,
            max_seq_length,
            prefix,
            position_offset,
            config_json,
            tensors,
            tokenizer: tokenizer_pipeline,
            notices,
        })
    }
}

/// sentence-transformers' `config_sentence_transformers.json`: named prompts and the one
/// `encode` uses when none is asked for.
#[derive(Deserialize)]
struct PromptsConfig {
    #[serde(default)]
    prompts: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    default_prompt_name: Option<String>,
}

impl PromptsConfig {
    /// The prompt sentence-transformers puts before every text by default ("" for none); the
    /// others are named in a notice, to be chosen with `--prefix` when embedding.
    fn default_prefix(&self, notices: &mut Vec<String>) -> Result<String> {
        let prefix = match &self.default_prompt_name {
            Some(name) => self.prompts.get(name).cloned().ok_or_else(|| {
                anyhow!("{PROMPTS_CONFIG}: default_prompt_name '{name}' names no prompt")
            })?,
            None => String::new(),
        };
        crate::model::check_prefix(&prefix).context(PROMPTS_CONFIG)?;
        let others: Vec<String> = self
            .prompts
            .iter()
            .filter(|(name, _)| self.default_prompt_name.as_ref() != Some(*name))
            .map(|(name, text)| format!("{name} = {text:?}"))
            .collect();
        if !others.is_empty() {
            notices.push(format!(
                "{PROMPTS_CONFIG} names prompts that are not the default ({}): the file \
                 records {}; choose one with --prefix when embedding",
                others.join(", "),
                match prefix.is_empty() {
                    true => "none".to_string(),
                    false => format!("{prefix:?}"),
                }
            ));
        }
        Ok(prefix)
    }
}

/// The encoder sr-bench runs for config.json's `model_type` (the architecture table's
/// [`HfModelType`]s), or why there is none.
fn architecture(config: &serde_json::Value) -> Result<(Architecture, HfModelType)> {
    let model_type = config["model_type"]
        .as_str()
        .ok_or_else(|| anyhow!("config.json has no model_type"))?;
    let (architecture, hf) = Architecture::from_hf_model_type(model_type)?;
    let absolute = match hf.positions {
        HfPositions::Absolute | HfPositions::AbsoluteAfterPadding => true,
        HfPositions::AfterPaddingKept => false,
    };
    let positions = config["position_embedding_type"]
        .as_str()
        .unwrap_or("absolute");
    if absolute && positions != "absolute" {
        bail!(
            "config.json: position_embedding_type '{positions}' is not supported (only absolute)"
        );
    }
    Ok((architecture, hf))
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: usize,
    #[serde(default)]
    do_lower_case: bool,
}

/// sentence-transformers' `1_Pooling/config.json`.
#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
}

impl PoolingConfig {
    /// The one pooling mode set.
    fn mode(&self) -> Result<Pooling> {
        let flags = [
            ("mean", self.pooling_mode_mean_tokens),
            ("cls", self.pooling_mode_cls_token),
            ("max", self.pooling_mode_max_tokens),
            ("last", self.pooling_mode_lasttoken),
            (
                "mean_sqrt_len_tokens",
                self.pooling_mode_mean_sqrt_len_tokens,
            ),
            ("weightedmean_tokens", self.pooling_mode_weightedmean_tokens),
        ];
        let set: Vec<&str> = flags.iter().filter(|f| f.1).map(|f| f.0).collect();
        match set.as_slice() {
            [] => bail!("{POOLING_CONFIG}: no pooling mode is set"),
            [mode @ ("mean" | "cls" | "max" | "last")] => mode.parse(),
            [mode] => bail!("{POOLING_CONFIG}: pooling mode {mode} unsupported (supported: mean, cls, max, lasttoken)"),
            modes => bail!(
                "{POOLING_CONFIG}: pooling modes {} together unsupported (sentence-transformers \
                 concatenates them; sr-bench pools one way)",
                modes.join(" + ")
            ),
        }
    }
}
