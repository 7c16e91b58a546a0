//! Shared by the CLI tests (cli_*.rs, convert_*.rs): running the binary, and scratch folders.
#![allow(dead_code)]

pub mod server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// This test run's own copy of the built `sr-bench`, taken at first use: other worktrees
/// building into the same target folder replace `target/release/sr-bench` mid-run.
pub fn binary() -> &'static Path {
    static COPY: OnceLock<PathBuf> = OnceLock::new();
    COPY.get_or_init(|| {
        // One copy per test executable (replaced whole, so a copy in use is never written).
        let test = std::env::current_exe().unwrap();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let name = format!(
            "sr-bench-for-{}",
            test.file_name().unwrap().to_string_lossy()
        );
        let partial = dir.join(format!("{name}.{}", std::process::id()));
        std::fs::copy(env!("CARGO_BIN_EXE_sr-bench"), &partial).expect("the binary copies");
        std::fs::rename(&partial, dir.join(&name)).expect("the copy moves into place");
        dir.join(name)
    })
}

/// Runs the built `sr-bench` ([`binary`]): (success, stdout, stderr). A panic fails the test
/// whatever the exit code: bad input must end in an error message.
pub fn sr_bench(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(binary()).args(args).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("panicked"),
        "sr-bench {args:?} panicked: {stderr}"
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

/// Every command that embeds (and `info`) lists `flag` in its `--help`.
pub fn every_embedding_command_lists(flag: &str) {
    for command in ["embed", "similarity", "eval", "eval-czech", "bench", "info"] {
        let (ok, help, stderr) = sr_bench(&[command, "--help"]);
        assert!(ok, "{stderr}");
        assert!(help.contains(flag), "{command} --help lacks {flag}: {help}");
    }
}

/// `sr-bench embed --model MODEL EXTRA…` of `texts` (a JSON array on stdin): the vectors; fails
/// the test unless it succeeds.
pub fn embed(model: &Path, extra: &[&str], texts: &[&str]) -> Vec<Vec<f32>> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(binary())
        .args(["embed", "--model", model.to_str().unwrap()])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let input = serde_json::to_string(texts).unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sr-bench embed {extra:?}: {stderr}");
    serde_json::from_slice(&out.stdout).expect("a JSON array of vectors")
}

/// `sr-bench eval` of `model` on the data folder of the tests, `extra` flags added, the report
/// written to `json`: (success, stdout, stderr).
pub fn eval_to_json(model: &Path, extra: &[&str], json: &Path) -> (bool, String, String) {
    let data = super::common::data_dir();
    let mut args = vec![
        "eval",
        "--model",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    sr_bench(&args)
}

/// A fresh folder `<prefix>-<pid>-<name>` under cargo's temp folder for tests (removed first
/// if a run left it).
pub fn temp_dir(prefix: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
