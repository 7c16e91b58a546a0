//! A model file a user brings is hostile input. Mutated and truncated versions of real files
//! (ours and llama.cpp's, MiniLM, MPNet and every architecture only llama.cpp's files bring;
//! f32, f16, q8_0, q4_0) go to the engine: every one must load or fail with a coded error,
//! never panic, and no header field may make it allocate more than the file holds. Two passes:
//! - headers, read as the page reads them before loading (`ModelFile::inspect`): bytes flipped,
//!   lengths inflated, cut short;
//! - whole files (`crafted::Base::mutate`, shared with the browser test): the embedded
//!   tokenizer and config JSONs changed structurally or byte by byte, metadata values changed by
//!   type and value, entries dropped or duplicated, bytes flipped; the header is rewritten with
//!   the right lengths so that the damage reaches the tokenizer and the encoder. Every file that
//!   parses is loaded and embeds a text (a finite vector of the model's dimension, or a coded
//!   error).
//!
//! Deterministic (each case has its own seed, printed when it fails); the counts are printed
//! (`cargo test --release --features testing --test fuzz_model_files -- --show-output`). The
//! gate runs a sample; the full tier (`--include-ignored`) runs more than 1,000 whole files.

mod common;
mod crafted;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Once;
use std::time::Instant;

use candle_core::quantized::gguf_file::{Content, Value};
use sr_bench::backend::{load_embedder, BackendKind};
use sr_bench::error::{code_of, ErrorCode};
use sr_bench::model::{LoadOptions, ModelFile};

const MINILM: &str = "all-MiniLM-L6-v2";
const MPNET: &str = "all-mpnet-base-v2";

fn ours() -> Vec<u8> {
    read(common::model_path(MINILM, "q8_0"))
}

/// The random checkpoint of an architecture (`./build.sh fixtures`), q8_0.
fn random(architecture: &str) -> Vec<u8> {
    common::RandomEncoder::load(architecture).bytes("q8_0")
}

/// Every architecture only llama.cpp's files bring, by its random checkpoint, with the seeds
/// of its mutations: headers and whole files in the gate, then in the full tier.
const RANDOM: [(&str, [u64; 4]); 6] = [
    ("nomic-bert", [35, 6, 135, 18]),
    ("modern-bert", [36, 7, 136, 19]),
    ("qwen2", [40, 11, 140, 23]),
    ("qwen3", [37, 8, 137, 20]),
    ("gemma-embedding", [38, 9, 138, 21]),
    ("t5encoder", [41, 12, 141, 24]),
];

/// Qwen3's file in llama-quantize's Q4_K_M mix (K-quant and q5_0 blocks, converted at load).
fn qwen3_q4_k_m() -> Vec<u8> {
    let f32_file = common::RandomEncoder::load("qwen3").bytes("f32");
    crafted::k_quants(&f32_file, crafted::KMix::Q4KM)
}

/// llama.cpp's XLM-R file of multilingual-e5-small (f16, `t5` Unigram vocabulary; made by
/// `./build.sh fixtures`): the crafted tokenizer cases only (242 MB is too large to mutate).
fn xlm_r() -> Vec<u8> {
    read(common::root().join("tests/artifacts/e5/multilingual-e5-small.llamacpp.f16.gguf"))
}

fn llama() -> Vec<u8> {
    read(common::llama_path("q8_0"))
}

