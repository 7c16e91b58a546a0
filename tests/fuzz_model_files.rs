//! A model file a user brings is hostile input. Thousands of mutated and truncated versions of
//! real files (ours and llama.cpp's) go to the loader: each must load or fail with a coded
//! error, never panic, and no header field may make it allocate more than the file holds.
//! Deterministic (fixed seed); the counts are printed (`cargo test --release --test
//! fuzz_model_files -- --nocapture`).

mod common;
mod crafted;

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use candle_core::quantized::gguf_file::{Content, Value};
use sr_bench::backend::{load_embedder, BackendKind};
use sr_bench::error::{code_of, ErrorCode};
use sr_bench::model::{LoadOptions, ModelFile};

const OURS: &str = "www/models/all-MiniLM-L6-v2.q8_0.gguf";
const LLAMA: &str = "tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.q8_0.gguf";

/// Header mutations per file (read as the page does: the header, and the file's size).
const HEADER_CASES: usize = 3_100;
/// Whole-file mutations per file (the header and the tensor data).
const FILE_CASES: usize = 300;
/// Of the whole files that parse, every this many is also loaded and embeds a text.
const EMBED_EVERY: usize = 8;

/// SplitMix64: a fixed, dependency-free pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[derive(Default, Debug)]
struct Counts {
    tried: usize,
    parsed: usize,
    rejected: usize,
    panics: usize,
    embedded: usize,
    uncoded: usize,
}

/// A real file and what the mutations aim at: its header and the numbers in it that look like
/// lengths, counts, dimensions or offsets (small little-endian u64 values).
struct Base {
    bytes: Vec<u8>,
    header_len: usize,
    length_fields: Vec<usize>,
    /// Small u32 values: value types, dimension counts, tensor types, the alignment.
    small_fields: Vec<usize>,
}

impl Base {
    fn new(bytes: Vec<u8>) -> Self {
        let content = Content::read(&mut Cursor::new(&bytes)).unwrap();
        let header_len = content.tensor_data_offset as usize;
        let u64_at = |p: usize| u64::from_le_bytes(bytes[p..p + 8].try_into().unwrap());
        let length_fields = (0..header_len - 8)
            .filter(|&p| (1..1 << 26).contains(&u64_at(p)))
            .collect();
        let small_fields = (0..header_len - 8)
            .filter(|&p| (1..=64).contains(&(u64_at(p) & 0xFFFF_FFFF)))
            .collect();
        Self {
            bytes,
            header_len,
            length_fields,
            small_fields,
        }
    }

    /// A position to mutate: mostly the header's two dense ends (the counts and first
    /// metadata; the tensor table), else anywhere in `len` bytes.
    fn position(&self, rng: &mut Rng, len: usize) -> usize {
        match rng.below(4) {
            0 => rng.below(self.header_len.min(4096)),
            1 => self.header_len.saturating_sub(1 + rng.below(16_384)),
            2 => rng.below(self.header_len),
            _ => rng.below(len),
        }
    }

    /// One to four mutations of `bytes` (within `limit` bytes), maybe cut short.
    fn mutate(&self, rng: &mut Rng, bytes: &mut Vec<u8>, limit: usize) {
        for _ in 0..1 + rng.below(4) {
            let len = bytes.len().min(limit);
            if len < 8 {
                return;
            }
            let at = self.position(rng, len).min(len - 8);
            match rng.below(6) {
                0 => bytes[at] ^= 1 << rng.below(8),
                1 => bytes[at] = [0, 0xFF, 0x7F, 0x80][rng.below(4)],
                2 => {
                    let at = at / 8 * 8;
                    let v = [
                        u64::MAX,
                        0,
                        1 << 40,
                        1 << 60,
                        i64::MIN as u64,
                        u32::MAX as u64,
                    ];
                    bytes[at..at + 8].copy_from_slice(&v[rng.below(v.len())].to_le_bytes());
                }
                3 => {
                    let at = self.length_fields[rng.below(self.length_fields.len())];
                    if at + 8 > len {
                        continue;
                    }
                    let v = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
                    let inflated = [v + 1, v * 2, v << 8, v << 32, u64::MAX - v, v - 1];
                    bytes[at..at + 8].copy_from_slice(&inflated[rng.below(6)].to_le_bytes());
                }
                4 => {
                    let at = self.small_fields[rng.below(self.small_fields.len())];
                    if at + 4 > len {
                        continue;
                    }
                    let v = [0, 1, 3, 5, 7, 13, 31, 33, u32::MAX][rng.below(9)];
                    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
                }
                _ => bytes.truncate(rng.below(len)),
            }
        }
    }
}

