//! The facts of one session that every part of the project reads from one owner, the
//! [`Registry`](crate::Registry), which reads each line once: Claude Code's session id
//! ([`ClaudeSessionId`]), the last `result`'s fields ([`ResultFacts`]), and, for sessions
//! registered with [`SessionConfig::with_tally`](crate::SessionConfig::with_tally), the tally of
//! their work ([`Tally`]: the activity, turns, subagents and their failures).
//!
//! # Which session id
//!
//! A session's id is the `session_id` of its last `system/init` line; before any `init`, the
//! first valid `session_id` seen. The `init` is where Claude Code announces the session it
//! writes its transcript under, so it is the id `claude --resume <id>` accepts (recovery
//! resumes with it); it also wins over the lines printed before it (hook lines). A
//! `session_id` that is not a valid [`ClaudeSessionId`] (empty, too long, control
//! characters) is ignored.
//!
//! # Quiet spells
//!
//! The one classifier of the project. A live session's spells (the registry feeds it each
//! stream-json line) and a past recording's (`watchdog-audit` feeds it a transcript's or
//! capture's entries) are the same rule, so the two can be put side by side.
//!
//! A **quiet spell** is the time between two consecutive *progress* lines: a top-level line
//! whose [`Signal`](crate::Signal) is progress or a settle (a `result`), or a subagent's line
//! that is not a keep-alive. That is what the no-progress clock sees. Its `quiet` is the
//! longest gap between any two lines inside it (keep-alives, human waits and unparseable lines
//! included): what the idle clock sees. Its [`SpellKind`] is decided by the state when it
//! began and the line that ended it: `after_result` after a `result`; `human` when a
//! permission request was open in it (or is still open); `tool` when a top-level tool call
//! was pending (the tool is the one whose `tool_result` ended the spell, else the latest
//! pending; an `AskUserQuestion` call makes it `human`); `model` otherwise. It is **productive** when it is a `model` or `tool` spell.
//! A reader of a whole transcript knows more ([`ProgressLine`]): a tool call whose permission
//! a person answered waits on a person, a spell a person's prompt ended is `human`, and a
//! spell a user's interrupt ended (or followed) is not productive.
//!
//! The [`SpellTracker`] is fed by the [`Tally`] of a session registered with
//! [`SessionConfig::with_live_facts`](crate::SessionConfig::with_live_facts): per line it
//! compares two instants and sets a few flags; a progress line builds one [`QuietSpell`] (the
//! tool's name is shared, not copied), reported as [`Event::QuietSpells`](crate::Event).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::view::LineView;

mod live;
mod spells;
mod subagents;
mod tally;
mod turns;

pub use live::OutstandingMcp;
pub(crate) use live::{LineContext, LiveNews, PendingMcp};
pub use spells::{asks_a_person, PendingTool, ProgressLine, QuietSpell, SpellKind, SpellTracker};
pub use subagents::{SubagentFailure, Subagents};
pub use tally::{Activity, Tally};
pub use turns::{TaskCounts, Turns};

/// Claude Code's session id, as printed in its stream-json lines (`session_id`): non-empty, at
/// most [`ClaudeSessionId::MAX_LEN`] bytes, no control characters. Validated once, where it is
/// read ([`ClaudeSessionId::parse`]); a UUID in practice, but only the ledger demands one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ClaudeSessionId(Box<str>);

/// Why a string is not a [`ClaudeSessionId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidClaudeSessionId {
    /// It is empty.
    #[error("the session id is empty")]
    Empty,
    /// It is longer than [`ClaudeSessionId::MAX_LEN`] bytes.
    #[error("the session id is {0} bytes long (at most {max})", max = ClaudeSessionId::MAX_LEN)]
    TooLong(usize),
    /// It holds a control character.
    #[error("the session id holds a control character")]
    ControlChar,
}

impl ClaudeSessionId {
    /// The longest id accepted, in bytes (Claude Code's are 36-byte UUIDs).
    pub const MAX_LEN: usize = 256;

