//! A running `sr-bench serve` for the tests that talk to it over TCP (serve.rs, serve_class.rs).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `sr-bench serve`; killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Server {
    pub fn start(dir: &Path, workers: usize, deadline_s: f64) -> Server {
        let workers = workers.to_string();
        let deadline = deadline_s.to_string();
        Self::start_with(dir, &["--workers", &workers, "--deadline", &deadline]).0
    }

    /// `serve --port 0 --dir DIR ARGS…`; the server and the lines it printed on start.
    pub fn start_with(dir: &Path, args: &[&str]) -> (Server, Vec<String>) {
        let mut child = Command::new(super::binary())
            .args(["serve", "--port", "0", "--dir"])
            .arg(dir)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("sr-bench serve starts");
        // "serving DIR on http://127.0.0.1:PORT/ (…)": printed once it listens.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let mut lines = vec![line.clone()];
        if args.contains(&"--host") {
            let mut lan = String::new();
            stdout.read_line(&mut lan).unwrap();
            lines.push(lan);
        }
        let port = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        (Server { child, port }, lines)
    }

    /// `Threads` and `VmRSS` (KB) of the server process, from /proc.
    #[cfg(target_os = "linux")]
    pub fn threads_and_rss_kb(&self) -> (u64, u64) {
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
