//! `sr-bench train --resume`: a run killed with SIGKILL in the middle of an epoch and resumed
//! from its checkpoint ends as the same run never killed (the log step for step, the kept
//! epoch, the trained file's vectors); a damaged, foreign, mismatched or edited checkpoint is refused
//! naming the file, and nothing is written.
//!
//! The tiny random BERT of `./build.sh fixtures` trains on 480 STS-B dev pairs (after the leak
//! filter 400 are left: 25 steps an epoch, 3 epochs), with a checkpoint every 7 steps.
#![cfg(unix)]

mod cli_common;
mod common;
mod convert_common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use candle_core::Tensor;
use sr_bench::backend::{load_embedder, BackendKind};
use sr_bench::model::cosine;
use sr_bench::train::checkpoint;
use sr_bench::train::data::dev_set;
use sr_bench::train::{training_set, TrainData};

const STEM: &str = "bert-unigram.hf-own";

/// A change made to a checkpoint's run state.
type StateEdit = fn(&mut checkpoint::RunState);

/// 480 STS-B dev pairs as a training file of the user's: training on the set the epochs are
/// judged by makes an epoch beat the base model, so the kept epoch's weights are in the
/// checkpoint too.
fn pairs_file(dir: &Path) -> PathBuf {
    let dev = dev_set(&common::data_dir()).unwrap();
    let path = dir.join("pairs.csv");
    let mut w = csv::Writer::from_path(&path).unwrap();
    for p in dev.pairs.iter().take(480) {
        w.write_record([&p.sentence1, &p.sentence2, &format!("{}", p.score)])
            .unwrap();
    }
    w.flush().unwrap();
    path
}

fn train_args<'a>(model: &'a str, pairs: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "train",
        "--model",
        model,
        "--train",
        pairs,
        "--epochs",
        "3",
        "--lr",
        "2e-4",
        "--seed",
        "4",
        "--checkpoint-every",
        "7",
        "--out",
        out,
    ]
}

fn log(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join(format!("{STEM}.train-log.json"))).unwrap())
        .unwrap()
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut l: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    l.sort();
    l
}

