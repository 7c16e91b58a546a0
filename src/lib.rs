//! sr-bench: the SR syntax benchmark for quantized sentence encoders, in the browser and natively.
//!
//! Layers (arrows point one way):
//! - [`model`]: the self-describing GGUF model file, tokenizer, batching, pooling — backend-neutral.
//! - [`backend`]: runs an encoder forward pass (CPU via candle and our wasm kernels, WebGPU
//!   via wgpu) and owns backend selection ([`backend::BackendStatus`]).
//! - [`scoring`]: a model (or its syntax-blind baseline) as the benchmark's encoder: the one
//!   place where `model` meets `eval`.
//! - [`explain`]: token-pair contributions, word-order probes, the layer probe (model + eval).
//! - [`error`]: error codes chosen where a failure happens, handed to the page.
//! - [`eval`]: datasets, metrics and the benchmark runner — pure Rust, parses bytes, no I/O.
//! - `wasm` (wasm32 only): the thin wasm-bindgen layer the web app calls.
//! - `convert`, `cli` (native only): model conversion from the pinned wheels and the command line.

pub mod backend;
pub mod error;
pub mod eval;
pub mod explain;
pub mod model;
pub mod scoring;

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
#[cfg(not(target_arch = "wasm32"))]
pub mod convert;
#[cfg(not(target_arch = "wasm32"))]
pub mod train;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

/// "Arrows point one way", checked: no two sibling modules (at any depth) reach each other
/// through `crate::` or `super::` paths. Test code (files `tests.rs` / `testing.rs`, the
/// `kernel_check` helpers, a file's trailing `#[cfg(test)]` module) may reach anywhere.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod layout_tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Every `.rs` file under `dir` with its module path (`backend/cpu/mod.rs` → backend, cpu).
    fn modules(dir: &Path, path: &[String], out: &mut Vec<(Vec<String>, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap().path();
            let name = entry.file_stem().unwrap().to_string_lossy().to_string();
            if entry.is_dir() {
                modules(&entry, &[path, &[name]].concat(), out);
            } else if entry.extension().is_some_and(|e| e == "rs") {
                if ["tests", "testing", "kernel_check"].contains(&name.as_str()) {
                    continue;
                }
                let module = match name.as_str() {
                    "mod" | "lib" | "main" => path.to_vec(),
                    _ => [path, &[name]].concat(),
                };
                let text = std::fs::read_to_string(&entry).unwrap();
                let text = text
                    .split("#[cfg(test)]\nmod tests")
                    .next()
                    .unwrap()
                    .to_string();
                out.push((module, text));
            }
        }
    }

    /// The module paths a file names: `crate::a::b` and `super::a` (relative to the file's
    /// parent module), comments skipped.
    fn references(module: &[String], text: &str) -> Vec<Vec<String>> {
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut found = Vec::new();
        for anchor in ["crate::", "super::"] {
            for (at, _) in code.match_indices(anchor) {
                if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue; // `super::super::` is counted from its first `super`
                }
                let rest = &code[at + anchor.len()..];
                let mut start = match anchor {
                    "crate::" => Vec::new(),
                    _ => module[..module.len().saturating_sub(1)].to_vec(),
                };
                let mut tail = rest;
                while let Some(r) = tail.strip_prefix("super::") {
                    start.pop();
                    tail = r;
                }
                let segments = tail
                    .split("::")
                    .map_while(|s| {
                        let id: String = s
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        (id.len() == s.len() && id.starts_with(|c: char| c.is_lowercase()))
                            .then_some(id)
                    })
                    .collect::<Vec<_>>();
                let named = if segments.is_empty() {
                    // `super::{a, b}` or `crate::x` ending the path: the first identifier
                    tail.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect::<String>()
                } else {
                    String::new()
                };
                start.extend(segments);
                if !named.is_empty() {
                    start.push(named);
                }
                found.push(start);
            }
        }
        found
    }

    #[test]
    fn sibling_modules_never_reach_each_other() {
        let mut files = Vec::new();
        modules(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &[],
            &mut files,
        );
        // parent module → sibling → siblings it reaches
        let mut graph: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (module, text) in &files {
            for target in references(module, text) {
                let common = module
                    .iter()
                    .zip(&target)
                    .take_while(|(a, b)| a == b)
                    .count();
                if common < module.len() && common < target.len() {
                    graph
                        .entry(module[..common].to_vec())
                        .or_default()
                        .entry(module[common].clone())
                        .or_default()
                        .insert(target[common].clone());
                }
            }
        }
        assert!(
            graph.contains_key(&vec![]),
            "no edges between top-level modules found"
        );
        for (parent, edges) in &graph {
            for (from, tos) in edges {
                for to in tos {
                    // a path from `to` back to `from` closes a cycle
                    let mut stack = vec![to.clone()];
                    let mut seen = BTreeSet::new();
                    while let Some(m) = stack.pop() {
                        assert!(
                            m != *from,
                            "import cycle in crate{}: {from} → {to} → … → {from}",
                            parent.iter().map(|p| format!("::{p}")).collect::<String>()
                        );
                        if seen.insert(m.clone()) {
                            stack.extend(edges.get(&m).into_iter().flatten().cloned());
                        }
                    }
                }
            }
        }
    }
}
