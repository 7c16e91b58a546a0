//! The self-describing model file: one GGUF holding the weights, the tokenizer, the config,
//! the pooling mode and the maximum sequence length. Two layouts are read, detected from the
//! metadata: ours (`sr-bench convert`) and llama.cpp's BERT embedding files ([`super::llama`]).

use std::io::Cursor;

use anyhow::{anyhow, bail, Context, Result};
use candle_core::quantized::gguf_file::{Content, TensorInfo, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;
use serde::Serialize;

use super::metadata::Metadata;
use super::tensor_names::{self as names, DecoderLayerNames, GatedLayerNames, PreNormLayerNames};
use super::{gguf_check, llama, requantize, tensor_shapes, EncoderConfig};
use crate::error::{coded, ErrorCode, ResultExt};

/// Metadata keys written by `sr-bench convert` and required when loading.
pub mod metadata_keys {
    pub const ARCHITECTURE: &str = "general.architecture";
    pub const NAME: &str = "general.name";
    pub const FORMAT_VERSION: &str = "srbench.format_version";
    pub const DTYPE: &str = "srbench.dtype";
    pub const CONFIG: &str = "srbench.config_json";
    pub const TOKENIZER: &str = "srbench.tokenizer_json";
    pub const POOLING: &str = "srbench.pooling";
    pub const NORMALIZE: &str = "srbench.normalize";
    pub const MAX_SEQ_LENGTH: &str = "srbench.max_seq_length";
    pub const SOURCE: &str = "srbench.source";
    /// Optional: text put before every input, e.g. e5's "query: " (sentence-transformers'
    /// prompt); absent or empty means none.
    pub const PREFIX: &str = "srbench.prefix";

    /// Keys a file written by `sr-bench train` adds to its base file's: the recipe, so a
    /// trained file says what it was trained on wherever it is loaded.
    pub mod train {
        pub const DATA: &str = "srbench.train.data";
        pub const SEED: &str = "srbench.train.seed";
        pub const EPOCHS: &str = "srbench.train.epochs";
        pub const KEPT_EPOCH: &str = "srbench.train.kept_epoch";
        pub const BATCH: &str = "srbench.train.batch";
        pub const LR: &str = "srbench.train.lr";
        pub const WARMUP: &str = "srbench.train.warmup";
        pub const BASE_SHA256: &str = "srbench.train.base_sha256";
        pub const PAIRS: &str = "srbench.train.pairs";
    }
}

/// Longest text prefix accepted (bytes): prompts are a few words, never a document.
pub const MAX_PREFIX_BYTES: usize = 1024;

/// The version of the layout above; bumped when a loader could misread an older file.
pub const FORMAT_VERSION: u32 = 1;

/// What a model file says about itself (shown by `sr-bench info` and the page).
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    pub name: String,
    pub architecture: String,
    pub dtype: String,
    pub dim: usize,
    pub num_layers: usize,
    /// Width of the feed-forward layer (the largest matrices; memory estimates use it).
    pub intermediate_size: usize,
    pub num_attention_heads: usize,
    /// The width of all query heads, and of all key (or value) heads: `dim` both, but in a
    /// model with grouped-query attention or heads of their own size (Qwen3).
    pub query_width: usize,
    pub kv_width: usize,
    pub vocab_size: usize,
    pub max_seq_length: usize,
    /// Text put before every input the model embeds (e5's "query: "; empty: none): the
    /// file's, or the user's choice ([`LoadOptions::prefix`]). Counted in `max_seq_length`.
    pub prefix: String,
    /// "mean", "cls", "last" or "max" ([`super::Pooling`]).
    pub pooling: String,
    pub normalize: bool,
    pub source: String,
    pub file_bytes: usize,
    pub tensors: usize,
    /// The type the file stores when our kernels do not run it (a K-quant file: "q4_k_m",
    /// "q6_k" …; llama.cpp's `general.file_type`): converted at load to `dtype` (q8_0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_dtype: Option<String>,
    /// Then the bytes of the converted weights, which the backends hold instead of the file's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub converted_bytes: Option<usize>,
    /// How `sr-bench train` made this file from its base (absent for a released model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trained: Option<TrainedFrom>,
}

