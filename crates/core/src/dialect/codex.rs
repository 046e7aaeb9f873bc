//! OpenAI Codex's `codex exec --json` (measured with Codex 0.169.0): one `ThreadEvent` a line.
//!
//! A run prints `thread.started` (the session: `thread_id`, which `codex exec resume` takes),
//! then per turn `turn.started`, its items (`item.started` / `item.updated` /
//! `item.completed`: agent messages, reasoning, commands, file changes, MCP and web calls, to-do
//! lists), and `turn.completed` (success) or `turn.failed` (Codex then exits 1). A top-level
//! `error` is a notice: a retry (`Reconnecting... 2/5`) or the failure a `turn.failed` repeats.
//! An `error` *item* (e.g. "Model metadata … not found") is a warning, not work. `exec` prints no
//! event for a human wait (it runs with `approval_policy = "never"`, and `request_user_input`
//! is unavailable to it), and nothing while a command runs: its `item.started` opens the call.

use std::borrow::Cow;

use super::{GrammarRow, ToolEdge, TurnEnd, Written};
use crate::classify::{Class, LineKind, Signal};
use crate::view::{Field, LineView};

use LineKind as K;
use Signal::{KeepAlive, Progress, Settle};

pub(super) const GRAMMAR: &[GrammarRow] = &[
    GrammarRow {
        event: "`thread.started`",
        example: r#"{"type":"thread.started","thread_id":"01a24de5-6f54-72f3-b68e-c7e13f5234f2"}"#,
        signal: Progress,
        kind: K::ThreadStarted,
        reads: "the session id (`thread_id`)",
    },
    GrammarRow {
        event: "`turn.started`",
        example: r#"{"type":"turn.started"}"#,
        signal: Progress,
        kind: K::TurnStarted,
        reads: "",
    },
    GrammarRow {
        event: "`item.started` (any item but `error`)",
        example: r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -c 'cargo test'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
        signal: Progress,
        kind: K::ItemStarted,
        reads: "a `command_execution`, `mcp_tool_call`, `web_search` or `collab_tool_call` item begins a tool call (the process-tree evidence)",
    },
    GrammarRow {
        event: "`item.updated` (any item but `error`)",
        example: r#"{"type":"item.updated","item":{"id":"item_3","type":"todo_list","items":[{"text":"build","completed":true}]}}"#,
        signal: Progress,
        kind: K::ItemUpdated,
        reads: "",
    },
    GrammarRow {
        event: "`item.completed` (any item but `error`)",
        example: r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"All done."}}"#,
        signal: Progress,
        kind: K::ItemCompleted,
        reads: "ends the item's tool call; a completed `file_change` is the first write (the pre-write extension ends)",
    },
    GrammarRow {
        event: "`item.completed` of an `error` item (a warning)",
        example: r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `gpt-5-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}"#,
        signal: KeepAlive,
        kind: K::ItemCompleted,
        reads: "",
    },
    GrammarRow {
        event: "`error`",
        example: r#"{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}"#,
        signal: KeepAlive,
        kind: K::Error,
        reads: "a retry notice, or the failure the `turn.failed` after it repeats: neither progress nor an end",
    },
    GrammarRow {
        event: "`turn.completed`",
        example: r#"{"type":"turn.completed","usage":{"input_tokens":20,"cached_input_tokens":0,"output_tokens":10}}"#,
        signal: Settle,
        kind: K::TurnCompleted,
        reads: "the outcome: `success`",
    },
    GrammarRow {
        event: "`turn.failed`",
        example: r#"{"type":"turn.failed","error":{"message":"unexpected status 400 Bad Request"}}"#,
        signal: Settle,
        kind: K::TurnFailed,
        reads: "the outcome: `error_result` (subtype `error`, terminal reason `turn.failed`)",
    },
];

/// `item`, when an object.
fn item<'a>(view: &LineView<'a>) -> Option<Field<'a>> {
    view.item()
}

fn item_type<'a>(item: &Field<'a>) -> Option<Cow<'a, str>> {
    item.member("type")?.as_str()
}

pub(super) fn classify(view: &LineView<'_>) -> Class {
    let c = |signal, kind| Class { signal, kind };
    let ty = view.kind();
    let item_kind = match ty.as_deref() {
        Some("thread.started") => return c(Progress, K::ThreadStarted),
        Some("turn.started") => return c(Progress, K::TurnStarted),
        Some("turn.completed") => return c(Settle, K::TurnCompleted),
        Some("turn.failed") => return c(Settle, K::TurnFailed),
        Some("error") => return c(KeepAlive, K::Error),
        Some("item.started") => K::ItemStarted,
        Some("item.updated") => K::ItemUpdated,
        Some("item.completed") => K::ItemCompleted,
        _ => return c(KeepAlive, K::Unknown),
    };
    // An error item is a warning Codex shows; it moves nothing.
    let warning = item(view).is_some_and(|i| item_type(&i).as_deref() == Some("error"));
    c(if warning { KeepAlive } else { Progress }, item_kind)
}

/// `thread_id` of a `thread.started`.
pub(super) fn session_id<'a>(view: &LineView<'a>) -> Option<Cow<'a, str>> {
    view.member("thread_id")?.as_str()
}

/// How a turn ended.
pub(super) fn ending(kind: LineKind) -> TurnEnd {
    let failed = kind == K::TurnFailed;
    TurnEnd {
        subtype: Some(if failed { "error" } else { "success" }.into()),
        is_error: Some(failed),
        terminal_reason: failed.then(|| "turn.failed".into()),
        ..TurnEnd::default()
    }
}

/// The tool a Codex item of type `ty` is a call of, if it is one that runs.
fn tool_name<'a>(item: &Field<'a>, ty: &str) -> Option<Cow<'a, str>> {
    match ty {
        "command_execution" => Some("exec_command".into()),
        "mcp_tool_call" => Some(
            item.member("tool")
                .and_then(|t| t.as_str())
                .unwrap_or("mcp_tool_call".into()),
        ),
        t @ ("web_search" | "collab_tool_call") => Some(Cow::Owned(t.to_owned())),
        _ => None,
    }
}

pub(super) fn tool_edge<'a>(view: &LineView<'a>, kind: LineKind) -> Option<ToolEdge<'a>> {
    item_call(view, kind).0
}

/// What an item line says of tool calls, its item's type read once: the call it begins or
/// ends, and (a completed `file_change` that did not fail) the files it wrote.
pub(super) fn item_call<'a>(
    view: &LineView<'a>,
    kind: LineKind,
) -> (Option<ToolEdge<'a>>, Option<Written<'a>>) {
    let Some(item) = item(view) else {
        return (None, None);
    };
    let ty = item_type(&item);
    if ty.as_deref() == Some("file_change") {
        let failed = item.member("status").and_then(|s| s.as_str()).as_deref() == Some("failed");
        let wrote = kind == K::ItemCompleted && !failed;
        return (None, wrote.then_some(Written::Files));
    }
    let edge = (|| {
        let name = tool_name(&item, ty.as_deref()?)?;
        let id = item.member("id")?.as_str()?;
        Some(if kind == K::ItemStarted {
            ToolEdge::Began { id, name }
        } else {
            ToolEdge::Ended { id }
        })
    })();
    (edge, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(l: &str) -> LineView<'_> {
        LineView::parse_str(l).unwrap()
    }

    #[test]
    fn a_command_item_is_a_tool_call_from_its_start_to_its_completion() {
        let start = view(
            r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"sleep 9","status":"in_progress"}}"#,
        );
        assert_eq!(
            tool_edge(&start, K::ItemStarted),
            Some(ToolEdge::Began {
                id: "item_1".into(),
                name: "exec_command".into()
            })
        );
        let done = view(
            r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","exit_code":0,"status":"completed"}}"#,
        );
        assert_eq!(
            tool_edge(&done, K::ItemCompleted),
            Some(ToolEdge::Ended {
                id: "item_1".into()
            })
        );
        let message = view(
            r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"x"}}"#,
        );
        assert_eq!(tool_edge(&message, K::ItemCompleted), None);
        let mcp = view(
            r#"{"type":"item.started","item":{"id":"i","type":"mcp_tool_call","server":"db","tool":"query"}}"#,
        );
        assert!(
            matches!(tool_edge(&mcp, K::ItemStarted), Some(ToolEdge::Began { name, .. }) if name == "query")
        );
    }

    #[test]
    fn a_completed_file_change_is_a_write_and_a_failed_one_is_not() {
        let ok = view(
            r#"{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[],"status":"completed"}}"#,
        );
        assert_eq!(item_call(&ok, K::ItemCompleted).1, Some(Written::Files));
        let failed = view(
            r#"{"type":"item.completed","item":{"id":"i","type":"file_change","status":"failed"}}"#,
        );
        assert_eq!(item_call(&failed, K::ItemCompleted).1, None);
    }

    #[test]
    fn endings_say_how_the_turn_went() {
        assert!(!ending(K::TurnCompleted).is_error());
        let failed = ending(K::TurnFailed);
        assert!(failed.is_error());
        assert_eq!(failed.terminal_reason.as_deref(), Some("turn.failed"));
    }

    #[test]
    fn odd_lines_are_keep_alives_and_odd_fields_read_as_absent() {
        for l in [
            r#"{"type":"item.started","item":7}"#,
            r#"{"type":"item.completed"}"#,
        ] {
            assert_eq!(classify(&view(l)).signal, Progress, "{l}");
            assert_eq!(tool_edge(&view(l), K::ItemStarted), None);
        }
        assert_eq!(classify(&view(r#"{"type":"turn.begun"}"#)).kind, K::Unknown);
        assert_eq!(
            session_id(&view(r#"{"type":"thread.started","thread_id":5}"#)),
            None
        );
    }
}
