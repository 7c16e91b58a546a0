//! `sr-bench serve` as a separate process, as the e2e suite and `./build.sh` run it: the
//! header deadline, the idle timeout (a slow but moving download completes, a stalled one is
//! cut), the optional total deadline, byte ranges, the LAN mode, the connection bound (503
//! beyond it, memory and threads bounded), the symlink rule, and the security headers on every
//! response.

mod cli_common;
mod common;

use cli_common::server::Server;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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

/// A trickled head is cut at the header deadline, with no total deadline set.
#[test]
fn a_client_trickling_its_head_is_cut_at_the_header_deadline() {
    let root = site("head");
    let (server, _) = Server::start_with(&root, &["--workers", "2", "--header-deadline", "1"]);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let start = Instant::now();
    let mut writer = stream.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for byte in b"GET / HTTP/1.1\r\n"
            .iter()
            .chain(b"X: y\r\n".repeat(40).iter())
        {
            if writer.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let (head, _) = split_response(&read_all(&mut stream));
    let cut_after = start.elapsed();
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
    assert!(
        cut_after >= Duration::from_millis(900) && cut_after < Duration::from_millis(2500),
        "cut off after {cut_after:?}, header deadline 1 s"
    );
    let _ = stream.shutdown(std::net::Shutdown::Both);
    trickle.join().unwrap();
    std::fs::remove_dir_all(&root).unwrap();
}

/// A response read at about `bytes_per_s`, as over a slow link: the socket's receive buffer is
/// held at 64 KB (loopback would otherwise buffer megabytes at once, and a paced reader then
/// pauses for seconds, which no link does) and 16 KB are read at a time.
#[cfg(target_os = "linux")]
fn throttled_get(port: u16, target: &str, bytes_per_s: f64) -> (String, Vec<u8>) {
    use std::os::fd::AsRawFd;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let size: libc::c_int = 64 << 10;
    // SAFETY: a valid socket and a c_int option value of the size passed.
    let set = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(set, 0, "SO_RCVBUF");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(stream, "GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let start = Instant::now();
    let mut response = Vec::new();
    let mut chunk = vec![0u8; 16 << 10];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&chunk[..n]),
        }
        // Ahead of the rate: wait until the bytes read so far are due.
        let due = Duration::from_secs_f64(response.len() as f64 / bytes_per_s);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    split_response(&response)
}

#[cfg(target_os = "linux")]
fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// `clients` at once read `file` (served with a 2 s idle timeout and no total deadline), each
/// throttled so that it takes `seconds`: all complete with the file's sha256, and the server's
/// threads and memory stay bounded.
#[cfg(target_os = "linux")]
fn a_class_downloads(root: &std::path::Path, file: &str, clients: usize, seconds: f64) {
    let bytes = std::fs::read(root.join(file)).unwrap();
    let want = sha256(&bytes);
    let (server, _) = Server::start_with(
        root,
        &["--workers", "32", "--idle", "2", "--header-deadline", "2"],
    );
    assert!(request(server.port, "GET / HTTP/1.1")
        .0
        .starts_with("HTTP/1.1 200"));
    let (threads_before, rss_before) = server.threads_and_rss_kb();
    let rate = bytes.len() as f64 / seconds;
    let port = server.port;
    let target = format!("/{file}");
    let start = Instant::now();
    let readers: Vec<_> = (0..clients)
        .map(|_| {
            let target = target.clone();
            std::thread::spawn(move || throttled_get(port, &target, rate))
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds / 2.0));
    let (threads_during, rss_during) = server.threads_and_rss_kb();
    for reader in readers {
        let (head, body) = reader.join().unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(sha256(&body), want, "a download came back whole");
    }
    let elapsed = start.elapsed();
    println!(
        "{clients} clients read {file} ({} bytes) at {:.0} KB/s each: all complete in \
         {elapsed:.1?} with the right sha256; server threads {threads_before} → \
         {threads_during}, RSS {rss_before} → {rss_during} KB",
        bytes.len(),
        rate / 1e3
    );
    assert!(
        elapsed.as_secs_f64() >= seconds * 0.9,
        "throttled: {elapsed:?}"
    );
    assert_eq!(threads_during, threads_before, "a fixed pool");
    assert!(
        rss_during < rss_before + 32 * 1024,
        "RSS grew by more than 32 MB: {rss_before} → {rss_during} KB"
    );
}

