//! What reading one file gives: a session's timed entries and what was wrong with its lines.

use std::path::PathBuf;
use std::sync::Arc;

use watchdog_core::OutcomeKind;

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
    pub(super) fn parse(s: &str) -> Stop {
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
    /// Snake-case name (`incomplete` and `no_result` are the core's outcome names).
    pub fn as_str(self) -> &'static str {
        match self {
            Ending::Result => "result",
            Ending::Error => "error",
            Ending::MaxTokens => "max_tokens",
            Ending::Incomplete => OutcomeKind::Incomplete.as_str(),
            Ending::Interrupted => "interrupted",
            Ending::NoResult => OutcomeKind::NoResult.as_str(),
        }
    }

    /// The outcome a live run that ended so would have reported, had the watchdog not killed
    /// it: an interrupted turn has no `result`, an answer cut at the token limit is an error.
    pub fn outcome(self) -> OutcomeKind {
        match self {
            Ending::Result => OutcomeKind::Success,
            Ending::Error | Ending::MaxTokens => OutcomeKind::ErrorResult,
            Ending::Incomplete => OutcomeKind::Incomplete,
            Ending::Interrupted | Ending::NoResult => OutcomeKind::NoResult,
        }
    }
}

/// One tool call started by an assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolUse {
    /// `tool_use` block id.
    pub id: Box<str>,
    /// Tool name (shared with the quiet spells that name it).
    pub name: Arc<str>,
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

/// What reading counted: of one file, or summed over the files of an audit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCounts {
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
    /// Timestamps earlier than the previous one (clamped: time never goes backwards).
    pub clock_jumps: u64,
}

impl std::ops::AddAssign for ReadCounts {
    fn add_assign(&mut self, o: ReadCounts) {
        self.bytes += o.bytes;
        self.lines += o.lines;
        self.bad_lines += o.bad_lines;
        self.truncated_lines += o.truncated_lines;
        self.untimed_entries += o.untimed_entries;
        self.clock_jumps += o.clock_jumps;
    }
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
    /// What reading it counted.
    pub read: ReadCounts,
    /// Timing entries in order.
    pub entries: Vec<Entry>,
    /// Captures: where the current run's `t_ms` starts on this timeline (the time of the last
    /// `boundary`; each run's `t_ms` restarts at 0).
    pub(super) run_offset: i64,
    /// What the capture's `start` record says, if it has one: the policy reads the child's
    /// MCP environment from it.
    pub start: Option<watchdog_host::capture::StartFacts>,
    /// Captures: the wall clock at spawn (epoch ms, the `start` record's `wall_ms`), when
    /// recorded. Transcripts: `None` (their entries' times are epoch ms already).
    pub spawn_wall_ms: Option<u64>,
    /// Captures: the dialect its lines are read in (the `start` record's, confirmed or chosen
    /// by the first decisive line, as the replay and the live run read them).
    pub(super) dialect: watchdog_core::SessionDialect,
}

impl SessionLog {
    pub(super) fn new(file: PathBuf, format: Format) -> Self {
        let subagent = file.components().any(|c| c.as_os_str() == "subagents");
        SessionLog {
            file,
            format,
            session_id: None,
            subagent,
            read: ReadCounts::default(),
            entries: Vec::new(),
            run_offset: 0,
            start: None,
            spawn_wall_ms: None,
            dialect: watchdog_core::SessionDialect::expect(watchdog_core::Dialect::Claude),
        }
    }

    /// Push an entry, keeping time monotonic.
    pub(super) fn push(&mut self, t: i64, kind: EntryKind) {
        let t = self.clamp(t);
        self.entries.push(Entry { t, kind });
    }

    pub(super) fn last_t(&self) -> Option<i64> {
        self.entries.last().map(|e| e.t)
    }

    pub(super) fn clamp(&mut self, t: i64) -> i64 {
        match self.last_t() {
            Some(prev) if t < prev => {
                self.read.clock_jumps += 1;
                prev
            }
            _ => t,
        }
    }
}
