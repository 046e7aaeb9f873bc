//! What one stream-json line means for liveness: the contract is [`classify`]'s docs.

use crate::view::LineView;

/// The liveness meaning of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Signal {
    /// Real work: model output, tool calls and results, session lifecycle.
    Progress,
    /// A sign of life that is not progress: pings, heartbeats, retries, rate-limit frames,
    /// control traffic, unknown types, unparseable lines.
    KeepAlive,
    /// A `result` (or another dialect's end of a turn): the turn is over.
    Settle,
    /// The session waits on a human (a permission request); idle clocks pause.
    HumanWait,
}

impl Signal {
    /// A short lowercase name, e.g. `keep_alive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Progress => "progress",
            Signal::KeepAlive => "keep_alive",
            Signal::Settle => "settle",
            Signal::HumanWait => "human_wait",
        }
    }
}

/// Fine-grained kind of a line, for counters and status displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LineKind {
    /// `assistant`.
    Assistant,
    /// `user`.
    User,
    /// `system` with any subtype except those below.
    System,
    /// `system/api_retry`.
    ApiRetry,
    /// `system/session_state_changed`.
    SessionState,
    /// `stream_event` with real content.
    StreamEvent,
    /// `stream_event` `ping`.
    Ping,
    /// `stream_event` carrying `abandoned_blocks`.
    Abandoned,
    /// `tool_progress` (heartbeats).
    ToolProgress,
    /// `rate_limit_event`.
    RateLimit,
    /// `control_request`.
    ControlRequest,
    /// `control_response`.
    ControlResponse,
    /// `control_cancel_request`.
    ControlCancel,
    /// `result`.
    Result,
    /// `tool_use_summary`.
    ToolUseSummary,
    /// A JSON object with a `type` we do not know, or none.
    Unknown,
    /// Not a JSON object at all.
    Unparseable,
    /// OpenAI Codex `thread.started` (its session id); see [`Dialect::Codex`](crate::Dialect).
    ThreadStarted,
    /// Codex `turn.started`.
    TurnStarted,
    /// Codex `item.started` (a message, a command, a file change, … begins).
    ItemStarted,
    /// Codex `item.updated`.
    ItemUpdated,
    /// Codex `item.completed`.
    ItemCompleted,
    /// Codex `turn.completed`: the turn is over.
    TurnCompleted,
    /// Codex `turn.failed`: the turn is over, failed.
    TurnFailed,
    /// opencode `step_start`; see [`Dialect::Opencode`](crate::Dialect).
    StepStart,
    /// opencode `step_finish` (the last one of a run ends it).
    StepFinish,
    /// opencode `text`.
    Text,
    /// opencode `reasoning`.
    Reasoning,
    /// opencode `tool_use` (printed when the tool has ended).
    ToolUse,
    /// opencode `done` (newer versions, after the last step).
    Done,
    /// `error`: a Codex notice (its retries) or opencode's fatal error.
    Error,
}

impl LineKind {
    /// Every kind, in a stable order (for counters): Claude Code's, then the other dialects'.
    pub const ALL: [LineKind; 31] = [
        LineKind::Assistant,
        LineKind::User,
        LineKind::System,
        LineKind::ApiRetry,
        LineKind::SessionState,
        LineKind::StreamEvent,
        LineKind::Ping,
        LineKind::Abandoned,
        LineKind::ToolProgress,
        LineKind::RateLimit,
        LineKind::ControlRequest,
        LineKind::ControlResponse,
        LineKind::ControlCancel,
        LineKind::Result,
        LineKind::ToolUseSummary,
        LineKind::Unknown,
        LineKind::Unparseable,
        LineKind::ThreadStarted,
        LineKind::TurnStarted,
        LineKind::ItemStarted,
        LineKind::ItemUpdated,
        LineKind::ItemCompleted,
        LineKind::TurnCompleted,
        LineKind::TurnFailed,
        LineKind::StepStart,
        LineKind::StepFinish,
        LineKind::Text,
        LineKind::Reasoning,
        LineKind::ToolUse,
        LineKind::Done,
        LineKind::Error,
    ];

