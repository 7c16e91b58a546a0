//! A model file is hostile input (a user drops any file into the page). [`check_header`] walks
//! the raw GGUF header with bounds checks *before* candle parses it (every count, length,
//! dimension, offset and the alignment against the bytes there are), so no header field can make
//! a reader allocate more than the file holds, divide by zero or overflow. After the parse,
//! [`super::tensor_shapes`] holds each tensor to the shape the config gives it.

use anyhow::{bail, Result};

/// Bytes one metadata value takes, by its type's on-disk code (the GGUF spec; candle reads the
/// same): u8, i8, u16, i16, u32, i32, f32, bool, string, array, u64, i64, f64 (`None`: the
/// length follows).
const VALUE_SIZES: [Option<u64>; 13] = [
    Some(1),
    Some(1),
    Some(2),
    Some(2),
    Some(4),
    Some(4),
    Some(4),
    Some(1),
    None,
    None,
    Some(8),
    Some(8),
    Some(8),
];
const STRING: u32 = 8;

/// More tensors than any encoder we run has (128 layers × 16 tensors and the embeddings).
const MAX_TENSORS: u64 = 1 << 16;
/// Metadata array elements over the whole file: candle keeps each as a 32-byte value, so a
/// file of one-byte elements would take 32 times its size. 4 Mi covers a 1 Mi vocabulary
/// (tokens, token types and scores) and caps that at 128 MiB.
const MAX_ARRAY_ELEMENTS: u64 = 1 << 22;
/// Arrays of arrays deeper than this are no metadata a model file has.
const MAX_DEPTH: usize = 2;
/// Metadata keys and tensor names longer than this are not names.
const MAX_NAME_BYTES: u64 = 1 << 16;
/// GGUF's default when `general.alignment` is absent.
const DEFAULT_ALIGNMENT: u64 = 32;

/// A cursor over the header bytes that never reads past them.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&[u8]> {
        if n > self.remaining() {
            bail!(
                "the model file is truncated or corrupt: {what} at byte {} needs {n} bytes, only \
                 {} remain",
                self.pos,
                self.remaining()
            );
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into()?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into()?))
    }

    /// A length-prefixed string's bytes.
    fn string(&mut self, what: &str, max: u64) -> Result<&[u8]> {
        let len = self.u64(what)?;
        if len > max {
            bail!("the model file is corrupt: {what} claims {len} bytes (at most {max})");
        }
        self.take(len, what)
    }
}

/// What the header walk learns that the checks after it need.
struct Walk {
    alignment: u64,
    array_elements: u64,
}

/// Checks a GGUF header in `bytes` (the whole file or a prefix holding the header) of a file
/// of `total_len` bytes: magic, version 2 or 3, counts that fit the bytes, every string and
/// array length within the bytes left, known value and tensor types, 1 to 4 dimensions, each
/// positive and their product without overflow, `general.alignment` a power of two ≥ 8, and
/// every tensor's data aligned and inside the file.
pub(super) fn check_header(bytes: &[u8], total_len: usize) -> Result<()> {
    let mut r = Reader { bytes, pos: 0 };
    if r.take(4, "the magic")? != b"GGUF" {
        bail!("not a GGUF model file (expected the bytes 'GGUF' at the start)");
    }
    let version = r.u32("the version")?;
    if !(2..=3).contains(&version) {
        bail!("the model file has GGUF version {version}; sr-bench reads versions 2 and 3");
    }
    let tensors = r.u64("the tensor count")?;
    let entries = r.u64("the metadata count")?;
    // Each metadata entry takes at least a key length, a type and one byte; each tensor
    // entry a name length, a dimension count, one dimension, a type and an offset.
    let least = entries
        .saturating_mul(8 + 4 + 1)
        .saturating_add(tensors.saturating_mul(8 + 4 + 8 + 4 + 8));
    if tensors > MAX_TENSORS {
        bail!("the model file is corrupt: it claims {tensors} tensors (at most {MAX_TENSORS})");
    }
    if least > r.remaining() {
        bail!(
            "the model file is truncated or corrupt: it claims {tensors} tensors and {entries} \
             metadata entries, which need at least {least} bytes; {} remain",
            r.remaining()
        );
    }
    let mut walk = Walk {
        alignment: DEFAULT_ALIGNMENT,
        array_elements: 0,
    };
    for _ in 0..entries {
        let key = r.string("a metadata key", MAX_NAME_BYTES)?.to_vec();
        let kind = r.u32("a metadata type")?;
        if key == b"general.alignment" {
            walk.alignment = alignment(&mut r, kind)?;
        } else {
            skip_value(&mut r, kind, 0, &mut walk)?;
        }
    }
    let mut extents = Vec::with_capacity(tensors as usize);
    for _ in 0..tensors {
        extents.push(tensor_extent(&mut r)?);
    }
    let data_start = (r.pos as u64).div_ceil(walk.alignment) * walk.alignment;
    if let Some((name, offset, _)) = extents.iter().find(|t| t.1 % walk.alignment != 0) {
        bail!(
            "the model file is corrupt: tensor '{name}' starts at offset {offset}, not a \
             multiple of the alignment {}",
            walk.alignment
        );
    }
    for (name, offset, size) in extents {
        let end = data_start
            .checked_add(offset)
            .and_then(|s| s.checked_add(size));
        if end.is_none_or(|end| end > total_len as u64) {
            bail!(
                "the model file is truncated or corrupt: tensor '{name}' ({size} bytes at \
                 offset {offset}) ends past the file's {total_len} bytes"
            );
        }
    }
    Ok(())
}

