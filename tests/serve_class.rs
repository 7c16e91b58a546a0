//! `sr-bench serve --class` as a separate process: 30 simulated devices answer one class's quiz
//! at once (threads on 127.0.0.1, each its own connections), half of them after the server was
//! killed and restarted on the same database; the teacher's figures equal those computed here
//! from the picks sent (not by the server's code); hostile requests (wrong types, a 1 MB body,
//! unknown codes, script in fields, 10,000 requests from one address) are refused, store
//! nothing, and leave the class working; the CSV export and the deletion.
#![cfg(target_os = "linux")] // the server's /proc figures and a bound source address (libc)

mod cli_common;
mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use cli_common::server::Server;
use serde_json::{json, Value};

const DEVICES: usize = 30;
const SEED: u64 = 77;

/// The built site (its `data/` is what the class server draws quizzes from).
fn site() -> PathBuf {
    let site = common::root().join("www/dist");
    assert!(
        site.join("data/sr/stsb.csv").is_file(),
        "build the site first (./build.sh build)"
    );
    site
}

/// A connection to 127.0.0.1:`port` from the loopback address `from` (std cannot choose the
/// source address: the kernel would pick 127.0.0.1 for any 127/8 destination).
fn connect_from(from: [u8; 4], port: u16) -> TcpStream {
    use std::os::fd::FromRawFd;
    let addr = |ip: [u8; 4], port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(ip),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket, bound and connected with valid sockaddr_in values, then owned
    // by the TcpStream (which closes it).
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0, "socket");
        let source = addr(from, 0);
        let bound = libc::bind(fd, (&source as *const libc::sockaddr_in).cast(), len);
        assert_eq!(bound, 0, "bind");
        let target = addr([127, 0, 0, 1], port);
        let connected = libc::connect(fd, (&target as *const libc::sockaddr_in).cast(), len);
        assert_eq!(connected, 0, "connect");
        TcpStream::from_raw_fd(fd)
    }
}

/// One HTTP exchange with the server on a connection of its own, from the loopback address
/// `ip`: the status code and the body.
fn http(
    ip: IpAddr,
    port: u16,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let IpAddr::V4(v4) = ip else {
        panic!("IPv4 loopback only")
    };
    let mut stream = connect_from(v4.octets(), port);
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let auth = auth.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body); // a refused body may be cut short: the answer still comes
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let status = String::from_utf8_lossy(&response[9..12]).parse().unwrap();
    (status, response[split + 4..].to_vec())
}

fn local(port: u16, method: &str, path: &str, auth: Option<&str>, body: Value) -> (u16, Value) {
    let body = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let (status, bytes) = http(
        IpAddr::from([127, 0, 0, 1]),
        port,
        method,
        path,
        auth,
        &body,
    );
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn start(db: &Path) -> Server {
    Server::start_with(&site(), &["--class", db.to_str().unwrap()]).0
}

/// Device `d`'s picks: a fixed pattern, so some agree and some do not.
fn picks_of(d: usize, questions: usize) -> Vec<u8> {
    (0..questions)
        .map(|q| u8::from((d * 7 + q * 3 + d / 5).is_multiple_of(3)))
        .collect()
}

/// The class's figures computed here: each student's accuracy, agreement with the majority of
/// the rest (ties ½), the class majority against the gold (ties ½), as percentages.
fn expected(picks: &[Vec<u8>], gold: &[u8]) -> (Vec<f64>, Vec<f64>, f64) {
    let q = gold.len();
    let majority = |votes: &[u8], pick: u8| {
        let ones = votes.iter().filter(|&&v| v == 1).count() * 2;
        if ones == votes.len() {
            0.5
        } else if (ones > votes.len()) == (pick == 1) {
            1.0
        } else {
            0.0
        }
    };
    let mut accuracy = Vec::new();
    let mut agreement = Vec::new();
    for (s, p) in picks.iter().enumerate() {
        accuracy.push(100.0 * (0..q).filter(|&i| p[i] == gold[i]).count() as f64 / q as f64);
        let sum: f64 = (0..q)
            .map(|i| {
                let rest: Vec<u8> = picks
                    .iter()
                    .enumerate()
                    .filter(|(t, _)| *t != s)
                    .map(|(_, o)| o[i])
                    .collect();
                majority(&rest, p[i])
            })
            .sum();
        agreement.push(100.0 * sum / q as f64);
    }
    let gold_vs_majority: f64 = (0..q)
        .map(|i| majority(&picks.iter().map(|p| p[i]).collect::<Vec<_>>(), gold[i]))
        .sum();
    (accuracy, agreement, 100.0 * gold_vs_majority / q as f64)
}

fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (
        mean,
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt(),
    )
}

