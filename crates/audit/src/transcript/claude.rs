//! One line of a Claude Code transcript, skimmed for the few fields the audit reads (see the
//! [module docs](super)).

use std::sync::Arc;

use watchdog_core::classify_line;
use watchdog_core::parse_iso_ms;
use watchdog_core::Signal;
use watchdog_json::skim::{self as json, Val};

use super::log::{EntryKind, SessionLog, Stop, ToolUse};

/// The top-level fields of a transcript line that `audit` reads.
#[derive(Default)]
struct Top<'a> {
    ty: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    session_id: Option<&'a [u8]>,
    is_sidechain: Option<&'a [u8]>,
    is_meta: Option<&'a [u8]>,
    is_api_error: Option<&'a [u8]>,
    error: Option<&'a [u8]>,
    api_error: Option<&'a [u8]>,
    operation: Option<&'a [u8]>,
    subtype: Option<&'a [u8]>,
    permission: Option<&'a [u8]>,
    message: Message<'a>,
    data: Option<&'a [u8]>,
}

const INTERRUPT: &str = "[Request interrupted by user";

pub(super) fn transcript_line(log: &mut SessionLog, line: &[u8]) -> bool {
    let mut top = Top::default();
    let end = json::object(line, 0, |k, vi| {
        let slot = match k {
            b"message" => return read_message(line, vi, &mut top.message),
            b"type" => {
                let (v, e) = json::value_at(line, vi)?;
                top.ty = Some(v);
                // A bookkeeping entry (API request records, attachments, costs, …): nothing
                // more is read from it.
                return Some(if is_timing_type(v) {
                    Val::End(e)
                } else {
                    Val::Stop
                });
            }
            b"timestamp" => &mut top.timestamp,
            b"sessionId" => &mut top.session_id,
            b"isSidechain" => &mut top.is_sidechain,
            b"isMeta" => &mut top.is_meta,
            b"isApiErrorMessage" => &mut top.is_api_error,
            b"error" => &mut top.error,
            b"apiError" => &mut top.api_error,
            b"operation" => &mut top.operation,
            b"subtype" => &mut top.subtype,
            b"permissionDecision" => &mut top.permission,
            b"data" => &mut top.data,
            _ => return Some(Val::Skip),
        };
        let (v, e) = json::value_at(line, vi)?;
        *slot = Some(v);
        Some(Val::End(e))
    });
    match end {
        // Stopped early at a bookkeeping type: a closed object is enough (the line was
        // trimmed; a cut last line has no `}`).
        Some(json::STOPPED) => return line.last() == Some(&b'}'),
        Some(e) if json::only_ws_after(line, e) => {}
        _ => return false,
    }
    if log.session_id.is_none() {
        if let Some(s) = top.session_id.and_then(json::as_str) {
            log.session_id = Some(s.into_owned());
        }
    }
    if top.is_sidechain.and_then(json::as_bool) == Some(true) {
        log.subagent = true;
    }
    let ty = top.ty.and_then(json::as_str);
    let kind = match ty.as_deref() {
        Some("assistant") => assistant_entry(&top),
        Some("user") => user_entry(&top),
        Some("queue-operation")
            if top.operation.and_then(json::as_str).as_deref() == Some("enqueue") =>
        {
            EntryKind::Enqueue
        }
        Some("system") => {
            let subtype = top.subtype.and_then(json::as_str);
            let progress = system_is_progress(subtype.as_deref());
            EntryKind::System {
                subtype: subtype.map(|s| s.into()),
                progress,
            }
        }
        Some("progress") => {
            let mut sub = false;
            if let Some(d) = top.data {
                json::fields(d, 0, |k, v| {
                    if k == b"type" && json::as_str(v).as_deref() == Some("agent_progress") {
                        sub = true;
                    }
                });
            }
            if sub {
                EntryKind::SubagentProgress
            } else {
                EntryKind::KeepAlive
            }
        }
        _ => return true,
    };
    let Some(t) = top
        .timestamp
        .and_then(json::as_str)
        .and_then(|s| parse_iso_ms(&s))
    else {
        log.read.untimed_entries += 1;
        return true;
    };
    log.push(t, kind);
    true
}

/// Whether a raw `type` value is one of the timing entry types.
fn is_timing_type(v: &[u8]) -> bool {
    matches!(
        v,
        br#""assistant""#
            | br#""user""#
            | br#""system""#
            | br#""progress""#
            | br#""queue-operation""#
    ) || (v.contains(&b'\\')
        && json::as_str(v).is_some_and(|s| {
            matches!(
                &*s,
                "assistant" | "user" | "system" | "progress" | "queue-operation"
            )
        }))
}

