//! opencode's `opencode run --format json` (measured with opencode 1.18.33): one event a line,
//! each with the session's `sessionID` and the message `part` it reports.
//!
//! A run is steps: `step_start`, the step's `reasoning`, `text` and `tool_use` parts, then
//! `step_finish`, whose `part.reason` is `tool-calls` when another step follows (the model
//! called tools) and anything else (`stop`, `length`, …) on the last step: 1.18.33 prints no
//! other end and exits 0 after it (newer versions add `done`). A fatal error prints `error`
//! (`error.name`, `error.data`) and opencode exits 1. A `tool_use` is printed only once its
//! tool ended, so a long tool is silent: the step is the call the process-tree evidence
//! watches, from its `step_start` to its `step_finish`. A `tool_use` whose state is `error` is
//! the model's business, not a failed run. `run` prints no human wait: it rejects a
//! permission request by itself ("permission requested: …; auto-rejecting").

use std::borrow::Cow;

use super::{GrammarRow, ToolEdge, TurnEnd};
use crate::classify::{Class, LineKind, Signal};
use crate::view::LineView;

use LineKind as K;
use Signal::{Progress, Settle};

/// The kinds of opencode's lines (each carries the session id).
pub(super) const KINDS: &[LineKind] = &[
    K::StepStart,
    K::StepFinish,
    K::Text,
    K::Reasoning,
    K::ToolUse,
    K::Done,
];

/// The one call a step is: an id of our own (steps do not overlap) and a name for the kill.
const STEP_ID: &str = "opencode-step";
const STEP_NAME: &str = "opencode";

pub(super) const GRAMMAR: &[GrammarRow] = &[
    GrammarRow {
        event: "`step_start`",
        example: r#"{"type":"step_start","timestamp":1796603300534,"sessionID":"ses_db2193ec3ffeZfNIxDrMJ9k6nV","part":{"id":"prt_24de6ca8e001t2BaYBMFQYwbp0","messageID":"msg_24de6c5f6001am3M6tcvXt3V67","sessionID":"ses_db2193ec3ffeZfNIxDrMJ9k6nV","type":"step-start"}}"#,
        signal: Progress,
        kind: K::StepStart,
        reads: "the session id (`sessionID`, on every line); the step begins a call the process-tree evidence watches (its tools print nothing until they end)",
    },
    GrammarRow {
        event: "`text`",
        example: r#"{"type":"text","timestamp":1796603304242,"sessionID":"ses_db2193ec3ffeZfNIxDrMJ9k6nV","part":{"id":"prt_24de6d9030015InpN0QgMSPoma","type":"text","text":"All done.","time":{"start":1796603304195,"end":1796603304198}}}"#,
        signal: Progress,
        kind: K::Text,
        reads: "",
    },
    GrammarRow {
        event: "`reasoning`",
        example: r#"{"type":"reasoning","timestamp":1796603304240,"sessionID":"ses_db2193ec3ffeZfNIxDrMJ9k6nV","part":{"id":"prt_24de6d9030015InpN0QgMSPomb","type":"reasoning","text":"Let me look."}}"#,
        signal: Progress,
        kind: K::Reasoning,
        reads: "",
    },
    GrammarRow {
        event: "`tool_use` (state `completed` or `error`)",
        example: r#"{"type":"tool_use","timestamp":1796603300812,"sessionID":"ses_db2193ec3ffeZfNIxDrMJ9k6nV","part":{"type":"tool","tool":"bash","callID":"toolu_0","state":{"status":"completed","input":{"command":"echo one"},"output":"one\n"},"id":"prt_24de6ca9c001"}}"#,
        signal: Progress,
        kind: K::ToolUse,
        reads: "a completed call of a write tool (`--write-tools`, compared without case: `write`, `edit`) is the first write",
    },
    GrammarRow {
        event: "`step_finish` with `reason` `tool-calls`",
        example: r#"{"type":"step_finish","timestamp":1796603300812,"sessionID":"ses_db2193ec3ffeZfNIxDrMJ9k6nV","part":{"id":"prt_24de6cb9a001amtak1qqNy6ld3","reason":"tool-calls","type":"step-finish","cost":0.000105}}"#,
        signal: Progress,
        kind: K::StepFinish,
        reads: "ends the step's call",
    },
    GrammarRow {
        event: "`step_finish` with another `reason` (`stop`, `length`, …)",
        example: r#"{"type":"step_finish","timestamp":1796603304242,"sessionID":"ses_db2193ec3ffeZfNIxDrMJ9k6nV","part":{"id":"prt_24de6d90e001FsD706SWCWY7tR","reason":"stop","type":"step-finish","cost":0.000105}}"#,
        signal: Settle,
        kind: K::StepFinish,
        reads: "the outcome: `success` for `stop`, else `error_result` (subtype: the reason, e.g. `length`)",
    },
    GrammarRow {
        event: "`error`",
        example: r#"{"type":"error","timestamp":1796603523039,"sessionID":"ses_db215df4bffe5d5xhz09mDjssA","error":{"name":"APIError","data":{"message":"mock failure","statusCode":400,"isRetryable":false}}}"#,
        signal: Settle,
        kind: K::Error,
        reads: "the outcome: `error_result` (subtype `error`, terminal reason `error.name`, `api_error_status` from `error.data.statusCode`)",
    },
    GrammarRow {
        event: "`done` (versions after 1.18.33)",
        example: r#"{"type":"done","timestamp":1796603304250,"sessionID":"ses_db2193ec3ffeZfNIxDrMJ9k6nV","reason":"idle"}"#,
        signal: Settle,
        kind: K::Done,
        reads: "the outcome: `success` unless the step before it ended otherwise",
    },
];