fn read(path: PathBuf) -> Vec<u8> {
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Header mutations per file in the gate and in the full tier (read as the page does: the
/// header, and the file's size).
const GATE_HEADERS: usize = 1_000;
const FULL_HEADERS: usize = 3_300;

/// SplitMix64 (the same as the whole-file generator's).
use crafted::Rng;

/// A real file's header and the numbers in it that look like lengths, counts, dimensions or
/// offsets (small little-endian u64 values).
struct Header {
    bytes: Vec<u8>,
    header_len: usize,
    length_fields: Vec<usize>,
    /// Small u32 values: value types, dimension counts, tensor types, the alignment.
    small_fields: Vec<usize>,
}

impl Header {
    fn new(file: &[u8]) -> Self {
        let content = Content::read(&mut Cursor::new(file)).unwrap();
        let header_len = content.tensor_data_offset as usize;
        let bytes = file[..header_len + 64].to_vec();
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
    /// metadata; the tensor table), else anywhere.
    fn position(&self, rng: &mut Rng, len: usize) -> usize {
        match rng.below(4) {
            0 => rng.below(self.header_len.min(4096)),
            1 => self.header_len.saturating_sub(1 + rng.below(16_384)),
            2 => rng.below(self.header_len),
            _ => rng.below(len),
        }
    }

    /// One to four mutations of the header, maybe cut short. Arithmetic wraps: the values
    /// are meant to be absurd.
    fn mutate(&self, rng: &mut Rng) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        for _ in 0..1 + rng.below(4) {
            let len = bytes.len();
            if len < 8 {
                break;
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
                    let inflated = [
                        v.wrapping_add(1),
                        v.wrapping_mul(2),
                        v.wrapping_shl(8),
                        v.wrapping_shl(32),
                        u64::MAX - v,
                        v.wrapping_sub(1),
                    ];
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
        bytes
    }
}

thread_local! {
    /// The last panic's message on this thread (set by the hook, read after catch_unwind).
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Installs (once per process) a panic hook that keeps the message for the case's report.
fn keep_panic_messages() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            LAST_PANIC.with(|m| *m.borrow_mut() = info.to_string());
            default(info);
        }));
    });
}

/// What the cases of one file (or one tier) came to.
#[derive(Default)]
struct Tally {
    tried: usize,
    parsed: usize,
    loaded: usize,
    embedded: usize,
    /// Embedded, but a value is NaN or infinite (damaged weights or epsilon): not a panic.
    non_finite: usize,
    /// Refusals by the stage that refused and the error code's name.
    refused: BTreeMap<String, usize>,
    /// Cases by what was mutated.
    kinds: BTreeMap<&'static str, usize>,
    /// Panics, uncoded errors and wrong dimensions: each with its seed.
    failures: Vec<String>,
}

impl Tally {
    fn refused(&self) -> usize {
        self.refused.values().sum()
    }

