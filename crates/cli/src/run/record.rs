//! `run --record`: the capture of a run, written and flushed line by line so that a crash
//! keeps everything seen so far.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use watchdog_core::capture::{Entry, Record};

/// A capture being written. Write errors are reported once and stop the recording, never
/// the run.
#[derive(Debug)]
pub struct Recorder {
    file: Option<File>,
    path: PathBuf,
}

impl Recorder {
    /// Create (truncate) the capture file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Recorder {
            file: Some(super::out_file::create(path)?),
            path: path.to_owned(),
        })
    }

    /// A recorder that records nothing.
    pub fn none() -> Self {
        Recorder {
            file: None,
            path: PathBuf::new(),
        }
    }

    /// Append one entry (one `write` call per line, so lines never interleave).
    pub fn write(&mut self, t_ms: u64, record: Record) {
        let Some(f) = self.file.as_mut() else {
            return;
        };
        let mut line = Entry { t_ms, record }.to_json();
        line.push('\n');
        if let Err(e) = f.write_all(line.as_bytes()) {
            eprintln!(
                "agent-watchdog: cannot write the capture {}: {e}; recording stopped",
                self.path.display()
            );
            self.file = None;
        }
    }

    /// Append one stdout line: `line` when it parses as JSON, else `raw`.
    pub fn stdout_line(&mut self, t_ms: u64, bytes: &[u8]) {
        if self.file.is_none() {
            return;
        }
        let record = match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => Record::Line(v),
            Err(_) => Record::Raw(String::from_utf8_lossy(trim_cr(bytes)).into_owned()),
        };
        self.write(t_ms, record);
    }
}

/// Strip one trailing `\r`.
pub fn trim_cr(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\r").unwrap_or(b)
}