#[test]
fn thirty_devices_a_restart_and_hostile_requests() {
    let dir = cli_common::temp_dir("serve-class", "db");
    let db = dir.join("class.sqlite");
    let mut server = start(&db);
    let (status, info) = local(server.port, "GET", "/api/class", None, Value::Null);
    assert_eq!((status, info["class"].clone()), (200, json!(true)));
    let (status, made) = local(
        server.port,
        "POST",
        "/api/class",
        None,
        json!({"seed": SEED, "set": "sr", "questions": 12}),
    );
    assert_eq!(status, 201, "{made}");
    let code = made["code"].as_str().unwrap().to_owned();
    let teacher = made["teacher"].as_str().unwrap().to_owned();
    // The gold answers, from the CLI (the page's quiz for the same seed).
    let (ok, quiz, err) = cli_common::sr_bench(&[
        "quiz",
        "--seed",
        &SEED.to_string(),
        "--data",
        site().join("data").to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let quiz: Value = serde_json::from_str(&quiz).unwrap();
    let gold: Vec<u8> = quiz["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["answer"].as_u64().unwrap() as u8)
        .collect();

    let send = |port: u16, devices: std::ops::Range<usize>| {
        let threads: Vec<_> = devices
            .map(|d| {
                let code = code.clone();
                std::thread::spawn(move || {
                    let (status, joined) = local(
                        port,
                        "GET",
                        &format!("/api/class/{code}"),
                        None,
                        Value::Null,
                    );
                    assert_eq!((status, joined["seed"].as_u64()), (200, Some(SEED)));
                    let body =
                        json!({"device": format!("{:032x}", 0xD0 + d), "picks": picks_of(d, 12)});
                    let (status, sent) = local(
                        port,
                        "POST",
                        &format!("/api/class/{code}/answers"),
                        None,
                        body,
                    );
                    assert_eq!(status, 200, "device {d}: {sent}");
                })
            })
            .collect();
        for t in threads {
            t.join().expect("every device answered");
        }
    };
    let (threads_before, rss_before) = server.threads_and_rss_kb();
    send(server.port, 0..DEVICES / 2);
    let (threads_mid, rss_mid) = server.threads_and_rss_kb();
    // Killed mid-class (no chance to flush anything) and started again on the same file.
    drop(server);
    server = start(&db);
    send(server.port, DEVICES / 2..DEVICES);
    let (threads_after, rss_after) = server.threads_and_rss_kb();
    eprintln!(
        "class server: before the devices {threads_before} threads, VmRSS {rss_before} KB; after 15 devices \
         {threads_mid}, {rss_mid} KB; restarted, after the other 15 {threads_after}, {rss_after} KB"
    );
    assert!(
        threads_after <= threads_before + 2,
        "threads bounded: {threads_before} → {threads_after}"
    );
    assert!(rss_after < 64 * 1024, "resident memory {rss_after} KB");

    let figures_path = format!("/api/class/{code}/figures");
    let figures = |port: u16| local(port, "GET", &figures_path, Some(&teacher), Value::Null);
    let (status, f) = figures(server.port);
    assert_eq!(status, 200, "{f}");
    let f = &f["figures"];
    assert_eq!(
        f["answered"], DEVICES,
        "the teacher's view counts every device, before and after the restart"
    );
    let picks: Vec<Vec<u8>> = (0..DEVICES).map(|d| picks_of(d, 12)).collect();
    let (accuracy, agreement, majority) = expected(&picks, &gold);
    let close = |a: f64, b: &Value| (a - b.as_f64().unwrap()).abs() <= 0.005 + 1e-9;
    let (mean, sd) = mean_sd(&accuracy);
    assert!(
        close(mean, &f["accuracy"]["mean"]) && close(sd, &f["accuracy"]["sd"]),
        "{mean} ± {sd} vs {}",
        f["accuracy"]
    );
    let (mean, sd) = mean_sd(&agreement);
    assert!(
        close(mean, &f["agreement_with_rest"]["mean"])
            && close(sd, &f["agreement_with_rest"]["sd"]),
        "{}",
        f["agreement_with_rest"]
    );
    assert!(
        close(majority, &f["majority_vs_gold"]),
        "{majority} vs {}",
        f["majority_vs_gold"]
    );
    // Students come in arrival order (devices sent at once arrive in any order): as sets.
    let mut want: Vec<(f64, f64)> = accuracy
        .iter()
        .copied()
        .zip(agreement.iter().copied())
        .collect();
    let mut got: Vec<(f64, f64)> = f["students"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["accuracy"].as_f64().unwrap(),
                s["agreement_with_rest"].as_f64().unwrap(),
            )
        })
        .collect();
    want.sort_by(|a, b| a.partial_cmp(b).unwrap());
    got.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(got.len(), DEVICES);
    for (w, g) in want.iter().zip(&got) {
        assert!(
            (w.0 - g.0).abs() <= 0.005 + 1e-9 && (w.1 - g.1).abs() <= 0.005 + 1e-9,
            "student {w:?} vs {g:?}"
        );
    }

    // Hostile requests: each refused with a message, nothing stored.
    let answers = format!("/api/class/{code}/answers");
    for (body, says) in [
        (
            json!({"device": 5, "picks": picks_of(0, 12)}),
            "invalid type",
        ),
        (
            json!({"device": "ab".repeat(16), "picks": "0101"}),
            "invalid type",
        ),
        (
            json!({"device": "<script>alert(1)</script>xxxxxxxx", "picks": picks_of(0, 12)}),
            "hexadecimal",
        ),
        (
            json!({"device": "ab".repeat(16), "picks": [0, 1]}),
            "2 picks",
        ),
        (
            json!({"device": "ab".repeat(16), "picks": vec![2; 12]}),
            "0 or 1",
        ),
        (
            json!({"device": "ab".repeat(16), "picks": picks_of(0, 12), "name": "Tom"}),
            "unknown field",
        ),
    ] {
        let (status, reply) = local(server.port, "POST", &answers, None, body);
        assert_eq!(status, 400, "{reply}");
        assert!(reply["error"].as_str().unwrap().contains(says), "{reply}");
    }
    let (status, reply) = http(
        IpAddr::from([127, 0, 0, 1]),
        server.port,
        "POST",
        &answers,
        None,
        &vec![b'x'; 1 << 20],
    );
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&reply));
    for path in [
        "/api/class/ZZZZZZ",
        "/api/class/<script>/answers",
        "/api/class/../../etc/passwd",
    ] {
        assert_eq!(
            local(server.port, "GET", path, None, Value::Null).0,
            404,
            "{path}"
        );
    }
    assert_eq!(
        local(server.port, "GET", &figures_path, None, Value::Null).0,
        401,
        "figures without the teacher's token"
    );
    assert_eq!(
        local(
            server.port,
            "GET",
            &figures_path,
            Some("0".repeat(64).as_str()),
            Value::Null
        )
        .0,
        401
    );
    // 10,000 requests from one address (127.0.0.2): a burst, then 429s; the class goes on.
    let flood = IpAddr::from([127, 0, 0, 2]);
    let port = server.port;
    let statuses: Vec<u16> = (0..4)
        .map(|_| {
            let answers = answers.clone();
            std::thread::spawn(move || {
                let body = json!({"device": "f".repeat(32), "picks": picks_of(1, 12)}).to_string();
                (0..2500)
                    .map(|_| http(flood, port, "POST", &answers, None, body.as_bytes()).0)
                    .collect::<Vec<_>>()
            })
        })
        .flat_map(|t| t.join().unwrap())
        .collect();
    let refused = statuses.iter().filter(|&&s| s == 429).count();
    let (threads_flood, rss_flood) = server.threads_and_rss_kb();
    eprintln!(
        "after 10,000 requests from one address: {threads_flood} threads, VmRSS {rss_flood} KB"
    );
    assert!(threads_flood <= threads_before + 2 && rss_flood < 64 * 1024);
    eprintln!("10,000 requests from one address: {refused} answered 429");
    assert!(refused >= 9_500, "{refused} of 10,000 refused");
    let (status, f) = figures(server.port);
    assert_eq!(status, 200, "the class still works for the teacher");
    assert_eq!(
        f["figures"]["answered"],
        DEVICES + 1,
        "the flooding device's one accepted answer, nothing more"
    );

    // The CSV export: one row per student, no device ids; then the class is deleted.
    let (status, csv) = http(
        IpAddr::from([127, 0, 0, 1]),
        server.port,
        "GET",
        &format!("/api/class/{code}/answers.csv"),
        Some(&teacher),
        b"",
    );
    assert_eq!(status, 200);
    let csv = String::from_utf8(csv).unwrap();
    assert_eq!(csv.lines().count(), DEVICES + 2, "header and 31 students");
    assert!(
        csv.starts_with("student,q1,q2,") && !csv.contains("d0"),
        "{csv}"
    );
    assert_eq!(
        local(
            server.port,
            "DELETE",
            &format!("/api/class/{code}"),
            None,
            Value::Null
        )
        .0,
        401
    );
    assert_eq!(
        local(
            server.port,
            "DELETE",
            &format!("/api/class/{code}"),
            Some(&teacher),
            Value::Null
        )
        .0,
        200
    );
    assert_eq!(
        local(
            server.port,
            "GET",
            &format!("/api/class/{code}"),
            None,
            Value::Null
        )
        .0,
        404,
        "deleted"
    );
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_database_that_is_not_one_is_refused_by_name() {
    let dir = cli_common::temp_dir("serve-class", "bad");
    let db = dir.join("not-a-db.sqlite");
    std::fs::write(&db, vec![0x42; 4096]).unwrap();
    let (ok, _, err) = cli_common::sr_bench(&[
        "serve",
        "--port",
        "0",
        "--dir",
        site().to_str().unwrap(),
        "--class",
        db.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("not-a-db.sqlite"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
