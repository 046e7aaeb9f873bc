//! Our stdout: the child's stdout passed on byte for byte, the synthetic `result` line, and
//! what happens when it cannot be written, or is not read.
//!
//! A thread of its own does the writing (a dup of fd 1), so the run's loop never waits on a
//! reader: a reader that stops reading holds the child back (the loop takes no more of its
//! output once [`HIGH_WATER`] bytes wait here, and the supervisor's readers then wait too),
//! but a kill, a signal or the child's end are still handled at once.
//!
//! How long the reader may take nothing is judged here, where we write, never at a queue in
//! front of it: the time during which our stdout accepted no byte while bytes waited for it,
//! with the core's one rule ([`ReaderWait`]: any byte taken restarts it, time this process did
//! not run, stopped or suspended, does not count). The loop looks at the writer every
//! [`LOOK_EVERY`] while bytes wait ([`StdoutSink::look_at`], [`StdoutSink::look`]). So that
//! every byte the reader takes is seen, the writer never waits inside a write where the OS
//! lets it (`RWF_NOWAIT` on a pipe or a socket, Linux: the write takes what fits, then the
//! writer waits for room), else writes a pipe at most [`PIPE_PIECE`] at a time once it has
//! room; and a reader that takes less than a pipe page is seen at a look by the pipe's unread
//! count going down (`FIONREAD`).
//!
//! The first write error stops the writing for good and is reported once by the run, which
//! then stops the child (it would otherwise go on working, and billing, for a reader that is
//! gone): a closed reader (EPIPE, as after `| head -1`) exits 141, any other error (ENOSPC,
//! EIO…) exits 74, and a reader that took nothing for the bound exits 75 (`output_blocked`).

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

#[cfg(doc)]
use watchdog_core::reader_wait::LOOK_EVERY;
use watchdog_core::reader_wait::{Look, ReaderWait};

/// Buffered child stdout is handed to the writer at once past this size.
const FLUSH_AT: usize = 256 * 1024;
/// The most one write that never waits inside hands the OS (it takes what fits).
const PIECE: usize = 1 << 20;
/// The most one write hands a file, a terminal or a device (a reader's progress shows each
/// time one returns).
const OTHER_PIECE: usize = 64 * 1024;
/// The most one write hands a pipe when it may wait inside the write: what a pipe with room
/// (`POLLOUT`) takes at once, so the write returns as soon as the reader made room.
pub(super) const PIPE_PIECE: usize = if cfg!(target_os = "linux") { 4096 } else { 512 };
/// While this many bytes wait for the writer, the loop takes no more of the child's output.
const HIGH_WATER: u64 = 1 << 20;
/// How long our output may take no byte once the run is being stopped (a kill was decided, a
/// signal forwarded, the output failed) before what is left is dropped.
pub(super) const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// Why our stdout failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The reader went away (EPIPE).
    Closed,
    /// Another write error (ENOSPC, EIO…).
    Error,
    /// The reader took no byte for the output-blocked bound while bytes waited for it.
    Blocked,
}

/// A write error on our stdout.
#[derive(Debug)]
pub(crate) struct WriteError {
    /// What kind of failure.
    pub(crate) failure: Failure,
    /// What the OS (or the bound) said.
    pub(crate) error: io::Error,
    /// For [`Failure::Blocked`]: how long the reader took nothing, counted.
    pub(crate) blocked_for: Option<Duration>,
}

impl WriteError {
    fn of(error: io::Error) -> Self {
        let failure = if error.kind() == io::ErrorKind::BrokenPipe {
            Failure::Closed
        } else {
            Failure::Error
        };
        WriteError {
            failure,
            error,
            blocked_for: None,
        }
    }

