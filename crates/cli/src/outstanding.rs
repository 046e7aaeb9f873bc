//! What a session had outstanding beyond its own turn (its background tasks, the wakeups it
//! declared, the host's control requests), as JSON and as prose: for a kill's receipt, the
//! end of a run, the notices said while it runs (a task gone silent, a result nobody asked
//! for), the summary, `replay --json` and the synthetic `result`.

use serde_json::{json, Value};
use watchdog_core::config::HumanDuration;
use watchdog_core::facts::{TaskCounts, Turns};
use watchdog_core::{Outstanding, RequestNote, TaskNote, WakeupNote};

use crate::millis::ms;

/// At most this many tasks are named in one sentence (the JSON has them all).
const NAMED: usize = 3;

/// `{"tasks": [...], "wakeups": [...], "requests": [...]}`.
pub fn outstanding_json(o: &Outstanding) -> Value {
    json!({
        "tasks": o.tasks.iter().map(task_json).collect::<Vec<_>>(),
        "wakeups": o.wakeups.iter().map(wakeup_json).collect::<Vec<_>>(),
        "requests": o.requests.iter().map(request_json).collect::<Vec<_>>(),
    })
}

/// `{"task_id", "description", "task_type", "silent_ms", "expires_in_ms"}`.
pub fn task_json(t: &TaskNote) -> Value {
    json!({
        "task_id": t.task_id,
        "description": t.description,
        "task_type": t.task_type,
        "silent_ms": ms(t.silent),
        "expires_in_ms": t.expires_in.map(ms),
    })
}

fn wakeup_json(w: &WakeupNote) -> Value {
    json!({
        "tool": w.tool.as_str(),
        "tool_use_id": w.tool_use_id,
        "overdue_ms": ms(w.overdue),
        "due_in_ms": ms(w.due_in),
    })
}

fn request_json(r: &RequestNote) -> Value {
    json!({
        "request_id": r.request_id,
        "subtype": r.subtype,
        "waited_ms": ms(r.waited),
    })
}

/// `{"messages", "results", "unsolicited"}`.
pub fn turns_json(t: &Turns) -> Value {
    json!({"messages": t.messages, "results": t.results, "unsolicited": t.unsolicited})
}

/// `{"started", "ended", "open": [task ids]}`.
pub fn tasks_json(t: &TaskCounts) -> Value {
    json!({"started": t.started(), "ended": t.ended(), "open": t.open().collect::<Vec<_>>()})
}

/// A task as a sentence names it: `a1 ("Audit the parser", local_agent)`.
pub fn task_name(t: &TaskNote) -> String {
    let mut inner: Vec<String> = Vec::new();
    if let Some(d) = &t.description {
        inner.push(format!("{d:?}"));
    }
    if let Some(k) = &t.task_type {
        inner.push(k.clone());
    }
    if inner.is_empty() {
        t.task_id.clone()
    } else {
        format!("{} ({})", t.task_id, inner.join(", "))
    }
}

/// The tasks of a `task_silent` kill: `background task a1 ("…", local_agent) silent 17m`,
/// up to three, then how many more.
pub fn tasks_clause(tasks: &[TaskNote]) -> String {
    let mut named: Vec<String> = tasks
        .iter()
        .take(NAMED)
        .map(|t| format!("{} silent {}", task_name(t), HumanDuration(t.silent)))
        .collect();
    if tasks.len() > NAMED {
        named.push(format!("{} more", tasks.len() - NAMED));
    }
    let noun = if tasks.len() == 1 {
        "background task"
    } else {
        "background tasks"
    };
    format!("{noun} {}", named.join(", "))
}

/// A declared wakeup as a sentence names it: `ScheduleWakeup (toolu_…) due 5m ago`.
pub fn wakeup_name(w: &WakeupNote) -> String {
    let when = if w.due_in.is_zero() {
        format!("due {} ago", HumanDuration(w.overdue))
    } else {
        format!("due in {}", HumanDuration(w.due_in))
    };
    format!("{} ({}) {when}", w.tool.as_str(), w.tool_use_id)
}

