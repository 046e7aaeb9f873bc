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
//! reader ([`EntryView`](watchdog_core::capture::EntryView), the one `replay` uses). `line`
//! records are classified by the core; `raw` ones are keep-alives; a `stdin`
//! `control_response` ends a human wait. A `boundary` starts the next run, whose `t_ms` from 0
//! continue the timeline after it; a `t_ms` that goes backwards or is not a whole number of ms
//! is taken as the previous time, as `replay` does. Nothing else is kept: the simulation
//! streams the file again.
//!
//! The line readers are two private modules: `claude` (transcript lines, skimmed) and
//! `capture` (capture lines).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use watchdog_core::json_scan::skim as json;

use watchdog_core::capture::lines::{Item, Lines};

mod capture;
mod claude;

use capture::capture_line;
use claude::transcript_line;

/// How an assistant message stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// No or null `stop_reason` (stream-json assistant lines carry `null`).
    None,
    /// `end_turn`.
    EndTurn,
    /// `tool_use`.
    ToolUse,
    /// `max_tokens`.
    MaxTokens,
    /// `stop_sequence`.
    Sequence,
    /// Anything else.
    Other,
}

impl Stop {
    fn parse(s: &str) -> Stop {
        match s {
            "end_turn" => Stop::EndTurn,
            "tool_use" => Stop::ToolUse,
            "max_tokens" => Stop::MaxTokens,
            "stop_sequence" => Stop::Sequence,
            _ => Stop::Other,
        }
    }
}

/// How a turn (and, for the last one, a session) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ending {
    /// A final answer (a `result` in stream-json).
    Result,
    /// The final answer was an API error message, or an error `result`.
    Error,
    /// The final answer stopped on the output token limit.
    MaxTokens,
    /// A success `result` with `stop_reason: tool_use` (captures only).
    Incomplete,
    /// The user interrupted the turn and nothing followed.
    Interrupted,
    /// The session ended without a final answer.
    NoResult,
}

impl Ending {
    /// Every ending, in report order.
    pub const ALL: [Ending; 6] = [
        Ending::Result,
        Ending::Error,
        Ending::MaxTokens,
        Ending::Incomplete,
        Ending::Interrupted,
        Ending::NoResult,
    ];
    /// Snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Ending::Result => "result",
            Ending::Error => "error",
            Ending::MaxTokens => "max_tokens",
            Ending::Incomplete => "incomplete",
            Ending::Interrupted => "interrupted",
            Ending::NoResult => "no_result",
        }
    }
}

/// One tool call started by an assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolUse {
    /// `tool_use` block id.
    pub id: Box<str>,
    /// Tool name.
    pub name: Box<str>,
}

/// What a timing entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// An assistant message.
    Assistant {
        /// Tool calls it starts.
        tools: Vec<ToolUse>,
        /// Its `stop_reason`.
        stop: Stop,
        /// An API error message written in the assistant's place (`isApiErrorMessage`).
        api_error: bool,
        /// The error was the output token limit (`max_output_tokens`).
        max_tokens_error: bool,
    },
    /// Tool results (a `user` entry with `tool_result` blocks).
    ToolResults {
        /// The `tool_use_id`s answered.
        ids: Vec<Box<str>>,
        /// A person answered the permission prompt (`permissionDecision.source == "user"`).
        human: bool,
    },
    /// A user message without tool results.
    Prompt {
        /// Typed by a person (not `isMeta`, the CLI's own notes such as max-tokens recovery).
        human: bool,
        /// `[Request interrupted by user…]`.
        interrupt: bool,
    },
    /// A human prompt was queued (`queue-operation` `enqueue`).
    Enqueue,
    /// A `system` entry.
    System {
        /// Its subtype.
        subtype: Option<Box<str>>,
        /// Whether the core counts it as progress (else keep-alive).
        progress: bool,
    },
    /// A subagent's activity (progress in the parent's stream).
    SubagentProgress,
    /// Another progress line (captures: stream events, system lines, …).
    Progress,
    /// A sign of life that is not progress (heartbeats, pings, unparseable lines).
    KeepAlive,
    /// A `result` line (captures).
    Result(Ending),
    /// A human wait began (captures: `can_use_tool`, `requires_action`).
    HumanWaitStart,
    /// A human wait was answered (captures: a `control_response` on stdin).
    HumanWaitEnd,
}

