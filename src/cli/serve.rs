//! `sr-bench serve`: the demo's static files over HTTP on 127.0.0.1.
//!
//! Sends correct MIME types (`application/wasm` for streaming compilation), and on every
//! response (errors included) the site's Content-Security-Policy, `nosniff`, and COOP/COEP so
//! the page is cross-origin isolated.
//!
//! One request per connection (`Connection: close`) on std's `TcpListener`. Why not tiny_http
//! (used before): with Chromium's keep-alive connections it left about one page load in 10–25
//! with a request unread on its socket (seen with `ss`: Recv-Q 575 on an established
//! connection), hanging the page; a server that keeps no connection state has nothing to get
//! wrong there, and static GETs need nothing more.
//!
//! Bounded like a real server ([`Limits`]): a fixed pool of worker threads with a queue as long
//! as the pool; a connection arriving when both are full is answered 503 at once by the
//! accepting thread (never a thread of its own). Every request has one deadline from accept
//! to the last byte sent, so a client trickling its request (or reading the response a byte at
//! a time) is cut off when it passes. Files are resolved after following symlinks and must lie
//! inside the served folder.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{self, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// How much one server holds at once and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Requests served at once, one worker thread each; as many more connections may wait in
    /// the queue, so at most `2 × workers` are open and any beyond get 503.
    pub workers: usize,
    /// The whole request, from accept to the last byte of the response, must fit in this.
    pub deadline: Duration,
}

impl Default for Limits {
    /// 32 workers (a page load opens ~6 connections per tab); 120 s, enough for the largest
    /// model file (436 MB) over loopback many times over.
    fn default() -> Self {
        Limits {
            workers: 32,
            deadline: Duration::from_secs(120),
        }
    }
}

/// Maps a URL path to a file under `root` (canonical), refusing anything that escapes it:
/// `..` in the URL, or a symlink whose target lies outside `root`.
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
    let real = out.canonicalize().ok()?;
    (real.starts_with(root) && real.is_file()).then_some(real)
}

/// Longest request head we read (request line + headers); browsers send ~1 KB.
const MAX_HEAD_BYTES: u64 = 16 * 1024;

/// A connection whose every read and write must finish before `deadline`: each call's timeout
/// is the time left, so a client that keeps sending (or reading) a byte at a time cannot
/// stretch the request past it, as a per-call timeout alone would allow.
struct Deadlined {
    stream: TcpStream,
    deadline: Instant,
}

impl Deadlined {
    fn time_left(&self) -> std::io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

/// A timed-out socket call reports `WouldBlock` on Unix; one kind for both.
fn timed_out(e: std::io::Error) -> std::io::Error {
    match e.kind() {
        ErrorKind::WouldBlock => ErrorKind::TimedOut.into(),
        _ => e,
    }
}

impl Read for &Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stream.set_read_timeout(Some(self.time_left()?))?;
        (&self.stream).read(buf).map_err(timed_out)
    }
}

impl Write for &Deadlined {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.set_write_timeout(Some(self.time_left()?))?;
        (&self.stream).write(buf).map_err(timed_out)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A response's status line and headers: the security headers go on every response.
fn response_head(status: &str, content_type: &str, length: u64, extra: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n\
         Content-Security-Policy: {CONTENT_SECURITY_POLICY}\r\n\
         Cross-Origin-Opener-Policy: same-origin\r\nCross-Origin-Embedder-Policy: require-corp\r\n\
         X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n{extra}Connection: close\r\n\r\n"
    )
}

/// A short plain-text response (an error), head and body in one write.
fn plain_response(status: &str, body: &str, extra: &str) -> String {
    response_head(
        status,
        "text/plain; charset=utf-8",
        body.len() as u64,
        extra,
    ) + body
}

