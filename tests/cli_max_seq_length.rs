//! `--max-seq-length N` on the commands that embed, with llama.cpp's MiniLM file (whose own
//! value is its position table, 512): 256 is sentence-transformers' truncation, beyond the
//! table is a clear error (non-zero exit, no panic).

mod cli_common;
mod common;

use cli_common::sr_bench;

use std::path::Path;

fn llama_file() -> String {
    let path = common::llama_path("q8_0");
    path.to_str().unwrap().to_string()
}

const FIRST: &str = "The cat chased the dog.";
const SECOND: &str = "The dog was chased by the cat.";

#[test]
fn similarity_takes_a_max_seq_length_up_to_the_position_table() {
    let file = llama_file();
    let (ok, out, stderr) = sr_bench(&[
        "similarity",
        "--model",
        &file,
        "--max-seq-length",
        "256",
        FIRST,
        SECOND,
    ]);
    assert!(ok, "{stderr}");
    let cosine: f32 = out.trim().parse().expect("a number");
    assert!(cosine > 0.5 && cosine <= 1.0001, "{cosine}");

    let (ok, out, stderr) = sr_bench(&[
        "similarity",
        "--model",
        &file,
        "--max-seq-length",
        "600",
        FIRST,
        SECOND,
    ]);
    assert!(!ok, "600 tokens accepted: {out}");
    assert!(
        stderr.contains("max sequence length 600 is outside 1..=512 (the model's position table)"),
        "{stderr}"
    );
    assert!(stderr.contains(&file), "the error names the file: {stderr}");
    println!("600: {}", stderr.trim());
}

#[test]
fn info_shows_the_effective_max_seq_length() {
    let file = llama_file();
    let value = |args: &[&str]| -> serde_json::Value {
        let (ok, out, stderr) = sr_bench(args);
        assert!(ok, "{stderr}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["max_seq_length"].clone()
    };
    assert_eq!(value(&["info", &file]), 512);
    assert_eq!(value(&["info", &file, "--max-seq-length", "256"]), 256);
    let ours = common::model_path("all-MiniLM-L6-v2", "q8_0");
    assert_eq!(value(&["info", ours.to_str().unwrap()]), 256);
    assert_eq!(
        value(&["info", ours.to_str().unwrap(), "--max-seq-length", "128"]),
        128
    );
    let (ok, _, stderr) = sr_bench(&["info", &file, "--max-seq-length", "0"]);
    assert!(!ok && stderr.contains("outside 1..=512"), "{stderr}");
}

#[test]
fn every_embedding_command_takes_the_flag() {
    cli_common::every_embedding_command_lists("--max-seq-length <N>");
    // A value beyond the table fails before any data is read, for every command.
    let file = llama_file();
    for args in [
        vec!["embed", "--model", &file],
        vec!["eval", "--model", &file, "--split", "quick"],
        vec!["eval-czech", "--model", &file],
        vec!["bench", "--model", &file, "--sentences", "10"],
    ] {
        let mut args = args.clone();
        args.extend(["--max-seq-length", "513"]);
        let (ok, _, stderr) = sr_bench(&args);
        assert!(
            !ok && stderr.contains("max sequence length 513 is outside 1..=512"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn embed_with_256_matches_sentence_transformers_on_the_longest_text() {
    // The fixture's longest text has more than 256 tokens: with 512 the llama.cpp file sees
    // more of it than sentence-transformers did; with 256 it matches.
    let fixture = common::fixture("all-MiniLM-L6-v2");
    let file = llama_file();
    let texts: Vec<&str> = fixture.items.iter().map(|i| i.text.as_str()).collect();
    let embed = |extra: &[&str]| cli_common::embed(Path::new(&file), extra, &texts);
    let min = |vectors: &[Vec<f32>]| {
        fixture
            .items
            .iter()
            .zip(vectors)
            .map(|(item, v)| sr_bench::model::cosine(v, &item.embedding))
            .fold(f32::INFINITY, f32::min)
    };
    let (at_256, at_512) = (min(&embed(&["--max-seq-length", "256"])), min(&embed(&[])));
    println!(
        "llama.cpp q8_0 min cosine vs sentence-transformers: 256 → {at_256:.6}, 512 → {at_512:.6}"
    );
    assert!(at_256 >= 0.999, "{at_256}");
    assert!(
        at_512 < at_256,
        "truncation changed nothing: {at_512} vs {at_256}"
    );
}