impl EntryKind {
    /// Whether the entry is progress for the no-progress clock (keep-alives are not).
    pub fn is_progress(&self) -> bool {
        match self {
            EntryKind::System { progress, .. } => *progress,
            EntryKind::KeepAlive | EntryKind::HumanWaitStart | EntryKind::HumanWaitEnd => false,
            _ => true,
        }
    }
}

/// One timing entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Milliseconds: since the epoch (transcripts) or since spawn (captures). Never decreasing.
    pub t: i64,
    /// What it is.
    pub kind: EntryKind,
}

/// The file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A Claude Code transcript.
    Transcript,
    /// One of our captures.
    Capture,
}

/// One file, read.
#[derive(Debug, Clone)]
pub struct SessionLog {
    /// The file.
    pub file: PathBuf,
    /// Its format.
    pub format: Format,
    /// The first `sessionId` (transcripts) or `session_id` (captures) seen.
    pub session_id: Option<String>,
    /// A subagent transcript (`isSidechain: true`, or under a `subagents` folder).
    pub subagent: bool,
    /// Bytes read.
    pub bytes: u64,
    /// Lines read (non-empty).
    pub lines: u64,
    /// Lines that were not one JSON object (including truncated ones).
    pub bad_lines: u64,
    /// Of those, a last line without its newline.
    pub truncated_lines: u64,
    /// Timing entries without a usable timestamp.
    pub untimed_entries: u64,
    /// Timestamps earlier than the previous one.
    pub clock_jumps: u64,
    /// Timing entries in order.
    pub entries: Vec<Entry>,
    /// Captures: where the current run's `t_ms` starts on this timeline (the time of the last
    /// `boundary`; each run's `t_ms` restarts at 0).
    run_offset: i64,
    /// What the capture's `start` record says, if it has one: the policy reads the child's
    /// MCP environment from it.
    pub start: Option<watchdog_core::capture::StartFacts>,
    /// Captures: the wall clock at spawn (epoch ms, the `start` record's `wall_ms`), when
    /// recorded. Transcripts: `None` (their entries' times are epoch ms already).
    pub spawn_wall_ms: Option<u64>,
}

impl SessionLog {
    fn new(file: PathBuf, format: Format) -> Self {
        let subagent = file.components().any(|c| c.as_os_str() == "subagents");
        SessionLog {
            file,
            format,
            session_id: None,
            subagent,
            bytes: 0,
            lines: 0,
            bad_lines: 0,
            truncated_lines: 0,
            untimed_entries: 0,
            clock_jumps: 0,
            entries: Vec::new(),
            run_offset: 0,
            start: None,
            spawn_wall_ms: None,
        }
    }

    /// Push an entry, keeping time monotonic.
    fn push(&mut self, t: i64, kind: EntryKind) {
        let t = self.clamp(t);
        self.entries.push(Entry { t, kind });
    }

    fn last_t(&self) -> Option<i64> {
        self.entries.last().map(|e| e.t)
    }

    fn clamp(&mut self, t: i64) -> i64 {
        match self.last_t() {
            Some(prev) if t < prev => {
                self.clock_jumps += 1;
                prev
            }
            _ => t,
        }
    }
}

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
                reader.log.lines += 1;
                reader.log.bad_lines += 1;
            }
        }
        if lines.bytes > seen {
            progress(lines.bytes - seen);
            seen = lines.bytes;
        }
    }
    reader.log.bytes = lines.bytes;
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
        log.lines += 1;
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
            log.bad_lines += 1;
            if !has_newline {
                log.truncated_lines += 1;
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
