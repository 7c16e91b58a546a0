//! `sr-bench site OUT`: the built demo (`www/dist`) as a folder for any static host. Each chosen
//! model is split into parts of at most 16 MiB (GitHub Pages takes files up to 100 MB,
//! Cloudflare Pages up to 25 MiB), listed in the manifest with every part's size and sha256 and
//! the whole file's; the models may live on another origin (`--base-url`, e.g. a Hugging Face
//! `resolve/<commit>/` URL), which the page's CSP then names in `connect-src` and nothing else.
//! The security headers go where each host takes them: `_headers` (Netlify, Cloudflare Pages)
//! and the `<meta>` CSP already in index.html.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use sha2::{Digest, Sha256};

use crate::convert::{Manifest, ManifestEntry, ManifestPart};

/// Largest part written; a host's limit must be above it.
pub const DEFAULT_PART_MIB: u64 = 16;
/// Cloudflare Pages' per-file limit: nothing in OUT may be larger.
const HOST_FILE_LIMIT: u64 = 25 << 20;

#[derive(clap::Args)]
pub(crate) struct SiteArgs {
    /// The folder to write (must not exist, or be empty).
    out: PathBuf,
    /// The built site (`./build.sh build`).
    #[arg(long, default_value = "www/dist")]
    from: PathBuf,
    /// The models to include, as NAME.DTYPE (comma-separated); the first is the default.
    #[arg(
        long,
        value_delimiter = ',',
        default_values = ["all-MiniLM-L6-v2.q8_0", "all-mpnet-base-v2.q8_0"]
    )]
    models: Vec<String>,
    /// Where the model parts will be served from, if not the site itself (an absolute http(s)
    /// URL ending in '/'): the manifest names it and the page's CSP allows that origin.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Largest part, in MiB.
    #[arg(long, default_value_t = DEFAULT_PART_MIB)]
    part_mib: u64,
}

pub(crate) fn run(args: SiteArgs) -> Result<()> {
    ensure!(
        (1..=24).contains(&args.part_mib),
        "--part-mib must be 1 to 24 (hosts refuse files over 25 MiB)"
    );
    let origin = args.base_url.as_deref().map(origin_of).transpose()?;
    let from = &args.from;
    ensure!(
        from.join("index.html").is_file() && from.join("models/manifest.json").is_file(),
        "{} is not a built site (no index.html or models/manifest.json): run ./build.sh build",
        from.display()
    );
    if args.out.exists() {
        let empty = std::fs::read_dir(&args.out)?.next().is_none();
        ensure!(
            empty,
            "{} exists and is not empty: choose a new folder",
            args.out.display()
        );
    }
    // Where OUT will be, before anything is made: never inside the site it copies.
    let absolute = std::path::absolute(&args.out)?;
    let existing = absolute.ancestors().find_map(|a| {
        a.canonicalize()
            .ok()
            .map(|c| c.join(absolute.strip_prefix(a).unwrap()))
    });
    ensure!(
        !existing
            .unwrap_or(absolute)
            .starts_with(from.canonicalize()?),
        "{} lies inside {}: choose a folder outside the built site",
        args.out.display(),
        from.display()
    );
    let manifest: Manifest =
        serde_json::from_slice(&std::fs::read(from.join("models/manifest.json"))?)
            .context("models/manifest.json is not a manifest")?;
    let chosen: Vec<&ManifestEntry> = args
        .models
        .iter()
        .map(|want| {
            manifest
                .models
                .iter()
                .find(|m| format!("{}.{}", m.name, m.dtype) == *want)
                .with_context(|| {
                    let known: Vec<String> = manifest
                        .models
                        .iter()
                        .map(|m| format!("{}.{}", m.name, m.dtype))
                        .collect();
                    format!(
                        "no model {want} in the build: choose from {}",
                        known.join(", ")
                    )
                })
        })
        .collect::<Result<_>>()?;

    copy_shell(from, &args.out)?;
    let models = args.out.join("models");
    std::fs::create_dir_all(&models)?;
    let part_bytes = args.part_mib << 20;
    let mut entries = Vec::new();
    for (i, entry) in chosen.iter().enumerate() {
        let parts = split(
            &from.join("models").join(&entry.file),
            entry,
            &models,
            part_bytes,
        )?;
        eprintln!(
            "{}: {} bytes in {} parts",
            entry.file,
            entry.bytes,
            parts.len()
        );
        entries.push(ManifestEntry {
            default: i == 0,
            parts: Some(parts),
            ..(*entry).clone()
        });
    }
    let site_manifest = Manifest {
        models: entries,
        base_url: args.base_url.clone(),
    };
    std::fs::write(
        models.join("manifest.json"),
        serde_json::to_string_pretty(&site_manifest)?,
    )?;
    let csp = csp(origin.as_deref());
    rewrite_csp(&args.out.join("index.html"), &csp)?;
    std::fs::write(args.out.join("_headers"), headers(&csp))?;

    let (total, largest) = sizes(&args.out)?;
    ensure!(
        largest.1 <= HOST_FILE_LIMIT,
        "{} is {} bytes, over 25 MiB",
        largest.0.display(),
        largest.1
    );
    println!(
        "site written to {}: {:.1} MB in all, the largest file {} ({:.1} MB){}",
        args.out.display(),
        total as f64 / 1e6,
        largest
            .0
            .strip_prefix(&args.out)
            .unwrap_or(&largest.0)
            .display(),
        largest.1 as f64 / 1e6,
        match &args.base_url {
            Some(url) => format!(
                "; upload {}/*.part* to {url} (the page reads the models there)",
                models.display()
            ),
            None => String::new(),
        }
    );
    Ok(())
}