/// `part.reason` of a `step_finish`.
fn reason<'a>(view: &LineView<'a>) -> Option<Cow<'a, str>> {
    view.part()?.member("reason")?.as_str()
}

pub(super) fn classify(view: &LineView<'_>) -> Class {
    let c = |signal, kind| Class { signal, kind };
    match view.kind().as_deref() {
        Some("step_start") => c(Progress, K::StepStart),
        Some("text") => c(Progress, K::Text),
        Some("reasoning") => c(Progress, K::Reasoning),
        Some("tool_use") => c(Progress, K::ToolUse),
        // The last step ends the run; one that stopped to call tools does not. A step_finish
        // without a reason says nothing of an end.
        Some("step_finish") => match reason(view).as_deref() {
            None | Some("tool-calls") => c(Progress, K::StepFinish),
            Some(_) => c(Settle, K::StepFinish),
        },
        Some("error") => c(Settle, K::Error),
        Some("done") => c(Settle, K::Done),
        _ => c(Signal::KeepAlive, K::Unknown),
    }
}

/// `sessionID`.
pub(super) fn session_id<'a>(view: &LineView<'a>) -> Option<Cow<'a, str>> {
    view.member("sessionID")?.as_str()
}

/// How a run ended, by its last step, its error, or `done`.
pub(super) fn ending(view: &LineView<'_>, kind: LineKind) -> TurnEnd {
    let own = |s: Option<Cow<'_, str>>| s.map(Cow::into_owned);
    match kind {
        K::Error => {
            let error = view.member("error");
            let status = error
                .and_then(|e| e.member("data"))
                .and_then(|d| d.member("statusCode"))
                .and_then(|s| s.as_f64())
                .filter(|n| n.is_finite() && (0.0..=999.0).contains(n));
            TurnEnd {
                subtype: Some("error".into()),
                is_error: Some(true),
                terminal_reason: own(error
                    .and_then(|e| e.member("name"))
                    .and_then(|n| n.as_str())),
                api_error_status: status.map(|n| n as u16),
                ..TurnEnd::default()
            }
        }
        K::Done => TurnEnd {
            subtype: Some("success".into()),
            is_error: Some(false),
            ..TurnEnd::default()
        },
        _ => {
            let reason = own(reason(view));
            let stopped = reason.as_deref() == Some("stop");
            TurnEnd {
                subtype: Some(if stopped {
                    "success".into()
                } else {
                    reason.clone().unwrap_or_default()
                }),
                is_error: Some(!stopped),
                stop_reason: reason,
                ..TurnEnd::default()
            }
        }
    }
}

/// A step is the call the evidence watches (its tools' processes start inside it).
pub(super) fn tool_edge<'a>(kind: LineKind) -> Option<ToolEdge<'a>> {
    Some(match kind {
        K::StepStart => ToolEdge::Began {
            id: STEP_ID.into(),
            name: STEP_NAME.into(),
        },
        _ => ToolEdge::Ended { id: STEP_ID.into() },
    })
}

/// The tool of a `tool_use` whose state is `completed`.
pub(super) fn completed_tool<'a>(view: &LineView<'a>) -> Option<Cow<'a, str>> {
    let part = view.part()?;
    let status = part.member("state")?.member("status")?.as_str()?;
    (status == "completed")
        .then(|| part.member("tool")?.as_str())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(l: &str) -> LineView<'_> {
        LineView::parse_str(l).unwrap()
    }

    #[test]
    fn the_last_step_settles_and_its_reason_is_the_outcome() {
        let stop = view(r#"{"type":"step_finish","sessionID":"s","part":{"reason":"stop"}}"#);
        let facts = ending(&stop, K::StepFinish);
        assert!(!facts.is_error());
        let length = view(r#"{"type":"step_finish","sessionID":"s","part":{"reason":"length"}}"#);
        assert_eq!(classify(&length).signal, Settle);
        let facts = ending(&length, K::StepFinish);
        assert!(facts.is_error());
        assert_eq!(facts.subtype.as_deref(), Some("length"));
        let bare = view(r#"{"type":"step_finish","sessionID":"s","part":{}}"#);
        assert_eq!(classify(&bare).signal, Progress);
    }

    #[test]
    fn an_error_names_itself_and_its_status() {
        let e = view(
            r#"{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"x","statusCode":529}}}"#,
        );
        let facts = ending(&e, K::Error);
        assert!(facts.is_error());
        assert_eq!(facts.terminal_reason.as_deref(), Some("APIError"));
        assert_eq!(facts.api_error_status, Some(529));
        let odd = view(r#"{"type":"error","sessionID":"s","error":"boom"}"#);
        assert_eq!(ending(&odd, K::Error).terminal_reason, None);
    }

    #[test]
    fn only_a_completed_tool_counts() {
        let ok = view(
            r#"{"type":"tool_use","sessionID":"s","part":{"tool":"write","state":{"status":"completed"}}}"#,
        );
        assert_eq!(completed_tool(&ok).as_deref(), Some("write"));
        let err = view(
            r#"{"type":"tool_use","sessionID":"s","part":{"tool":"write","state":{"status":"error"}}}"#,
        );
        assert_eq!(completed_tool(&err), None);
    }
}
