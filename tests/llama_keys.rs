//! Our converted BERT files carry llama.cpp's own keys and tensor names (format version 2), so
//! llama.cpp and its ports (wllama) load them: every `bert.*` and `tokenizer.ggml.*` key, the file
//! type and every tensor's name, shape and type equal what llama.cpp's pinned converter wrote
//! for the same model (`./build.sh fixtures`); our own keys sit beside them and the file still
//! loads in sr-bench. Files llama.cpp cannot run as we do (MPNet) keep format version 1.

mod common;
mod crafted;

use std::collections::BTreeMap;
use std::io::Cursor;

use candle_core::quantized::gguf_file::{Content, Value};
use sr_bench::model::{ModelFile, FORMAT_VERSION, FORMAT_VERSION_LLAMA_NAMES};

const MINILM: &str = "all-MiniLM-L6-v2";

fn content(bytes: &[u8]) -> Content {
    Content::read(&mut Cursor::new(bytes)).expect("a GGUF file")
}

/// A value as text, arrays in full (the vocabulary's 30,522 entries compared one by one).
fn show(v: &Value) -> String {
    match v {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(show).collect();
            format!("[{}]", items.join(","))
        }
        Value::F32(x) => format!("{x:e}"),
        other => format!("{other:?}"),
    }
}

/// The keys llama.cpp reads for a BERT embedding model.
fn llama_keys(c: &Content) -> BTreeMap<String, String> {
    c.metadata
        .iter()
        .filter(|(k, _)| {
            k.starts_with("bert.")
                || k.starts_with("tokenizer.ggml.")
                || matches!(
                    k.as_str(),
                    "general.architecture" | "general.file_type" | "general.quantization_version"
                )
        })
        // llama.cpp's converter names a pre-tokenizer from a hash of its test text's ids; its
        // WordPiece tokenizer reads none (only BPE vocabularies have one). Ours says "default".
        .filter(|(k, _)| k.as_str() != "tokenizer.ggml.pre")
        .map(|(k, v)| (k.clone(), show(v)))
        .collect()
}

#[test]
fn our_minilm_files_have_llama_cpp_s_keys_and_tensors() {
    for dtype in ["f32", "q8_0"] {
        let ours = std::fs::read(common::model_path(MINILM, dtype)).unwrap();
        let theirs = std::fs::read(common::llama_path(dtype)).unwrap();
        let (ours, theirs) = (content(&ours), content(&theirs));
        let (a, b) = (llama_keys(&ours), llama_keys(&theirs));
        assert_eq!(
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>(),
            "{dtype}: the same llama.cpp keys"
        );
        for (key, value) in &b {
            assert_eq!(&a[key], value, "{dtype}: {key}");
        }
        assert_eq!(
            show(&ours.metadata["tokenizer.ggml.pre"]),
            show(&Value::String("default".into()))
        );
        let tensors = |c: &Content| -> BTreeMap<String, String> {
            c.tensor_infos
                .iter()
                .map(|(n, t)| {
                    (
                        n.clone(),
                        format!("{:?} {:?}", t.shape.dims(), t.ggml_dtype),
                    )
                })
                .collect()
        };
        assert_eq!(tensors(&ours), tensors(&theirs), "{dtype}: tensors");
        assert_eq!(
            show(&ours.metadata["srbench.format_version"]),
            show(&Value::U32(FORMAT_VERSION_LLAMA_NAMES))
        );
        // The weights too, byte for byte (the same quantisation as llama.cpp's).
        let (ours_file, theirs_file) = (
            ModelFile::from_bytes(std::fs::read(common::model_path(MINILM, dtype)).unwrap())
                .unwrap(),
            ModelFile::from_bytes(std::fs::read(common::llama_path(dtype)).unwrap()).unwrap(),
        );
        let names =
            sr_bench::model::expected_tensor_names(ours_file.info.architecture, &ours_file.config);
        for name in &names {
            assert!(
                ours_file.tensor_bytes(name).unwrap() == theirs_file.tensor_bytes(name).unwrap(),
                "{dtype}: {name} differs from llama.cpp's"
            );
        }
        println!(
            "{dtype}: {} llama.cpp keys, {} tensors' names, shapes, types and bytes equal",
            b.len(),
            names.len()
        );
    }
}

#[test]
fn the_llama_named_file_loads_and_says_what_it_is() {
    let bytes = std::fs::read(common::model_path(MINILM, "q8_0")).unwrap();
    let file = ModelFile::from_bytes(bytes).unwrap();
    assert_eq!(file.info.name, MINILM);
    assert_eq!(
        file.info.max_seq_length, 256,
        "our truncation, not the position table"
    );
    assert_eq!(file.info.dtype, "q8_0");
    assert!(file.tensor_names().any(|n| n == "blk.0.attn_q.weight"));
    // Read by Hugging Face name, stored by llama.cpp's.
    let (shape, _) = file
        .tensor_layout("encoder.layer.0.attention.self.query.weight")
        .unwrap();
    assert_eq!(shape, [384, 384]);
}

#[test]
fn mpnet_keeps_hugging_face_names_llama_cpp_has_no_mpnet() {
    let bytes = std::fs::read(common::model_path("all-mpnet-base-v2", "q8_0")).unwrap();
    let c = content(&bytes);
    assert_eq!(
        show(&c.metadata["srbench.format_version"]),
        show(&Value::U32(FORMAT_VERSION))
    );
    assert!(!c.metadata.keys().any(|k| k.starts_with("tokenizer.ggml.")));
    assert!(c
        .tensor_infos
        .contains_key("encoder.layer.0.attention.attn.q.weight"));
}

#[test]
fn a_later_format_version_is_refused_by_name() {
    let bytes = std::fs::read(common::model_path(MINILM, "q8_0")).unwrap();
    let later = crafted::set_metadata(&bytes, "srbench.format_version", Value::U32(3));
    let e = ModelFile::from_bytes(later).err().expect("refused");
    let message = format!("{e:#}");
    assert!(
        message.contains("format version 3; this build reads versions 1 and 2"),
        "{message}"
    );
}