/// Reads one request's head and answers it; the connection then closes.
fn handle(root: &Path, stream: TcpStream, deadline: Instant) -> std::io::Result<()> {
    let conn = Deadlined { stream, deadline };
    let mut reader = BufReader::new((&conn).take(MAX_HEAD_BYTES));
    let request_line = match read_head(&mut reader) {
        Ok(line) => line,
        Err(e) if e.kind() == ErrorKind::TimedOut => {
            // Past the deadline: the short answer goes into an empty send buffer, so a
            // one-second write timeout is only a guard.
            conn.stream
                .set_write_timeout(Some(Duration::from_secs(1)))?;
            let timeout = plain_response("408 Request Timeout", "request took too long", "");
            return (&conn.stream).write_all(timeout.as_bytes());
        }
        Err(e) => return Err(e),
    };
    if request_line.is_empty() {
        return Ok(()); // connected and closed without a request (a browser's preconnect)
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    // 64 KB writes: each one also sets the socket's timeout to the time left.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, &conn);
    if method != "GET" && method != "HEAD" {
        let refusal = plain_response(
            "405 Method Not Allowed",
            "only GET and HEAD",
            "Allow: GET, HEAD\r\n",
        );
        out.write_all(refusal.as_bytes())?;
        return out.flush();
    }
    let Some(path) = resolve(root, target) else {
        out.write_all(plain_response("404 Not Found", "not found", "").as_bytes())?;
        return out.flush();
    };
    let mut file = std::fs::File::open(&path)?;
    let length = file.metadata()?.len();
    out.write_all(response_head("200 OK", mime_type(&path), length, "").as_bytes())?;
    if method == "GET" {
        std::io::copy(&mut file, &mut out)?;
    }
    out.flush()
}

/// The request line; the headers are read and skipped (nothing in them changes a static
/// response).
fn read_head(reader: &mut impl BufRead) -> std::io::Result<String> {
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            return Ok(request_line);
        }
    }
}

/// Answers 503 on the accepting thread without ever blocking it: what the client has sent
/// so far is read (so closing does not reset the connection under the answer), the answer
/// fits an empty send buffer, and the socket closes.
fn refuse(stream: TcpStream) {
    let busy = plain_response(
        "503 Service Unavailable",
        "busy: too many connections",
        "Retry-After: 1\r\n",
    );
    // At most 64 KB: a client sending without pause cannot keep the accepting thread here.
    let drain = |mut s: &TcpStream| {
        let mut sink = [0u8; 4096];
        for _ in 0..16 {
            if !matches!(s.read(&mut sink), Ok(n) if n > 0) {
                break;
            }
        }
    };
    if stream.set_nonblocking(true).is_ok() {
        drain(&stream);
        let _ = (&stream).write_all(busy.as_bytes());
        let _ = stream.shutdown(Shutdown::Write);
        drain(&stream);
    }
}

/// One worker: serves queued connections until the queue closes.
fn work(root: &Path, queue: &Mutex<mpsc::Receiver<(TcpStream, Instant)>>) {
    loop {
        let next = queue.lock().map(|q| q.recv());
        let Ok(Ok((stream, deadline))) = next else {
            return;
        };
        match handle(root, stream, deadline) {
            // A browser that drops a connection it no longer needs is not an error.
            Err(e) if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) => {}
            Err(e) if e.kind() == ErrorKind::TimedOut => {
                eprintln!("request cut off at its deadline")
            }
            Err(e) => eprintln!("request failed: {e}"),
            Ok(()) => {}
        }
    }
}

/// Answers connections on `listener` until it fails, with `limits.workers` threads (a large
/// model download never holds up the page's other requests) and 503 beyond the queue.
pub fn serve_on(listener: TcpListener, root: &Path, limits: Limits) -> Result<()> {
    anyhow::ensure!(limits.workers > 0, "the server needs at least one worker");
    let root = Arc::new(
        root.canonicalize()
            .with_context(|| format!("cannot serve {}: no such folder", root.display()))?,
    );
    let (to_workers, queue) = mpsc::sync_channel(limits.workers);
    let queue = Arc::new(Mutex::new(queue));
    for _ in 0..limits.workers {
        let (root, queue) = (root.clone(), queue.clone());
        std::thread::spawn(move || work(&root, &queue));
    }
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let deadline = Instant::now() + limits.deadline;
        if let Err(TrySendError::Full((stream, _))) = to_workers.try_send((stream, deadline)) {
            refuse(stream);
        }
    }
    Ok(())
}

/// Serves `dir` on 127.0.0.1:`port` (0: any free port; the line printed says which).
pub fn serve(dir: &Path, port: u16, limits: Limits) -> Result<()> {
    let root = dir
        .canonicalize()
        .with_context(|| format!("cannot serve {}: no such folder", dir.display()))?;
    let listener = TcpListener::bind(("127.0.0.1", port))
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    let port = listener.local_addr()?.port();
    println!(
        "serving {} on http://127.0.0.1:{port}/ ({} workers, {:.1} s per request)",
        root.display(),
        limits.workers,
        limits.deadline.as_secs_f64()
    );
    serve_on(listener, &root, limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_refuses_paths_outside_the_root() {
        let root = std::env::temp_dir().canonicalize().unwrap();
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
        std::thread::spawn(move || serve_on(listener, &served, Limits::default()));

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