/// The core's class of `system/<subtype>`.
fn system_is_progress(subtype: Option<&str>) -> bool {
    let line = match subtype {
        Some(s) => serde_json::json!({"type": "system", "subtype": s}).to_string(),
        None => r#"{"type":"system"}"#.to_string(),
    };
    classify_line(line.as_bytes()).signal == Signal::Progress
}

/// The parts of `message` that `audit` reads, read in place (its content is scanned once).
#[derive(Default)]
struct Message<'a> {
    stop_reason: Option<&'a [u8]>,
    /// `content` when it is a plain string.
    content_str: Option<&'a [u8]>,
    /// `content` blocks when it is an array.
    blocks: Vec<Block<'a>>,
}

/// Read `message` at `line[vi]` in place. A `message` that is not an object is skipped.
fn read_message<'a>(line: &'a [u8], vi: usize, m: &mut Message<'a>) -> Option<Val> {
    if line.get(vi) != Some(&b'{') {
        return Some(Val::Skip);
    }
    let end = json::object(line, vi, |k, ci| match k {
        b"stop_reason" => {
            let (v, e) = json::value_at(line, ci)?;
            m.stop_reason = Some(v);
            Some(Val::End(e))
        }
        b"content" if line.get(ci) == Some(&b'[') => {
            let e = json::array(line, ci, |bi| {
                if line.get(bi) != Some(&b'{') {
                    return Some(Val::Skip);
                }
                let mut b = Block::default();
                let e = json::fields(line, bi, |k, v| match k {
                    b"type" => b.ty = Some(v),
                    b"id" => b.id = Some(v),
                    b"name" => b.name = Some(v),
                    b"tool_use_id" => b.tool_use_id = Some(v),
                    b"text" => b.text = Some(v),
                    _ => {}
                })?;
                m.blocks.push(b);
                Some(Val::End(e))
            })?;
            Some(Val::End(e))
        }
        b"content" => {
            let (v, e) = json::value_at(line, ci)?;
            m.content_str = Some(v);
            Some(Val::End(e))
        }
        _ => Some(Val::Skip),
    })?;
    Some(Val::End(end))
}

/// The fields of one content block that `audit` reads.
#[derive(Default)]
struct Block<'a> {
    ty: Option<&'a [u8]>,
    id: Option<&'a [u8]>,
    name: Option<&'a [u8]>,
    tool_use_id: Option<&'a [u8]>,
    text: Option<&'a [u8]>,
}

fn owned(v: Option<&[u8]>) -> Box<str> {
    v.and_then(json::as_str)
        .map(|s| Box::from(&*s))
        .unwrap_or_default()
}

fn assistant_entry(top: &Top<'_>) -> EntryKind {
    let m = &top.message;
    let stop = match m.stop_reason.and_then(json::as_str) {
        Some(s) => Stop::parse(&s),
        None => Stop::None,
    };
    let tools = m
        .blocks
        .iter()
        .filter(|b| b.ty.and_then(json::as_str).as_deref() == Some("tool_use"))
        .map(|b| ToolUse {
            id: owned(b.id),
            name: b
                .name
                .and_then(json::as_str)
                .map_or_else(|| Arc::from(""), |s| Arc::from(&*s)),
        })
        .collect();
    let is_max = |v: Option<&[u8]>| {
        v.and_then(json::as_str)
            .is_some_and(|s| s == "max_output_tokens")
    };
    EntryKind::Assistant {
        tools,
        stop,
        api_error: top.is_api_error.and_then(json::as_bool) == Some(true),
        max_tokens_error: is_max(top.error) || is_max(top.api_error),
    }
}

fn user_entry(top: &Top<'_>) -> EntryKind {
    let m = &top.message;
    let mut ids = Vec::new();
    let mut interrupt = m
        .content_str
        .and_then(json::as_str)
        .is_some_and(|s| s.starts_with(INTERRUPT));
    for b in &m.blocks {
        match b.ty.and_then(json::as_str).as_deref() {
            Some("tool_result") => ids.push(owned(b.tool_use_id)),
            Some("text") => {
                interrupt |= b
                    .text
                    .and_then(json::as_str)
                    .is_some_and(|t| t.starts_with(INTERRUPT))
            }
            _ => {}
        }
    }
    if !ids.is_empty() {
        let mut human = false;
        if let Some(p) = top.permission {
            json::fields(p, 0, |k, v| {
                if k == b"source" && json::as_str(v).as_deref() == Some("user") {
                    human = true;
                }
            });
        }
        return EntryKind::ToolResults { ids, human };
    }
    EntryKind::Prompt {
        human: top.is_meta.and_then(json::as_bool) != Some(true),
        interrupt,
    }
}