#[test]
fn a_run_killed_mid_epoch_and_resumed_ends_as_the_run_never_killed() {
    let dir = cli_common::temp_dir("train", "resume");
    let model = convert_common::tiny_bert_f32();
    let model = model.to_str().unwrap();
    let pairs = pairs_file(&dir);
    let pairs = pairs.to_str().unwrap();
    let (whole, killed) = (dir.join("whole"), dir.join("killed"));

    let (ok, _, stderr) = cli_common::sr_bench(&train_args(model, pairs, whole.to_str().unwrap()));
    assert!(ok, "{stderr}");
    eprintln!("{stderr}");
    let checkpoint = whole.join(format!("{STEM}.checkpoint.gguf"));
    assert!(
        stderr.contains("checkpoint at step 7 in") && !checkpoint.exists(),
        "a finished run keeps no checkpoint: {stderr}"
    );

    // The same run, killed after its first checkpoint inside the second epoch (steps 26–50).
    let mut child = Command::new(cli_common::binary())
        .args(train_args(model, pairs, killed.to_str().unwrap()))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = String::new();
    let mut at = None;
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        let step = line
            .strip_prefix("checkpoint at step ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(step) = step.filter(|&s| s > 35) {
            child.kill().unwrap();
            at = Some(step);
            break;
        }
    }
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "the run was not killed: {seen}");
    let at = at.unwrap();
    let checkpoint = killed.join(format!("{STEM}.checkpoint.gguf"));
    assert!(checkpoint.exists(), "{seen}");
    assert!(
        !killed.join(format!("{STEM}.f32.gguf")).exists(),
        "a killed run wrote its trained file"
    );

    // Refusals before the resume: each names the file, and the folder stays as it was.
    let before = listing(&killed);
    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    let bytes = std::fs::read(&checkpoint).unwrap();
    let cut = bad.join(format!("cut{}", ".checkpoint.gguf"));
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let foreign = bad.join("model.checkpoint.gguf");
    std::fs::copy(model, &foreign).unwrap();
    for (file, says) in [
        (&cut, "cut short or damaged"),
        (&foreign, "not an sr-bench training checkpoint"),
    ] {
        let (ok, _, stderr) = cli_common::sr_bench(&["train", "--resume", file.to_str().unwrap()]);
        assert!(
            !ok && stderr.contains(file.to_str().unwrap()) && stderr.contains(says),
            "{stderr}"
        );
        eprintln!("{}", stderr.trim());
    }
    let (ok, _, stderr) = cli_common::sr_bench(&["train", "--resume", bad.to_str().unwrap()]);
    assert!(!ok && stderr.contains("several checkpoints"), "{stderr}");
    // A checkpoint of ours whose state was edited: a place the run never reaches (step 42 in
    // epoch 1 of 25 steps), an epoch kept that was never scored.
    let saved = checkpoint::read(&checkpoint).unwrap();
    let edits: [(&str, StateEdit, &str); 2] = [
        ("place", |s| s.epoch = 1, "not a place this run reaches"),
        ("kept", |s| s.log.kept_epoch = 9, "never scored"),
    ];
    for (name, edit, says) in edits {
        let folder = dir.join(format!("edited-{name}"));
        std::fs::create_dir_all(&folder).unwrap();
        let mut state = saved.state.clone();
        edit(&mut state);
        let tensors: Vec<(String, &Tensor)> =
            saved.tensors.iter().map(|(n, t)| (n.clone(), t)).collect();
        let file = folder.join(format!("{STEM}.checkpoint.gguf"));
        checkpoint::write(&file, &state, &tensors).unwrap();
        let (ok, _, stderr) =
            cli_common::sr_bench(&["train", "--resume", folder.to_str().unwrap()]);
        assert!(
            !ok && stderr.contains(file.to_str().unwrap()) && stderr.contains(says),
            "{name}: {stderr}"
        );
        assert_eq!(
            std::fs::read_dir(&folder).unwrap().count(),
            1,
            "{name}: nothing written"
        );
    }
    // Another model (the finished run's own trained file), and changed training data.
    let other = whole.join(format!("{STEM}.f32.gguf"));
    let (ok, _, stderr) = cli_common::sr_bench(&[
        "train",
        "--resume",
        killed.to_str().unwrap(),
        "--model",
        other.to_str().unwrap(),
    ]);
    assert!(
        !ok && stderr.contains(checkpoint.to_str().unwrap()) && stderr.contains("SHA-256"),
        "{stderr}"
    );
    let changed = dir.join("changed");
    std::fs::create_dir_all(&changed).unwrap();
    std::fs::copy(pairs, changed.join("pairs.csv")).unwrap();
    let mut text = std::fs::read_to_string(changed.join("pairs.csv")).unwrap();
    text.push_str("A cat sat on the mat.,A cat is sitting on a mat.,4.5\n");
    std::fs::write(pairs, &text).unwrap();
    let (ok, _, stderr) = cli_common::sr_bench(&["train", "--resume", killed.to_str().unwrap()]);
    assert!(!ok && stderr.contains("has changed"), "{stderr}");
    std::fs::copy(changed.join("pairs.csv"), pairs).unwrap();
    // A fresh run into the folder would overwrite the checkpoint: refused.
    let (ok, _, stderr) = cli_common::sr_bench(&train_args(model, pairs, killed.to_str().unwrap()));
    assert!(!ok && stderr.contains("--resume"), "{stderr}");
    assert_eq!(
        listing(&killed),
        before,
        "a refused command changed the folder"
    );

    let (ok, _, stderr) = cli_common::sr_bench(&["train", "--resume", killed.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("resuming bert-unigram.hf on file:pairs.csv")
            && stderr.contains(&format!("at step {at} from")),
        "{stderr}"
    );
    assert!(!checkpoint.exists(), "the finished run kept its checkpoint");

    let (a, b) = (log(&whole), log(&killed));
    let (la, lb) = (floats(&a["loss"]), floats(&b["loss"]));
    // Pairs sharing a text with a reported test set are dropped; 25 steps an epoch are left.
    let steps = 3 * a["pairs"].as_u64().unwrap().div_ceil(16) as usize;
    assert_eq!(steps, 75);
    assert_eq!((la.len(), lb.len()), (steps, steps));
    let worst = la
        .iter()
        .zip(&lb)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    let dev = floats(&a["dev_spearman"])
        .iter()
        .zip(floats(&b["dev_spearman"]))
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    eprintln!(
        "killed at step {at}; losses differ by at most {worst:.2e}, dev by {dev:.2e}; kept epoch {} / {}",
        a["kept_epoch"], b["kept_epoch"]
    );
    assert!(worst <= 1e-6 && dev <= 1e-6, "{a}\n{b}");
    assert_eq!(a["kept_epoch"], b["kept_epoch"]);
    assert!(
        a["kept_epoch"].as_u64().unwrap() > 0,
        "no epoch beat the base model: {a}"
    );
    assert_eq!(b["resumed_at"], serde_json::json!([at]));
    assert_eq!(b["steps"], 75);

    let texts: Vec<String> = training_set(&common::data_dir(), &TrainData::Stsb, 1)
        .unwrap()
        .pairs
        .iter()
        .skip(480)
        .take(64)
        .map(|p| p.text_a.clone())
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embed = |dir: &Path| {
        let bytes = std::fs::read(dir.join(format!("{STEM}.f32.gguf"))).unwrap();
        load_embedder(bytes, BackendKind::Cpu)
            .unwrap()
            .embed(&texts)
            .unwrap()
    };
    let (va, vb) = (embed(&whole), embed(&killed));
    let min = va
        .iter()
        .zip(&vb)
        .map(|(x, y)| cosine(x, y))
        .fold(1.0, f32::min);
    eprintln!("trained files, resumed against whole: min cosine {min:.7}");
    assert!(min >= 0.99999, "{min}");
}
