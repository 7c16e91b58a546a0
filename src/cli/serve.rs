//! `sr-bench serve`: the demo's static files over HTTP, on 127.0.0.1 or (`--host`) the LAN.
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
//! accepting thread (never a thread of its own). A request's head must arrive within the
//! header deadline of accept (a client trickling it is cut off then); a body is sent for as
//! long as the client keeps reading: it is cut off only when one write makes no progress for
//! the idle timeout, so a slow classroom Wi-Fi download of a 118 MB model completes while a
//! stalled client frees its worker. An optional total deadline caps both. Single byte ranges
//! (`Range: bytes=…`) are answered 206, so a dropped download resumes. Files are resolved after
//! following symlinks and must lie inside the served folder.

use std::io::{BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
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
    /// From accept to the end of the request's head.
    pub header_deadline: Duration,
    /// Longest a read or write may wait without moving a byte.
    pub idle: Duration,
    /// The whole request, from accept to the last byte of the response (`None`: no cap).
    pub deadline: Option<Duration>,
}

impl Default for Limits {
    /// 32 workers (a page load opens ~6 connections per tab; a class of 30 downloading at
    /// once fits, the rest wait in the queue); 10 s for a head (browsers send theirs at once);
    /// 30 s without progress; no total cap, so any download that keeps moving completes.
    fn default() -> Self {
        Limits {
            workers: 32,
            header_deadline: Duration::from_secs(10),
            idle: Duration::from_secs(30),
            deadline: None,
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

/// A connection whose reads and writes each wait at most `idle` for progress and all end by
/// `deadline`: while the head is read that is the header deadline (a client sending a byte at
/// a time cannot stretch it, as a per-call timeout alone would allow), then the total cap, if
/// any.
struct Deadlined {
    stream: TcpStream,
    deadline: Option<Instant>,
    idle: Duration,
    /// Since when, and how many bytes were written in the current idle window.
    window: std::cell::Cell<(Instant, u64)>,
}

/// Bytes a body must move per idle window. A reader that has stopped still lets the kernel
/// take a few bytes now and then (its buffers compact), which a per-call timeout alone counts
/// as progress; 16 KiB per 30 s (the default) is far below any real download's pace.
const MIN_PROGRESS_BYTES: u64 = 16 * 1024;

impl Deadlined {
    fn time_left(&self) -> std::io::Result<Duration> {
        let Some(deadline) = self.deadline else {
            return Ok(self.idle);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        Ok(left.min(self.idle))
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
    /// Waits at most until the current idle window ends; there, a window that moved too
    /// little ends the response, one that moved enough starts the next. A client that stops
    /// reading is cut within two idle periods once the kernel's buffers are full (loopback
    /// keeps taking a few hundred KB a second for about two seconds after a reader stops).
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        loop {
            let (since, moved) = self.window.get();
            let left = self.idle.saturating_sub(since.elapsed());
            if left.is_zero() {
                if moved < MIN_PROGRESS_BYTES {
                    return Err(ErrorKind::TimedOut.into());
                }
                self.window.set((Instant::now(), 0));
                continue;
            }
            let wait = left.min(self.time_left()?).max(Duration::from_millis(1));
            self.stream.set_write_timeout(Some(wait))?;
            match (&self.stream).write(buf) {
                Ok(n) => {
                    self.window.set((since, moved + n as u64));
                    return Ok(n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {}
                Err(e) => return Err(e),
            }
        }
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

/// Per-connection send buffer. Linux wakes a blocked writer when a third of it is free: with
/// its default of up to 4 MB, a client reading 500 KB/s shows no progress for ~3 s at a time;
/// with 256 KiB it does every ~85 KB, and 30 slow downloads hold 8 MB of kernel memory, not 120.
const SEND_BUFFER_BYTES: i32 = 256 << 10;

#[cfg(unix)]
fn cap_send_buffer(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket, and an int option value of the size passed.
    let _ = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&SEND_BUFFER_BYTES as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
}

#[cfg(not(unix))]
fn cap_send_buffer(_stream: &TcpStream) {}

/// Reads one request's head and answers it; the connection then closes.
fn handle(
    root: &Path,
    stream: TcpStream,
    accepted: Instant,
    limits: Limits,
) -> std::io::Result<()> {
    cap_send_buffer(&stream);
    let total = limits.deadline.map(|d| accepted + d);
    let head_by = accepted + limits.header_deadline;
    let mut conn = Deadlined {
        stream,
        deadline: Some(total.map_or(head_by, |t| t.min(head_by))),
        idle: limits.idle,
        window: std::cell::Cell::new((accepted, 0)),
    };
    let head = {
        let mut reader = BufReader::new((&conn).take(MAX_HEAD_BYTES));
        read_head(&mut reader)
    };
    let (request_line, range) = match head {
        Ok(head) => head,
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
    // The head is in: from now on only the idle timeout (and the total cap) apply.
    conn.deadline = total;
    conn.window.set((Instant::now(), 0));
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
    let (status, start, count, extra) = match range.as_deref().map(|r| byte_range(r, length)) {
        None => ("200 OK", 0, length, String::new()),
        Some(Some((start, end))) => (
            "206 Partial Content",
            start,
            end + 1 - start,
            format!("Content-Range: bytes {start}-{end}/{length}\r\n"),
        ),
        Some(None) => {
            let refusal = plain_response(
                "416 Range Not Satisfiable",
                "range not satisfiable",
                &format!("Content-Range: bytes */{length}\r\nAccept-Ranges: bytes\r\n"),
            );
            out.write_all(refusal.as_bytes())?;
            return out.flush();
        }
    };
    let extra = extra + "Accept-Ranges: bytes\r\n";
    out.write_all(response_head(status, mime_type(&path), count, &extra).as_bytes())?;
    if method == "GET" {
        file.seek(SeekFrom::Start(start))?;
        std::io::copy(&mut (&mut file).take(count), &mut out)?;
    }
    out.flush()
}

/// A `Range` header's one byte range within a file of `length` bytes, as inclusive offsets:
/// `bytes=a-b`, `bytes=a-` or `bytes=-n` (the last n). `None` for anything else (several
/// ranges, other units, a range past the end): answered 416.
fn byte_range(header: &str, length: u64) -> Option<(u64, u64)> {
    let spec = header.trim().strip_prefix("bytes=")?;
    let (first, last) = spec.split_once('-')?;
    let number = |s: &str| s.trim().parse::<u64>().ok();
    let (start, end) = match (first.trim().is_empty(), last.trim().is_empty()) {
        (true, false) => {
            let n = number(last)?.min(length);
            (length.checked_sub(n)?, length.checked_sub(1)?)
        }
        (false, true) => (number(first)?, length.checked_sub(1)?),
        (false, false) => (number(first)?, number(last)?.min(length.checked_sub(1)?)),
        (true, true) => return None,
    };
    (start <= end && end < length).then_some((start, end))
}

/// The request line and the `Range` header, if any; the other headers are read and skipped
/// (nothing else in them changes a static response).
fn read_head(reader: &mut impl BufRead) -> std::io::Result<(String, Option<String>)> {
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut range = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            return Ok((request_line, range));
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("range") {
                range = Some(value.trim().to_string());
            }
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
fn work(root: &Path, queue: &Mutex<mpsc::Receiver<(TcpStream, Instant)>>, limits: Limits) {
    loop {
        let next = queue.lock().map(|q| q.recv());
        let Ok(Ok((stream, accepted))) = next else {
            return;
        };
        match handle(root, stream, accepted, limits) {
            // A browser that drops a connection it no longer needs is not an error.
            Err(e) if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) => {}
            Err(e) if e.kind() == ErrorKind::TimedOut => {
                eprintln!("request cut off: no progress for the idle time, or past a deadline")
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
        std::thread::spawn(move || work(&root, &queue, limits));
    }
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if let Err(TrySendError::Full((stream, _))) = to_workers.try_send((stream, Instant::now()))
        {
            refuse(stream);
        }
    }
    Ok(())
}

/// Serves `dir` on `host`:`port` (0: any free port; the line printed says which). On an
/// address other than loopback it also prints the URL to give others on the network.
pub fn serve(dir: &Path, host: IpAddr, port: u16, limits: Limits) -> Result<()> {
    let root = dir
        .canonicalize()
        .with_context(|| format!("cannot serve {}: no such folder", dir.display()))?;
    let listener = TcpListener::bind((host, port))
        .with_context(|| format!("cannot listen on {}", SocketAddr::new(host, port)))?;
    let port = listener.local_addr()?.port();
    let shown = if host.is_unspecified() || host.is_loopback() {
        IpAddr::from([127, 0, 0, 1])
    } else {
        host
    };
    let total = limits.deadline.map_or(String::new(), |d| {
        format!(", {:.1} s per request at most", d.as_secs_f64())
    });
    println!(
        "serving {} on http://{}/ ({} workers, {:.1} s for a request's head, {:.1} s idle{total})",
        root.display(),
        SocketAddr::new(shown, port),
        limits.workers,
        limits.header_deadline.as_secs_f64(),
        limits.idle.as_secs_f64(),
    );
    if !host.is_loopback() {
        match lan_address(host) {
            Some(lan) => println!(
                "students on this network open http://{}/",
                SocketAddr::new(lan, port)
            ),
            None => println!(
                "this computer has no network address on another interface: only it can \
                 open the page"
            ),
        }
    }
    serve_on(listener, &root, limits)
}

/// The address others on the network reach this computer at: `host` itself, or for 0.0.0.0
/// the address of the interface a packet to a private range would leave by (a UDP socket's
/// route lookup: nothing is sent).
fn lan_address(host: IpAddr) -> Option<IpAddr> {
    if !host.is_unspecified() {
        return Some(host);
    }
    let socket = std::net::UdpSocket::bind(("0.0.0.0", 0)).ok()?;
    socket.connect(("10.255.255.255", 9)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified() && !ip.is_loopback()).then_some(ip)
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
