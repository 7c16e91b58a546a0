//! The explainers natively: token-pair contributions sum to the pipeline's cosine (both
//! architectures, f32 and q8_0), word grouping keeps the sum, the baseline map of a permutation
//! has permuted identical rows, the layer probe's last layer is the ordinary run, shuffle
//! probes are reproducible, and the JSON of `explain` and `probe layers|shuffle`.

mod common;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use sr_bench::backend::{load_embedder, BackendKind};
use sr_bench::eval::{parse_stsb, Split, StsFile};
use sr_bench::explain::{
    explain, explain_static, shuffle_words, Explanation, ProbePairs, ShuffleProbe, CONTRIBUTIONS,
};
use sr_bench::model::{cosine, Embedder};

const MINILM: &str = "all-MiniLM-L6-v2";
const MPNET: &str = "all-mpnet-base-v2";

const PAIRS: [(&str, &str); 3] = [
    ("Tom likes Taylor Swift.", "Taylor Swift likes Tom."),
    (
        "The committee was unimpressed by the proposal's feasibility.",
        "Feasibility of the proposal unimpressed the committee!",
    ),
    (
        "A man is playing a guitar.",
        "Someone strums an unplugged instrument.",
    ),
];

fn load(name: &str, dtype: &str) -> Embedder {
    load_embedder(common::model_bytes(name, dtype), BackendKind::Cpu).expect("model loads")
}

fn assert_sums(e: &Explanation, pipeline: f64, what: &str) {
    assert_eq!(e.kind, CONTRIBUTIONS, "{what}");
    assert_eq!(e.contributions.len(), e.tokens_a.len(), "{what}: rows");
    assert!(
        e.contributions.iter().all(|r| r.len() == e.tokens_b.len()),
        "{what}: columns"
    );
    let sum: f64 = e.contributions.iter().flatten().sum();
    assert!(
        (sum - pipeline).abs() < 1e-5,
        "{what}: Σ {sum} vs pipeline {pipeline}"
    );
    assert!((e.total - sum).abs() < 1e-12, "{what}: total");
    let rows: f64 = e.row_totals.iter().sum();
    let columns: f64 = e.column_totals.iter().sum();
    assert!(
        (rows - sum).abs() < 1e-9 && (columns - sum).abs() < 1e-9,
        "{what}: totals"
    );
    let words = e.words.as_ref().expect("the word map");
    assert!(
        (words.total - sum).abs() < 1e-9,
        "{what}: words keep the sum"
    );
    assert!(words.tokens_a.len() <= e.tokens_a.len(), "{what}: words");
}

#[test]
fn contributions_sum_to_the_pipeline_cosine_for_both_architectures_and_dtypes() {
    for (name, dtype) in [
        (MINILM, "f32"),
        (MINILM, "q8_0"),
        (MPNET, "f32"),
        (MPNET, "q8_0"),
    ] {
        let embedder = load(name, dtype);
        for (a, b) in PAIRS {
            let v = embedder.embed(&[a, b]).unwrap();
            let pipeline = f64::from(cosine(&v[0], &v[1]));
            let e = explain(&embedder, a, b).unwrap();
            assert_eq!(
                e.tokens_a.first().map(String::as_str),
                embedder
                    .tokenizer()
                    .encode_pieces(a, true)
                    .unwrap()
                    .tokens
                    .first()
                    .map(String::as_str)
            );
            assert_sums(&e, pipeline, &format!("{name} {dtype} {a:?}"));
            let s = embedder.embed_static(&[a, b]).unwrap();
            let e = explain_static(&embedder, a, b).unwrap();
            assert_sums(
                &e,
                f64::from(cosine(&s[0], &s[1])),
                &format!("{name} {dtype} static {a:?}"),
            );
        }
        println!("{name} {dtype}: contributions sum to the pipeline cosine");
    }
}

