//! One request: its head read by the header deadline, its target resolved inside the served
//! folder, and the file (or one byte range of it) sent with the site's security headers.

use std::io::{BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom, Write};
use std::net::TcpStream;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use super::class::{ClassServer, MAX_BODY_BYTES};
use super::connection::{cap_send_buffer, Deadlined};
use super::Limits;

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
pub(super) fn plain_response(status: &str, body: &str, extra: &str) -> String {
    response_head(
        status,
        "text/plain; charset=utf-8",
        body.len() as u64,
        extra,
    ) + body
}

/// Reads one request's head (and an API request's body) and answers it; the connection then
/// closes. `class`: the class API of `serve --class`, answered under `/api/`.
pub(super) fn handle(
    root: &Path,
    class: Option<&ClassServer>,
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
    let mut reader = BufReader::new((&conn).take(MAX_HEAD_BYTES));
    let head = read_head(&mut reader);
    // What the head's reader took past the head is the start of a body.
    let early = reader.buffer().to_vec();
    drop(reader);
    let head = match head {
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
    if head.line.is_empty() {
        return Ok(()); // connected and closed without a request (a browser's preconnect)
    }
    // The head is in: from now on only the idle timeout (and the total cap) apply.
    conn.deadline = total;
    conn.window.set((Instant::now(), 0));
    let mut parts = head.line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if let (Some(class), true) = (class, target.starts_with("/api/")) {
        return answer_api(class, &conn, &early, &head, method, target);
    }
    let range = head.range;
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

/// What a request's head says that the server uses; the other headers are read and skipped.
#[derive(Default)]
struct Head {
    /// The request line.
    line: String,
    /// `Range` (static files).
    range: Option<String>,
    /// `Content-Length` (API requests); `Err` when it is not a number.
    content_length: Option<Result<u64, String>>,
    /// `Authorization` (the class API's teacher token).
    authorization: Option<String>,
}

fn read_head(reader: &mut impl BufRead) -> std::io::Result<Head> {
    let mut head = Head::default();
    reader.read_line(&mut head.line)?;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            return Ok(head);
        }
        if let Some((name, value)) = line.split_once(':') {
            let (name, value) = (name.trim(), value.trim().to_string());
            if name.eq_ignore_ascii_case("range") {
                head.range = Some(value);
            } else if name.eq_ignore_ascii_case("content-length") {
                head.content_length = Some(value.parse().map_err(|_| value));
            } else if name.eq_ignore_ascii_case("authorization") {
                head.authorization = Some(value);
            }
        }
    }
}

/// Answers a class API request: its body (`early`: what came with the head; at most
/// MAX_BODY_BYTES, else 413 without reading it whole) handed to the class server, its reply
/// sent with the site's headers.
fn answer_api(
    class: &ClassServer,
    conn: &Deadlined,
    early: &[u8],
    head: &Head,
    method: &str,
    target: &str,
) -> std::io::Result<()> {
    let peer = conn.stream.peer_addr()?.ip();
    let reply = match &head.content_length {
        Some(Err(value)) => Err((
            "400 Bad Request",
            format!("Content-Length: {value} is not a number"),
        )),
        Some(Ok(n)) if *n > MAX_BODY_BYTES => Err((
            "413 Content Too Large",
            format!("a request body may be {MAX_BODY_BYTES} bytes at most, not {n}"),
        )),
        length => {
            let n = match length {
                Some(Ok(n)) => *n,
                _ => 0,
            };
            let mut body = early[..early.len().min(n as usize)].to_vec();
            Read::take(conn, n - body.len() as u64).read_to_end(&mut body)?;
            if (body.len() as u64) < n {
                return Ok(()); // the client went away mid-body
            }
            Ok(class.answer(method, target, head.authorization.as_deref(), &body, peer))
        }
    };
    let (status, content_type, body) = match reply {
        Ok(r) => (r.status, r.content_type, r.body),
        Err((status, message)) => (
            status,
            "application/json",
            serde_json::json!({ "error": message })
                .to_string()
                .into_bytes(),
        ),
    };
    let mut out = std::io::BufWriter::new(conn);
    out.write_all(response_head(status, content_type, body.len() as u64, "").as_bytes())?;
    out.write_all(&body)?;
    out.flush()?;
    if status.starts_with("413") {
        // Read (and drop) what the client is still sending, so it gets the answer rather than
        // a reset; bounded by the idle timeout and 2 MB.
        let _ = conn.stream.shutdown(std::net::Shutdown::Write);
        let _ = std::io::copy(&mut Read::take(conn, 2 << 20), &mut std::io::sink());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn resolve_refuses_paths_outside_the_root() {
        let root = std::env::temp_dir().canonicalize().unwrap();
        assert_eq!(resolve(&root, "/../etc/passwd"), None);
        assert_eq!(resolve(&root, "/a/../../etc/passwd"), None);
    }
}