    fn add(&mut self, other: &Tally) {
        self.tried += other.tried;
        self.parsed += other.parsed;
        self.loaded += other.loaded;
        self.embedded += other.embedded;
        self.non_finite += other.non_finite;
        for (k, v) in &other.refused {
            *self.refused.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.kinds {
            *self.kinds.entry(k).or_default() += v;
        }
        self.failures.extend(other.failures.iter().cloned());
    }

    fn print(&self, name: &str) {
        println!(
            "fuzz {name}: {} tried, {} parsed, {} loaded, {} embedded ({} non-finite), {} refused",
            self.tried,
            self.parsed,
            self.loaded,
            self.embedded,
            self.non_finite,
            self.refused()
        );
        if !self.refused.is_empty() {
            let by: Vec<String> = self
                .refused
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            println!("  refused by stage and code: {}", by.join(", "));
        }
        if !self.kinds.is_empty() {
            let by: Vec<String> = self.kinds.iter().map(|(k, v)| format!("{k} {v}")).collect();
            println!("  cases by mutation: {}", by.join(", "));
        }
    }

    /// A refusal at `stage`: coded, else a failure.
    fn refuse(&mut self, stage: &str, e: &anyhow::Error, case: &str) {
        let code = code_of(e);
        if code == ErrorCode::Engine {
            self.failures
                .push(format!("{case}: uncoded error at {stage}: {e:#}"));
        }
        *self
            .refused
            .entry(format!("{stage} {}", code.as_str()))
            .or_default() += 1;
    }
}

const TEXT: &str = "Tom likes Mary.";

/// One whole file: parsed, loaded, and one text embedded; counted by how far it got.
fn run_case(bytes: Vec<u8>, case: &str, tally: &mut Tally) {
    let dim = match ModelFile::from_bytes(bytes.clone()) {
        Ok(file) => file.info.dim,
        Err(e) => return tally.refuse("parse", &e, case),
    };
    tally.parsed += 1;
    let embedder = match load_embedder(bytes, BackendKind::Cpu) {
        Ok(embedder) => embedder,
        Err(e) => return tally.refuse("load", &e, case),
    };
    tally.loaded += 1;
    match embedder.embed(&[TEXT]) {
        Ok(vectors) => {
            if vectors.len() != 1 || vectors[0].len() != dim {
                let lens: Vec<usize> = vectors.iter().map(Vec::len).collect();
                tally
                    .failures
                    .push(format!("{case}: vectors of {lens:?}, not one of {dim}"));
            }
            tally.embedded += 1;
            // The embedder refuses non-finite vectors with a code: one that gets out is a bug.
            if !vectors.iter().flatten().all(|v| v.is_finite()) {
                tally.non_finite += 1;
                tally
                    .failures
                    .push(format!("{case}: a non-finite vector was returned"));
            }
        }
        Err(e) => tally.refuse("embed", &e, case),
    }
}

/// `cases` seeded whole-file mutations of `file`, each parsed, loaded and embedded.
fn whole_files(name: &str, file: Vec<u8>, seed: u64, cases: usize) -> Tally {
    keep_panic_messages();
    let base = crafted::Base::new(file);
    let mut tally = Tally::default();
    let start = Instant::now();
    for i in 0..cases as u64 {
        // Each case its own seed, so that a failure can be replayed alone.
        let case_seed = seed.wrapping_mul(1_000_003).wrapping_add(i);
        let (kind, bytes) = base.mutate(&mut Rng(case_seed));
        let case = format!("{name}, seed {case_seed} ({kind})");
        tally.tried += 1;
        *tally.kinds.entry(kind).or_default() += 1;
        let result = catch_unwind(AssertUnwindSafe(|| run_case(bytes, &case, &mut tally)));
        if result.is_err() {
            let message = LAST_PANIC.with(|m| m.borrow().clone());
            tally.failures.push(format!("{case}: panic: {message}"));
        }
    }
    tally.print(&format!("{name} ({:.1} s)", start.elapsed().as_secs_f64()));
    tally
}

/// `cases` mutated headers of `file`, each inspected as the page does.
fn headers(name: &str, file: &[u8], seed: u64, cases: usize) -> Tally {
    keep_panic_messages();
    let header = Header::new(file);
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    for i in 0..cases {
        let prefix = header.mutate(&mut rng);
        tally.tried += 1;
        let case = format!("{name} header, case {i} of seed {seed}");
        let result = catch_unwind(AssertUnwindSafe(|| {
            ModelFile::inspect(&prefix, file.len(), LoadOptions::default()).map(drop)
        }));
        match result {
            Ok(Ok(())) => tally.parsed += 1,
            Ok(Err(e)) => tally.refuse("inspect", &e, &case),
            Err(_) => {
                let message = LAST_PANIC.with(|m| m.borrow().clone());
                tally.failures.push(format!("{case}: panic: {message}"));
            }
        }
    }
    tally.print(&format!("{name} headers"));
    tally
}

/// Prints a tier's total and fails on any panic, uncoded error or wrong dimension.
fn finish(tier: &str, parts: &[Tally], start: Instant) -> Tally {
    let mut total = Tally::default();
    for part in parts {
        total.add(part);
    }
    total.print(&format!(
        "{tier} total ({:.1} s)",
        start.elapsed().as_secs_f64()
    ));
    assert!(
        total.failures.is_empty(),
        "{} failures:\n{}",
        total.failures.len(),
        total.failures.join("\n")
    );
    total
}

/// The gate: every base file's headers, and a sample of whole files of each kind of file.
#[test]
fn mutated_model_files_load_and_embed_or_fail_with_a_code() {
    let start = Instant::now();
    let (ours, llama) = (ours(), llama());
    // Ours again with an explicit `general.alignment` (neither real file has one) for the
    // mutations to hit: candle divides by it.
    let aligned = crafted::set_metadata(&ours, "general.alignment", Value::U32(32));
    let mut parts = vec![
        headers("ours q8_0", &ours, 12, GATE_HEADERS),
        headers("ours q8_0 + alignment", &aligned, 56, GATE_HEADERS),
        headers("llama.cpp q8_0", &llama, 34, GATE_HEADERS),
        headers("qwen3 q4_k_m", &qwen3_q4_k_m(), 39, GATE_HEADERS),
    ];
    for (architecture, [seed, ..]) in RANDOM {
        let name = format!("{architecture} q8_0");
        parts.push(headers(&name, &random(architecture), seed, GATE_HEADERS));
    }
    let headers_end = parts.len();
    parts.extend([
        whole_files("ours q8_0", ours, 1, GATE_MINILM),
        whole_files("llama.cpp q8_0", llama, 2, GATE_LLAMA),
        whole_files(
            "ours q4_0",
            read(common::model_path(MINILM, "q4_0")),
            3,
            GATE_SMALL,
        ),
        whole_files(
            "llama.cpp f16",
            read(common::llama_path("f16")),
            4,
            GATE_SMALL,
        ),
        whole_files(
            "MPNet q4_0",
            read(common::model_path(MPNET, "q4_0")),
            5,
            GATE_SMALL,
        ),
        whole_files("qwen3 q4_k_m", qwen3_q4_k_m(), 10, GATE_NOMIC),
    ]);
    for (architecture, [_, seed, ..]) in RANDOM {
        let name = format!("{architecture} q8_0");
        parts.push(whole_files(&name, random(architecture), seed, GATE_NOMIC));
    }
    let total = finish("gate", &parts, start);
    assert!(total.tried >= 3_000, "{} cases", total.tried);
    assert!(parts.iter().all(|t| t.parsed > 0));
    assert!(parts[headers_end..].iter().all(|t| t.embedded > 0));
}

/// Whole-file cases of the gate (MiniLM q8_0, llama.cpp q8_0, each of the others).
const GATE_MINILM: usize = 120;
const GATE_LLAMA: usize = 60;
const GATE_SMALL: usize = 15;
/// The random nomic-bert, ModernBERT, Qwen3 and EmbeddingGemma checkpoints are small (3–6
/// layers of 128): more of their files fit.
const GATE_NOMIC: usize = 60;

/// The full tier: more than 1,000 whole files, on every kind of file (other seeds than the
/// gate's).
#[test]
#[ignore = "full tier (./build.sh test full): 3,920 whole files, over 1,000 of them loaded and embedded"]
fn many_mutated_model_files_load_and_embed_or_fail_with_a_code() {
    let start = Instant::now();
    let (ours, llama) = (ours(), llama());
    let aligned = crafted::set_metadata(&ours, "general.alignment", Value::U32(32));
    let mut parts = vec![
        headers("ours q8_0", &ours, 112, FULL_HEADERS),
        headers("ours q8_0 + alignment", &aligned, 156, FULL_HEADERS),
        headers("llama.cpp q8_0", &llama, 134, FULL_HEADERS),
        headers("qwen3 q4_k_m", &qwen3_q4_k_m(), 139, FULL_HEADERS),
    ];
    for (architecture, [_, _, seed, _]) in RANDOM {
        let name = format!("{architecture} q8_0");
        parts.push(headers(&name, &random(architecture), seed, FULL_HEADERS));
    }
    parts.extend([
        whole_files("ours q8_0", ours, 11, 1_000),
        whole_files("llama.cpp q8_0", llama, 12, 800),
        whole_files(
            "ours q4_0",
            read(common::model_path(MINILM, "q4_0")),
            13,
            250,
        ),
        whole_files("llama.cpp f16", read(common::llama_path("f16")), 14, 200),
        whole_files(
            "MPNet q8_0",
            read(common::model_path(MPNET, "q8_0")),
            15,
            80,
        ),
        whole_files(
            "MPNet q4_0",
            read(common::model_path(MPNET, "q4_0")),
            16,
            60,
        ),
        whole_files("ours f32", read(common::model_path(MINILM, "f32")), 17, 30),
        whole_files("qwen3 q4_k_m", qwen3_q4_k_m(), 22, 300),
    ]);
    for (architecture, [.., seed]) in RANDOM {
        let name = format!("{architecture} q8_0");
        parts.push(whole_files(&name, random(architecture), seed, 300));
    }
    let total = finish("full", &parts, start);
    assert!(total.tried >= 10_000, "{} cases", total.tried);
    assert!(total.loaded >= 1_000, "{} whole files loaded", total.loaded);
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
    let bytes = ours();
    // A tensor of 2^40 elements (2^20 × 2^20), and one whose product overflows.
    // Our MiniLM file names its tensors as llama.cpp does (format version 2).
    let name = "blk.0.attn_q.weight";
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
    let (ours, llama) = (ours(), llama());
    let query = "blk.0.attn_q.weight";
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
        (
            "a causal nomic-bert",
            crafted::set_metadata(
                &random("nomic-bert"),
                "nomic-bert.attention.causal",
                Value::Bool(true),
            ),
            "a causal nomic-bert model",
        ),
        (
            "nomic-bert without its rotary base",
            crafted::drop_metadata(&random("nomic-bert"), "nomic-bert.rope.freq_base"),
            "missing metadata 'nomic-bert.rope.freq_base'",
        ),
        (
            "a nomic-bert fused QKV of the wrong height",
            crafted::with_tensor_dims(&random("nomic-bert"), "blk.2.attn_qkv.weight", [128, 256]),
            "'blk.2.attn_qkv.weight' has shape [256, 128], the config says [384, 128]",
        ),
        (
            "a ModernBERT feed-forward input of one half only",
            crafted::with_tensor_dims(&random("modern-bert"), "blk.1.ffn_up.weight", [128, 256]),
            "'blk.1.ffn_up.weight' has shape [256, 128], the config says [512, 128]",
        ),
        (
            "ModernBERT without its window",
            crafted::drop_metadata(
                &random("modern-bert"),
                "modern-bert.attention.sliding_window",
            ),
            "missing metadata 'modern-bert.attention.sliding_window'",
        ),
        (
            "ModernBERT with a window of 0",
            crafted::set_metadata(
                &random("modern-bert"),
                "modern-bert.attention.sliding_window",
                Value::U32(0),
            ),
            "local_attention = Some(0) is outside",
        ),
        (
            "global layers every 0 layers",
            crafted::set_metadata(
                &random("modern-bert"),
                "modern-bert.attention.sliding_window_pattern",
                Value::U32(0),
            ),
            "global_attn_every_n_layers = Some(0) is outside",
        ),
        (
            "a ReLU ModernBERT",
            crafted::set_metadata(
                &random("modern-bert"),
                "modern-bert.hidden_activation",
                Value::String("relu".into()),
            ),
            "activation 'relu' is not one we run",
        ),
        (
            "a merge of a token the vocabulary lacks",
            crafted::set_metadata(
                &random("modern-bert"),
                "tokenizer.ggml.merges",
                Value::Array(vec![Value::String("Ġthe zzzz".into())]),
            ),
            "the merge 'Ġthe zzzz' is not two tokens of the vocabulary",
        ),
        (
            "Qwen3 query heads that cannot share the key/value heads",
            crafted::set_metadata(
                &random("qwen3"),
                "qwen3.attention.head_count_kv",
                Value::U32(3),
            ),
            "4 attention heads cannot share 3 key/value heads evenly",
        ),
        (
            "Qwen3 keys and values of different sizes",
            crafted::set_metadata(
                &random("qwen3"),
                "qwen3.attention.value_length",
                Value::U32(32),
            ),
            "keys of 64 but values of 32 per head",
        ),
        (
            "a Qwen3 head size the tensors do not have",
            crafted::set_metadata(
                &crafted::set_metadata(
                    &random("qwen3"),
                    "qwen3.attention.key_length",
                    Value::U32(32),
                ),
                "qwen3.attention.value_length",
                Value::U32(32),
            ),
            "'blk.0.attn_q.weight' has shape [256, 128], the config says [128, 128]",
        ),
        (
            "a Qwen3 key projection of the query's width",
            crafted::with_tensor_dims(&random("qwen3"), "blk.1.attn_k.weight", [128, 256]),
            "'blk.1.attn_k.weight' has shape [256, 128], the config says [128, 128]",
        ),
        (
            "EmbeddingGemma without its window",
            crafted::drop_metadata(
                &random("gemma-embedding"),
                "gemma-embedding.attention.sliding_window",
            ),
            "missing metadata 'gemma-embedding.attention.sliding_window'",
        ),
        (
            "an EmbeddingGemma Dense head that does not map back to the hidden size",
            crafted::set_metadata(
                &random("gemma-embedding"),
                "gemma-embedding.dense_3_feat_out",
                Value::U32(64),
            ),
            "a Dense head of 128 → 512 and 512 → 64",
        ),
        (
            "EmbeddingGemma Dense tensors the metadata does not size",
            crafted::drop_metadata(
                &random("gemma-embedding"),
                "gemma-embedding.dense_2_feat_out",
            ),
            "it holds 'dense_2.weight' but its metadata gives the Dense head no widths",
        ),
        (
            "an EmbeddingGemma Dense head of the wrong width",
            crafted::set_metadata(
                &crafted::set_metadata(
                    &random("gemma-embedding"),
                    "gemma-embedding.dense_2_feat_out",
                    Value::U32(256),
                ),
                "gemma-embedding.dense_3_feat_in",
                Value::U32(256),
            ),
            "'dense_2.weight' has shape [512, 128], the config says [256, 128]",
        ),
        (
            "a K-quant matrix whose rows are not whole blocks of 256",
            crafted::with_tensor_dims(&qwen3_q4_k_m(), "blk.0.ffn_down.weight", [128, 256]),
            "has dimensions [128, 256] (each must be positive, the first a multiple of 256",
        ),
        (
            "a ModernBERT start token outside the vocabulary",
            crafted::set_metadata(
                &random("modern-bert"),
                "tokenizer.ggml.bos_token_id",
                Value::U32(1 << 20),
            ),
            "bos token id 1048576 is not in the vocabulary",
        ),
    ];
    // Hostile SentencePiece (t5) metadata: each a clear error, never a panic.
    let xlm_r = xlm_r();
    let charsmap = "tokenizer.ggml.precompiled_charsmap";
    let cut_charsmap = match crafted::metadata(&xlm_r, charsmap) {
        Some(Value::Array(items)) => Value::Array(items[..items.len() / 3].to_vec()),
        other => panic!("{charsmap}: {other:?}"),
    };
    let short_scores = match crafted::metadata(&xlm_r, "tokenizer.ggml.scores") {
        Some(Value::Array(items)) => Value::Array(items[..10].to_vec()),
        other => panic!("scores: {other:?}"),
    };
    let mut nan_scores = match crafted::metadata(&xlm_r, "tokenizer.ggml.scores") {
        Some(Value::Array(items)) => items,
        other => panic!("scores: {other:?}"),
    };
    nan_scores[7] = Value::F32(f32::NAN);
    let t5_cases = [
        (
            "a truncated charsmap",
            crafted::set_metadata(&xlm_r, charsmap, cut_charsmap),
            "Precompiled normalizer is invalid",
        ),
        (
            "fewer scores than tokens",
            crafted::set_metadata(&xlm_r, "tokenizer.ggml.scores", short_scores),
            "250037 tokens but 10 scores",
        ),
        (
            "a score that is not a number",
            crafted::set_metadata(&xlm_r, "tokenizer.ggml.scores", Value::Array(nan_scores)),
            "token 7's score is not a finite number",
        ),
        (
            "an empty vocabulary",
            crafted::set_metadata(
                &crafted::set_metadata(
                    &crafted::set_metadata(&xlm_r, "tokenizer.ggml.tokens", Value::Array(vec![])),
                    "tokenizer.ggml.token_type",
                    Value::Array(vec![]),
                ),
                "tokenizer.ggml.scores",
                Value::Array(vec![]),
            ),
            "vocab_size = 0 is outside",
        ),
        (
            "an unknown token outside the vocabulary",
            crafted::set_metadata(
                &xlm_r,
                "tokenizer.ggml.unknown_token_id",
                Value::U32(1 << 20),
            ),
            "unknown token id 1048576 is not in the vocabulary",
        ),
    ];
    for (what, bytes, expected) in t5_cases {
        // The tokenizer is built when the model loads (the file's reading only rebuilds its JSON).
        let e = match ModelFile::from_bytes(bytes.clone()) {
            Err(e) => e,
            Ok(_) => load_embedder(bytes, BackendKind::Cpu)
                .and_then(|m| m.embed(&["Petr miluje Marii."]))
                .err()
                .unwrap_or_else(|| panic!("{what}: loaded and embedded")),
        };
        let (code, msg) = (code_of(&e), format!("{e:#}"));
        assert_eq!(code, ErrorCode::BadModel, "{what}: {msg}");
        assert!(msg.contains(expected), "{what}: {msg}");
        println!("t5 vocabulary, {what}: refused ({msg})");
    }
    for (what, bytes, expected) in cases {
        let (code, msg, _) = load_error(&bytes);
        assert_eq!(code, ErrorCode::BadModel, "{what}: {msg}");
        assert!(msg.contains(expected), "{what}: {msg}");
    }
    // Architectures and vocabularies we do not run are named, with what we do run.
    for (what, bytes, expected) in [
        (
            "a Qwen3 chat model (no pooling type)",
            crafted::drop_metadata(&random("qwen3"), "qwen3.pooling_type"),
            "a language model, not an embedding model",
        ),
        (
            "a Qwen3 pre-tokenizer we do not rebuild",
            crafted::set_metadata(
                &random("qwen3"),
                "tokenizer.ggml.pre",
                Value::String("llama-bpe".into()),
            ),
            "pre-tokenizer 'llama-bpe'",
        ),
        (
            "nomic-bert-moe",
            crafted::set_metadata(
                &random("nomic-bert"),
                "general.architecture",
                Value::String("nomic-bert-moe".into()),
            ),
            "'nomic-bert-moe': the embedding models we run are bert, nomic-bert, modern-bert",
        ),
        (
            "a SentencePiece vocabulary",
            crafted::set_metadata(
                &random("nomic-bert"),
                "tokenizer.ggml.model",
                Value::String("t5".into()),
            ),
            "nomic-bert file with a 't5' vocabulary: we read nomic-bert files with bert",
        ),
        (
            "a BPE pre-tokenizer we do not rebuild",
            crafted::set_metadata(
                &random("modern-bert"),
                "tokenizer.ggml.pre",
                Value::String("deepseek-llm".into()),
            ),
            "pre-tokenizer 'deepseek-llm': we rebuild gpt-2, modern-bert, qwen2",
        ),
    ] {
        let (code, msg, _) = load_error(&bytes);
        assert_eq!(code, ErrorCode::UnsupportedArchitecture, "{what}: {msg}");
        assert!(msg.contains(expected), "{what}: {msg}");
    }
}

