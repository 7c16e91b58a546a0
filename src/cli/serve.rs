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

mod class;
mod connection;
mod request;

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::mpsc::{self, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use class::ClassServer;
use request::{handle, plain_response};

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
fn work(
    root: &Path,
    class: Option<&ClassServer>,
    queue: &Mutex<mpsc::Receiver<(TcpStream, Instant)>>,
    limits: Limits,
) {
    loop {
        let next = queue.lock().map(|q| q.recv());
        let Ok(Ok((stream, accepted))) = next else {
            return;
        };
        match handle(root, class, stream, accepted, limits) {
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
/// model download never holds up the page's other requests) and 503 beyond the queue; with
/// `class`, also the class API under `/api/`.
pub fn serve_on(
    listener: TcpListener,
    root: &Path,
    limits: Limits,
    class: Option<Arc<ClassServer>>,
) -> Result<()> {
    anyhow::ensure!(limits.workers > 0, "the server needs at least one worker");
    let root = Arc::new(
        root.canonicalize()
            .with_context(|| format!("cannot serve {}: no such folder", root.display()))?,
    );
    let (to_workers, queue) = mpsc::sync_channel(limits.workers);
    let queue = Arc::new(Mutex::new(queue));
    for _ in 0..limits.workers {
        let (root, queue, class) = (root.clone(), queue.clone(), class.clone());
        std::thread::spawn(move || work(&root, class.as_deref(), &queue, limits));
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
/// address other than loopback it also prints the URL to give others on the network. With
/// `class_db`, also the class API, its answers kept in that SQLite file.
pub fn serve(
    dir: &Path,
    host: IpAddr,
    port: u16,
    limits: Limits,
    class_db: Option<&Path>,
) -> Result<()> {
    let root = dir
        .canonicalize()
        .with_context(|| format!("cannot serve {}: no such folder", dir.display()))?;
    let class = class_db
        .map(|db| ClassServer::open(db, &root).map(Arc::new))
        .transpose()?;
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
    if let Some(db) = class_db {
        // Not println!: a server whose stdout was closed (a pipe read for the port alone)
        // must keep serving.
        let _ = writeln!(
            std::io::stdout(),
            "class answers are kept in {}",
            db.display()
        );
    }
    serve_on(listener, &root, limits, class)
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
        std::thread::spawn(move || serve_on(listener, &served, Limits::default(), None));

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
}