    /// A short name, e.g. `tool_progress`: the line's `type` as the CLI prints it (`api_retry`,
    /// `session_state`, `ping`, `abandoned`: Claude Code's `system` and `stream_event` lines
    /// by what they carry).
    pub fn as_str(self) -> &'static str {
        match self {
            LineKind::Assistant => "assistant",
            LineKind::User => "user",
            LineKind::System => "system",
            LineKind::ApiRetry => "api_retry",
            LineKind::SessionState => "session_state",
            LineKind::StreamEvent => "stream_event",
            LineKind::Ping => "ping",
            LineKind::Abandoned => "abandoned",
            LineKind::ToolProgress => "tool_progress",
            LineKind::RateLimit => "rate_limit_event",
            LineKind::ControlRequest => "control_request",
            LineKind::ControlResponse => "control_response",
            LineKind::ControlCancel => "control_cancel_request",
            LineKind::Result => "result",
            LineKind::ToolUseSummary => "tool_use_summary",
            LineKind::Unknown => "unknown",
            LineKind::Unparseable => "unparseable",
            LineKind::ThreadStarted => "thread.started",
            LineKind::TurnStarted => "turn.started",
            LineKind::ItemStarted => "item.started",
            LineKind::ItemUpdated => "item.updated",
            LineKind::ItemCompleted => "item.completed",
            LineKind::TurnCompleted => "turn.completed",
            LineKind::TurnFailed => "turn.failed",
            LineKind::StepStart => "step_start",
            LineKind::StepFinish => "step_finish",
            LineKind::Text => "text",
            LineKind::Reasoning => "reasoning",
            LineKind::ToolUse => "tool_use",
            LineKind::Done => "done",
            LineKind::Error => "error",
        }
    }

    /// Index into [`LineKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The class of one line: its liveness signal and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Class {
    /// What the line means for the clocks.
    pub signal: Signal,
    /// What the line is.
    pub kind: LineKind,
}

impl Class {
    /// The class of a line that did not parse: a keep-alive.
    pub const UNPARSEABLE: Class = Class {
        signal: Signal::KeepAlive,
        kind: LineKind::Unparseable,
    };
}

/// Classify one parsed line of Claude Code's stream-json (the default dialect; the others'
/// lines: [`Dialect::classify`](crate::Dialect::classify)): what it means for liveness, the
/// classification contract.
///
/// | line | counts as |
/// |---|---|
/// | `assistant`, `user`, `system/init`, `system/status`, `system/thinking_tokens`, `system/task_*`, `system/hook_*`, `system/compact_boundary`, `tool_use_summary`, any `stream_event` whose `event.type` is not `ping` and that carries no `abandoned_blocks`; subagent lines alike | [`Signal::Progress`] |
/// | `stream_event` `ping` or with `abandoned_blocks`, `tool_progress`, `rate_limit_event`, `system/api_retry`, every other `system` subtype, `control_request` / `control_response` / `control_cancel_request` (except a human wait), any unknown `type`, an unparseable line | [`Signal::KeepAlive`] |
/// | `result` (any subtype) | [`Signal::Settle`] |
/// | `system/session_state_changed` with `state: "requires_action"`, or a `control_request` whose `request.subtype` is `can_use_tool` | [`Signal::HumanWait`] |
///
/// The classifier is pure and total: every input, including garbage, gets a class.
///
/// **MCP calls.** While an MCP tool call is outstanding Claude Code prints nothing but a
/// `tool_progress` heartbeat every 30 s (`tool_name` `mcp__<server>__<tool>`, the call's id in
/// `parent_tool_use_id`): keep-alives, so the no-progress clock runs. Claude Code aborts such a
/// call by itself (1,800 s without a response for a stdio server by default) and the session
/// goes on; the registry therefore keeps the no-progress kill from coming before that point
/// plus a margin (see [`McpLimits`](crate::McpLimits)). The classification itself is unchanged.
pub fn classify(view: &LineView<'_>) -> Class {
    use LineKind as K;
    use Signal::*;
    let c = |signal, kind| Class { signal, kind };
    let kind = view.kind();
    match kind.as_deref() {
        Some("assistant") => c(Progress, K::Assistant),
        Some("user") => c(Progress, K::User),
        Some("tool_use_summary") => c(Progress, K::ToolUseSummary),
        Some("result") => c(Settle, K::Result),
        Some("stream_event") => {
            if view.has_abandoned_blocks() {
                c(KeepAlive, K::Abandoned)
            } else if view.event_type().as_deref() == Some("ping") {
                c(KeepAlive, K::Ping)
            } else {
                c(Progress, K::StreamEvent)
            }
        }
        Some("system") => {
            let sub = view.subtype();
            match sub.as_deref() {
                Some("api_retry") => c(KeepAlive, K::ApiRetry),
                Some("session_state_changed") => {
                    if view.state().as_deref() == Some("requires_action") {
                        c(HumanWait, K::SessionState)
                    } else {
                        c(KeepAlive, K::SessionState)
                    }
                }
                Some("init" | "status" | "thinking_tokens" | "compact_boundary") => {
                    c(Progress, K::System)
                }
                Some(s) if s.starts_with("task_") || s.starts_with("hook_") => {
                    c(Progress, K::System)
                }
                _ => c(KeepAlive, K::System),
            }
        }
        Some("tool_progress") => c(KeepAlive, K::ToolProgress),
        Some("rate_limit_event") => c(KeepAlive, K::RateLimit),
        Some("control_request") => {
            if view.request_subtype().as_deref() == Some("can_use_tool") {
                c(HumanWait, K::ControlRequest)
            } else {
                c(KeepAlive, K::ControlRequest)
            }
        }
        Some("control_response") => c(KeepAlive, K::ControlResponse),
        Some("control_cancel_request") => c(KeepAlive, K::ControlCancel),
        _ => c(KeepAlive, K::Unknown),
    }
}

