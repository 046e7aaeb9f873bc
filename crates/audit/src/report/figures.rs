//! The audit report as values: its figures, per session and in all.

use std::path::PathBuf;

use crate::spells::SpellKind;
use crate::stats::Distribution;
use crate::transcript::{Ending, ReadCounts};

/// One long productive silence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Silence {
    /// The session's id (the file name when the file has none).
    pub session_id: String,
    /// The file.
    pub file: PathBuf,
    /// Length without progress, ms.
    pub ms: u64,
    /// Longest gap without any line inside it, ms.
    pub quiet_ms: u64,
    /// `model` or `tool`.
    pub kind: SpellKind,
    /// The tool, for tool spells.
    pub tool: Option<String>,
    /// Start, ms since the session began.
    pub start_ms: u64,
}

/// A kill the given settings would have made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WouldKill {
    /// The session's id.
    pub session_id: String,
    /// The file.
    pub file: PathBuf,
    /// The kill kind (`idle`, `no_progress`, …).
    pub kind: &'static str,
    /// When, ms since the session began.
    pub at_ms: u64,
    /// The session was doing productive work at that moment (more work followed).
    pub productive: bool,
}

/// One session's figures (JSON only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session's id.
    pub session_id: String,
    /// The file.
    pub file: PathBuf,
    /// A subagent transcript.
    pub subagent: bool,
    /// How it ended.
    pub ending: Ending,
    /// Its quiet spells (0 for a subagent counted in its parent's timeline).
    pub spells: u64,
    /// Its longest productive silence, ms, and the tool if it was a tool call.
    pub longest_productive_ms: Option<u64>,
    /// The tool of that silence.
    pub longest_productive_tool: Option<String>,
    /// The first kill the given settings would make: kind and ms since the session began.
    pub would_kill: Option<(&'static str, u64)>,
    /// The wall clock (epoch ms) of the session's time origin, the instant the `at_ms` of its
    /// kills (here and in [`AuditReport::would_kill`]), [`SessionSummary::end_ms`] and the
    /// `start_ms` of [`SessionSummary::spell_list`] count from: transcripts, the first entry's
    /// timestamp; captures, the spawn (the `start` record's `wall_ms`), `None` when the
    /// capture has no `start` record.
    pub origin_wall_ms: Option<i64>,
    /// The last entry, ms since the origin.
    pub end_ms: u64,
    /// Its quiet spells in order, each `start_ms` counted from the origin: filled only when
    /// asked for ([`crate::audit_files_with`]), and empty for a subagent counted in its
    /// parent's timeline (as [`SessionSummary::spells`]).
    pub spell_list: Vec<crate::spells::Spell>,
}

/// The recommended thresholds.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    /// Recommended `--idle`, ms.
    pub idle_ms: u64,
    /// Recommended `--no-progress`, ms.
    pub no_progress_ms: u64,
    /// The longest productive silence with no line at all, ms (the idle basis).
    pub longest_quiet_ms: u64,
    /// The longest productive spell without progress, ms (the no-progress basis).
    pub longest_spell_ms: u64,
    /// The margin applied.
    pub margin: f64,
    /// Whether replaying every session with these values killed none while productive.
    pub verified: bool,
    /// How many ladder steps the replay check added.
    pub raised: u32,
    /// No productive silence was found: the values are the current settings.
    pub no_data: bool,
    /// A productive silence needs more than the longest duration `run` accepts (365 days):
    /// the value is capped there, and that silence is not covered.
    pub capped: bool,
}

/// One histogram bin of spell lengths (log scale).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bin {
    /// Lower edge, ms (inclusive).
    pub lo_ms: u64,
    /// Upper edge, ms (exclusive).
    pub hi_ms: u64,
    /// Spells per kind, in [`SpellKind::ALL`] order.
    pub counts: [u64; 4],
}

/// Everything `audit` found.
#[derive(Debug, Clone)]
pub struct AuditReport {
    /// Sessions (files) read.
    pub sessions_scanned: u64,
    /// Of those, subagent transcripts.
    pub subagent_sessions: u64,
    /// Files that could not be read.
    pub files_skipped: u64,
    /// Which, and why.
    pub skipped: Vec<(PathBuf, String)>,
    /// What reading the sessions counted, summed over them.
    pub read: ReadCounts,
    /// Quiet spells by kind, in [`SpellKind::ALL`] order.
    pub quiet_spells: Vec<(SpellKind, Distribution)>,
    /// Tool spells by tool name, longest first.
    pub tools: Vec<(String, Distribution)>,
    /// The longest productive silence of each session, longest first (top 10).
    pub longest_productive_silences: Vec<Silence>,
    /// Kills the given settings would have made.
    pub would_kill: Vec<WouldKill>,
    /// The recommendation.
    pub recommended: Recommendation,
    /// Sessions by how they ended, in [`Ending::ALL`] order.
    pub outcomes: Vec<(Ending, u64)>,
    /// The given settings: idle, no-progress, startup, linger (ms) and ceiling.
    pub settings: Settings,
    /// Spell lengths on a log scale (for the plot).
    pub histogram: Vec<Bin>,
    /// Every session, in file order.
    pub sessions: Vec<SessionSummary>,
}

/// The settings the report was computed with.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--idle`, ms.
    pub idle_ms: u64,
    /// `--no-progress`, ms.
    pub no_progress_ms: u64,
    /// `--startup`, ms.
    pub startup_ms: u64,
    /// `--linger`, ms.
    pub linger_ms: u64,
    /// `--ceiling`, ms.
    pub ceiling_ms: Option<u64>,
    /// `--extend-factor`.
    pub extend_factor: f64,
}