/// A trained file's recipe, read from its metadata (the lesson and the compare table name it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainedFrom {
    /// `stsb`, `stsb+sr`, `stsb-shuffled` or the training file's name.
    pub data: String,
    pub epochs: usize,
    /// The epoch kept (best on STS-B dev), 1-based; 0 when no epoch beat the base model.
    pub kept_epoch: usize,
    pub seed: u64,
    pub pairs: usize,
    pub base_sha256: String,
}

/// Choices a user makes when loading a file.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Truncate texts at this many tokens instead of the file's value (llama.cpp files record
    /// only the position table's size, e.g. 512, where sentence-transformers uses 256).
    pub max_seq_length: Option<usize>,
    /// Put this text before every input instead of the file's prefix (`Some("")`: none).
    pub prefix: Option<String>,
}

/// A prefix a user or a file gives, refused when it is too long or holds control characters
/// other than a newline or a tab (instructions may span lines).
pub fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.len() > MAX_PREFIX_BYTES {
        bail!(
            "the text prefix is {} bytes long; at most {MAX_PREFIX_BYTES} are accepted",
            prefix.len()
        );
    }
    if let Some(c) = prefix
        .chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t')
    {
        bail!("the text prefix holds the control character {c:?}");
    }
    Ok(())
}

/// The weight types our kernels run.
const DTYPES: [GgmlDType; 4] = [
    GgmlDType::F32,
    GgmlDType::F16,
    GgmlDType::Q8_0,
    GgmlDType::Q4_0,
];

/// Where a file's tensor names come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `sr-bench convert`: Hugging Face names.
    SrBench,
    /// llama.cpp's converter: `token_embd`, `blk.N.attn_q`, … ([`llama::tensor_name`]).
    LlamaCpp,
}

impl Layout {
    /// The name a tensor known by its Hugging Face name has in a file of this layout.
    fn file_name(self, hf_name: &str) -> String {
        match self {
            Self::SrBench => hf_name.to_string(),
            Self::LlamaCpp => llama::tensor_name(hf_name).unwrap_or_else(|| hf_name.to_string()),
        }
    }
}

/// A parsed model file. Tensors are read lazily from the bytes.
pub struct ModelFile {
    bytes: Vec<u8>,
    content: Content,
    layout: Layout,
    pub info: ModelInfo,
    pub config: EncoderConfig,
    pub tokenizer_json: String,
}

impl ModelInfo {
    /// The pooling mode (checked when the file was read).
    pub fn pooling_mode(&self) -> super::Pooling {
        self.pooling.parse().unwrap_or(super::Pooling::Mean)
    }