#[test]
fn every_shipped_and_llama_cpp_file_passes_the_checks() {
    for path in [
        "www/models/all-MiniLM-L6-v2.f32.gguf",
        "www/models/all-MiniLM-L6-v2.q4_0.gguf",
        "www/models/all-MiniLM-L6-v2.q8_0.gguf",
        "www/models/all-mpnet-base-v2.q8_0.gguf",
        "www/models/all-mpnet-base-v2.f32.gguf",
        "tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.q8_0.gguf",
        "tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.f32.gguf",
        "tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.f16.gguf",
        "tests/artifacts/llama/nomic-bert.q8_0.gguf",
        "tests/artifacts/llama/nomic-bert.f16.gguf",
        "tests/artifacts/llama/nomic-bert.f32.gguf",
        "tests/artifacts/llama/modern-bert.q8_0.gguf",
        "tests/artifacts/llama/modern-bert.f16.gguf",
        "tests/artifacts/llama/modern-bert.f32.gguf",
        "tests/artifacts/llama/modern-bert.q4_0.gguf",
        "tests/artifacts/llama/gemma-embedding.q8_0.gguf",
        "tests/artifacts/llama/gemma-embedding.f16.gguf",
        "tests/artifacts/llama/gemma-embedding.f32.gguf",
        "tests/artifacts/llama/gemma-embedding.q4_0.gguf",
    ] {
        let file = std::fs::File::open(common::root().join(path)).unwrap();
        let total = file.metadata().unwrap().len() as usize;
        let mut prefix = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, 16 << 20), &mut prefix).unwrap();
        ModelFile::inspect(&prefix, total, LoadOptions::default())
            .unwrap_or_else(|e| panic!("{path}: {e:#}"));
    }
}

