//! `sr-bench train`: autograd's gradients against central finite differences, a short run that
//! lowers the loss and writes a file that reloads and embeds as the trained model did, the
//! trainable encoders' forward pass against the product's (MiniLM and MPNet), the no-leak
//! split on the exact sets, and bad training files.
//!
//! The tiny model is the random BertModel folder of `./build.sh fixtures` (3 layers, 128 wide,
//! a 3,000-piece Unigram vocabulary trained on the SR texts), converted by our converter.
#![cfg(not(target_arch = "wasm32"))]

mod cli_common;
mod common;
mod convert_common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use candle_core::{DType, Tensor};
use sr_bench::backend::{load_embedder, BackendKind};
use sr_bench::eval::rng::SplitMix64;
use sr_bench::model::{cosine, ModelFile};
use sr_bench::train::data::{dev_set, AUGMENT_FROM, HELD_OUT};
use sr_bench::train::{training_set, Pair, Recipe, TrainData, Trainer, TrainingSet};

fn tiny_bert() -> PathBuf {
    convert_common::tiny_bert_f32()
}

fn pairs(n: usize) -> Vec<Pair> {
    let set = training_set(&common::data_dir(), &TrainData::Stsb, 1).unwrap();
    set.pairs.into_iter().take(n).collect()
}

#[test]
fn gradients_equal_central_finite_differences_on_every_tensor() {
    let bytes = std::fs::read(tiny_bert()).unwrap();
    let file = ModelFile::from_bytes(bytes.clone()).unwrap();
    // f64: central differences then resolve the derivative to ~1e-9, far below the bound.
    let trainer = Trainer::new(&file, sr_bench::convert::sha256_hex(&bytes), DType::F64).unwrap();
    let batch = pairs(6);
    let refs: Vec<&Pair> = batch.iter().collect();
    let loss = trainer.loss(&refs, None).unwrap();
    let grads = loss.backward().unwrap();
    let loss_at = || {
        trainer
            .loss(&refs, None)
            .unwrap()
            .to_scalar::<f64>()
            .unwrap()
    };
    let mut rng = SplitMix64::new(7);
    let mut worst = (0.0f64, String::new());
    let h = 1e-5;
    for (name, var) in trainer.model().params() {
        let x = var.as_tensor().detach().copy().unwrap();
        let g = grads
            .get(var.as_tensor())
            .unwrap_or_else(|| panic!("{name}: no gradient"))
            .clone();
        // A random unit direction over the whole tensor.
        let dir: Vec<f64> = (0..x.elem_count())
            .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
            .collect();
        let norm = dir.iter().map(|d| d * d).sum::<f64>().sqrt();
        let dir = Tensor::from_vec(dir, x.shape(), x.device()).unwrap() / norm;
        let dir = dir.unwrap();
        let analytic = (&g * &dir)
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        var.set(&(&x + (&dir * h).unwrap()).unwrap()).unwrap();
        let plus = loss_at();
        var.set(&(&x - (&dir * h).unwrap()).unwrap()).unwrap();
        let minus = loss_at();
        var.set(&x).unwrap();
        let numeric = (plus - minus) / (2.0 * h);
        if name.ends_with("attention.self.key.bias") {
            // The softmax over keys ignores a shift common to all of them, and q·(k + b)
            // shifts every key's score by q·b: this gradient is zero, exactly.
            assert!(
                analytic.abs() < 1e-12 && numeric.abs() < 1e-9,
                "{name}: {analytic:e}, {numeric:e}"
            );
            continue;
        }
        let scale = analytic.abs().max(numeric.abs());
        assert!(
            scale > 1e-12,
            "{name}: both derivatives vanish ({analytic}, {numeric}): the check would be empty"
        );
        let rel = (analytic - numeric).abs() / scale;
        if rel > worst.0 {
            worst = (rel, name.clone());
        }
        assert!(
            rel <= 1e-3,
            "{name}: autograd {analytic:e}, finite differences {numeric:e}, relative error {rel:e}"
        );
    }
    eprintln!(
        "gradient check: {} tensors, worst relative error {:.2e} ({})",
        trainer.model().params().len(),
        worst.0,
        worst.1
    );
}

