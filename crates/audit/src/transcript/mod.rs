//! Reading one file (a Claude Code transcript or one of our captures) into timed entries.
//!
//! # Transcripts
//! One JSON object per line. Only entries with a stream-json meaning are *timing entries*; the
//! others (attachments, API request records, cost and prompt bookkeeping, …) are skipped, because
//! a watchdog reading the CLI's stdout would have seen nothing at their time:
//!
//! | transcript entry | entry kind | stream-json equivalent |
//! |---|---|---|
//! | `assistant` | [`EntryKind::Assistant`] (tool_use blocks, `stop_reason`, API error flag) | `assistant` (progress) |
//! | `user` with `tool_result` blocks | [`EntryKind::ToolResults`] | `user` (progress) |
//! | other `user` | [`EntryKind::Prompt`] (`isMeta` ones are the CLI's own notes) | `user` (progress) |
//! | `queue-operation` `enqueue` | [`EntryKind::Enqueue`] (a human's prompt arrives) | a line on stdin |
//! | `system` | [`EntryKind::System`] | `system/<subtype>` (classified by the core) |
//! | `progress` (`agent_progress`) | [`EntryKind::SubagentProgress`] | a subagent line (progress) |
//! | other `progress` | [`EntryKind::KeepAlive`] | `tool_progress` (keep-alive) |
//!
//! A timing entry without a valid `timestamp` is skipped and counted (`untimed_entries`); a
//! timestamp earlier than the previous one is a clock jump: the gap is taken as 0 and counted
//! (`clock_jumps`). Lines that are not one JSON object are skipped and counted (`bad_lines`, and
//! `truncated_lines` when it is the last line and has no newline). Timing entries are checked
//! for structure to their end; a line of any other type (API request records, attachments,
//! costs: often the biggest lines) is read only up to its `type` and must end with `}`.
//!
//! # Captures
//! Our capture format (`t_ms` + `line` / `raw` / `stdin` / `exit` / …) is recognised by the file
//! name (`*.capture.jsonl`) or by a first object with `t_ms`, and read by the core's capture
//! reader ([`EntryView`](watchdog_host::capture::EntryView), the one `replay` uses). `line`
//! records are classified by the core; `raw` ones are keep-alives; a `stdin`
//! `control_response` ends a human wait. A `boundary` starts the next run, whose `t_ms` from 0
//! continue the timeline after it; a `t_ms` that goes backwards or is not a whole number of ms
//! is taken as the previous time, as `replay` does. Nothing else is kept: the simulation
//! streams the file again.
//!
//! The line readers are two private modules: `claude` (transcript lines, skimmed) and
//! `capture` (capture lines).

use std::io::{self, Read};
use std::path::Path;

use watchdog_json::skim as json;

use watchdog_host::capture::lines::{Item, Lines};

mod capture;
mod claude;
mod log;

use capture::capture_line;
use claude::transcript_line;
#[cfg(test)]
pub use log::ToolUse;
pub use log::{Ending, Entry, EntryKind, Format, ReadCounts, SessionLog, Stop};

/// Whether a file name looks like one of our captures.
pub fn is_capture_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".capture.jsonl"))
}

/// Read one file. `progress` is called with byte counts as they are read. Character devices
/// and FIFOs are refused ([`crate::files::open`]); a line longer than 64 MiB is
/// dropped and counted as a bad line, so no file can make memory grow without bound.
pub fn read_session(path: &Path, progress: &mut dyn FnMut(u64)) -> io::Result<SessionLog> {
    // A folder opens on some systems; its first read fails ("Is a directory").
    let file = crate::files::open(path)?;
    read_session_from(file, path, progress)
}

/// Read one file's content from `r` (see [`read_session`]); `path` names it.
pub fn read_session_from(
    r: impl Read,
    path: &Path,
    progress: &mut dyn FnMut(u64),
) -> io::Result<SessionLog> {
    let format = is_capture_name(path).then_some(Format::Capture);
    let mut reader = LineReader {
        log: SessionLog::new(path.to_path_buf(), format.unwrap_or(Format::Transcript)),
        format_known: format.is_some(),
    };
    // One buffer per thread for all its files, as they are read one after another.
    let buf = READ_BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let mut lines = Lines::with_buffer(r, buf);
    let mut seen = 0;
    while let Some(item) = lines.next_item()? {
        match item {
            Item::Line { line, newline, .. } => reader.line(line, newline),
            Item::Overlong(..) => {
                reader.log.read.lines += 1;
                reader.log.read.bad_lines += 1;
            }
        }
        if lines.bytes > seen {
            progress(lines.bytes - seen);
            seen = lines.bytes;
        }
    }
    reader.log.read.bytes = lines.bytes;
    READ_BUFFER.with(|b| *b.borrow_mut() = lines.into_buffer());
    Ok(reader.log)
}

thread_local! {
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct LineReader {
    log: SessionLog,
    format_known: bool,
}

impl LineReader {
    fn line(&mut self, raw: &[u8], has_newline: bool) {
        let line = trim(raw);
        if line.is_empty() {
            return;
        }
        let log = &mut self.log;
        log.read.lines += 1;
        if !self.format_known {
            self.format_known = true;
            if looks_like_capture(line) {
                log.format = Format::Capture;
            }
        }
        let ok = match log.format {
            Format::Transcript => transcript_line(log, line),
            Format::Capture => capture_line(log, line),
        };
        if !ok {
            log.read.bad_lines += 1;
            if !has_newline {
                log.read.truncated_lines += 1;
            }
        }
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'\n' | b'\r' | b' ' | b'\t') {
        end -= 1;
    }
    let mut start = 0;
    while start < end && matches!(b[start], b' ' | b'\t') {
        start += 1;
    }
    &b[start..end]
}

fn looks_like_capture(line: &[u8]) -> bool {
    let mut t = false;
    json::line_fields(line, |k, _| t |= k == b"t_ms") && t
}
