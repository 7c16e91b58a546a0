//! `sr-bench serve` as a separate process, as the e2e suite and `./build.sh` run it: the
//! per-request deadline, the connection bound (503 beyond it, memory and threads bounded), the
//! symlink rule, and the security headers on every response.

mod cli_common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `sr-bench serve`; killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dir: &Path, workers: usize, deadline_s: f64) -> Server {
        let mut child = Command::new(cli_common::binary())
            .args(["serve", "--port", "0", "--dir"])
            .arg(dir)
            .args(["--workers", &workers.to_string()])
            .args(["--deadline", &deadline_s.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("sr-bench serve starts");
        // "serving DIR on http://127.0.0.1:PORT/ (…)": printed once it listens.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Server { child, port }
    }

    /// `Threads` and `VmRSS` (KB) of the server process, from /proc.
    #[cfg(target_os = "linux")]
    fn threads_and_rss_kb(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| -> u64 {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap();
            line.split_whitespace().nth(1).unwrap().parse().unwrap()
        };
        (field("Threads:"), field("VmRSS:"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh folder with an index.html, and the folder itself.
fn site(name: &str) -> PathBuf {
    let root = cli_common::temp_dir("serve", name);
    std::fs::write(root.join("index.html"), "<p>hello</p>").unwrap();
    root
}

/// Everything the server sent until it closed. A reset after the response (the server closed
/// with our late bytes unread) still leaves what it sent first.
fn read_all(stream: &mut TcpStream) -> Vec<u8> {
    let mut response = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return response,
            Ok(n) => response.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                panic!("no answer within the client's timeout (hanging)")
            }
            Err(_) => return response,
        }
    }
}

/// One request; the response's head (status line and headers) and body.
fn request(port: u16, request_line: &str) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // A refused connection may be closed before the request is written: its answer is
    // already here, so a failed write is not the test's concern.
    let _ = stream.write_all(format!("{request_line}\r\nHost: x\r\n\r\n").as_bytes());
    split_response(&read_all(&mut stream))
}

fn split_response(response: &[u8]) -> (String, Vec<u8>) {
    let Some(split) = response.windows(4).position(|w| w == b"\r\n\r\n") else {
        panic!(
            "not an HTTP response: {:?}",
            String::from_utf8_lossy(response)
        );
    };
    let head = String::from_utf8(response[..split].to_vec()).unwrap();
    (head, response[split + 4..].to_vec())
}

fn assert_security_headers(head: &str) {
    for header in [
        "Content-Security-Policy: default-src 'self'",
        "X-Content-Type-Options: nosniff",
        "Cross-Origin-Opener-Policy: same-origin",
        "Cross-Origin-Embedder-Policy: require-corp",
    ] {
        assert!(head.contains(header), "{header} missing from:\n{head}");
    }
}

#[test]
fn a_client_trickling_its_request_is_cut_off_at_the_deadline() {
    let root = site("slow");
    let server = Server::start(&root, 2, 1.0);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let start = Instant::now();
    // A byte every 50 ms, for up to 5 s: a per-read timeout would never fire.
    let mut writer = stream.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for byte in b"GET /index.html HTTP/1.1\r\n"
            .iter()
            .chain(b"X: y\r\n".repeat(40).iter())
        {
            if writer.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let response = read_all(&mut stream);
    let cut_after = start.elapsed();
    let (head, _) = split_response(&response);
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
    assert_security_headers(&head);
    assert!(
        cut_after >= Duration::from_millis(900) && cut_after < Duration::from_millis(2500),
        "cut off after {cut_after:?}, deadline 1 s"
    );
    println!("trickling client cut off after {cut_after:.2?} (deadline 1 s)");
    // Closed: the trickling thread's next write fails and it ends.
    let _ = stream.shutdown(std::net::Shutdown::Both);
    trickle.join().unwrap();
    // The worker is free again.
    assert!(request(server.port, "GET / HTTP/1.1")
        .0
        .starts_with("HTTP/1.1 200"));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_client_that_stops_reading_is_cut_off_at_the_deadline() {
    let root = site("stalled");
    let size = 64 << 20; // well past the loopback socket buffers
    std::fs::write(root.join("big.bin"), vec![1u8; size]).unwrap();
    let server = Server::start(&root, 2, 1.0);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(stream, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let (head, body) = split_response(&read_all(&mut stream));
    assert!(head.contains(&format!("Content-Length: {size}")), "{head}");
    assert!(
        body.len() < size,
        "the server gave up at its deadline: {} of {size} bytes sent",
        body.len()
    );
    assert!(request(server.port, "GET / HTTP/1.1")
        .0
        .starts_with("HTTP/1.1 200"));
    std::fs::remove_dir_all(&root).unwrap();
}

/// Raises this process's soft open-file limit to `want` (within the hard limit): the soft
/// limit is 1,024 on many systems, and the burst test holds 1,000 client sockets at once.
#[cfg(target_os = "linux")]
fn raise_open_file_limit(want: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for the calls to read and write.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < want {
            limit.rlim_cur = want.min(limit.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
    assert!(
        limit.rlim_cur >= want,
        "the test needs {want} open files; the hard limit is {}",
        limit.rlim_max
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_thousand_concurrent_connections_are_answered_or_refused_with_bounded_threads_and_memory() {
    use std::sync::{Arc, Barrier};
    const CLIENTS: usize = 1000;
    const WORKERS: usize = 8;
    raise_open_file_limit(CLIENTS as u64 + 100);
    let root = site("burst");
    std::fs::write(root.join("data.bin"), vec![3u8; 100_000]).unwrap();
    let server = Server::start(&root, WORKERS, 10.0);
    // Once a request is answered, the workers are all started.
    assert!(request(server.port, "GET / HTTP/1.1")
        .0
        .starts_with("HTTP/1.1 200"));
    let (threads_before, rss_before) = server.threads_and_rss_kb();
    // Every client connects, waits for all the others, then sends its request: the workers
    // and the queue fill up while the rest are refused.
    let connected = Arc::new(Barrier::new(CLIENTS + 1));
    let send = Arc::new(Barrier::new(CLIENTS + 1));
    let port = server.port;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (connected, send) = (connected.clone(), send.clone());
            std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || {
                    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
                    stream
                        .set_read_timeout(Some(Duration::from_secs(20)))
                        .unwrap();
                    connected.wait();
                    send.wait();
                    // Writing to a refused connection may fail: its answer is already here.
                    let _ = write!(stream, "GET /data.bin HTTP/1.1\r\nHost: x\r\n\r\n");
                    split_response(&read_all(&mut stream))
                })
                .unwrap()
        })
        .collect();
    let start = Instant::now();
    connected.wait();
    std::thread::sleep(Duration::from_millis(300)); // the server takes in the last ones
    let (threads_during, rss_during) = server.threads_and_rss_kb();
    send.wait();
    let (mut ok, mut busy) = (0, 0);
    for client in clients {
        let (head, body) = client.join().expect("every client got an answer");
        assert_security_headers(&head);
        if head.starts_with("HTTP/1.1 200") {
            assert_eq!(body.len(), 100_000);
            ok += 1;
        } else if head.starts_with("HTTP/1.1 503") {
            assert!(head.contains("Retry-After: 1"), "{head}");
            busy += 1;
        } else {
            panic!("neither served nor refused: {head}");
        }
    }
    let elapsed = start.elapsed();
    let (threads_after, rss_after) = server.threads_and_rss_kb();
    println!(
        "{CLIENTS} connections in {elapsed:.2?}: {ok} served (200), {busy} refused (503); \
         server threads {threads_before} → {threads_during} → {threads_after}, \
         RSS {rss_before} → {rss_during} → {rss_after} KB"
    );
    assert_eq!(ok + busy, CLIENTS);
    assert!(ok >= WORKERS, "the workers and the queue are served: {ok}");
    assert!(busy > 0, "beyond the queue, 503");
    // A fixed pool: the main (accepting) thread plus the workers, whatever the load.
    assert_eq!(
        [threads_before, threads_during, threads_after],
        [WORKERS as u64 + 1; 3]
    );
    assert!(
        rss_during.max(rss_after) < rss_before + 16 * 1024,
        "RSS grew by more than 16 MB: {rss_before} → {rss_during} → {rss_after} KB"
    );
    assert!(
        elapsed < Duration::from_secs(15),
        "none hanging: {elapsed:?}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}

#[cfg(unix)]
#[test]
fn a_symlink_pointing_outside_the_root_is_refused() {
    let root = site("links");
    let outside = site("outside");
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::fs::write(root.join("inside.txt"), "inside").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("escape.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(root.join("inside.txt"), root.join("alias.txt")).unwrap();
    let server = Server::start(&root, 2, 5.0);
    for target in ["/escape.txt", "/elsewhere/secret.txt", "/elsewhere/"] {
        let (head, body) = request(server.port, &format!("GET {target} HTTP/1.1"));
        assert!(head.starts_with("HTTP/1.1 404"), "{target}: {head}");
        assert_eq!(body, b"not found");
    }
    let (head, body) = request(server.port, "GET /alias.txt HTTP/1.1");
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "a link within the root: {head}"
    );
    assert_eq!(body, b"inside");
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn security_headers_are_on_every_response_including_errors() {
    let root = site("headers");
    let server = Server::start(&root, 1, 5.0);
    let (head, _) = request(server.port, "GET / HTTP/1.1");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_security_headers(&head);
    let (head, _) = request(server.port, "GET /missing.js HTTP/1.1");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    assert_security_headers(&head);
    let (head, _) = request(server.port, "POST / HTTP/1.1");
    assert!(head.starts_with("HTTP/1.1 405"), "{head}");
    assert!(head.contains("Allow: GET, HEAD"), "{head}");
    assert_security_headers(&head);
    // One worker and a queue of one, both held by silent connections: the next gets 503.
    // (Paced, so that the worker is back waiting for work when each arrives.)
    let held: Vec<_> = (0..2)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(200));
            TcpStream::connect(("127.0.0.1", server.port)).unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let (head, _) = request(server.port, "GET / HTTP/1.1");
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert_security_headers(&head);
    drop(held);
    std::fs::remove_dir_all(&root).unwrap();
}
