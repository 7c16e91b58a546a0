//! `sr-bench serve`: the demo's static files over HTTP on 127.0.0.1.
//!
//! Sends correct MIME types (`application/wasm` for streaming compilation), the site's
//! Content-Security-Policy, and COOP/COEP so the page is cross-origin isolated.
//!
//! One request per connection (`Connection: close`), one thread per connection, on std's
//! `TcpListener`. Why not tiny_http (used before): with Chromium's keep-alive connections it
//! left about one page load in 10–25 with a request unread on its socket (seen with `ss`:
//! Recv-Q 575 on an established connection), hanging the page; a server that keeps no
//! connection state has nothing to get wrong there, and static GETs need nothing more.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

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

/// Longest request head we read (request line + headers); browsers send ~1 KB.
const MAX_HEAD_BYTES: u64 = 16 * 1024;
/// A client that stops sending mid-request does not hold its thread forever.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads one request's head and answers it; the connection then closes.
fn handle(root: &Path, stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?.take(MAX_HEAD_BYTES));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Skip the headers: nothing in them changes a static response.
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut out = std::io::BufWriter::new(stream);
    if method != "GET" && method != "HEAD" {
        return write_plain(&mut out, "405 Method Not Allowed", "only GET and HEAD");
    }
    let Some(path) = resolve(root, target) else {
        return write_plain(&mut out, "404 Not Found", "not found");
    };
    let mut file = std::fs::File::open(&path)?;
    let length = file.metadata()?.len();
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {length}\r\n\
         Content-Security-Policy: {CONTENT_SECURITY_POLICY}\r\n\
         Cross-Origin-Opener-Policy: same-origin\r\nCross-Origin-Embedder-Policy: require-corp\r\n\
         X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        mime_type(&path)
    )?;
    if method == "GET" {
        std::io::copy(&mut file, &mut out)?;
    }
    out.flush()
}

fn write_plain(out: &mut impl Write, status: &str, body: &str) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

/// Answers connections on `listener` until it fails; each on its own thread, so a large model
/// download never holds up the page's other requests.
pub fn serve_on(listener: TcpListener, root: PathBuf) -> Result<()> {
    let root = Arc::new(root);
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let root = root.clone();
        std::thread::spawn(move || {
            if let Err(e) = handle(&root, stream) {
                // A browser that drops a connection it no longer needs is not an error.
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
                ) {
                    eprintln!("request failed: {e}");
                }
            }
        });
    }
    Ok(())
}

pub fn serve(dir: &Path, port: u16) -> Result<()> {
    let root = dir
        .canonicalize()
        .with_context(|| format!("cannot serve {}: no such folder", dir.display()))?;
    let listener = TcpListener::bind(("127.0.0.1", port))
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    println!("serving {} on http://127.0.0.1:{port}/", root.display());
    serve_on(listener, root)
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

    /// A raw HTTP/1.1 exchange: the response's status line and headers, and its body.
    fn get(port: u16, target: &str) -> (String, Vec<u8>) {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET {target} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n"
        )
        .unwrap();
        let mut response = Vec::new();
        stream
            .read_to_end(&mut response)
            .expect("the server closes after answering");
        let split = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8(response[..split].to_vec()).unwrap();
        (head, response[split + 4..].to_vec())
    }

    #[test]
    fn many_concurrent_requests_are_all_answered_and_closed() {
        let root = std::env::temp_dir().join(format!("sr-bench-serve-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("index.html"), "<p>hello</p>").unwrap();
        std::fs::write(root.join("m.wasm"), vec![7u8; 300_000]).unwrap();
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = root.clone();
        std::thread::spawn(move || serve_on(listener, served));

        let clients: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(move || {
                    for _ in 0..25 {
                        let (head, body) = get(port, "/m.wasm");
                        assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
                        assert!(head.contains("Content-Type: application/wasm"));
                        assert!(head.contains("Cross-Origin-Embedder-Policy: require-corp"));
                        assert_eq!(body.len(), 300_000);
                        let (head, body) = get(port, "/?x=1");
                        assert!(head.contains("text/html"), "{head}");
                        assert_eq!(body, b"<p>hello</p>");
                    }
                })
            })
            .collect();
        for client in clients {
            client.join().expect("every request answered");
        }
        assert!(get(port, "/missing.js").0.starts_with("HTTP/1.1 404"));
        assert!(get(port, "/../etc/passwd").0.starts_with("HTTP/1.1 404"));
        std::fs::remove_dir_all(&root).unwrap();
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