/// A host request as a sentence names it: `get_context_usage request r1`.
pub fn request_name(r: &RequestNote) -> String {
    let sub = if r.subtype.is_empty() {
        "control"
    } else {
        r.subtype.as_str()
    };
    format!("{sub} request {}", r.request_id)
}

/// The notice for a task gone silent (said once per silence).
pub fn task_silent_notice(t: &TaskNote) -> String {
    format!(
        "warning: {} printed nothing of its own for {}: its end may never be reported (a lost \
         notification, or it died); the session goes on while anything else of it moves, and \
         is stopped (task_silent) when nothing does",
        format_args!("background task {}", task_name(t)),
        HumanDuration(t.silent)
    )
}

/// The notice for a result no message of the host asked for.
pub fn unsolicited_notice(results: u32, messages: u32) -> String {
    format!(
        "note: result {results} came for {messages} message{} of the host: claude took a turn \
         by itself (a wakeup, a monitor event, a background task's notification, a Stop hook); \
         a host that pairs one result with each message reads it as its answer",
        if messages == 1 { "" } else { "s" }
    )
}

/// What a run that ended by itself left outstanding, one line each (none when nothing was):
/// a declared wakeup that never fired (a success with one is not the whole work: `claude -p`
/// drops a `CronCreate` job at exit), a background task that never reported its end, a host
/// request never answered.
pub fn ending_lines(what: &str, o: &Outstanding) -> Vec<String> {
    let mut out = Vec::new();
    for w in &o.wakeups {
        out.push(format!(
            "warning: {what} ended with its {} pending: it never fired (wakeup_pending)",
            wakeup_name(w)
        ));
    }
    if !o.tasks.is_empty() {
        out.push(format!(
            "warning: {what} ended with {} never reported ended",
            tasks_clause(&o.tasks)
        ));
    }
    for r in &o.requests {
        out.push(format!(
            "warning: {what} ended without answering the host's {} (waited {})",
            request_name(r),
            HumanDuration(r.waited)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use std::time::Instant;
    use watchdog_core::{Limits, Registry, SessionConfig};

    /// A record with one of each outstanding, from real lines.
    fn outstanding() -> Outstanding {
        let t0 = Instant::now();
        let limits = Limits::default();
        let mut r = Registry::new(limits);
        let id = r.register(t0, SessionConfig::default().with_host_input(true));
        let at = |s: u64| t0 + Duration::from_secs(s);
        r.observe_line(at(0), id, br#"{"type":"system","subtype":"task_started","task_id":"a1","tool_use_id":"toolu_a","description":"Audit the parser","task_type":"local_agent","is_backgrounded":true}"#);
        let req = watchdog_core::LineView::parse(
            br#"{"type":"control_request","request_id":"r1","request":{"subtype":"get_context_usage"}}"#,
        )
        .unwrap();
        r.observe_input(at(10), id, &req);
        r.finish(at(70), id).unwrap().outstanding
    }

    #[test]
    fn what_was_outstanding_is_named_in_json_and_prose() {
        let o = outstanding();
        let j = outstanding_json(&o);
        assert_eq!(j["tasks"][0]["task_id"], "a1");
        assert_eq!(j["tasks"][0]["description"], "Audit the parser");
        assert_eq!(j["tasks"][0]["silent_ms"], 70_000);
        assert_eq!(j["requests"][0]["subtype"], "get_context_usage");
        assert_eq!(j["requests"][0]["waited_ms"], 60_000);
        assert_eq!(
            tasks_clause(&o.tasks),
            r#"background task a1 ("Audit the parser", local_agent) silent 1m10s"#
        );
        let lines = ending_lines("claude", &o);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[1].contains("get_context_usage request r1 (waited 1m)"),
            "{lines:?}"
        );
    }

    #[test]
    fn many_tasks_are_counted_past_the_third() {
        let t = TaskNote::clone(&outstanding().tasks[0]);
        let clause = tasks_clause(&[t.clone(), t.clone(), t.clone(), t.clone(), t]);
        assert!(clause.starts_with("background tasks a1"), "{clause}");
        assert!(clause.ends_with(", 2 more"), "{clause}");
    }
}