/// The trainable encoder's vectors of a few texts against the product's CPU backend.
fn forward_parity(path: &Path) -> f32 {
    let bytes = std::fs::read(path).unwrap();
    let file = ModelFile::from_bytes(bytes.clone()).unwrap();
    let trainer = Trainer::new(&file, sr_bench::convert::sha256_hex(&bytes), DType::F32).unwrap();
    let texts = [
        "The chef cooked the meal.",
        "The meal was cooked by the chef.",
        "A man is playing a guitar on the stage while people watch.",
        "x",
    ];
    let ours = trainer.embed(&texts).unwrap();
    let product = load_embedder(bytes, BackendKind::Cpu)
        .unwrap()
        .embed(&texts)
        .unwrap();
    ours.iter()
        .zip(&product)
        .map(|(a, b)| cosine(a, b))
        .fold(1.0, f32::min)
}

#[test]
fn the_trainable_minilm_and_mpnet_embed_as_the_product_does() {
    for model in ["all-MiniLM-L6-v2", "all-mpnet-base-v2"] {
        let min = forward_parity(&common::model_path(model, "f32"));
        eprintln!("{model}: trainable vs CPU backend, min cosine {min:.7}");
        assert!(min >= 0.99999, "{model}: {min}");
    }
}

#[test]
fn a_short_run_lowers_the_loss_and_its_file_embeds_as_the_trained_model() {
    let path = tiny_bert();
    let bytes = std::fs::read(&path).unwrap();
    let file = ModelFile::from_bytes(bytes.clone()).unwrap();
    let mut trainer =
        Trainer::new(&file, sr_bench::convert::sha256_hex(&bytes), DType::F32).unwrap();
    let set = TrainingSet {
        pairs: pairs(640),
        dropped: 0,
    };
    let mut dev = dev_set(&common::data_dir()).unwrap();
    dev.pairs.truncate(200);
    let recipe = Recipe {
        data: "stsb".into(),
        epochs: 2,
        batch: 16,
        lr: 1e-3,
        warmup: 0.1,
        seed: 3,
        max_steps: None,
    };
    let log = trainer.train(&set, &dev, &recipe, |_| {}).unwrap();
    assert_eq!(log.steps, 80);
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let (first, last) = (mean(&log.loss[..20]), mean(&log.loss[60..]));
    eprintln!(
        "loss: first 20 steps {first:.4}, last 20 {last:.4}; dev {:?}, kept {}",
        log.dev_spearman, log.kept_epoch
    );
    assert!(
        last < 0.8 * first,
        "the loss did not fall: {first} → {last}"
    );
    // The kept weights, written and read back: the same vectors.
    let written = trainer.write(&log, "f32").unwrap();
    assert_ne!(
        sr_bench::convert::sha256_hex(&written),
        sr_bench::convert::sha256_hex(&bytes)
    );
    let texts: Vec<&str> = dev
        .pairs
        .iter()
        .take(40)
        .flat_map(|p| [p.sentence1.as_str(), p.sentence2.as_str()])
        .collect();
    let ours = trainer.embed(&texts).unwrap();
    let reloaded = load_embedder(written.clone(), BackendKind::Cpu)
        .unwrap()
        .embed(&texts)
        .unwrap();
    let min = ours
        .iter()
        .zip(&reloaded)
        .map(|(a, b)| cosine(a, b))
        .fold(1.0, f32::min);
    eprintln!("reloaded vs in memory: min cosine {min:.7}");
    assert!(min >= 0.99999, "{min}");
    // The recipe is in the file.
    let info = ModelFile::from_bytes(written).unwrap().info;
    assert_eq!(info.name, "bert-unigram.hf+stsb");
    assert_eq!(
        info.trained,
        Some(sr_bench::model::TrainedFrom {
            data: "stsb".into(),
            epochs: 2,
            kept_epoch: log.kept_epoch,
            seed: 3,
            pairs: 640,
            base_sha256: sr_bench::convert::sha256_hex(&bytes),
        })
    );
    // And the CLI, end to end: files, log, progress.
    let out = cli_common::temp_dir("train", "cli");
    let (ok, _, stderr) = cli_common::sr_bench(&[
        "train",
        "--model",
        path.to_str().unwrap(),
        "--train",
        "stsb",
        "--epochs",
        "1",
        "--max-steps",
        "12",
        "--lr",
        "1e-3",
        "--seed",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("step 12/12"), "{stderr}");
    for f in ["f32.gguf", "q8_0.gguf", "train-log.json"] {
        assert!(
            out.join(format!("bert-unigram.hf-stsb.{f}")).exists(),
            "{f}: {stderr}"
        );
    }
    let log: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("bert-unigram.hf-stsb.train-log.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(log["loss"].as_array().unwrap().len(), 12);
    assert_eq!(log["dev_spearman"].as_array().unwrap().len(), 2);
    assert_eq!(log["base_sha256"], sr_bench::convert::sha256_hex(&bytes));
}

/// Every text of the reported test sets, read here independently of the library: STS-B test
/// (no header) and the held-out SR files (header, three texts per row).
fn reported_texts_read_here() -> HashSet<String> {
    let data = common::data_dir();
    let mut texts = HashSet::new();
    let mut read = |path: PathBuf, header: bool, columns: &[usize]| {
        let mut r = csv::ReaderBuilder::new()
            .has_headers(header)
            .from_path(&path)
            .unwrap();
        for rec in r.records() {
            let rec = rec.unwrap();
            for &c in columns {
                texts.insert(rec[c].to_string());
            }
        }
    };
    read(data.join("stsb/stsb-en-test.csv"), false, &[0, 1]);
    for name in ["stsb", "askubuntu", "twitter", "biosses"] {
        read(data.join(format!("sr/{name}.csv")), true, &[0, 1, 3]);
    }
    texts
}

#[test]
fn no_training_text_occurs_in_a_reported_test_set() {
    assert_eq!(HELD_OUT, ["stsb", "askubuntu", "twitter", "biosses"]);
    assert_eq!(AUGMENT_FROM, ["sickr", "cqa"]);
    let reported = reported_texts_read_here();
    let data = common::data_dir();
    for which in [TrainData::Stsb, TrainData::StsbSr, TrainData::StsbShuffled] {
        let set = training_set(&data, &which, 1).unwrap();
        let texts: Vec<&str> = set
            .pairs
            .iter()
            .flat_map(|p| [p.text_a.as_str(), p.text_b.as_str()])
            .collect();
        let leaked: Vec<&&str> = texts.iter().filter(|t| reported.contains(**t)).collect();
        eprintln!(
            "{}: {} pairs ({} texts) trained on, {} dropped; {} in a reported set",
            which.name(),
            set.pairs.len(),
            texts.len(),
            set.dropped,
            leaked.len()
        );
        assert!(
            leaked.is_empty(),
            "{}: {:?}",
            which.name(),
            &leaked[..leaked.len().min(5)]
        );
        assert!(set.pairs.iter().all(|p| (0.0..=1.0).contains(&p.label)));
    }
    // The exact sizes of the fixed split (STS-B train: 5,749 pairs; 459 touch a reported text).
    let stsb = training_set(&data, &TrainData::Stsb, 1).unwrap();
    assert_eq!((stsb.pairs.len(), stsb.dropped), (5290, 459));
    // §4.1: sentence 2 keeps its words, shuffled.
    let shuffled = training_set(&data, &TrainData::StsbShuffled, 1).unwrap();
    let sorted = |t: &str| {
        let mut w: Vec<&str> = t.split_whitespace().collect();
        w.sort_unstable();
        w.join(" ")
    };
    let changed = stsb.pairs.iter().zip(&shuffled.pairs).filter(|(a, b)| {
        assert_eq!(a.text_a, b.text_a);
        assert_eq!(sorted(&a.text_b), sorted(&b.text_b));
        a.text_b != b.text_b
    });
    assert!(changed.count() > 5000);
}

#[test]
fn bad_training_files_are_refused_naming_file_and_line_and_nothing_is_written() {
    let dir = cli_common::temp_dir("train", "bad");
    let model = tiny_bert();
    let cases = [
        (
            "missing.csv",
            "A cat sat.,A cat is sitting.,4.0\nA dog ran.,3.5\n",
            "line 2",
        ),
        (
            "range.csv",
            "A cat sat.,A cat is sitting.,4.0\nA dog ran.,A dog is running.,7\n",
            "line 2",
        ),
        ("empty.csv", "", "empty"),
    ];
    for (name, text, says) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let out = dir.join(format!("out-{name}"));
        let (ok, _, stderr) = cli_common::sr_bench(&[
            "train",
            "--model",
            model.to_str().unwrap(),
            "--train",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(!ok, "{name} was accepted");
        assert!(
            stderr.contains(name) && stderr.contains(says),
            "{name}: {stderr}"
        );
        assert!(!out.exists(), "{name}: something was written");
        eprintln!("{name}: {}", stderr.trim());
    }
    // A quantized base is refused before any work.
    let (ok, _, stderr) = cli_common::sr_bench(&[
        "train",
        "--model",
        common::model_path("all-MiniLM-L6-v2", "q8_0")
            .to_str()
            .unwrap(),
        "--train",
        "stsb",
        "--out",
        dir.join("out-q8").to_str().unwrap(),
    ]);
    assert!(
        !ok && stderr.contains("starts from an f32 file"),
        "{stderr}"
    );
}