#[test]
fn words_group_pieces_and_specials_stand_alone() {
    let embedder = load(MINILM, "q8_0");
    let e = explain(
        &embedder,
        "Unbelievably, Tom likes Swift.",
        "Tom likes Swift.",
    )
    .unwrap();
    let words = e.words.as_ref().unwrap();
    assert_eq!(
        words.tokens_a,
        [
            "[CLS]",
            "Unbelievably",
            ",",
            "Tom",
            "likes",
            "Swift",
            ".",
            "[SEP]"
        ]
    );
    assert!(e.tokens_a.len() > words.tokens_a.len(), "{:?}", e.tokens_a);
}

#[test]
fn the_baseline_map_of_a_permutation_has_permuted_identical_rows() {
    let embedder = load(MINILM, "q8_0");
    let a = "The committee was unimpressed by the proposal's feasibility.";
    let b = "Tom likes Taylor Swift.";
    let original = explain_static(&embedder, a, b).unwrap();
    for seed in 0..5 {
        let permuted_text = shuffle_words(a, seed);
        let permuted = explain_static(&embedder, &permuted_text, b).unwrap();
        assert!((permuted.total - original.total).abs() < 1e-12);
        let mut unused: Vec<bool> = vec![true; original.tokens_a.len()];
        for (token, row) in permuted.tokens_a.iter().zip(&permuted.contributions) {
            let same = (0..original.tokens_a.len()).find(|&i| {
                unused[i]
                    && &original.tokens_a[i] == token
                    && original.contributions[i]
                        .iter()
                        .zip(row)
                        .all(|(x, y)| (x - y).abs() < 1e-12)
            });
            let i =
                same.unwrap_or_else(|| panic!("row {token:?} of {permuted_text:?} has no twin"));
            unused[i] = false;
        }
    }
}

#[test]
fn the_last_layer_is_the_ordinary_embedding() {
    for (name, dtype) in [(MINILM, "q8_0"), (MPNET, "q8_0")] {
        let embedder = load(name, dtype);
        let texts: Vec<&str> = PAIRS.iter().flat_map(|(a, b)| [*a, *b]).collect();
        let layers = embedder.embed_layers(&texts).unwrap();
        let ordinary = embedder.embed(&texts).unwrap();
        for (per_layer, v) in layers.iter().zip(&ordinary) {
            assert_eq!(
                per_layer.len(),
                embedder.info.num_layers + 1,
                "{name}: layer 0 + each layer"
            );
            let c = cosine(per_layer.last().unwrap(), v);
            assert!(c >= 0.999_999, "{name} {dtype}: last layer vs ordinary {c}");
        }
    }
}

fn stsb_head(count: usize) -> StsFile {
    let path = common::data_dir().join("stsb/stsb-en-test.csv");
    let mut file = parse_stsb("stsb-en-test.csv", &std::fs::read(path).unwrap()).unwrap();
    file.pairs.truncate(count);
    file
}

#[test]
fn shuffle_probes_are_reproducible_from_their_seeds() {
    let embedder = load(MINILM, "q8_0");
    let run = |seeds: usize| {
        let pairs = ProbePairs::new(Vec::new(), Some(stsb_head(150)), Split::Quick).unwrap();
        let mut probe = ShuffleProbe::new(pairs, seeds).unwrap();
        while !probe.is_done() {
            probe.step(&embedder).unwrap();
        }
        serde_json::to_value(probe.finish(&embedder).unwrap()).unwrap()
    };
    let (first, again, more) = (run(3), run(3), run(4));
    assert_eq!(first, again);
    assert_eq!(
        first["shuffled"]["per_seed"][2], more["shuffled"]["per_seed"][2],
        "seed 2 is seed 2"
    );
    assert_eq!(first["stsb_test"], more["stsb_test"]);
    let (ordinary, shuffled) = (
        first["stsb_test"]["spearman"].as_f64().unwrap(),
        first["shuffled"]["spearman_mean"].as_f64().unwrap(),
    );
    assert!(
        shuffled < ordinary,
        "shuffling words costs something: {shuffled} vs {ordinary}"
    );
    assert!(first["sr"].is_null());
}

