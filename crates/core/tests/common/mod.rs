//! Shared helpers for the registry tests: virtual time only (a base `Instant` plus offsets).
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use proptest::prelude::{Just, Strategy};
use watchdog_core::{
    Class, Event, Kill, KillKind, Limits, LineView, Registry, SessionConfig, SessionId,
};

/// Minutes as a `Duration` (fractions allowed).
pub fn min(m: f64) -> Duration {
    Duration::from_secs_f64(m * 60.0)
}

/// Seconds as a `Duration`.
pub fn sec(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Canonical lines.
pub mod lines {
    pub const DELTA: &str = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"session_id":"s","parent_tool_use_id":null}"#;
    pub const MESSAGE_START: &str = r#"{"type":"stream_event","event":{"type":"message_start"},"session_id":"s","parent_tool_use_id":null}"#;
    pub const SUBAGENT_DELTA: &str = r#"{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"s","parent_tool_use_id":"toolu_task_1"}"#;
    pub const PING: &str = r#"{"type":"stream_event","event":{"type":"ping"},"session_id":"s","parent_tool_use_id":null}"#;
    pub const ABANDONED: &str = r#"{"type":"stream_event","event":{"type":"message_stop"},"abandoned_blocks":{"api_message_id":"m","from_block_index":0},"session_id":"s"}"#;
    pub const THINKING: &str =
        r#"{"type":"system","subtype":"thinking_tokens","estimated_tokens":4,"session_id":"s"}"#;
    pub const INIT: &str =
        r#"{"type":"system","subtype":"init","session_id":"cli-session-1","tools":[]}"#;
    pub const STATUS: &str =
        r#"{"type":"system","subtype":"status","status":"requesting","session_id":"s"}"#;
    pub const ASSISTANT_TEXT: &str = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":null},"session_id":"s","parent_tool_use_id":null}"#;
    pub const RATE_LIMIT: &str = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","utilization":0.5},"session_id":"s"}"#;
    pub const TOOL_PROGRESS: &str = r#"{"type":"tool_progress","tool_use_id":"toolu_b-heartbeat-0","tool_name":"Bash","parent_tool_use_id":"toolu_b","elapsed_time_seconds":30,"heartbeat":true,"session_id":"s"}"#;
    pub const RESULT_OK: &str = r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","terminal_reason":"completed","session_id":"s"}"#;
    pub const RESULT_INCOMPLETE: &str = r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"tool_use","session_id":"s"}"#;
    pub const RESULT_MAX_TOKENS: &str = r#"{"type":"result","subtype":"success","is_error":true,"num_turns":4,"stop_reason":"stop_sequence","terminal_reason":"api_error","api_error_status":null,"api_error":"max_output_tokens","session_id":"s"}"#;
    pub const RESULT_MAX_TURNS: &str = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"stop_reason":"tool_use","terminal_reason":"max_turns","session_id":"s"}"#;
    pub const UNKNOWN: &str = r#"{"type":"brand_new_kind","payload":{"x":1}}"#;
    pub const GARBAGE: &str = "this is not json {";
    pub const REQUIRES_ACTION: &str = r#"{"type":"system","subtype":"session_state_changed","state":"requires_action","session_id":"s"}"#;
    pub const RUNNING: &str =
        r#"{"type":"system","subtype":"session_state_changed","state":"running","session_id":"s"}"#;
    pub const IDLE_STATE: &str =
        r#"{"type":"system","subtype":"session_state_changed","state":"idle","session_id":"s"}"#;

    /// An `assistant` line with one `tool_use` block.
    pub fn tool_use(id: &str, name: &str) -> String {
        format!(
            r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"tool_use","id":"{id}","name":"{name}","input":{{}}}}],"stop_reason":null}},"session_id":"s","parent_tool_use_id":null}}"#
        )
    }

    /// A `user` line with one `tool_result` block.
    pub fn tool_result(id: &str, is_error: bool) -> String {
        format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"{id}","type":"tool_result","content":"ok","is_error":{is_error}}}]}},"session_id":"s","parent_tool_use_id":null}}"#
        )
    }

    /// A `system/api_retry` line.
    pub fn api_retry(delay_ms: u64) -> String {
        format!(
            r#"{{"type":"system","subtype":"api_retry","attempt":1,"max_retries":9,"retry_delay_ms":{delay_ms},"error_status":429,"error":"rate_limit","session_id":"s"}}"#
        )
    }

    /// A `control_request` `can_use_tool`.
    pub fn can_use_tool(rid: &str) -> String {
        format!(
            r#"{{"type":"control_request","request_id":"{rid}","request":{{"subtype":"can_use_tool","tool_name":"Write","input":{{}},"tool_use_id":"toolu_w"}}}}"#
        )
    }

    /// The host's `control_response` (a stdin line).
    pub fn control_response(rid: &str) -> String {
        format!(
            r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{rid}","response":{{"behavior":"allow"}}}}}}"#
        )
    }
}

/// A registry driven in virtual time.
pub struct H {
    pub r: Registry,
    pub t0: Instant,
}

impl H {
    pub fn new(limits: Limits) -> Self {
        H {
            r: Registry::new(limits),
            t0: Instant::now(),
        }
    }

    pub fn default() -> Self {
        Self::new(Limits::default())
    }