/// Runs `f` and counts how it ended (a panic's message goes to the hook); true when it
/// succeeded.
fn attempt(counts: &mut Counts, f: impl FnOnce() -> anyhow::Result<()>) -> bool {
    counts.tried += 1;
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            counts.parsed += 1;
            return true;
        }
        Ok(Err(e)) => {
            counts.rejected += 1;
            if code_of(&e) == ErrorCode::Engine {
                counts.uncoded += 1;
                eprintln!("uncoded error: {e:#}");
            }
        }
        Err(_) => counts.panics += 1,
    }
    false
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(common::root().join(path)).expect("run ./build.sh (build, fixtures) first")
}

fn fuzz(bytes: Vec<u8>, seed: u64) -> Counts {
    let base = Base::new(bytes);
    let total = base.bytes.len();
    let mut rng = Rng(seed);
    let mut counts = Counts::default();
    // The header, read as the page reads it before loading (`inspect_model`).
    let header = &base.bytes[..base.header_len + 64];
    for _ in 0..HEADER_CASES {
        let mut prefix = header.to_vec();
        base.mutate(&mut rng, &mut prefix, header.len());
        attempt(&mut counts, || {
            ModelFile::inspect(&prefix, total, LoadOptions::default()).map(drop)
        });
    }
    // Whole files: parsed, and some loaded and run.
    let mut parsed_files = 0;
    for _ in 0..FILE_CASES {
        let mut bytes = base.bytes.clone();
        base.mutate(&mut rng, &mut bytes, total);
        let whole = bytes.len() == total;
        let parses = attempt(&mut counts, || {
            ModelFile::from_bytes(bytes.clone()).map(drop)
        });
        if parses && whole {
            parsed_files += 1;
            if parsed_files % EMBED_EVERY == 0 {
                counts.embedded += 1;
                attempt(&mut counts, || {
                    let embedder = load_embedder(bytes, BackendKind::Cpu)?;
                    embedder.embed(&["Tom likes Mary."]).map(drop)
                });
            }
        }
    }
    counts
}

#[test]
fn mutated_and_truncated_model_files_never_panic_the_loader() {
    // Panics are counted and kept for the assertion's message.
    let messages = Arc::new(Mutex::new(Vec::<String>::new()));
    let kept = messages.clone();
    std::panic::set_hook(Box::new(move |info| {
        eprintln!("panic: {info}");
        kept.lock().unwrap().push(info.to_string());
    }));
    let start = Instant::now();
    let ours = fuzz(read(OURS), 12);
    // Ours again with an explicit `general.alignment` (neither real file has one) for the
    // mutations to hit: candle divides by it.
    let aligned = fuzz(
        crafted::set_metadata(&read(OURS), "general.alignment", Value::U32(32)),
        56,
    );
    let llama = fuzz(read(LLAMA), 34);
    let _ = std::panic::take_hook();
    let all = [
        ("ours", &ours),
        ("ours + alignment", &aligned),
        ("llama.cpp", &llama),
    ];
    for (name, c) in all {
        println!(
            "fuzz {name}: {} tried, {} parsed, {} rejected, {} panics ({} loaded and embedded, \
             {} errors without a code)",
            c.tried, c.parsed, c.rejected, c.panics, c.embedded, c.uncoded
        );
    }
    println!("fuzz: {:.1} s", start.elapsed().as_secs_f64());
    let messages = messages.lock().unwrap();
    let sum = |f: fn(&Counts) -> usize| all.iter().map(|(_, c)| f(c)).sum::<usize>();
    assert!(sum(|c| c.tried) >= 10_000);
    assert_eq!(sum(|c| c.panics), 0, "panics: {messages:?}");
    assert_eq!(sum(|c| c.uncoded), 0);
    assert!(all.iter().all(|(_, c)| c.parsed > 0 && c.embedded > 0));
}

fn load_error(bytes: &[u8]) -> (ErrorCode, String, f64) {
    let start = Instant::now();
    let e = ModelFile::from_bytes(bytes.to_vec())
        .err()
        .expect("a hostile file is rejected");
    (code_of(&e), format!("{e:#}"), start.elapsed().as_secs_f64())
}