/// `scheme://host[:port]` of an absolute http(s) URL ending in '/'.
fn origin_of(url: &str) -> Result<String> {
    let (scheme, rest) = url
        .split_once("://")
        .filter(|(s, _)| *s == "https" || *s == "http")
        .with_context(|| format!("--base-url {url}: not an absolute http(s) URL"))?;
    ensure!(url.ends_with('/'), "--base-url {url}: must end in '/'");
    let host = rest.split('/').next().unwrap_or("");
    let ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    ensure!(ok, "--base-url {url}: the host '{host}' is not a host name");
    Ok(format!("{scheme}://{host}"))
}

/// Every file of the built site but the models, into `out`.
fn copy_shell(from: &Path, out: &Path) -> Result<()> {
    for entry in walk(from)? {
        let relative = entry.strip_prefix(from)?;
        if relative.starts_with("models") {
            continue;
        }
        let target = out.join(relative);
        std::fs::create_dir_all(target.parent().unwrap())?;
        std::fs::copy(&entry, &target)
            .with_context(|| format!("cannot copy {}", entry.display()))?;
    }
    Ok(())
}

/// Files under `dir`, recursively, in a stable order.
fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let path = e.path();
        if e.file_type()?.is_dir() {
            out.extend(walk(&path)?);
        } else {
            out.push(path);
        }
    }
    Ok(out)
}

/// Splits `path` into `<file>.partNN` files of `part_bytes` in `models`, checking the whole
/// file's size and sha256 against its manifest entry as it is read.
fn split(
    path: &Path,
    entry: &ManifestEntry,
    models: &Path,
    part_bytes: u64,
) -> Result<Vec<ManifestPart>> {
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot read {}: run ./build.sh build", path.display()))?;
    let count = (entry.bytes as u64).div_ceil(part_bytes);
    ensure!(count <= 999, "{}: {count} parts are too many", entry.file);
    let mut whole = Sha256::new();
    let mut parts = Vec::new();
    let mut buffer = vec![0u8; part_bytes as usize];
    for index in 1..=count {
        let mut filled = 0;
        while filled < buffer.len() {
            match file.read(&mut buffer[filled..])? {
                0 => break,
                n => filled += n,
            }
        }
        let bytes = &buffer[..filled];
        whole.update(bytes);
        let name = format!("{}.part{index:03}", entry.file);
        std::fs::write(models.join(&name), bytes)?;
        parts.push(ManifestPart {
            file: name,
            bytes: bytes.len(),
            sha256: format!("{:x}", Sha256::digest(bytes)),
        });
    }
    let total: usize = parts.iter().map(|p| p.bytes).sum();
    let sha = format!("{:x}", whole.finalize());
    if total != entry.bytes || sha != entry.sha256 {
        bail!(
            "{} is not the file the manifest lists ({total} bytes, sha256 {sha}; the manifest \
             says {} bytes, {}): run ./build.sh build",
            path.display(),
            entry.bytes,
            entry.sha256
        );
    }
    Ok(parts)
}

/// The site's policy with `connect-src` naming the model origin, if any, besides 'self'.
/// `frame-ancestors` is left to the `_headers` file: a `<meta>` policy may not carry it.
fn csp(origin: Option<&str>) -> String {
    let connect = origin.map_or("'self'".to_string(), |o| format!("'self' {o}"));
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src \
         'self' data: blob:; font-src 'self'; connect-src {connect}; worker-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action 'none'"
    )
}

/// Replaces the `<meta http-equiv="Content-Security-Policy">` of index.html.
fn rewrite_csp(index: &Path, csp: &str) -> Result<()> {
    let html = std::fs::read_to_string(index)?;
    let start = html
        .find("<meta http-equiv=\"Content-Security-Policy\" content=\"")
        .context("index.html has no Content-Security-Policy <meta>")?;
    let end = start + html[start..].find('>').context("an unclosed <meta>")? + 1;
    let tag = format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">");
    std::fs::write(index, format!("{}{tag}{}", &html[..start], &html[end..]))?;
    Ok(())
}

/// Netlify's and Cloudflare Pages' `_headers`: the policy (with `frame-ancestors`) and the
/// headers `sr-bench serve` sends. Cross-origin isolation is not needed by the page.
fn headers(csp: &str) -> String {
    format!(
        "/*\n  Content-Security-Policy: {csp}; frame-ancestors 'none'\n  X-Content-Type-Options: \
         nosniff\n  Referrer-Policy: no-referrer\n/models/*\n  Cache-Control: no-cache\n"
    )
}

/// Total bytes under `dir`, and the largest file.
fn sizes(dir: &Path) -> Result<(u64, (PathBuf, u64))> {
    let mut total = 0;
    let mut largest = (PathBuf::new(), 0);
    for path in walk(dir)? {
        let len = std::fs::metadata(&path)?.len();
        total += len;
        if len > largest.1 {
            largest = (path, len);
        }
    }
    Ok((total, largest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_give_their_origin_or_a_reason() {
        assert_eq!(
            origin_of("https://huggingface.co/u/m/resolve/0123abc/").unwrap(),
            "https://huggingface.co"
        );
        assert_eq!(
            origin_of("http://127.0.0.1:9000/m/").unwrap(),
            "http://127.0.0.1:9000"
        );
        for bad in [
            "ftp://x/",
            "https://x/m",
            "//x/",
            "https:///",
            "https://a b/",
            "https://x;y/",
        ] {
            assert!(origin_of(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_policy_names_the_model_origin_and_nothing_else() {
        assert!(csp(None).contains("connect-src 'self';"));
        assert!(csp(Some("https://huggingface.co"))
            .contains("connect-src 'self' https://huggingface.co;"));
        assert!(!csp(None).contains("frame-ancestors"));
        assert!(headers(&csp(None)).contains("frame-ancestors 'none'"));
    }
}
