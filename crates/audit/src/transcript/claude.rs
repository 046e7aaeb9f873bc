//! One line of a Claude Code transcript, as the audit's timed entries: read by the core's one
//! transcript reader ([`watchdog_core::transcript::Entry`]), see the [module docs](super).

use std::sync::Arc;

use watchdog_core::classify_line;
use watchdog_core::transcript::Entry;
use watchdog_core::Signal;

use super::log::{EntryKind, SessionLog, Stop, ToolUse};

pub(super) fn transcript_line(log: &mut SessionLog, line: &[u8]) -> bool {
    let Some(top) = Entry::parse(line) else {
        return false;
    };
    if !top.is_timing() {
        return true;
    }
    if log.session_id.is_none() {
        if let Some(s) = top.session_id() {
            log.session_id = Some(s.into_owned());
        }
    }
    if top.is_sidechain() {
        log.subagent = true;
    }
    let kind = match top.kind().as_deref() {
        Some("assistant") => assistant_entry(&top),
        Some("user") => user_entry(&top),
        Some("queue-operation") if top.operation().as_deref() == Some("enqueue") => {
            EntryKind::Enqueue
        }
        Some("system") => {
            let subtype = top.subtype();
            let progress = system_is_progress(subtype.as_deref());
            EntryKind::System {
                subtype: subtype.map(|s| s.into()),
                progress,
            }
        }
        Some("progress") if top.data_type().as_deref() == Some("agent_progress") => {
            EntryKind::SubagentProgress
        }
        Some("progress") => EntryKind::KeepAlive,
        _ => return true,
    };
    let Some(t) = top.timestamp_ms() else {
        log.read.untimed_entries += 1;
        return true;
    };
    log.push(t, kind);
    true
}

/// The core's class of `system/<subtype>`.
fn system_is_progress(subtype: Option<&str>) -> bool {
    let line = match subtype {
        Some(s) => serde_json::json!({"type": "system", "subtype": s}).to_string(),
        None => r#"{"type":"system"}"#.to_string(),
    };
    classify_line(line.as_bytes()).signal == Signal::Progress
}

fn assistant_entry(top: &Entry<'_>) -> EntryKind {
    let stop = match top.stop_reason() {
        Some(s) => Stop::parse(&s),
        None => Stop::None,
    };
    let tools = top
        .tool_uses()
        .map(|(id, name)| ToolUse {
            id: Box::from(&*id),
            name: Arc::from(&*name),
        })
        .collect();
    EntryKind::Assistant {
        tools,
        stop,
        api_error: top.is_api_error(),
        max_tokens_error: top.is_max_output_tokens(),
    }
}

fn user_entry(top: &Entry<'_>) -> EntryKind {
    let ids: Vec<Box<str>> = top.tool_result_ids().map(|id| Box::from(&*id)).collect();
    if !ids.is_empty() {
        return EntryKind::ToolResults {
            ids,
            human: top.decided_by_user(),
        };
    }
    EntryKind::Prompt {
        human: !top.is_meta(),
        interrupt: top.is_interrupt(),
    }
}
