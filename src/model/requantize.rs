//! The llama.cpp weight types our kernels do not run — the K-quants (Q4_K_M, Q5_K_M, Q6_K …),
//! q4_1, q5_0, q5_1 (the K-quant files' fallback for rows that are not whole blocks of 256),
//! bf16 — are converted when a file loads: each matrix dequantized a few rows at a time and
//! quantized again to q8_0 (bf16 and rows that are not whole blocks of 32: to f32), into a new
//! GGUF image with the file's metadata. Every backend then reads the image as it reads a q8_0
//! file. The cost is q8_0's rounding on top of the file's (measured in tests/modern_encoders.rs)
//! and, while loading, the file and the image side by side.

use std::io::Cursor;

use anyhow::{bail, Context, Result};
use candle_core::quantized::gguf_file::{Content, TensorInfo};
use candle_core::quantized::{ggml_file::qtensor_from_ggml, GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::metadata::Metadata;

/// The types converted at load.
pub(super) const CONVERTED: [GgmlDType; 9] = [
    GgmlDType::BF16,
    GgmlDType::Q4_1,
    GgmlDType::Q5_0,
    GgmlDType::Q5_1,
    GgmlDType::Q2K,
    GgmlDType::Q3K,
    GgmlDType::Q4K,
    GgmlDType::Q5K,
    GgmlDType::Q6K,
];

/// Values dequantized at a time (the conversion's working memory: 4 bytes each, then q8_0's).
const CHUNK_VALUES: usize = 1 << 20;

/// Does any tensor of the file need converting?
pub(super) fn needed(content: &Content) -> bool {
    content
        .tensor_infos
        .values()
        .any(|t| CONVERTED.contains(&t.ggml_dtype))
}

/// What a tensor of `dtype` with rows of `columns` values runs as.
pub(super) fn target(dtype: GgmlDType, columns: usize) -> GgmlDType {
    match dtype {
        d if !CONVERTED.contains(&d) => d,
        GgmlDType::BF16 => GgmlDType::F32,
        _ if columns.is_multiple_of(32) => GgmlDType::Q8_0,
        _ => GgmlDType::F32,
    }
}

/// `(rows, columns)` of a tensor as candle shapes it (the last dimension is a row), checked to
/// be whole blocks of its type.
fn rows_and_columns(name: &str, t: &TensorInfo) -> Result<(usize, usize)> {
    let dims = t.shape.dims();
    let columns = dims.last().copied().unwrap_or(1);
    let rows = dims[..dims.len().saturating_sub(1)]
        .iter()
        .product::<usize>();
    if !columns.is_multiple_of(t.ggml_dtype.block_size()) {
        bail!(
            "tensor '{name}': rows of {columns} values are not whole {:?} blocks of {}",
            t.ggml_dtype,
            t.ggml_dtype.block_size()
        );
    }
    Ok((rows, columns))
}

/// The bytes of the converted image's tensor data (what the backends will hold).
pub(super) fn image_tensor_bytes(content: &Content) -> Result<usize> {
    let mut total = 0usize;
    for (name, t) in &content.tensor_infos {
        let (rows, columns) = rows_and_columns(name, t)?;
        let to = target(t.ggml_dtype, columns);
        total = total.saturating_add(rows * columns / to.block_size() * to.type_size());
    }
    Ok(total)
}

/// The file's type as llama.cpp names it (`general.file_type`: "q4_k_m", "q6_k" …), else the
/// type of `probe`, its first layer's first projection.
pub(super) fn stored_type_name(meta: &Metadata, probe: GgmlDType) -> String {
    // llama.cpp's `llama_ftype`.
    let name = match meta.number("general.file_type").unwrap_or(u64::MAX) {
        0 => "f32",
        1 => "f16",
        2 => "q4_0",
        3 => "q4_1",
        7 => "q8_0",
        8 => "q5_0",
        9 => "q5_1",
        10 => "q2_k",
        11 => "q3_k_s",
        12 => "q3_k_m",
        13 => "q3_k_l",
        14 => "q4_k_s",
        15 => "q4_k_m",
        16 => "q5_k_s",
        17 => "q5_k_m",
        18 => "q6_k",
        32 => "bf16",
        _ => return format!("{probe:?}").to_lowercase(),
    };
    name.into()
}

/// The converted image of the file `bytes` (whose header is `content`): the same metadata,
/// every tensor in the type it runs as, in name order.
pub(super) fn image(content: &Content, bytes: &[u8]) -> Result<Vec<u8>> {
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let mut tensors = Vec::with_capacity(names.len());
    for name in &names {
        let t = &content.tensor_infos[*name];
        let tensor = if CONVERTED.contains(&t.ggml_dtype) {
            convert(name, t, content, bytes)
                .with_context(|| format!("converting tensor '{name}' ({:?})", t.ggml_dtype))?
        } else {
            content.tensor(&mut Cursor::new(bytes), name, &Device::Cpu)?
        };
        tensors.push(tensor);
    }
    let metadata: Vec<_> = content
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let pairs: Vec<(&str, &QTensor)> = names.iter().map(|n| n.as_str()).zip(&tensors).collect();
    let mut out = Cursor::new(Vec::new());
    candle_core::quantized::gguf_file::write(&mut out, &metadata, &pairs)?;
    Ok(out.into_inner())
}

/// One tensor dequantized and quantized again, [`CHUNK_VALUES`] at a time.
fn convert(name: &str, t: &TensorInfo, content: &Content, bytes: &[u8]) -> Result<QTensor> {
    let (rows, columns) = rows_and_columns(name, t)?;
    let (from, to) = (t.ggml_dtype, target(t.ggml_dtype, columns));
    let row_bytes = columns / from.block_size() * from.type_size();
    let start = (content.tensor_data_offset + t.offset) as usize;
    let data = bytes
        .get(start..start + rows * row_bytes)
        .context("the tensor's data is outside the file")?;
    let per_chunk = (CHUNK_VALUES / columns.max(1)).max(1);
    let mut out = Vec::with_capacity(rows * columns / to.block_size() * to.type_size());
    for chunk in data.chunks(per_chunk * row_bytes) {
        let n = chunk.len() / row_bytes;
        // A copy: candle reads the blocks in place, so they must start at an allocation.
        let blocks = chunk.to_vec();
        let values: Tensor = qtensor_from_ggml(from, &blocks, vec![n, columns], &Device::Cpu)?
            .dequantize(&Device::Cpu)?;
        out.extend_from_slice(&QTensor::quantize(&values, to)?.data()?);
    }
    Ok(qtensor_from_ggml(
        to,
        &out,
        t.shape.dims().to_vec(),
        &Device::Cpu,
    )?)
}
