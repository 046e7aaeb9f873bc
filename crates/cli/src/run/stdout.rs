//! Our stdout: the child's stdout passed on byte for byte, the synthetic `result` line, and
//! what happens when it cannot be written, or is not read.
//!
//! A thread of its own does the writing (a dup of fd 1, in pieces of at most [`PIECE`]), so
//! the run's loop never waits on a reader: a reader that stops reading holds the child back
//! (the loop takes no more of its output once [`HIGH_WATER`] bytes wait here, and the
//! supervisor's readers then wait too), but a kill, a signal or the child's end are still
//! handled at once, and the loop decides how long to wait for a reader that takes nothing
//! ([`StdoutSink::stalled_since`], [`StdoutSink::abandon`]).
//!
//! The first write error stops the writing for good and is reported once by the run, which
//! then stops the child (it would otherwise go on working, and billing, for a reader that is
//! gone): a closed reader (EPIPE, as after `| head -1`) exits 141, any other error (ENOSPC,
//! EIO…) exits 74.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Buffered child stdout is handed to the writer at once past this size.
const FLUSH_AT: usize = 256 * 1024;
/// The writer writes at most this much at a time, so a reader that takes a pipe's worth at a
/// time is seen to make progress (one pipe buffer).
const PIECE: usize = 64 * 1024;
/// While this many bytes wait for the writer, the loop takes no more of the child's output.
const HIGH_WATER: u64 = 1 << 20;
/// How long our output may take no byte once the run is ending (a kill was decided, a signal
/// forwarded, the output stopped) before what is left is dropped.
pub(super) const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// Why our stdout failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The reader went away (EPIPE).
    Closed,
    /// Another write error (ENOSPC, EIO…).
    Error,
    /// The reader took nothing for the output-blocked bound after the child ended.
    Blocked,
}

/// A write error on our stdout.
#[derive(Debug)]
pub(crate) struct WriteError {
    /// What kind of failure.
    pub(crate) failure: Failure,
    /// What the OS (or the bound) said.
    pub(crate) error: io::Error,
}

impl WriteError {
    /// The reader went away (EPIPE).
    pub(crate) fn closed(&self) -> bool {
        self.failure == Failure::Closed
    }

    fn of(error: io::Error) -> Self {
        let failure = if error.kind() == io::ErrorKind::BrokenPipe {
            Failure::Closed
        } else {
            Failure::Error
        };
        WriteError { failure, error }
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.failure {
            Failure::Closed => write!(
                f,
                "cannot write stdout: the reader went away ({})",
                self.error
            ),
            Failure::Error => write!(f, "cannot write stdout: {}", self.error),
            Failure::Blocked => write!(f, "{}", self.error),
        }
    }
}

/// What the writer thread tells the loop.
#[derive(Default)]
struct Progress {
    /// Bytes handed to the writer and not yet written.
    in_flight: AtomicU64,
    /// The first write error, once.
    error: Mutex<Option<io::Error>>,
    /// When the writer last wrote a byte, or last became busy.
    moved: Mutex<Option<Instant>>,
    /// Wakes the loop when bytes were written or writing failed.
    notify: tokio::sync::Notify,
}

impl Progress {
    fn moved_now(&self) {
        *self.moved.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }
}

/// Where the child's stdout goes.
pub(crate) struct StdoutSink {
    /// To the writer thread (started on first use; `None` once abandoned or failed).
    tx: Option<mpsc::Sender<Vec<u8>>>,
    progress: Arc<Progress>,
    /// Not yet handed to the writer: handed over when no more output is ready, or when
    /// large, so a burst of lines costs one write and a quiet child's line goes out at once.
    buf: Vec<u8>,
    /// Discard everything (`demo`).
    quiet: bool,
    /// Nothing is written any more (an error, or abandoned).
    failed: bool,
    /// The writer thread was started.
    started: bool,
    /// What was written (or discarded) last ends a line (or nothing was written yet).
    at_line_start: bool,
    /// Bytes of the child's output read but never delivered (abandoned).
    dropped: u64,
}

impl StdoutSink {
    /// Our stdout; `quiet` discards what would be written.
    pub(crate) fn new(quiet: bool) -> Self {
        StdoutSink {
            tx: None,
            progress: Arc::default(),
            buf: Vec::new(),
            quiet,
            failed: false,
            started: false,
            at_line_start: true,
            dropped: 0,
        }
    }

    /// Nothing more can be delivered (the reader is gone, or took nothing for too long): drop
    /// what waits and write nothing from now on. The writer thread, if it is stuck in a write
    /// a reader will never take, is left there (it ends with the process).
    pub(crate) fn abandon(&mut self) {
        if !self.failed {
            self.dropped += self.buf.len() as u64 + self.in_flight();
        }
        self.failed = true;
        self.buf = Vec::new();
        self.tx = None;
    }

