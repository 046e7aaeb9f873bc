//! `run --record`: the capture of a run, written and flushed line by line so that a crash
//! keeps everything seen so far.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use watchdog_host::capture::{Entry, Record};

/// A capture being written. Write errors are reported once and stop the recording, never
/// the run. Times never go backwards in the file: stdout, stderr and stdin are read by
/// different tasks, so an entry that reaches the recorder after a later one is written at
/// the later one's time (replay would otherwise clamp it and warn).
#[derive(Debug)]
pub struct Recorder {
    file: Option<File>,
    path: PathBuf,
    last_t_ms: u64,
}

impl Recorder {
    /// Create (truncate) the capture file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Recorder {
            file: Some(super::out_file::create(path)?),
            path: path.to_owned(),
            last_t_ms: 0,
        })
    }

    /// A recorder that records nothing.
    pub fn none() -> Self {
        Recorder {
            file: None,
            path: PathBuf::new(),
            last_t_ms: 0,
        }
    }

    /// Append one entry (one `write` call per line, so lines never interleave).
    pub fn write(&mut self, t_ms: u64, record: Record) {
        if self.file.is_none() {
            return;
        }
        let t_ms = self.monotonic(t_ms);
        let mut line = Entry { t_ms, record }.to_json();
        line.push('\n');
        self.append(line.as_bytes());
    }

    fn monotonic(&mut self, t_ms: u64) -> u64 {
        self.last_t_ms = self.last_t_ms.max(t_ms);
        self.last_t_ms
    }

    fn append(&mut self, line: &[u8]) {
        let Some(f) = self.file.as_mut() else {
            return;
        };
        if let Err(e) = f.write_all(line) {
            eprintln!(
                "agent-watchdog: cannot write the capture {}: {e}; recording stopped",
                self.path.display()
            );
            self.file = None;
        }
    }

    /// Append one stdout line: `line` with the line's own bytes when the supervisor parsed
    /// it (`parsed`: its class is not unparseable), else `raw`. The decision is the live
    /// path's, not a second parser's, so a replay of the capture reads every line as the run
    /// did (a lone surrogate escape such as `"\ud83d"`, which the live parser accepts and
    /// `serde_json` refuses, stays a `line`). The bytes were validated as one JSON value, so
    /// they are written as they came: no second parse, no re-serialisation.
    pub fn stdout_line(&mut self, t_ms: u64, bytes: &[u8], parsed: bool) {
        if self.file.is_none() {
            return;
        }
        if !parsed {
            let raw = String::from_utf8_lossy(trim_cr(bytes)).into_owned();
            return self.write(t_ms, Record::Raw(raw));
        }
        let t_ms = self.monotonic(t_ms);
        let mut line = Vec::with_capacity(bytes.len() + 32);
        line.extend_from_slice(b"{\"line\":");
        line.extend_from_slice(trim_cr(bytes));
        line.extend_from_slice(format!(",\"t_ms\":{t_ms}}}\n").as_bytes());
        self.append(&line);
    }
}

/// Strip one trailing `\r`.
pub fn trim_cr(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\r").unwrap_or(b)
}
