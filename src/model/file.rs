//! The self-describing model file: one GGUF holding the weights, the tokenizer, the config,
//! the pooling mode and the maximum sequence length. Two layouts are read, detected from the
//! metadata: ours (`sr-bench convert`) and llama.cpp's BERT embedding files ([`super::llama`]).
//! What a file says about itself, and our layout's metadata keys, are [`super::info`].

use std::io::Cursor;

use anyhow::{anyhow, bail, Context, Result};
use candle_core::quantized::gguf_file::{Content, TensorInfo, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;

use super::architecture::Blocks;
use super::info::{
    check_prefix, metadata_keys, read_srbench, LoadOptions, ModelInfo, FORMAT_VERSION_LLAMA_NAMES,
};
use super::metadata::Metadata;
use super::tensor_names::{
    self as names, DecoderLayerNames, GatedLayerNames, LayerNames, PreNormLayerNames, T5LayerNames,
};
use super::{gguf_check, llama, requantize, tensor_shapes, EncoderConfig};
use crate::error::{coded, ErrorCode, ResultExt};

/// The weight types our kernels run.
const DTYPES: [GgmlDType; 4] = [
    GgmlDType::F32,
    GgmlDType::F16,
    GgmlDType::Q8_0,
    GgmlDType::Q4_0,
];

/// How a file names its tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Hugging Face's names: our first format.
    HuggingFace,
    /// llama.cpp's: `token_embd`, `blk.N.attn_q`, … ([`llama::tensor_name`]); llama.cpp's
    /// converter's files and our second format.
    LlamaCpp,
}

impl Layout {
    /// The name a tensor known by its Hugging Face name has in a file of this layout.
    fn file_name(self, hf_name: &str) -> String {
        match self {
            Self::HuggingFace => hf_name.to_string(),
            Self::LlamaCpp => llama::tensor_name(hf_name).unwrap_or_else(|| hf_name.to_string()),
        }
    }
}

/// A parsed model file. Tensors are read lazily from the bytes.
pub struct ModelFile {
    bytes: Vec<u8>,
    content: Content,
    layout: Layout,
    /// Written by `sr-bench convert` or `train` (our keys), not by llama.cpp's converter.
    ours: bool,
    /// [`LoadOptions::integer_matmul`], for the CPU backend's layers.
    pub integer_matmul: bool,
    pub info: ModelInfo,
    pub config: EncoderConfig,
    pub tokenizer_json: String,
}

impl ModelFile {
    /// Parses and validates a model file. Errors name what is wrong (not a GGUF, truncated,
    /// missing metadata) and carry [`ErrorCode::BadModel`] unless a more precise code applies
    /// (unsupported architecture or dtype).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::from_bytes_with(bytes, LoadOptions::default())
    }

    /// [`Self::from_bytes`] with the user's choices.
    pub fn from_bytes_with(bytes: Vec<u8>, options: LoadOptions) -> Result<Self> {
        let header =
            Header::read(&bytes, bytes.len(), options.clone()).code(ErrorCode::BadModel)?;
        if header.info.stored_dtype.is_some() {
            // Types our kernels do not run become an image of ones they do; the file goes.
            let image = requantize::image(&header.content, &bytes).code(ErrorCode::BadModel)?;
            drop(bytes);
            let mut converted = Self::from_bytes_with(image, options)?;
            converted.info.stored_dtype = header.info.stored_dtype;
            converted.info.converted_bytes = header.info.converted_bytes;
            converted.info.file_bytes = header.info.file_bytes;
            return Ok(converted);
        }
        Ok(Self {
            bytes,
            content: header.content,
            layout: header.layout,
            ours: header.ours,
            integer_matmul: options.integer_matmul,
            info: header.info,
            config: header.config,
            tokenizer_json: header.tokenizer_json,
        })
    }

    /// What a file of `total_len` bytes says about itself, from its first bytes only (the
    /// header: metadata, vocabulary and tensor table), with every check [`Self::from_bytes`]
    /// makes: the page shows it, and checks the memory it would need, before loading.
    pub fn inspect(prefix: &[u8], total_len: usize, options: LoadOptions) -> Result<ModelInfo> {
        Header::read(prefix, total_len, options)
            .map(|h| h.info)
            .code(ErrorCode::BadModel)
    }
}

/// A parsed header: everything but the tensor data.
struct Header {
    content: Content,
    layout: Layout,
    ours: bool,
    info: ModelInfo,
    config: EncoderConfig,
    tokenizer_json: String,
}

