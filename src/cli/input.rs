//! What the commands read: files, model files (with the user's loading flags), and the
//! benchmark's data files.

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::LoadArgs;
use crate::backend::{load_embedder_with_options, BackendKind};
use crate::eval::SrFile;
use crate::model::Embedder;

pub(super) fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

pub(super) fn load_model(path: &Path, backend: BackendKind, load: &LoadArgs) -> Result<Embedder> {
    load_embedder_with_options(read_file(path)?, backend, load.options())
        .with_context(|| format!("cannot load model {}", path.display()))
}

pub(super) fn parse_data_file<T>(
    data: &Path,
    relative: &str,
    parse: fn(&str, &[u8]) -> Result<T>,
) -> Result<T> {
    let path = data.join(relative);
    parse(&path.display().to_string(), &read_file(&path)?)
}

/// Reads and parses the six SR files from `<data>/sr/`.
pub(super) fn sr_files(data: &Path) -> Result<Vec<SrFile>> {
    some_sr_files(data, &[])
}

/// The SR files named in `names` (all six when empty), each name checked before any read.
pub(super) fn some_sr_files(data: &Path, names: &[String]) -> Result<Vec<SrFile>> {
    let known = crate::eval::SR_FILES;
    if let Some(unknown) = names.iter().find(|n| !known.contains(&n.as_str())) {
        bail!(
            "unknown SR file '{unknown}' in --files: expected some of {}",
            known.join(", ")
        );
    }
    let names: Vec<&str> = match names {
        [] => known.to_vec(),
        names => names.iter().map(String::as_str).collect(),
    };
    names
        .into_iter()
        .map(|name| {
            let path = data.join(crate::eval::sr_path(name));
            crate::eval::parse_sr(name, &read_file(&path)?)
                .with_context(|| format!("in {}", path.display()))
        })
        .collect()
}