    /// Bytes of the child's output read but never delivered.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Whether nothing is buffered here (the writer may still hold bytes).
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes handed to the writer and not written yet.
    pub(crate) fn in_flight(&self) -> u64 {
        if self.failed {
            return 0;
        }
        self.progress.in_flight.load(Ordering::Acquire)
    }

    /// Whether the loop may take more of the child's output: false while [`HIGH_WATER`] bytes
    /// wait for a reader (the child is then held back, as by a slow reader).
    pub(crate) fn has_room(&self) -> bool {
        self.failed || self.in_flight() + (self.buf.len() as u64) < HIGH_WATER
    }

    /// Since when the reader has taken nothing while bytes wait for it (`None`: nothing waits).
    pub(crate) fn stalled_since(&self) -> Option<Instant> {
        if self.in_flight() == 0 {
            return None;
        }
        *self
            .progress
            .moved
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Wait until the writer wrote something or failed (at once when that happened since the
    /// last call).
    pub(crate) async fn progressed(&self) {
        self.progress.notify.notified().await;
    }

    /// The writer's first error, once: nothing is written after it.
    pub(crate) fn take_error(&mut self) -> Option<WriteError> {
        if self.failed {
            return None;
        }
        let e = self
            .progress
            .error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        self.dropped += self.buf.len() as u64 + self.in_flight();
        self.failed = true;
        self.buf = Vec::new();
        self.tx = None;
        Some(WriteError::of(e))
    }

    /// Pass `bytes` on (buffered; handed to the writer at once when the buffer is large).
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if let Some(&last) = bytes.last() {
            self.at_line_start = last == b'\n';
        }
        if self.quiet {
            return;
        }
        if self.failed {
            self.dropped += bytes.len() as u64;
            return;
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= FLUSH_AT {
            self.flush();
        }
    }

    /// Hand what is buffered to the writer (never waits).
    pub(crate) fn flush(&mut self) {
        if self.buf.is_empty() || self.failed {
            return;
        }
        let buf = std::mem::take(&mut self.buf);
        self.send(buf);
    }

    /// Write one line of our own (the synthetic `result`) after everything the child printed,
    /// on a line of its own: a partial last line of the child is ended first. Written even in
    /// quiet mode (it is the run's answer). False when it cannot be delivered any more.
    pub(crate) fn push_own_line(&mut self, line: &str) -> bool {
        self.flush();
        if self.failed {
            return false;
        }
        let mut bytes = Vec::with_capacity(line.len() + 2);
        if !self.at_line_start {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.at_line_start = true;
        self.send(bytes);
        true
    }

    fn send(&mut self, bytes: Vec<u8>) {
        if !self.started {
            self.started = true;
            self.tx = start_writer(self.progress.clone());
        }
        let n = bytes.len() as u64;
        if self.progress.in_flight.fetch_add(n, Ordering::AcqRel) == 0 {
            // The writer becomes busy now: a stall counts from here.
            self.progress.moved_now();
        }
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(bytes).is_ok());
        if !sent {
            // The writer is gone: its error (or the dup's) is waiting to be taken.
            self.progress.in_flight.fetch_sub(n, Ordering::AcqRel);
            self.dropped += n;
            self.progress.notify.notify_one();
        }
    }
}

/// Start the writer thread on a duplicate of fd 1 (so nothing else's lock or buffer of our
/// stdout is involved). `None` when it cannot start: the error waits in `progress`.
fn start_writer(progress: Arc<Progress>) -> Option<mpsc::Sender<Vec<u8>>> {
    let file = io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from);
    let fail = |e: io::Error| {
        *progress
            .error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(e);
        progress.notify.notify_one();
    };
    let mut file = match file {
        Ok(f) => f,
        Err(e) => {
            fail(e);
            return None;
        }
    };
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let p = progress.clone();
    let spawned = std::thread::Builder::new()
        .name("agent-watchdog-stdout".into())
        .spawn(move || {
            for bytes in rx {
                for piece in bytes.chunks(PIECE) {
                    if let Err(e) = write_piece(&mut file, piece) {
                        *p.error.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                        p.notify.notify_one();
                        return;
                    }
                    p.in_flight.fetch_sub(piece.len() as u64, Ordering::AcqRel);
                    p.moved_now();
                    p.notify.notify_one();
                }
            }
        });
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            fail(e);
            None
        }
    }
}

/// Write all of `piece`, waiting for room when our stdout was left non-blocking by whoever
/// opened it.
fn write_piece(file: &mut std::fs::File, mut piece: &[u8]) -> io::Result<()> {
    use rustix::event::{poll, PollFd, PollFlags};
    while !piece.is_empty() {
        match file.write(piece) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => piece = &piece[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let mut fds = [PollFd::new(&*file, PollFlags::OUT)];
                let _ = poll(&mut fds, None);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
