//! `sr-bench convert --from DIR` on folders it cannot convert: each gets a message naming
//! what is missing or unsupported, and no file is written.
#![cfg(not(target_arch = "wasm32"))] // the converter is native only

mod cli_common;
mod common;
mod convert_common;

use std::path::Path;

use cli_common::sr_bench;
use convert_common::{convert_from, edit_json, edited_minilm, pooling};

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
    // XLM-R converts (tests/xlm_roberta.rs), but not with relative positions or a padding
    // index past its position table.
    assert_rejected(
        "roberta-relative",
        |dir| {
            edit_json(&dir.join("config.json"), |c| {
                c["model_type"] = "xlm-roberta".into();
                c["position_embedding_type"] = "relative_key".into();
            })
        },
        "position_embedding_type 'relative_key' is not supported",
    );
    assert_rejected(
        "roberta-pad",
        |dir| {
            edit_json(&dir.join("config.json"), |c| {
                c["model_type"] = "xlm-roberta".into();
                c["pad_token_id"] = 600.into();
            })
        },
        "pad_token_id 600 leaves no position of the 512 in the table",
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