impl Header {
    /// Reads the header from `bytes` (the whole file or its start) of a file of `total_len`.
    fn read(bytes: &[u8], total_len: usize, options: LoadOptions) -> Result<Self> {
        if bytes.len() < 4 || &bytes[..4] != b"GGUF" {
            bail!(
                "not a GGUF model file (expected the bytes 'GGUF' at the start, got {} bytes{})",
                bytes.len(),
                if bytes.len() >= 4 {
                    format!(" starting with {:?}", &bytes[..4])
                } else {
                    String::new()
                }
            );
        }
        gguf_check::check_header(bytes, total_len)?;
        let content = Content::read(&mut Cursor::new(bytes))
            .map_err(|e| anyhow!("the model file is truncated or corrupt: {e}"))?;
        let meta = Metadata(&content.metadata);
        let ours = meta.get(metadata_keys::FORMAT_VERSION).is_some();
        let (layout, mut info, config, tokenizer_json) = if ours {
            let (info, config, tokenizer, version) = read_srbench(&meta)?;
            let layout = match version {
                FORMAT_VERSION_LLAMA_NAMES => Layout::LlamaCpp,
                _ => Layout::HuggingFace,
            };
            (layout, info, config, tokenizer)
        } else if llama::is_llama_file(&meta) {
            let d = llama::describe(&meta, &|name| content.tensor_infos.contains_key(name))?;
            let info = ModelInfo {
                name: d.name,
                architecture: d.architecture,
                card_prefix: d.architecture.spec().card_prefix,
                dtype: String::new(),
                dim: d.config.hidden_size,
                num_layers: d.config.num_hidden_layers,
                intermediate_size: d.config.intermediate_size,
                num_attention_heads: d.config.num_attention_heads,
                query_width: d.config.query_width(),
                kv_width: d.config.kv_width(),
                vocab_size: d.config.vocab_size,
                max_seq_length: d.config.max_position_embeddings,
                // llama.cpp's BERT files record no prompt.
                prefix: String::new(),
                pooling: d.pooling.as_str().into(),
                // Cosines do not depend on it; llama.cpp normalises embeddings by default.
                normalize: true,
                source: "llama.cpp GGUF (convert_hf_to_gguf.py)".into(),
                file_bytes: 0,
                tensors: 0,
                stored_dtype: None,
                converted_bytes: None,
                trained: None,
            };
            (Layout::LlamaCpp, info, d.config, d.tokenizer_json)
        } else {
            bail!(
                "not a model file sr-bench can read: no 'srbench.format_version' (our \
                     converter) and no llama.cpp tokenizer metadata"
            );
        };
        if let Some(n) = options.max_seq_length {
            if n == 0 || n > config.max_position_embeddings {
                return Err(coded(
                    ErrorCode::BadRequest,
                    format!(
                        "max sequence length {n} is outside 1..={} (the model's position table)",
                        config.max_position_embeddings
                    ),
                ));
            }
            info.max_seq_length = n;
        }
        if let Some(prefix) = &options.prefix {
            check_prefix(prefix).code(ErrorCode::BadRequest)?;
            info.prefix = prefix.clone();
        }
        info.pooling
            .parse::<super::Pooling>()
            .context("model file")?;
        info.file_bytes = total_len;
        info.tensors = content.tensor_infos.len();
        check_tensors(&content, total_len)?;
        tensor_shapes::check(
            &content,
            info.architecture,
            &config,
            info.max_seq_length,
            |hf| layout.file_name(hf),
        )?;
        config.check_architecture(info.architecture)?;
        // The first layer's first projection: its type is the file's (llama.cpp's files).
        let mut probe = None;
        if !ours {
            let name = match info.architecture.spec().blocks {
                Blocks::FusedGated => names::weight(&GatedLayerNames::nomic_bert(0).qkv),
                Blocks::FusedPreNorm => names::weight(&PreNormLayerNames::modern_bert(0).qkv),
                Blocks::Decoder(parts) => names::weight(&DecoderLayerNames::of(parts, 0).query),
                Blocks::T5 => names::weight(&T5LayerNames::of(0).query),
                Blocks::Bert => layout.file_name(&names::weight(&LayerNames::bert(0).query)),
                Blocks::MpNet => layout.file_name(&names::weight(&LayerNames::mpnet(0).query)),
            };
            let weight = content
                .tensor_infos
                .get(&name)
                .ok_or_else(|| anyhow!("model file is missing tensor '{name}'"))?;
            info.dtype = dtype_name(weight.ggml_dtype);
            probe = Some(weight);
        }
        if requantize::needed(&content) {
            // What that projection runs as after the conversion (the image's own `dtype`, so
            // the header alone says what loading will); in our own layout, which has no such
            // projection to probe, the first converted tensor by name.
            let converted = |t: &&TensorInfo| requantize::CONVERTED.contains(&t.ggml_dtype);
            let probe = probe.or_else(|| {
                let mut names: Vec<&String> = content.tensor_infos.keys().collect();
                names.sort();
                names
                    .into_iter()
                    .map(|n| &content.tensor_infos[n])
                    .find(converted)
            });
            let probe = probe.expect("needed: one tensor is converted");
            let columns = probe.shape.dims().last().copied().unwrap_or(1);
            info.stored_dtype = Some(requantize::stored_type_name(&meta, probe.ggml_dtype));
            info.dtype = dtype_name(requantize::target(probe.ggml_dtype, columns));
            info.converted_bytes = Some(requantize::image_tensor_bytes(&content)?);
        }
        Ok(Self {
            content,
            layout,
            ours,
            info,
            config,
            tokenizer_json,
        })
    }
}