/// A private copy of the built binary (target/release is shared by concurrent builds).
fn binary() -> PathBuf {
    let copy = std::env::temp_dir().join(format!("sr-bench-explain-{}", std::process::id()));
    if !copy.exists() {
        std::fs::copy(env!("CARGO_BIN_EXE_sr-bench"), &copy).expect("copy the binary");
    }
    copy
}

fn sr_bench(args: &[&str]) -> Value {
    let out = Command::new(binary()).args(args).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sr-bench {args:?} failed: {stderr}");
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

#[test]
fn explain_json_has_the_contract_fields_and_sums_to_the_cosine() {
    let model = common::model_path(MINILM, "q8_0");
    let json = sr_bench(&[
        "explain",
        "--model",
        model.to_str().unwrap(),
        "Tom likes Taylor Swift.",
        "Taylor Swift likes Tom.",
        "--json",
    ]);
    let cosine = json["cosine"].as_f64().unwrap();
    assert_eq!(json["pooling"], "mean");
    assert_eq!(json["tokens_a"][0], "[CLS]");
    let rows = json["contributions"].as_array().unwrap();
    assert_eq!(rows.len(), json["tokens_a"].as_array().unwrap().len());
    let sum: f64 = rows
        .iter()
        .flat_map(|r| r.as_array().unwrap())
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((sum - cosine).abs() < 1e-5, "{sum} vs {cosine}");
    assert!(json["words"]["contributions"].is_array());
}

#[test]
fn probe_layers_last_layer_equals_the_ordinary_quick_run() {
    let model = common::model_path(MINILM, "q8_0");
    let data = common::data_dir();
    let (model, data) = (model.to_str().unwrap(), data.to_str().unwrap());
    let common = [
        "--model", model, "--data", data, "--split", "quick", "--json", "-",
    ];
    let probe = sr_bench(&[&["probe", "layers"], &common[..]].concat());
    // `eval --split quick --json` on the same file by the same binary.
    let report = self::common::quick_report_json(MINILM, "q8_0", "model");
    assert_eq!(probe["model"], MINILM);
    assert_eq!(probe["dtype"], "q8_0");
    assert_eq!(probe["split"], "quick");
    let layers = probe["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 7, "layer 0 and six layers");
    assert_eq!(layers[0]["layer"], 0);
    let last = &layers[6];
    println!(
        "last layer {last}; ordinary structure {} relation {} stsb {}",
        report["results"]["structure"]["avg_spearman"],
        report["results"]["relation"]["avg_spearman"],
        report["stsb_test"]["spearman"]
    );
    assert_eq!(
        last["structure_avg"],
        report["results"]["structure"]["avg_spearman"]
    );
    assert_eq!(
        last["relation_avg"],
        report["results"]["relation"]["avg_spearman"]
    );
    assert_eq!(last["stsb_test"], report["stsb_test"]["spearman"]);
}

#[test]
fn probe_shuffle_json_has_the_contract_fields() {
    let model = common::model_path(MINILM, "q8_0");
    let data = common::data_dir();
    let json = sr_bench(&[
        "probe",
        "shuffle",
        "--model",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--seeds",
        "2",
        "--sr",
        "none",
        "--json",
        "-",
    ]);
    assert_eq!(json["model"], MINILM);
    assert_eq!(json["dtype"], "q8_0");
    for key in ["spearman", "pearson"] {
        assert!(json["stsb_test"][key].is_f64(), "{key}");
    }
    let shuffled = &json["shuffled"];
    assert_eq!(shuffled["seeds"], 2);
    for key in ["spearman_mean", "spearman_sd", "pearson_mean"] {
        assert!(shuffled[key].is_f64(), "{key}");
    }
    assert!(json["finding"].as_str().unwrap().contains("keeps"));
}