/// Parse and classify one raw line; an unparseable line is [`Class::UNPARSEABLE`].
pub fn classify_line(line: &[u8]) -> Class {
    match LineView::parse(line) {
        Ok(v) => classify(&v),
        Err(_) => Class::UNPARSEABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(line: &str) -> Class {
        classify_line(line.as_bytes())
    }

    #[test]
    fn every_kind_has_its_own_name_and_index() {
        let mut names = std::collections::BTreeSet::new();
        for (i, k) in LineKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i, "{k:?}");
            assert!(names.insert(k.as_str()), "{} twice", k.as_str());
        }
    }

    #[test]
    fn the_contract_table() {
        use LineKind as K;
        use Signal::*;
        let cases: &[(&str, Signal, LineKind)] = &[
            (
                r#"{"type":"assistant","message":{}}"#,
                Progress,
                K::Assistant,
            ),
            (r#"{"type":"user","message":{}}"#, Progress, K::User),
            (r#"{"type":"system","subtype":"init"}"#, Progress, K::System),
            (
                r#"{"type":"system","subtype":"status"}"#,
                Progress,
                K::System,
            ),
            (
                r#"{"type":"system","subtype":"thinking_tokens"}"#,
                Progress,
                K::System,
            ),
            (
                r#"{"type":"system","subtype":"task_started"}"#,
                Progress,
                K::System,
            ),
            (
                r#"{"type":"system","subtype":"task_notification"}"#,
                Progress,
                K::System,
            ),
            (
                r#"{"type":"system","subtype":"hook_response"}"#,
                Progress,
                K::System,
            ),
            (
                r#"{"type":"system","subtype":"compact_boundary"}"#,
                Progress,
                K::System,
            ),
            (
                r#"{"type":"tool_use_summary"}"#,
                Progress,
                K::ToolUseSummary,
            ),
            (
                r#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#,
                Progress,
                K::StreamEvent,
            ),
            (
                r#"{"type":"stream_event","event":{"type":"message_start"},"parent_tool_use_id":"toolu_1"}"#,
                Progress,
                K::StreamEvent,
            ),
            (
                r#"{"type":"stream_event","event":{"type":"ping"}}"#,
                KeepAlive,
                K::Ping,
            ),
            (
                r#"{"type":"stream_event","event":{"type":"message_stop"},"abandoned_blocks":{"from_block_index":0}}"#,
                KeepAlive,
                K::Abandoned,
            ),
            (
                r#"{"type":"tool_progress","heartbeat":true}"#,
                KeepAlive,
                K::ToolProgress,
            ),
            (
                r#"{"type":"rate_limit_event","rate_limit_info":{}}"#,
                KeepAlive,
                K::RateLimit,
            ),
            (
                r#"{"type":"system","subtype":"api_retry","retry_delay_ms":500}"#,
                KeepAlive,
                K::ApiRetry,
            ),
            (
                r#"{"type":"system","subtype":"something_new"}"#,
                KeepAlive,
                K::System,
            ),
            (r#"{"type":"system"}"#, KeepAlive, K::System),
            (
                r#"{"type":"control_request","request":{"subtype":"hook_callback"}}"#,
                KeepAlive,
                K::ControlRequest,
            ),
            (
                r#"{"type":"control_response","response":{}}"#,
                KeepAlive,
                K::ControlResponse,
            ),
            (
                r#"{"type":"control_cancel_request"}"#,
                KeepAlive,
                K::ControlCancel,
            ),
            (r#"{"type":"brand_new_type"}"#, KeepAlive, K::Unknown),
            (r#"{"no_type":1}"#, KeepAlive, K::Unknown),
            ("garbage", KeepAlive, K::Unparseable),
            (
                r#"{"type":"result","subtype":"success"}"#,
                Settle,
                K::Result,
            ),
            (
                r#"{"type":"result","subtype":"error_max_turns"}"#,
                Settle,
                K::Result,
            ),
            (
                r#"{"type":"system","subtype":"session_state_changed","state":"requires_action"}"#,
                HumanWait,
                K::SessionState,
            ),
            (
                r#"{"type":"system","subtype":"session_state_changed","state":"running"}"#,
                KeepAlive,
                K::SessionState,
            ),
            (
                r#"{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool"}}"#,
                HumanWait,
                K::ControlRequest,
            ),
        ];
        for (line, signal, kind) in cases {
            assert_eq!(
                class(line),
                Class {
                    signal: *signal,
                    kind: *kind
                },
                "{line}"
            );
        }
    }
}