/// Tokenizer JSONs that `tokenizers` would meet with a panic, at load or (broken Precompiled
/// charsmaps) at the first text: refused at load with a coded error.
#[test]
fn tokenizer_json_that_would_panic_is_refused_at_load() {
    for (what, bytes) in crafted::tokenizer_panics(&ours()) {
        match load_embedder(bytes, BackendKind::Cpu) {
            Err(e) => {
                assert_eq!(code_of(&e), ErrorCode::BadModel, "{what}: {e:#}");
                assert!(format!("{e:#}").contains("tokenizer JSON"), "{what}: {e:#}");
            }
            Ok(embedder) => {
                let embedded = catch_unwind(AssertUnwindSafe(|| embedder.embed(&[TEXT]).is_ok()));
                panic!("{what}: loaded (then embedding gave {embedded:?})");
            }
        }
    }
}

/// A valid Precompiled charsmap passes the check and is used ("a" becomes "b").
#[test]
fn a_valid_precompiled_charsmap_loads_and_normalizes() {
    let ours = ours();
    let valid = crafted::charsmap(0x61 | 1 << 8 | 3 << 10, 1 << 31);
    let mapped = load_embedder(crafted::with_precompiled(&ours, &valid), BackendKind::Cpu)
        .expect("a valid charsmap loads");
    let plain = load_embedder(ours, BackendKind::Cpu).unwrap();
    // Lower case: the charsmap replaces the BERT normalizer, which lowercases.
    let embed = |e: &sr_bench::model::Embedder, text| e.embed(&[text]).unwrap().remove(0);
    let same = |a: Vec<f32>, b: Vec<f32>| a == b;
    assert!(same(
        embed(&mapped, "tom likes mbry."),
        embed(&plain, "tom likes mbry.")
    ));
    assert!(same(
        embed(&mapped, "tom likes mary."),
        embed(&plain, "tom likes mbry.")
    ));
    assert!(!same(
        embed(&mapped, "tom likes mary."),
        embed(&plain, "tom likes mary.")
    ));
}

/// An edit of a tokenizer JSON, named.
type JsonEdit = (&'static str, fn(&mut serde_json::Value));

/// A tokenizer that gives ids past the embedding matrix (a special token's, a word's): a coded
/// error, at load or at the first text.
#[test]
fn token_ids_past_the_vocabulary_fail_with_a_code() {
    let ours = ours();
    let edits: [JsonEdit; 2] = [
        ("[CLS]'s id", |json| {
            json["post_processor"]["special_tokens"]["[CLS]"]["ids"] =
                serde_json::json!([4_000_000_000u32]);
        }),
        ("a word's id", |json| {
            json["model"]["vocab"]["tom"] = 30_522.into()
        }),
    ];
    for (what, edit) in edits {
        let bytes = crafted::with_tokenizer_json(&ours, edit);
        let e = load_embedder(bytes, BackendKind::Cpu)
            .and_then(|embedder| embedder.embed(&["tom likes mary."]))
            .err()
            .unwrap_or_else(|| panic!("{what}: embedded"));
        assert_ne!(code_of(&e), ErrorCode::Engine, "{what}: {e:#}");
        println!("{what}: {e:#}");
    }
}