/// A class on a slow network: 30 downloads at once, each far longer than the idle timeout.
#[cfg(target_os = "linux")]
#[test]
fn thirty_slow_but_moving_downloads_all_complete() {
    let root = site("class");
    let data: Vec<u8> = (0..8u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    std::fs::write(root.join("model.bin"), data).unwrap();
    a_class_downloads(&root, "model.bin", 30, 8.0);
    std::fs::remove_dir_all(&root).unwrap();
}

/// The same with MPNet q8_0 (118 MB), each client taking over 3 minutes (full tier).
#[cfg(target_os = "linux")]
#[test]
#[ignore = "full tier: 3.5 minutes"]
fn thirty_downloads_of_mpnet_q8_0_over_three_minutes_all_complete() {
    let root = site("class-mpnet");
    let model = common::model_path("all-mpnet-base-v2", "q8_0");
    std::fs::copy(&model, root.join("mpnet.gguf")).unwrap();
    a_class_downloads(&root, "mpnet.gguf", 30, 200.0);
    std::fs::remove_dir_all(&root).unwrap();
}

/// A client that stops reading is cut after the idle timeout, with no total deadline set.
#[test]
fn a_stalled_download_is_cut_after_the_idle_timeout() {
    let root = site("idle");
    let size = 64 << 20;
    std::fs::write(root.join("big.bin"), vec![1u8; size]).unwrap();
    let (server, _) = Server::start_with(&root, &["--workers", "2", "--idle", "1"]);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(stream, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    // The kernel's buffers take ~4 MB and then, for about two seconds, a few hundred KB a
    // second more; two idle periods after that the server gives up.
    std::thread::sleep(Duration::from_millis(6000));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let (_, body) = split_response(&read_all(&mut stream));
    assert!(body.len() < size, "cut: {} of {size} bytes", body.len());
    assert!(request(server.port, "GET / HTTP/1.1")
        .0
        .starts_with("HTTP/1.1 200"));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn byte_ranges_are_answered_206_and_bad_ones_416() {
    let root = site("ranges");
    let bytes: Vec<u8> = (0..100u8).collect();
    std::fs::write(root.join("f.bin"), &bytes).unwrap();
    let (server, _) = Server::start_with(&root, &[]);
    let get = |range: &str| {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET /f.bin HTTP/1.1\r\nHost: x\r\nRange: {range}\r\n\r\n"
        )
        .unwrap();
        split_response(&read_all(&mut stream))
    };
    for (range, want, content_range) in [
        ("bytes=10-19", &bytes[10..20], "bytes 10-19/100"),
        ("bytes=90-", &bytes[90..], "bytes 90-99/100"),
        ("bytes=-5", &bytes[95..], "bytes 95-99/100"),
        ("bytes=95-500", &bytes[95..], "bytes 95-99/100"),
    ] {
        let (head, body) = get(range);
        assert!(head.starts_with("HTTP/1.1 206"), "{range}: {head}");
        assert!(
            head.contains(&format!("Content-Range: {content_range}")),
            "{head}"
        );
        assert!(
            head.contains(&format!("Content-Length: {}", want.len())),
            "{head}"
        );
        assert_eq!(body, want, "{range}");
        assert_security_headers(&head);
    }
    for range in [
        "bytes=100-",
        "bytes=50-10",
        "bytes=0-1,5-6",
        "items=0-1",
        "bytes=-",
    ] {
        let (head, _) = get(range);
        assert!(head.starts_with("HTTP/1.1 416"), "{range}: {head}");
        assert!(head.contains("Content-Range: bytes */100"), "{head}");
    }
    let (head, body) = request(server.port, "GET /f.bin HTTP/1.1");
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("Accept-Ranges: bytes"));
    assert_eq!(body, bytes);
    std::fs::remove_dir_all(&root).unwrap();
}

/// `--host 0.0.0.0`: listens on every interface and says what URL to give students.
#[test]
fn lan_mode_prints_the_url_for_students() {
    let root = site("lan");
    let (server, lines) = Server::start_with(&root, &["--host", "0.0.0.0"]);
    let lan = &lines[1];
    assert!(
        lan.starts_with("students on this network open http://")
            || lan.contains("has no network address on another interface"),
        "{lines:?}"
    );
    if let Some(url) = lan.strip_prefix("students on this network open http://") {
        let host = url.split(':').next().unwrap();
        let ip: std::net::IpAddr = host.parse().unwrap();
        assert!(!ip.is_loopback() && !ip.is_unspecified(), "{ip}");
        let mut stream = TcpStream::connect((ip, server.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(stream, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let (head, body) = split_response(&read_all(&mut stream));
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body, b"<p>hello</p>");
    }
    println!("{}", lines.join("").trim());
    std::fs::remove_dir_all(&root).unwrap();
}
