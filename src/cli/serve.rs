//! `sr-bench serve`: the demo's static files over HTTP on 127.0.0.1.
//!
//! Sends correct MIME types (`application/wasm` for streaming compilation), the site's
//! Content-Security-Policy, and COOP/COEP so the page is cross-origin isolated.

use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use tiny_http::{Header, Request, Response, Server};

/// The policy the site is built to: no inline code, no other origin, wasm allowed.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
worker-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; \
object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn mime_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "wasm" => "application/wasm",
        "csv" => "text/csv; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Maps a URL path to a file under `root`, refusing anything that escapes it.
fn resolve(root: &Path, url: &str) -> Option<PathBuf> {
    let path = url.split(['?', '#']).next().unwrap_or("/");
    let mut out = root.to_path_buf();
    for component in Path::new(path.trim_start_matches('/')).components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    out.is_file().then_some(out)
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("static header is valid")
}

fn respond(root: &Path, request: Request) -> std::io::Result<()> {
    let found = (request.method() == &tiny_http::Method::Get
        || request.method() == &tiny_http::Method::Head)
        .then(|| resolve(root, request.url()))
        .flatten();
    let Some(path) = found else {
        return request.respond(Response::from_string("not found").with_status_code(404));
    };
    let file = std::fs::File::open(&path)?;
    let response = Response::from_file(file)
        .with_header(header("Content-Type", mime_type(&path)))
        .with_header(header("Content-Security-Policy", CONTENT_SECURITY_POLICY))
        .with_header(header("Cross-Origin-Opener-Policy", "same-origin"))
        .with_header(header("Cross-Origin-Embedder-Policy", "require-corp"))
        .with_header(header("X-Content-Type-Options", "nosniff"))
        .with_header(header("Cache-Control", "no-cache"));
    request.respond(response)
}

pub fn serve(dir: &Path, port: u16) -> Result<()> {
    let root = dir
        .canonicalize()
        .with_context(|| format!("cannot serve {}: no such folder", dir.display()))?;
    let server = Server::http(("127.0.0.1", port))
        .map_err(|e| anyhow!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    println!("serving {} on http://127.0.0.1:{port}/", root.display());
    // One thread per request: a large model download must not hold up the page's other requests.
    let root = std::sync::Arc::new(root);
    for request in server.incoming_requests() {
        let root = root.clone();
        std::thread::spawn(move || {
            if let Err(e) = respond(&root, request) {
                eprintln!("request failed: {e}");
            }
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_refuses_paths_outside_the_root() {
        let root = std::env::temp_dir();
        assert_eq!(resolve(&root, "/../etc/passwd"), None);
        assert_eq!(resolve(&root, "/a/../../etc/passwd"), None);
    }

    #[test]
    fn wasm_is_served_as_application_wasm() {
        assert_eq!(
            mime_type(Path::new("pkg/sr_bench_bg.wasm")),
            "application/wasm"
        );
        assert_eq!(
            mime_type(Path::new("index.html")),
            "text/html; charset=utf-8"
        );
    }
}