#[test]
fn header_fields_larger_than_the_file_are_rejected_before_allocating() {
    let bytes = read(OURS);
    // A tensor of 2^40 elements (2^20 × 2^20), and one whose product overflows.
    let name = "encoder.layer.0.attention.self.query.weight";
    for dims in [[1 << 20, 1 << 20], [1 << 40, 1 << 40]] {
        let (code, msg, seconds) = load_error(&crafted::with_tensor_dims(&bytes, name, dims));
        assert_eq!(code, ErrorCode::BadModel, "{msg}");
        assert!(msg.contains(name) && seconds < 1.0, "{msg} ({seconds} s)");
    }
    // The first metadata key claiming 2^60 bytes; the tensor count claiming 2^60 tensors.
    for (at, what) in [(24, "metadata key"), (8, "tensors")] {
        let mut huge = bytes.clone();
        huge[at..at + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
        let (code, msg, seconds) = load_error(&huge);
        assert_eq!(code, ErrorCode::BadModel, "{msg}");
        assert!(msg.contains(what) && seconds < 1.0, "{msg} ({seconds} s)");
    }
}

#[test]
fn crafted_files_name_their_problem() {
    let (ours, llama) = (read(OURS), read(LLAMA));
    let query = "encoder.layer.0.attention.self.query.weight";
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "alignment 0",
            crafted::set_metadata(&ours, "general.alignment", Value::U32(0)),
            "general.alignment is 0",
        ),
        (
            "alignment 4096 with offsets aligned to 32",
            crafted::set_metadata(&ours, "general.alignment", Value::U32(4096)),
            "not a multiple of the alignment 4096",
        ),
        (
            "alignment 64 moving the data past the end",
            crafted::set_metadata(&ours, "general.alignment", Value::U32(64)),
            "ends past the file's",
        ),
        (
            "a shape the config does not give",
            crafted::with_tensor_dims(&ours, query, [768, 192]),
            "has shape [192, 768], the config says [384, 384]",
        ),
        (
            "a llama.cpp shape the config does not give",
            crafted::with_tensor_dims(&llama, "blk.0.ffn_up.weight", [1536, 384]),
            "'blk.0.ffn_up.weight' has shape [384, 1536], the config says [1536, 384]",
        ),
        (
            "a huge hidden size",
            crafted::with_config_field(&ours, "hidden_size", 1 << 30),
            "hidden_size = 1073741824 is outside",
        ),
        (
            "a hidden size the tensors do not have",
            crafted::set_metadata(&llama, "bert.embedding_length", Value::U32(768)),
            "the config says [30522, 768]",
        ),
        (
            "no vocabulary (llama.cpp)",
            crafted::drop_metadata(&llama, "tokenizer.ggml.tokens"),
            "missing metadata 'tokenizer.ggml.tokens'",
        ),
        (
            "no tokenizer (ours)",
            crafted::drop_metadata(&ours, "srbench.tokenizer_json"),
            "missing metadata 'srbench.tokenizer_json'",
        ),
        (
            "a sequence length past the position table",
            crafted::set_metadata(&ours, "srbench.max_seq_length", Value::U32(4096)),
            "max sequence length 4096 is outside",
        ),
    ];
    for (what, bytes, expected) in cases {
        let (code, msg, _) = load_error(&bytes);
        assert_eq!(code, ErrorCode::BadModel, "{what}: {msg}");
        assert!(msg.contains(expected), "{what}: {msg}");
    }
}

#[test]
fn every_shipped_and_llama_cpp_file_passes_the_checks() {
    for path in [
        "www/models/all-MiniLM-L6-v2.f32.gguf",
        "www/models/all-MiniLM-L6-v2.q4_0.gguf",
        OURS,
        "www/models/all-mpnet-base-v2.q8_0.gguf",
        "www/models/all-mpnet-base-v2.f32.gguf",
        LLAMA,
        "tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.f32.gguf",
        "tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.f16.gguf",
    ] {
        let file = std::fs::File::open(common::root().join(path)).unwrap();
        let total = file.metadata().unwrap().len() as usize;
        let mut prefix = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, 16 << 20), &mut prefix).unwrap();
        ModelFile::inspect(&prefix, total, LoadOptions::default())
            .unwrap_or_else(|e| panic!("{path}: {e:#}"));
    }
}
