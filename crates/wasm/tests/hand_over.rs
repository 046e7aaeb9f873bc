//! What the npm binding hands the core of a message (`lib/core.mjs`'s `handOver`, its rows'
//! `read` rule): only the fields the core declares for the message's row, only when the row
//! says the core reads it. Checked here against the whole messages of the recorded sessions
//! (`testdata/`) and the cases they lack: the core decides the same from what is handed over
//! as from the whole message, so the declarations in `watchdog_wasm::reference` cannot drift
//! from what the core reads.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use watchdog_core::facts::ResultFacts;
use watchdog_core::{LineView, Registry, SessionId};
use watchdog_wasm::reference::{self, row, Effect, Read, Row};

/// Every message of the recorded sessions, one list a file.
fn recorded() -> Vec<(String, Vec<Value>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    let mut out = Vec::new();
    for dir in ["captures", "subagents"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.ends_with(".capture.jsonl") || name.ends_with(".stdout.jsonl")
            })
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let messages = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .map(|v| match v.get("line") {
                    Some(line) if line.is_object() => line.clone(),
                    _ => v,
                })
                .filter(Value::is_object)
                .collect();
            out.push((path.display().to_string(), messages));
        }
    }
    assert!(out.len() >= 10, "the recorded sessions: {}", out.len());
    out
}

fn row_of(m: &Value) -> Option<&'static Row> {
    row(
        m.get("type")?.as_str()?,
        m.get("subtype").and_then(Value::as_str),
    )
}

/// `handOver`: the row's head, then each declared field the message has, as JSON.
fn hand_over(r: &Row, m: &Value) -> String {
    let mut text = r.head();
    for f in r.fields {
        if let Some(v) = m.get(*f) {
            text.push_str(&format!(r#","{f}":{v}"#));
        }
    }
    text.push('}');
    text
}

/// The binding's read rule for a line row, with `added` (a message that may add background
/// work was read before).
fn read(r: &Row, m: &Value, added: bool) -> bool {
    match r.read {
        Read::Always => true,
        Read::IfTrue(field) => added || m.get(field) == Some(&Value::Bool(true)),
        Read::IfAdded => added,
    }
}

struct Preset {
    t0: Instant,
    reg: Registry,
    id: SessionId,
}

impl Preset {
    fn new() -> Self {
        let t0 = Instant::now();
        let mut reg = Registry::new(reference::limits()).checked_by_host(t0);
        let id = reg.register(t0, reference::session(reference::limits(), None));
        Preset { t0, reg, id }
    }

    fn line(&mut self, s: u64, text: &str) {
        let t = self.t0 + Duration::from_secs(s);
        self.reg.observe_line(t, self.id, text.as_bytes());
    }

    /// The next deadline, from registration.
    fn next(&self) -> Option<Duration> {
        self.reg.poll_timeout().map(|t| t - self.t0)
    }

    /// After a `result` at `s`: whether the query still has a deadline (its background work
    /// keeps the idle clock running; settled and idle, it has none: no ceiling, no linger).
    fn works_after_result(&mut self, s: u64) -> bool {
        self.line(
            s,
            r#"{"type":"result","subtype":"success","is_error":false}"#,
        );
        self.reg.poll_timeout().is_some()
    }
}

#[test]
fn the_background_work_the_core_keeps_is_the_same_from_what_is_handed_over() {
    let mut checked = 0;
    let mut skipped = 0;
    let synthetic = [
        r#"{"type":"system","subtype":"task_started","task_id":"a","is_backgrounded":true}"#,
        r#"{"type":"system","subtype":"task_started","task_id":"b","is_backgrounded":false}"#,
        r#"{"type":"system","subtype":"task_notification","task_id":"b","status":"completed"}"#,
        r#"{"type":"system","subtype":"task_updated","task_id":"c","patch":{"is_backgrounded":true}}"#,
        r#"{"type":"system","subtype":"task_started","task_id":"d","is_backgrounded":true,"ambient":true}"#,
        r#"{"type":"system","subtype":"background_tasks_changed","tasks":[{"task_id":"e"},{"task_id":"f","ambient":true}]}"#,
        r#"{"type":"system","subtype":"task_notification","task_id":"a","status":"completed"}"#,
        r#"{"type":"system","subtype":"task_updated","task_id":"c","patch":{"status":"failed"}}"#,
        r#"{"type":"system","subtype":"background_tasks_changed","tasks":[]}"#,
    ]
    .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let mut sessions = recorded();
    // Each prefix of the synthetic session: every state the set of tasks passes through.
    for n in 1..=synthetic.len() {
        sessions.push((format!("synthetic[..{n}]"), synthetic[..n].to_vec()));
    }
    for (name, messages) in sessions {
        let (mut whole, mut handed) = (Preset::new(), Preset::new());
        let mut added = false;
        let mut s = 0;
        for m in &messages {
            let Some(r) = row_of(m).filter(|r| r.effect == Effect::Line) else {
                continue;
            };
            s += 1;
            whole.line(s, &m.to_string());
            if read(r, m, added) {
                added |= r.adds;
                handed.line(s, &hand_over(r, m));
            } else {
                skipped += 1;
            }
            checked += 1;
        }
        assert_eq!(
            whole.works_after_result(s + 1),
            handed.works_after_result(s + 1),
            "{name}"
        );
    }
    assert!(
        checked >= 30 && skipped >= 5,
        "{checked} read, {skipped} skipped"
    );
}

#[test]
fn an_announced_back_off_holds_the_same_from_its_declared_fields() {
    let mut retries = 0;
    for (name, messages) in recorded() {
        for m in &messages {
            let Some(r) = row_of(m).filter(|r| r.effect == Effect::Line && r.read == Read::Always)
            else {
                continue;
            };
            let (mut whole, mut handed) = (Preset::new(), Preset::new());
            whole.line(1, &m.to_string());
            handed.line(1, &hand_over(r, m));
            assert_eq!(whole.next(), handed.next(), "{name}: {m}");
            retries += usize::from(r.fields.contains(&"retry_delay_ms"));
        }
    }
    assert!(retries >= 3, "{retries} back-offs");
}

#[test]
fn a_results_facts_are_the_same_from_its_declared_fields() {
    let full = serde_json::json!({
        "type": "result", "subtype": "error_during_execution", "is_error": true,
        "stop_reason": "tool_use", "terminal_reason": "api_error", "api_error": "max_output_tokens",
        "api_error_status": 400, "num_turns": 4, "total_cost_usd": 0.5, "session_id": "s", "usage": {}
    });
    let mut results = vec![full];
    for (_, messages) in recorded() {
        results.extend(messages.into_iter().filter(|m| m["type"] == "result"));
    }
    assert!(results.len() >= 10);
    let settle = row("result", None).unwrap();
    assert_eq!(settle.effect, Effect::Settle);
    for m in &results {
        let text = m.to_string();
        let whole = ResultFacts::of_line(&LineView::parse(text.as_bytes()).unwrap());
        let handed = hand_over(settle, m);
        let from_handed = ResultFacts::of_line(&LineView::parse(handed.as_bytes()).unwrap());
        assert_eq!(whole, from_handed, "{m}");
    }
}
