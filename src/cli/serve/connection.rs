//! A client's connection as the server holds it: each read and write waits at most the idle
//! time for progress, all end by a deadline, and the kernel's send buffer is kept small.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A connection whose reads and writes each wait at most `idle` for progress and all end by
/// `deadline`: while the head is read that is the header deadline (a client sending a byte at
/// a time cannot stretch it, as a per-call timeout alone would allow), then the total cap, if
/// any.
pub(super) struct Deadlined {
    pub(super) stream: TcpStream,
    pub(super) deadline: Option<Instant>,
    pub(super) idle: Duration,
    /// Since when, and how many bytes were written in the current idle window.
    pub(super) window: std::cell::Cell<(Instant, u64)>,
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

/// Per-connection send buffer. Linux wakes a blocked writer when a third of it is free: with
/// its default of up to 4 MB, a client reading 500 KB/s shows no progress for ~3 s at a time;
/// with 256 KiB it does every ~85 KB, and 30 slow downloads hold 8 MB of kernel memory, not 120.
const SEND_BUFFER_BYTES: i32 = 256 << 10;

#[cfg(unix)]
pub(super) fn cap_send_buffer(stream: &TcpStream) {
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
pub(super) fn cap_send_buffer(_stream: &TcpStream) {}