    /// Floating-point operations (2 per multiply-add) of one forward pass over `batch` rows
    /// padded to `seq_len` tokens: per layer and token the linear layers (Q and output:
    /// 2·d·q, K and V: 2·d·kv, which is 4·d² where q = kv = d; FFN in and out: 2·d·ff
    /// multiply-adds, 3·d·ff with a gate) and the attention's two products (2·seq_len·q).
    /// Embeddings, norms, softmax, rotary positions and pooling are left out: benchmarks
    /// divide by time to show how close the matmuls run to a peak.
    pub fn forward_flops(&self, batch: usize, seq_len: usize) -> f64 {
        let (d, ff, t) = (
            self.dim as f64,
            self.intermediate_size as f64,
            seq_len as f64,
        );
        let (q, kv) = (self.query_width as f64, self.kv_width as f64);
        let ffn = super::ffn_matrices(&self.architecture) as f64;
        let per_token = 2.0 * d * q + 2.0 * d * kv + ffn * d * ff + 2.0 * t * q;
        2.0 * per_token * self.num_layers as f64 * batch as f64 * t
    }
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
        let (layout, mut info, config, tokenizer_json) =
            if meta.get(metadata_keys::FORMAT_VERSION).is_some() {
                let (info, config, tokenizer) = read_srbench(&meta)?;
                (Layout::SrBench, info, config, tokenizer)
            } else if llama::is_llama_file(&meta) {
                let d = llama::describe(&meta)?;
                let info = ModelInfo {
                    name: d.name,
                    architecture: d.architecture,
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
                    pooling: d.pooling,
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
            &info.architecture,
            &config,
            info.max_seq_length,
            |hf| layout.file_name(hf),
        )?;
        config.check_architecture(&info.architecture)?;
        // The first layer's first projection: its type is the file's (llama.cpp's files).
        let mut probe = None;
        if layout == Layout::LlamaCpp {
            let name = if info.architecture == "nomic-bert" {
                names::weight(&GatedLayerNames::nomic_bert(0).qkv)
            } else if info.architecture == "modern-bert" {
                names::weight(&PreNormLayerNames::modern_bert(0).qkv)
            } else if matches!(info.architecture.as_str(), "qwen3" | "gemma-embedding") {
                names::weight(&DecoderLayerNames::qwen3(0).query)
            } else {
                layout.file_name("encoder.layer.0.attention.self.query.weight")
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
    /// `tensors` instead of its own: what `sr-bench train` writes. Only our own files (their
    /// tensors carry the Hugging Face names the loaders expect).
    pub fn rewrite(&self, set: &[(&str, Value)], tensors: &[(&str, &QTensor)]) -> Result<Vec<u8>> {
        if self.layout != Layout::SrBench {
            bail!(
                "only files written by sr-bench convert can be rewritten (this one is llama.cpp's)"
            );
        }
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
        candle_core::quantized::gguf_file::write(&mut out, &metadata, tensors)?;
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

/// Our own layout: everything under `srbench.*`.
fn read_srbench(meta: &Metadata) -> Result<(ModelInfo, EncoderConfig, String)> {
    let version = meta.number(metadata_keys::FORMAT_VERSION)?;
    if version != FORMAT_VERSION as u64 {
        bail!("model file has format version {version}; this build reads version {FORMAT_VERSION}");
    }
    let config = EncoderConfig::from_json(&meta.text(metadata_keys::CONFIG)?)?;
    let info = ModelInfo {
        name: meta.text(metadata_keys::NAME)?,
        architecture: meta.text(metadata_keys::ARCHITECTURE)?,
        dtype: meta.text(metadata_keys::DTYPE)?,
        dim: config.hidden_size,
        num_layers: config.num_hidden_layers,
        intermediate_size: config.intermediate_size,
        num_attention_heads: config.num_attention_heads,
        query_width: config.query_width(),
        kv_width: config.kv_width(),
        vocab_size: config.vocab_size,
        max_seq_length: meta.size(metadata_keys::MAX_SEQ_LENGTH)?,
        prefix: match meta.get(metadata_keys::PREFIX) {
            Some(_) => {
                let prefix = meta.text(metadata_keys::PREFIX)?;
                check_prefix(&prefix).context("model file")?;
                prefix
            }
            None => String::new(),
        },
        pooling: meta.text(metadata_keys::POOLING)?,
        normalize: meta.bool(metadata_keys::NORMALIZE).unwrap_or(false),
        source: meta.text(metadata_keys::SOURCE).unwrap_or_default(),
        file_bytes: 0,
        tensors: 0,
        stored_dtype: None,
        converted_bytes: None,
        trained: read_trained(meta)?,
    };
    Ok((info, config, meta.text(metadata_keys::TOKENIZER)?))
}

/// The recipe of a trained file; `None` when the file has no `srbench.train.data`. A file
/// that has it must have the rest, well-typed (a half-written recipe is a damaged file).
fn read_trained(meta: &Metadata) -> Result<Option<TrainedFrom>> {
    use metadata_keys::train;
    if meta.get(train::DATA).is_none() {
        return Ok(None);
    }
    let trained = TrainedFrom {
        data: meta.text(train::DATA)?,
        epochs: meta.size(train::EPOCHS)?,
        kept_epoch: meta.size(train::KEPT_EPOCH)?,
        seed: meta.number(train::SEED)?,
        pairs: meta.size(train::PAIRS)?,
        base_sha256: meta.text(train::BASE_SHA256)?,
    };
    if trained.kept_epoch > trained.epochs {
        bail!(
            "model file: metadata '{}' = {} is more than its {} epochs",
            train::KEPT_EPOCH,
            trained.kept_epoch,
            trained.epochs
        );
    }
    Ok(Some(trained))
}

/// "f32", "f16", "q8_0", … as users write them.
fn dtype_name(dtype: GgmlDType) -> String {
    format!("{dtype:?}").to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(dim: usize, intermediate_size: usize, num_layers: usize) -> ModelInfo {
        ModelInfo {
            name: "m".into(),
            architecture: "bert".into(),
            dtype: "q8_0".into(),
            dim,
            num_layers,
            intermediate_size,
            num_attention_heads: 12,
            query_width: dim,
            kv_width: dim,
            vocab_size: 30522,
            max_seq_length: 256,
            prefix: String::new(),
            pooling: "mean".into(),
            normalize: true,
            source: String::new(),
            file_bytes: 0,
            tensors: 0,
            stored_dtype: None,
            converted_bytes: None,
            trained: None,
        }
    }

    #[test]
    fn a_trained_recipe_is_read_whole_or_refused() {
        use metadata_keys::train;
        use std::collections::HashMap;
        let s = |v: &str| Value::String(v.into());
        let mut m: HashMap<String, Value> = [
            (train::DATA, s("stsb+sr")),
            (train::EPOCHS, Value::U32(4)),
            (train::KEPT_EPOCH, Value::U32(3)),
            (train::SEED, Value::U64(7)),
            (train::PAIRS, Value::U32(16_608)),
            (train::BASE_SHA256, s("ab12")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let read = |m: &HashMap<String, Value>| read_trained(&Metadata(m));
        assert_eq!(
            read(&m).unwrap(),
            Some(TrainedFrom {
                data: "stsb+sr".into(),
                epochs: 4,
                kept_epoch: 3,
                seed: 7,
                pairs: 16_608,
                base_sha256: "ab12".into(),
            })
        );
        // A kept epoch past the last one, a missing or mistyped key: a damaged file.
        m.insert(train::KEPT_EPOCH.into(), Value::U32(5));
        let e = read(&m).unwrap_err().to_string();
        assert!(
            e.contains(train::KEPT_EPOCH) && e.contains("4 epochs"),
            "{e}"
        );
        m.insert(train::KEPT_EPOCH.into(), Value::U32(0));
        m.remove(train::SEED);
        assert!(read(&m).unwrap_err().to_string().contains(train::SEED));
        m.insert(train::SEED.into(), s("seven"));
        assert!(read(&m).unwrap_err().to_string().contains(train::SEED));
        // No recipe at all: a released model.
        assert_eq!(read(&HashMap::new()).unwrap(), None);
    }

    #[test]
    fn forward_flops_count_the_linear_layers_and_attention_products_per_token() {
        // MiniLM: 6 × (4·384² + 2·384·1536 + 2·1·384) multiply-adds for one token alone.
        let minilm = info(384, 1536, 6);
        assert_eq!(minilm.forward_flops(1, 1), 2.0 * 6.0 * 1_770_240.0);
        // Linear in the batch; the attention term grows with the padded length squared.
        assert_eq!(
            minilm.forward_flops(32, 20),
            32.0 * minilm.forward_flops(1, 20)
        );
        let attention =
            |t: usize| minilm.forward_flops(1, t) - t as f64 * minilm.forward_flops(1, 1);
        assert_eq!(attention(10), 2.0 * 6.0 * 2.0 * 384.0 * (100.0 - 10.0));
        assert_eq!(info(0, 0, 12).forward_flops(8, 128), 0.0);
        // A gated feed-forward (nomic-bert's SwiGLU) has a third matrix: 4·d² + 3·d·ff.
        let nomic = ModelInfo {
            architecture: "nomic-bert".into(),
            ..info(384, 1536, 6)
        };
        let gated = 4.0 * 384.0 * 384.0 + 3.0 * 384.0 * 1536.0 + 2.0 * 384.0;
        assert_eq!(nomic.forward_flops(1, 1), 2.0 * 6.0 * gated);
        // Qwen3-Embedding-0.6B per layer and token: Q and output 2·1024·2048, K and V (8
        // heads of 128) 2·1024·1024, a SwiGLU of 3·1024·3072, attention 2·1·2048.
        let qwen = ModelInfo {
            architecture: "qwen3".into(),
            query_width: 2048,
            kv_width: 1024,
            ..info(1024, 3072, 28)
        };
        let per_token =
            2.0 * 1024.0 * 2048.0 + 2.0 * 1024.0 * 1024.0 + 3.0 * 1024.0 * 3072.0 + 2.0 * 2048.0;
        assert_eq!(qwen.forward_flops(1, 1), 2.0 * 28.0 * per_token);
    }
}
