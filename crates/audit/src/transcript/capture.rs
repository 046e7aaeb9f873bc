//! One line of a watchdog capture, read by the core's capture reader (see the
//! [module docs](super)).

use std::borrow::Cow;
use std::sync::Arc;

use watchdog_core::facts::{ClaudeSessionId, ResultFacts};
use watchdog_core::{Class, LineKind, LineView, SessionDialect, Signal};
use watchdog_host::capture::{CaptureError, EntryView, RecordView};

use super::log::{Ending, Entry, EntryKind, SessionLog, Stop, ToolUse};

/// One capture line, read by the core's capture reader (the one `replay` and the simulation
/// use), with the replay's rule for times: a `t_ms` that goes backwards, is fractional,
/// negative or absurd is taken as the previous time (counted in `clock_jumps`).
pub(super) fn capture_line(log: &mut SessionLog, line: &[u8]) -> bool {
    let entry = match EntryView::parse(line) {
        Ok(Some(e)) => e,
        Ok(None) => return true,
        Err(CaptureError::NoTime) => {
            log.read.untimed_entries += 1;
            return true;
        }
        Err(CaptureError::NotAnObject(_)) => return false,
    };
    let t = match entry.t_ms {
        Ok(t) if t <= watchdog_host::replay::MAX_T_MS => {
            // After a boundary the next run's `t_ms` starts at 0: continue the timeline.
            log.clamp(
                i64::try_from(t)
                    .unwrap_or(i64::MAX)
                    .saturating_add(log.run_offset),
            )
        }
        _ => {
            log.read.clock_jumps += 1;
            log.last_t().unwrap_or(log.run_offset)
        }
    };
    let kind = match &entry.record {
        RecordView::Boundary => {
            log.run_offset = t;
            return true;
        }
        RecordView::Line(view) => {
            // In the dialect the run's lines are in (as the replay reads them).
            let class = log.dialect.classify(view);
            if log.session_id.is_none() {
                log.session_id = ClaudeSessionId::of_dialect_line(view, class.kind)
                    .map(|s| s.as_str().to_owned())
                    .or_else(|| view.session_id().map(Cow::into_owned));
            }
            // A `tool_progress` heartbeat names its call in `parent_tool_use_id`, even on the
            // main thread: a keep-alive, like every keep-alive of a subagent.
            if view.parent_tool_use_id().is_some() && class.signal != Signal::KeepAlive {
                EntryKind::SubagentProgress
            } else {
                // opencode's `done` after its last step: that step said how the turn went.
                let ended = || {
                    log.entries
                        .iter()
                        .any(|e| matches!(e.kind, EntryKind::Result(_)))
                };
                if class.kind == LineKind::Done && ended() {
                    EntryKind::Progress
                } else {
                    capture_kind(view, class)
                }
            }
        }
        RecordView::Unparseable => EntryKind::KeepAlive,
        RecordView::Stdin(Some(view)) if view.kind().as_deref() == Some("control_response") => {
            EntryKind::HumanWaitEnd
        }
        RecordView::Start {
            wall_ms, dialect, ..
        } => {
            if log.spawn_wall_ms.is_none() {
                log.spawn_wall_ms = *wall_ms;
                log.dialect = SessionDialect::expect(dialect.unwrap_or_default());
            }
            // Kept for the MCP rule: the child's environment as the capture recorded it.
            if log.start.is_none() {
                log.start = serde_json::from_slice::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| {
                        v.get("start")
                            .map(watchdog_host::capture::StartFacts::from_start_object)
                    });
            }
            return true;
        }
        RecordView::Stdin(_)
        | RecordView::Stderr
        | RecordView::Exit { .. }
        | RecordView::Tree(_)
        | RecordView::Receipt(_) => return true,
    };
    log.entries.push(Entry { t, kind });
    true
}

fn capture_kind(view: &LineView<'_>, class: Class) -> EntryKind {
    match (class.kind, class.signal) {
        (LineKind::Assistant, _) => EntryKind::Assistant {
            tools: view
                .tool_uses()
                .map(|(id, name)| ToolUse {
                    id: Box::from(&*id),
                    name: Arc::from(&*name),
                })
                .collect(),
            stop: view.stop_reason().map_or(Stop::None, |s| Stop::parse(&s)),
            api_error: false,
            max_tokens_error: view.error().as_deref() == Some("max_output_tokens"),
        },
        (LineKind::User, _) => {
            let ids: Vec<Box<str>> = view.tool_results().map(|(id, _)| Box::from(&*id)).collect();
            if ids.is_empty() {
                EntryKind::Prompt {
                    human: false,
                    interrupt: false,
                }
            } else {
                EntryKind::ToolResults { ids, human: false }
            }
        }
        (LineKind::Result, _) => EntryKind::Result(result_ending(view)),
        // Another dialect's end of a turn, read as a `result`'s facts.
        (kind, Signal::Settle) => {
            EntryKind::Result(if ResultFacts::of_end(view, kind).is_error_result() {
                Ending::Error
            } else {
                Ending::Result
            })
        }
        (_, Signal::HumanWait) => EntryKind::HumanWaitStart,
        (_, Signal::Progress) => EntryKind::Progress,
        _ => EntryKind::KeepAlive,
    }
}

fn result_ending(view: &LineView<'_>) -> Ending {
    let stop = view.stop_reason();
    let success = view.subtype().as_deref() == Some("success");
    let error = view.is_error() == Some(true) || !success;
    if view.api_error().as_deref() == Some("max_output_tokens")
        || stop.as_deref() == Some("max_tokens")
    {
        Ending::MaxTokens
    } else if error {
        Ending::Error
    } else if stop.as_deref() == Some("tool_use") {
        Ending::Incomplete
    } else {
        Ending::Result
    }
}