    /// The reader took nothing for `blocked_for` (the bound): `message` says what follows.
    pub(crate) fn blocked(blocked_for: Duration, message: String) -> Self {
        WriteError {
            failure: Failure::Blocked,
            error: io::Error::new(io::ErrorKind::TimedOut, message),
            blocked_for: Some(blocked_for),
        }
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
    /// Bytes our stdout accepted, in all.
    written: AtomicU64,
    /// The first write error, once.
    error: Mutex<Option<io::Error>>,
    /// Wakes the loop when bytes were written or writing failed.
    notify: tokio::sync::Notify,
}

/// What the loop saw at its last look at the writer ([`StdoutSink::look`]).
#[derive(Debug, Default)]
struct Seen {
    /// [`Progress::written`] then.
    written: u64,
    /// The pipe's unread bytes then (a pipe only; `None` before a look, or not a pipe).
    unread: Option<u64>,
    /// When to look next (`None`: once bytes wait).
    next: Option<Instant>,
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
    /// How long the reader has taken nothing while bytes waited: the output-blocked rule.
    wait: ReaderWait,
    /// The last look at the writer.
    seen: Seen,
    /// Our stdout is a pipe (its unread count shows a reader that takes less than a page).
    pipe: bool,
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
            wait: ReaderWait::new(None),
            seen: Seen::default(),
            pipe: !quiet && crate::os::stdout_kind() == Kind::Pipe,
        }
    }

    /// The output-blocked bound for a run (`None`: none): how long our stdout may accept no
    /// byte while bytes wait for it before the reader is blocked ([`StdoutSink::look`]).
    pub(crate) fn set_bound(&mut self, bound: Option<Duration>) {
        self.wait.set_bound(bound);
    }

    /// The output-blocked bound in force.
    pub(crate) fn bound(&self) -> Option<Duration> {
        self.wait.bound()
    }

    /// The run is being stopped at `now`: from now on the reader may take nothing for at most
    /// `bound` (a shorter bound in force stays).
    pub(crate) fn tighten(&mut self, now: Instant, bound: Duration) {
        self.wait.tighten(now, bound);
        self.seen.next = Some(now);
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

    /// Bytes that wait for our stdout: buffered here or handed to the writer.
    pub(crate) fn waiting(&self) -> u64 {
        if self.failed {
            return 0;
        }
        self.in_flight() + self.buf.len() as u64
    }

    /// Whether the loop may take more of the child's output: false while [`HIGH_WATER`] bytes
    /// wait for a reader (the child is then held back, as by a slow reader).
    pub(crate) fn has_room(&self) -> bool {
        self.failed || self.waiting() < HIGH_WATER
    }

    /// When the loop should look at the writer next ([`StdoutSink::look`]): while bytes wait
    /// and a bound applies, every [`LOOK_EVERY`] at most; `None` otherwise.
    pub(crate) fn look_at(&self) -> Option<Instant> {
        if self.wait.bound().is_none() || self.waiting() == 0 && self.seen.next.is_none() {
            return None;
        }
        Some(self.seen.next.unwrap_or_else(Instant::now))
    }

    /// Look at the writer at `now`: whether bytes wait and whether the reader took any since
    /// the last look (our stdout accepted bytes, or the pipe's unread count went down).
    /// `Some`: the reader took no byte for the bound while bytes waited, for this long
    /// (counted); the caller stops the run or drops what waits.
    pub(crate) fn look(&mut self, now: Instant) -> Option<Duration> {
        let written = self.progress.written.load(Ordering::Acquire);
        let unread = if self.pipe {
            crate::os::stdout_unread()
        } else {
            None
        };
        let drained = matches!((self.seen.unread, unread), (Some(a), Some(b)) if b < a);
        let took = written != self.seen.written || drained;
        self.seen.written = written;
        self.seen.unread = unread;
        match self.wait.look(now, self.waiting() > 0, took) {
            Look::Idle => {
                self.seen.next = None;
                None
            }
            Look::Again(at) => {
                self.seen.next = Some(at);
                None
            }
            Look::Blocked(d) => {
                self.seen.next = None;
                Some(d)
            }
        }
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
        self.progress.in_flight.fetch_add(n, Ordering::AcqRel);
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(bytes).is_ok());
        if !sent {
            // The writer is gone: its error (or the dup's) is waiting to be taken.
            self.progress.in_flight.fetch_sub(n, Ordering::AcqRel);
            self.dropped += n;
            self.progress.notify.notify_one();
        }
    }
}