/// `general.alignment` (u8, u16, u32 or i32, the types candle reads): a power of two from 8
/// (candle divides by it).
fn alignment(r: &mut Reader, kind: u32) -> Result<u64> {
    let value = match kind {
        0 => r.take(1, "general.alignment")?[0] as u64,
        2 => u16::from_le_bytes(r.take(2, "general.alignment")?.try_into()?) as u64,
        4 | 5 => r.u32("general.alignment")? as u64,
        _ => bail!("the model file is corrupt: general.alignment has value type {kind}, not u32"),
    };
    if value < 8 || !value.is_power_of_two() || value > 1 << 20 {
        bail!(
            "the model file is corrupt: general.alignment is {value} (a power of two from 8 to \
             2^20 is expected)"
        );
    }
    Ok(value)
}

/// Bytes one value of a fixed-size type takes, `None` for strings and arrays.
fn fixed_size(kind: u32) -> Result<Option<u64>> {
    match VALUE_SIZES.get(kind as usize) {
        Some(size) => Ok(*size),
        None => bail!("the model file is corrupt: unknown metadata value type {kind}"),
    }
}

fn skip_value(r: &mut Reader, kind: u32, depth: usize, walk: &mut Walk) -> Result<()> {
    if let Some(size) = fixed_size(kind)? {
        r.take(size, "a metadata value")?;
        return Ok(());
    }
    if kind == STRING {
        r.string("a metadata string", u64::MAX)?;
        return Ok(());
    }
    if depth >= MAX_DEPTH {
        bail!("the model file is corrupt: metadata arrays nested deeper than {MAX_DEPTH}");
    }
    let element = r.u32("an array's element type")?;
    let len = r.u64("an array's length")?;
    walk.array_elements = walk.array_elements.saturating_add(len);
    if walk.array_elements > MAX_ARRAY_ELEMENTS {
        bail!(
            "the model file is corrupt: its metadata arrays hold more than {MAX_ARRAY_ELEMENTS} \
             elements"
        );
    }
    match fixed_size(element)? {
        Some(size) => {
            r.take(len.saturating_mul(size), "an array")?;
        }
        None => {
            // Each element takes at least its 8-byte length (strings) or 12-byte type and length.
            let least = len.saturating_mul(if element == STRING { 8 } else { 12 });
            if least > r.remaining() {
                bail!(
                    "the model file is truncated or corrupt: an array of {len} elements needs at \
                     least {least} bytes, only {} remain",
                    r.remaining()
                );
            }
            for _ in 0..len {
                skip_value(r, element, depth + 1, walk)?;
            }
        }
    }
    Ok(())
}

/// One tensor entry: its name, data offset and data size in bytes.
fn tensor_extent(r: &mut Reader) -> Result<(String, u64, u64)> {
    let name = String::from_utf8_lossy(r.string("a tensor name", MAX_NAME_BYTES)?).into_owned();
    let dims = r.u32("a tensor's dimension count")?;
    if !(1..=4).contains(&dims) {
        bail!("the model file is corrupt: tensor '{name}' has {dims} dimensions (1 to 4 expected)");
    }
    let mut shape = Vec::with_capacity(dims as usize);
    for _ in 0..dims {
        shape.push(r.u64("a tensor dimension")?);
    }
    let elements = shape
        .iter()
        .try_fold(1u64, |n, &d| if d == 0 { None } else { n.checked_mul(d) });
    let (block, block_bytes) = block_layout(r.u32("a tensor type")?, &name)?;
    let size = elements
        .filter(|_| shape[0] % block == 0)
        .and_then(|n| (n / block).checked_mul(block_bytes));
    let Some(size) = size else {
        bail!(
            "the model file is corrupt: tensor '{name}' has dimensions {shape:?} (each must be \
             positive, the first a multiple of {block}, and their product must fit)"
        );
    };
    let offset = r.u64("a tensor offset")?;
    Ok((name, offset, size))
}

/// Elements per block and bytes per block of a ggml tensor type (those candle knows; which
/// of them our kernels run is checked after the parse, with its own error code).
fn block_layout(kind: u32, name: &str) -> Result<(u64, u64)> {
    Ok(match kind {
        0 => (1, 4),      // f32
        1 | 30 => (1, 2), // f16, bf16
        2 => (32, 18),    // q4_0
        3 => (32, 20),    // q4_1
        6 => (32, 22),    // q5_0
        7 => (32, 24),    // q5_1
        8 => (32, 34),    // q8_0
        9 => (32, 36),    // q8_1
        10 => (256, 84),  // q2_k
        11 => (256, 110), // q3_k
        12 => (256, 144), // q4_k
        13 => (256, 176), // q5_k
        14 => (256, 210), // q6_k
        15 => (256, 292), // q8_k
        _ => bail!("the model file is corrupt: tensor '{name}' has unknown tensor type {kind}"),
    })
}