    pub fn at(&self, d: Duration) -> Instant {
        self.t0 + d
    }

    pub fn reg(&mut self, at: Duration) -> SessionId {
        self.r.register(self.t0 + at, SessionConfig::default())
    }

    pub fn reg_with(&mut self, at: Duration, limits: Limits) -> SessionId {
        self.r
            .register(self.t0 + at, SessionConfig::default().with_limits(limits))
    }

    /// Feed one stdout line (raw bytes, as the runtime does).
    pub fn line(&mut self, at: Duration, id: SessionId, line: &str) -> Class {
        self.r.observe_line(self.t0 + at, id, line.as_bytes())
    }

    /// Feed one stdin line the host wrote.
    pub fn input(&mut self, at: Duration, id: SessionId, line: &str) {
        let v = LineView::parse_str(line).expect("test input lines are JSON");
        self.r.observe_input(self.t0 + at, id, &v);
    }

    /// `handle_timeout(at)` and drain the events.
    pub fn tick(&mut self, at: Duration) -> Vec<Event> {
        self.r.handle_timeout(self.t0 + at);
        self.drain()
    }

    pub fn drain(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.r.poll_event()).collect()
    }

    /// `handle_timeout(at)` and return the kills of this pass.
    pub fn kills(&mut self, at: Duration) -> Vec<Kill> {
        self.tick(at)
            .into_iter()
            .filter_map(|e| match e {
                Event::Killed(k) => Some(k),
                _ => None,
            })
            .collect()
    }

    /// Drive the registry by its own timer (poll_timeout → handle_timeout) until `until`, and
    /// return every event with the instant it was handled at.
    pub fn run_until(&mut self, until: Duration) -> Vec<(Duration, Event)> {
        let end = self.t0 + until;
        let mut out = Vec::new();
        while let Some(t) = self.r.poll_timeout() {
            if t > end {
                break;
            }
            self.r.handle_timeout(t);
            for e in self.drain() {
                out.push((t - self.t0, e));
            }
        }
        self.r.handle_timeout(end);
        for e in self.drain() {
            out.push((until, e));
        }
        out
    }

    /// The offset of a kill's instant.
    pub fn off(&self, k: &Kill) -> Duration {
        k.at - self.t0
    }
}

/// The kind of a single kill in `events`, asserting there is at most one.
pub fn kill_kinds(events: &[Event]) -> Vec<(SessionId, KillKind)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Killed(k) => Some((k.id, k.kind)),
            _ => None,
        })
        .collect()
}

/// The repository's `testdata/` folder (recordings of the real CLI); panics with a clear
/// message when it is missing.
pub fn testdata_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    assert!(
        dir.join("captures").is_dir(),
        "the recordings are missing: expected {} (with captures/)",
        dir.display()
    );
    dir
}

/// Strings over a JSON-ish alphabet, so many cases are near-valid JSON.
pub fn jsonish() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::prop_oneof![
            Just("{".to_string()),
            Just("}".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just(":".to_string()),
            Just(",".to_string()),
            Just("\"".to_string()),
            Just("\"type\"".to_string()),
            Just("\"assistant\"".to_string()),
            Just("\"stream_event\"".to_string()),
            Just("\"event\"".to_string()),
            Just("\"ping\"".to_string()),
            Just("\\".to_string()),
            Just("\\n".to_string()),
            Just("null".to_string()),
            Just("true".to_string()),
            Just(" ".to_string()),
            Just("-".to_string()),
            Just(".".to_string()),
            Just("e".to_string()),
            "[0-9]{1,3}",
            "[a-z]{1,4}",
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

/// The stdout lines of a recording in `testdata/captures/` with their `t_ms`: the `line`
/// members of its entries, as the capture format (watchdog-host) writes them.
pub fn capture_stdout(name: &str) -> Vec<(u64, serde_json::Value)> {
    let path = testdata_dir().join("captures").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let mut entry: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("capture line {l}: {e}"));
            let t_ms = entry["t_ms"].as_u64().expect("capture line with t_ms");
            Some((t_ms, entry.get_mut("line")?.take()))
        })
        .collect()
}

/// Process-tree fixtures: a tool's processes under the child `tree::ROOT`.
pub mod tree {
    use std::time::Duration;

    use watchdog_core::evidence::{ProcFacts, ProcState};
    use watchdog_core::Limits;

    use super::min;

    /// The child's pid.
    pub const ROOT: u32 = 100;

    pub fn limits() -> Limits {
        Limits::default()
            .with_idle(min(10.0))
            .unwrap()
            .with_extend_factor(1.0)
            .unwrap()
            .with_no_progress(min(30.0))
            .unwrap()
            .with_busy_cap(min(120.0))
            .unwrap()
    }

    /// One process: `pid`, started `age` before the sample, `cpu` used so far.
    pub fn proc(pid: u32, cmd: &str, state: ProcState, cpu: Duration, age: Duration) -> ProcFacts {
        ProcFacts {
            pid,
            start: u64::from(pid) * 7,
            ppid: ROOT,
            pgid: pid,
            cmd: cmd.into(),
            state,
            cpu_ms: cpu.as_millis() as u64,
            rss: 50 << 20,
            age_ms: age.as_millis() as u64,
            tcp: 0,
            net: None,
        }
    }
}