/// What our stdout is, for how the writer writes it (the platform's answer).
use crate::os::StdoutKind as Kind;

/// Start the writer thread on a duplicate of fd 1 (so nothing else's lock or buffer of our
/// stdout is involved). `None` when it cannot start: the error waits in `progress`.
fn start_writer(progress: Arc<Progress>) -> Option<mpsc::Sender<Vec<u8>>> {
    let file = crate::os::dup_stdout();
    let fail = |e: io::Error| {
        *progress
            .error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(e);
        progress.notify.notify_one();
    };
    let file = match file {
        Ok(f) => f,
        Err(e) => {
            fail(e);
            return None;
        }
    };
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let p = progress.clone();
    let mut writer = Writer::new(file, crate::os::stdout_kind());
    let spawned = std::thread::Builder::new()
        .name("agent-watchdog-stdout".into())
        .spawn(move || {
            for bytes in rx {
                let wrote = |n: usize| {
                    p.written.fetch_add(n as u64, Ordering::AcqRel);
                    p.in_flight.fetch_sub(n as u64, Ordering::AcqRel);
                    p.notify.notify_one();
                };
                if let Err(e) = writer.write_all(&bytes, wrote) {
                    *p.error.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                    p.notify.notify_one();
                    return;
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

/// The writer's end of our stdout, and how it writes there.
struct Writer {
    file: std::fs::File,
    kind: Kind,
    /// Writes that never wait inside the write (`RWF_NOWAIT`) work here: a pipe or a socket
    /// on Linux, until the kernel says otherwise.
    nowait: bool,
}

impl Writer {
    fn new(file: std::fs::File, kind: Kind) -> Self {
        Writer {
            file,
            kind,
            nowait: cfg!(target_os = "linux") && kind != Kind::Other,
        }
    }

    /// Write all of `bytes`, telling `wrote` each time our stdout accepted some; waits for
    /// room when there is none (also when our stdout was left non-blocking by whoever opened
    /// it).
    fn write_all(&mut self, mut bytes: &[u8], mut wrote: impl FnMut(usize)) -> io::Result<()> {
        while !bytes.is_empty() {
            match self.write_some(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    let full = self.nowait && n < bytes.len().min(PIECE);
                    bytes = &bytes[n..];
                    wrote(n);
                    if full && !bytes.is_empty() {
                        // It took what fitted: there is no room until the reader reads.
                        self.wait_for_room();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait_for_room(),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One write: what fits without waiting where the OS allows it, else a piece a reader's
    /// progress shows in.
    fn write_some(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let piece = &bytes[..bytes.len().min(PIECE)];
        if self.nowait {
            match write_nowait(&self.file, piece) {
                Err(e) if nowait_refused(&e) => self.nowait = false,
                r => return r,
            }
        }
        if self.kind == Kind::Pipe {
            // A pipe with room takes a small piece at once: wait for room, then write it.
            self.wait_for_room();
            return self.file.write(&piece[..piece.len().min(PIPE_PIECE)]);
        }
        self.file.write(&piece[..piece.len().min(OTHER_PIECE)])
    }

    /// Wait until our stdout has room (or reports an error, which the next write returns).
    fn wait_for_room(&self) {
        crate::os::wait_writable(&self.file);
    }
}

/// A write that never waits inside: what fits now, or `WouldBlock`.
#[cfg(target_os = "linux")]
fn write_nowait(file: &std::fs::File, bytes: &[u8]) -> io::Result<usize> {
    use rustix::io::{pwritev2, ReadWriteFlags};
    // Offset `u64::MAX`: at the file's own position (a pipe or a socket has none).
    pwritev2(
        file,
        &[io::IoSlice::new(bytes)],
        u64::MAX,
        ReadWriteFlags::NOWAIT,
    )
    .map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn write_nowait(_: &std::fs::File, _: &[u8]) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}

/// The kernel does not do `RWF_NOWAIT` here (too old: `ENOSYS`, `EINVAL`; not for this kind
/// of file: `EOPNOTSUPP`).
fn nowait_refused(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Unsupported | io::ErrorKind::InvalidInput
    )
}