    /// Check `s` and keep it.
    ///
    /// ```
    /// use watchdog_core::facts::ClaudeSessionId;
    /// let id = ClaudeSessionId::parse("90455ab9-05b5-4ba0-9d10-01a53fd0bcdc").unwrap();
    /// assert_eq!(id.as_str(), "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc");
    /// assert!(ClaudeSessionId::parse("").is_err());
    /// assert!(ClaudeSessionId::parse("a\nb").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Self, InvalidClaudeSessionId> {
        if s.is_empty() {
            return Err(InvalidClaudeSessionId::Empty);
        }
        if s.len() > Self::MAX_LEN {
            return Err(InvalidClaudeSessionId::TooLong(s.len()));
        }
        if s.chars().any(char::is_control) {
            return Err(InvalidClaudeSessionId::ControlChar);
        }
        Ok(ClaudeSessionId(s.into()))
    }

    /// The id of a line, if it carries a valid one.
    pub fn of_line(view: &LineView<'_>) -> Option<Self> {
        view.session_id().and_then(|s| Self::parse(&s).ok())
    }

    /// The CLI's session id a line of kind `kind` carries, in any dialect
    /// ([`crate::Dialect`]): Claude Code's `session_id`, Codex's `thread.started` `thread_id`,
    /// opencode's `sessionID` (on every line).
    ///
    /// ```
    /// use watchdog_core::{facts::ClaudeSessionId, Dialect, LineView};
    /// let line = LineView::parse(br#"{"type":"thread.started","thread_id":"t-1"}"#).unwrap();
    /// let kind = Dialect::Codex.classify(&line).kind;
    /// assert_eq!(ClaudeSessionId::of_dialect_line(&line, kind).unwrap().as_str(), "t-1");
    /// ```
    pub fn of_dialect_line(view: &LineView<'_>, kind: crate::LineKind) -> Option<Self> {
        crate::dialect::session_id(view, kind).and_then(|s| Self::parse(&s).ok())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClaudeSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::ops::Deref for ClaudeSessionId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ClaudeSessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for ClaudeSessionId {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl TryFrom<String> for ClaudeSessionId {
    type Error = InvalidClaudeSessionId;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

impl From<ClaudeSessionId> for String {
    fn from(id: ClaudeSessionId) -> String {
        id.0.into()
    }
}

/// The fields of a `result` line that say how a turn ended and what it cost: what the outcome,
/// the summary, the synthetic result and recovery all read. Serialised with every field (`null`
/// when the line lacked it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultFacts {
    /// `subtype`, e.g. `success`, `error_max_turns` (`success` for API errors).
    pub subtype: Option<String>,
    /// `is_error`.
    pub is_error: Option<bool>,
    /// `stop_reason`, e.g. `end_turn`, `tool_use`.
    pub stop_reason: Option<String>,
    /// `terminal_reason`, e.g. `completed`, `api_error`.
    pub terminal_reason: Option<String>,
    /// `api_error`, e.g. `max_output_tokens`.
    pub api_error: Option<String>,
    /// `api_error_status`, e.g. 429.
    pub api_error_status: Option<u16>,
    /// `num_turns`.
    pub num_turns: Option<u64>,
    /// `total_cost_usd` (finite values only).
    pub total_cost_usd: Option<f64>,
}

impl ResultFacts {
    /// The facts of a `result` line.
    pub fn of_line(view: &LineView<'_>) -> Self {
        let own = |s: Option<Cow<'_, str>>| s.map(Cow::into_owned);
        ResultFacts {
            subtype: own(view.subtype()),
            is_error: view.is_error(),
            stop_reason: own(view.stop_reason()),
            terminal_reason: own(view.terminal_reason()),
            api_error: own(view.api_error()),
            api_error_status: view.api_error_status(),
            num_turns: view.num_turns(),
            total_cost_usd: view.total_cost_usd().filter(|c| c.is_finite()),
        }
    }

    /// The facts of a line that ends a turn (its class is a settle): a Claude Code `result`'s
    /// fields ([`ResultFacts::of_line`]), or another dialect's end read as one (a Codex
    /// `turn.failed` has subtype `error` and terminal reason `turn.failed`, an opencode `error`
    /// its `error.name`; see [`crate::Dialect::grammar`]).
    pub fn of_end(view: &LineView<'_>, kind: crate::LineKind) -> Self {
        if kind == crate::LineKind::Result {
            return Self::of_line(view);
        }
        let end = crate::dialect::ending(view, kind);
        ResultFacts {
            subtype: end.subtype,
            is_error: end.is_error,
            stop_reason: end.stop_reason,
            terminal_reason: end.terminal_reason,
            api_error_status: end.api_error_status,
            ..ResultFacts::default()
        }
    }

    /// An error result: `is_error: true` or a subtype other than `success`.
    pub fn is_error_result(&self) -> bool {
        self.is_error == Some(true) || self.subtype.as_deref().is_some_and(|s| s != "success")
    }

    /// A success that stopped to call a tool (`stop_reason: "tool_use"`): exited mid-task.
    pub fn stopped_mid_task(&self) -> bool {
        !self.is_error_result() && self.stop_reason.as_deref() == Some("tool_use")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_bounded_and_printable() {
        assert_eq!(
            ClaudeSessionId::parse(""),
            Err(InvalidClaudeSessionId::Empty)
        );
        let long = "a".repeat(ClaudeSessionId::MAX_LEN + 1);
        assert_eq!(
            ClaudeSessionId::parse(&long),
            Err(InvalidClaudeSessionId::TooLong(
                ClaudeSessionId::MAX_LEN + 1
            ))
        );
        assert!(ClaudeSessionId::parse(&long[1..]).is_ok());
        assert_eq!(
            ClaudeSessionId::parse("a\u{1b}[2Jb"),
            Err(InvalidClaudeSessionId::ControlChar)
        );
    }

    #[test]
    fn an_id_round_trips_through_json_and_bad_ones_are_refused() {
        let id = ClaudeSessionId::parse("s-1").unwrap();
        let text = serde_json::to_string(&id).unwrap();
        assert_eq!(text, r#""s-1""#);
        assert_eq!(serde_json::from_str::<ClaudeSessionId>(&text).unwrap(), id);
        assert!(serde_json::from_str::<ClaudeSessionId>(r#""""#).is_err());
    }

    #[test]
    fn result_facts_read_every_field_and_serialise_them_all() {
        let line = br#"{"type":"result","subtype":"success","is_error":true,"stop_reason":"end_turn","terminal_reason":"api_error","api_error":"max_output_tokens","api_error_status":400,"num_turns":4,"total_cost_usd":0.5}"#;
        let f = ResultFacts::of_line(&LineView::parse(line).unwrap());
        assert!(f.is_error_result());
        assert!(!f.stopped_mid_task());
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "subtype": "success", "is_error": true, "stop_reason": "end_turn",
                "terminal_reason": "api_error", "api_error": "max_output_tokens",
                "api_error_status": 400, "num_turns": 4, "total_cost_usd": 0.5,
            })
        );
        assert_eq!(serde_json::from_value::<ResultFacts>(v).unwrap(), f);
    }

    #[test]
    fn the_outcome_of_a_last_result_is_the_registrys() {
        let outcome = |line: &[u8]| {
            let view = LineView::parse(line).unwrap();
            ResultFacts::of_line(&view).into_outcome().as_str()
        };
        let ok =
            br#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn"}"#;
        assert_eq!(outcome(ok), "success");
        let api = br#"{"type":"result","subtype":"success","is_error":true}"#;
        assert_eq!(outcome(api), "error_result");
        assert_eq!(
            outcome(br#"{"type":"result","subtype":"error_max_turns"}"#),
            "error_result"
        );
        let mid = br#"{"type":"result","subtype":"success","stop_reason":"tool_use"}"#;
        assert_eq!(outcome(mid), "incomplete");
    }

    #[test]
    fn a_success_that_stopped_for_a_tool_is_mid_task() {
        let line =
            br#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"tool_use"}"#;
        let f = ResultFacts::of_line(&LineView::parse(line).unwrap());
        assert!(!f.is_error_result());
        assert!(f.stopped_mid_task());
    }
}
