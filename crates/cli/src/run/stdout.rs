//! Our stdout: the child's stdout passed on byte for byte (buffered), the synthetic `result`
//! line, and what happens when it cannot be written.
//!
//! The first write error stops the writing for good and is reported once by the run, which
//! then stops the child (it would otherwise go on working, and billing, for a reader that is
//! gone): a closed reader (EPIPE, as after `| head -1`) exits 141, any other error (ENOSPC,
//! EIO…) exits 74.

use std::io;

use tokio::io::AsyncWriteExt;

/// Buffered child stdout is written at once past this size.
const FLUSH_AT: usize = 256 * 1024;

/// A write error on our stdout.
#[derive(Debug)]
pub(crate) struct WriteError {
    /// The reader went away (EPIPE).
    pub(crate) closed: bool,
    /// What the OS said.
    pub(crate) error: io::Error,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.closed {
            write!(
                f,
                "cannot write stdout: the reader went away ({})",
                self.error
            )
        } else {
            write!(f, "cannot write stdout: {}", self.error)
        }
    }
}

/// Where the child's stdout goes.
pub(crate) struct StdoutSink {
    out: tokio::io::Stdout,
    /// Not yet written: flushed when no more output is ready, or when large, so a burst of
    /// lines costs one write and a quiet child's line goes out at once.
    buf: Vec<u8>,
    /// Discard everything (`demo`).
    quiet: bool,
    /// The first write error; nothing is written after it.
    failed: bool,
    /// What was written (or discarded) last ends a line (or nothing was written yet).
    at_line_start: bool,
}

impl StdoutSink {
    /// Our stdout; `quiet` discards what would be written.
    pub(crate) fn new(quiet: bool) -> Self {
        StdoutSink {
            out: tokio::io::stdout(),
            buf: Vec::new(),
            quiet,
            failed: false,
            at_line_start: true,
        }
    }

    /// Nothing more can be delivered (the reader is known to be gone): drop what is buffered
    /// and write nothing from now on, as after a write error.
    pub(crate) fn abandon(&mut self) {
        self.failed = true;
        self.buf = Vec::new();
    }

    /// Whether nothing is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Pass `bytes` on (buffered; written at once when the buffer is large). `Err` on the
    /// first write error only.
    pub(crate) async fn push(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        if let Some(&last) = bytes.last() {
            self.at_line_start = last == b'\n';
        }
        if self.quiet || self.failed {
            return Ok(());
        }
        if self.buf.is_empty() && bytes.len() >= FLUSH_AT {
            return self.write(bytes).await;
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= FLUSH_AT {
            return self.flush().await;
        }
        Ok(())
    }

    /// Write what is buffered. `Err` on the first write error only.
    pub(crate) async fn flush(&mut self) -> Result<(), WriteError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let r = self.write(&buf).await;
        self.buf = buf;
        self.buf.clear();
        r
    }

    /// Write one line of our own (the synthetic `result`) after everything the child printed,
    /// on a line of its own: a partial last line of the child is ended first. Written even in
    /// quiet mode (it is the run's answer).
    pub(crate) async fn write_own_line(&mut self, line: &str) -> Result<(), WriteError> {
        self.flush().await?;
        let mut bytes = Vec::with_capacity(line.len() + 2);
        if !self.at_line_start {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.at_line_start = true;
        let quiet = std::mem::replace(&mut self.quiet, false);
        let r = self.write(&bytes).await;
        self.quiet = quiet;
        r
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        if self.failed {
            return Ok(());
        }
        // In pieces of at most `FLUSH_AT`: tokio's stdout copies each write into a buffer of
        // its own for its blocking writer thread, and keeps that buffer as large as the
        // largest write it took (up to 2 MiB); a 1 MiB batch written at once would keep a
        // 1 MiB copy alive for the rest of the run.
        let mut r = Ok(());
        for piece in bytes.chunks(FLUSH_AT) {
            r = self.out.write_all(piece).await;
            if r.is_err() {
                break;
            }
        }
        if r.is_ok() {
            r = self.out.flush().await;
        }
        r.map_err(|error| {
            self.failed = true;
            WriteError {
                closed: error.kind() == io::ErrorKind::BrokenPipe,
                error,
            }
        })
    }
}