impl ModelFile {
    /// Reads one tensor (quantized or f32) by its Hugging Face name.
    pub fn tensor(&self, name: &str) -> Result<QTensor> {
        let (stored, _) = self.tensor_info(name)?;
        self.content
            .tensor(&mut Cursor::new(&self.bytes), &stored, &Device::Cpu)
            .with_context(|| format!("model file: cannot read tensor '{stored}'"))
            .code(ErrorCode::BadModel)
    }

    /// A tensor's shape and dtype, from the file's header (no data read).
    pub fn tensor_layout(&self, name: &str) -> Result<(Vec<usize>, GgmlDType)> {
        let (_, t) = self.tensor_info(name)?;
        Ok((t.shape.dims().to_vec(), t.ggml_dtype))
    }

    /// A tensor's data as the file stores it (f32, f16 or quantized blocks), not copied.
    pub fn tensor_bytes(&self, name: &str) -> Result<&[u8]> {
        let (_, t) = self.tensor_info(name)?;
        // The extent was checked against the file's length when it was read.
        let start = (self.content.tensor_data_offset + t.offset) as usize;
        let len = data_bytes(t).expect("checked when the file was read") as usize;
        Ok(&self.bytes[start..start + len])
    }

    fn tensor_info(&self, name: &str) -> Result<(String, &TensorInfo)> {
        let stored = self.layout.file_name(name);
        match self.content.tensor_infos.get(&stored) {
            Some(t) => Ok((stored, t)),
            None => {
                Err(anyhow!("model file is missing tensor '{stored}'")).code(ErrorCode::BadModel)
            }
        }
    }

    /// The tensors' names as stored in the file.
    pub fn tensor_names(&self) -> impl Iterator<Item = &str> {
        self.content.tensor_infos.keys().map(String::as_str)
    }

    /// A new file of ours with this file's metadata (`set` replacing or adding keys) and
    /// `tensors` (by Hugging Face name, stored under this file's names) instead of its own:
    /// what `sr-bench train` writes. Only our own files.
    pub fn rewrite(&self, set: &[(&str, Value)], tensors: &[(&str, &QTensor)]) -> Result<Vec<u8>> {
        if !self.ours {
            bail!(
                "only files written by sr-bench convert can be rewritten (this one is llama.cpp's)"
            );
        }
        let names: Vec<String> = tensors
            .iter()
            .map(|(n, _)| self.layout.file_name(n))
            .collect();
        let tensors: Vec<(&str, &QTensor)> = names
            .iter()
            .zip(tensors)
            .map(|(n, (_, t))| (n.as_str(), *t))
            .collect();
        let mut metadata: Vec<(&str, &Value)> = self
            .content
            .metadata
            .iter()
            .filter(|(k, _)| !set.iter().any(|(s, _)| s == k))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        metadata.extend(set.iter().map(|(k, v)| (*k, v)));
        metadata.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = Cursor::new(Vec::new());
        candle_core::quantized::gguf_file::write(&mut out, &metadata, &tensors)?;
        Ok(out.into_inner())
    }
}

/// Every tensor: a dtype our kernels run, and data inside the file (a file cut short
/// passes the header parse; catch it before a forward pass does).
fn check_tensors(content: &Content, total_len: usize) -> Result<()> {
    for (name, t) in &content.tensor_infos {
        if !DTYPES.contains(&t.ggml_dtype) && !requantize::CONVERTED.contains(&t.ggml_dtype) {
            return Err(coded(
                ErrorCode::UnsupportedDtype,
                format!(
                    "tensor '{name}': dtype {} is not supported (supported: f32, f16, q8_0, \
                     q4_0, and converted to q8_0 at load: bf16, q4_1, q5_0, q5_1, the K-quants \
                     q2_k to q6_k); convert with --outtype q8_0",
                    dtype_name(t.ggml_dtype)
                ),
            ));
        }
        let end = data_bytes(t).and_then(|s| {
            content
                .tensor_data_offset
                .checked_add(t.offset)?
                .checked_add(s)
        });
        match end {
            Some(end) if end <= total_len as u64 => {}
            _ => bail!(
                "the model file is truncated: tensor '{name}' ends at byte {} but the file has {} bytes",
                end.map_or("(overflow)".to_string(), |e| e.to_string()),
                total_len
            ),
        }
    }
    Ok(())
}

/// Bytes of a tensor's data (`None` when its element count overflows).
fn data_bytes(t: &TensorInfo) -> Option<u64> {
    t.shape
        .dims()
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d as u64))
        .map(|n| n / t.ggml_dtype.block_size() as u64 * t.ggml_dtype.type_size() as u64)
}

/// "f32", "f16", "q8_0", … as users write them.
fn dtype_name(dtype: GgmlDType) -> String {
    format!("{dtype:?}").to_lowercase()
}
