//! Real CLI output (Claude Code 2.1.332, `testdata/`) through the view, the classifier
//! and the registry.
//!
//! Every stdout line of every capture must classify as the contract table says (an oracle
//! written here over `serde_json::Value`, independent of the borrowed view), both from the raw
//! text and from a parsed `Value`. Each capture is then replayed in virtual time (its `t_ms`
//! offsets) and must end with the outcome the run really had; a few are replayed again with
//! small limits to check that the right kill comes at the right instant.

#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use common::testdata_dir;
use serde_json::Value;
use watchdog_core::{
    classify, facts::ResultFacts, Event, KillKind, Limits, LineKind, LineView, Outcome, Registry,
    SessionConfig, Signal,
};
use watchdog_host::capture::{Entry, Record};

/// The contract table, over a parsed value.
fn oracle(v: &Value) -> (Signal, LineKind) {
    use LineKind as K;
    use Signal::*;
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    match s("type") {
        Some("assistant") => (Progress, K::Assistant),
        Some("user") => (Progress, K::User),
        Some("tool_use_summary") => (Progress, K::ToolUseSummary),
        Some("result") => (Settle, K::Result),
        Some("stream_event") => {
            if v.get("abandoned_blocks").is_some_and(|a| !a.is_null()) {
                (KeepAlive, K::Abandoned)
            } else if v.pointer("/event/type").and_then(Value::as_str) == Some("ping") {
                (KeepAlive, K::Ping)
            } else {
                (Progress, K::StreamEvent)
            }
        }
        Some("system") => match s("subtype") {
            Some("api_retry") => (KeepAlive, K::ApiRetry),
            Some("session_state_changed") => {
                if s("state") == Some("requires_action") {
                    (HumanWait, K::SessionState)
                } else {
                    (KeepAlive, K::SessionState)
                }
            }
            Some("init" | "status" | "thinking_tokens" | "compact_boundary") => {
                (Progress, K::System)
            }
            Some(x) if x.starts_with("task_") || x.starts_with("hook_") => (Progress, K::System),
            _ => (KeepAlive, K::System),
        },
        Some("tool_progress") => (KeepAlive, K::ToolProgress),
        Some("rate_limit_event") => (KeepAlive, K::RateLimit),
        Some("control_request") => {
            if v.pointer("/request/subtype").and_then(Value::as_str) == Some("can_use_tool") {
                (HumanWait, K::ControlRequest)
            } else {
                (KeepAlive, K::ControlRequest)
            }
        }
        Some("control_response") => (KeepAlive, K::ControlResponse),
        Some("control_cancel_request") => (KeepAlive, K::ControlCancel),
        _ => (KeepAlive, K::Unknown),
    }
}

struct Capture {
    name: String,
    entries: Vec<Entry>,
}

fn captures() -> Vec<Capture> {
    let dir = testdata_dir().join("captures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("captures folder")
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".capture.jsonl"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 19,
        "expected the 19 captures in {}",
        dir.display()
    );
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read(&p).unwrap();
            let entries = text
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .filter_map(|l| Entry::parse(l).expect("capture line"))
                .collect();
            let name = p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .trim_end_matches(".capture.jsonl")
                .to_string();
            Capture { name, entries }
        })
        .collect()
}

fn capture(name: &str) -> Capture {
    captures()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("capture {name} is missing"))
}

#[test]
fn every_captured_line_classifies_as_the_contract_says() {
    let mut totals: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut lines = 0;
    for c in captures() {
        for e in &c.entries {
            let Record::Line(v) = &e.record else { continue };
            let want = oracle(v);
            let text = v.to_string();
            let raw = classify(&LineView::parse_str(&text).unwrap());
            let parsed = classify(&LineView::from_value(v).unwrap());
            assert_eq!(
                (raw.signal, raw.kind),
                want,
                "{} t={} {text:.200}",
                c.name,
                e.t_ms
            );
            assert_eq!(raw, parsed, "{} t={}", c.name, e.t_ms);
            // The CLI skims the lines the supervisor validated: it must read them alike.
            let skimmed = LineView::parse_validated(text.as_bytes()).unwrap();
            assert_eq!(classify(&skimmed), raw, "{} t={}", c.name, e.t_ms);
            let full = LineView::parse_str(&text).unwrap();
            assert_eq!(
                skimmed.session_id(),
                full.session_id(),
                "{} t={}",
                c.name,
                e.t_ms
            );
            assert_eq!(skimmed.subtype(), full.subtype(), "{} t={}", c.name, e.t_ms);
            *totals.entry(raw.kind.as_str()).or_default() += 1;
            lines += 1;
        }
    }
    assert!(lines > 300, "{lines}");
    // The real runs exercise every class that matters.
    for kind in [
        "assistant",
        "user",
        "system",
        "api_retry",
        "stream_event",
        "ping",
        "abandoned",
        "tool_progress",
        "rate_limit_event",
        "control_request",
        "control_response",
        "result",
    ] {
        assert!(
            totals.get(kind).copied().unwrap_or(0) > 0,
            "{kind}: {totals:?}"
        );
    }
}

#[test]
fn capture_specific_counts() {
    let count = |name: &str, kind: LineKind| {
        capture(name)
            .entries
            .iter()
            .filter(|e| match &e.record {
                Record::Line(v) => classify(&LineView::from_value(v).unwrap()).kind == kind,
                _ => false,
            })
            .count()
    };
    assert_eq!(count("s4_stall_ping", LineKind::Ping), 8);
    assert_eq!(count("s2_tool", LineKind::ToolProgress), 2);
    assert_eq!(count("s2_tool_nopartial", LineKind::ToolProgress), 1);
    assert_eq!(count("s3_429_retry_apikey", LineKind::ApiRetry), 2);
    assert_eq!(count("s4_stall_long_silent", LineKind::Abandoned), 1);
    assert_eq!(count("s4_sigint", LineKind::Result), 0);
    assert_eq!(count("s6_bidir_canusetool", LineKind::ControlRequest), 1);
}

#[test]
fn every_example_message_classifies_as_the_contract_says() {
    let path = testdata_dir().join("examples.json");
    let all: BTreeMap<String, Value> =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut n = 0;
    for (name, ex) in &all {
        if name.starts_with("STDIN:") {
            continue;
        }
        let v = &ex["json"];
        let c = classify(&LineView::parse_str(&v.to_string()).unwrap());
        assert_eq!((c.signal, c.kind), oracle(v), "{name}");
        n += 1;
    }
    assert!(n >= 30, "{n}");
    let c = |name: &str| classify(&LineView::from_value(&all[name]["json"]).unwrap()).signal;
    assert_eq!(c("stream_event/ping"), Signal::KeepAlive);
    assert_eq!(c("tool_progress/heartbeat"), Signal::KeepAlive);
    assert_eq!(c("control_request/can_use_tool"), Signal::HumanWait);
    assert_eq!(c("control_request/hook_callback"), Signal::KeepAlive);
    assert_eq!(
        c("result/error_during_execution is_error=True terminal_reason=aborted_tools"),
        Signal::Settle
    );
}

#[test]
fn claude_session_transcripts_never_break_the_view() {
    // Claude Code's own session files are not stream-json, but a host may feed anything.
    let dir = testdata_dir().join("transcripts");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read(entry.unwrap().path()).unwrap();
        for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_slice(line).unwrap();
            let c = classify(&LineView::parse(line).unwrap());
            assert_eq!((c.signal, c.kind), oracle(&v));
            n += 1;
        }
    }
    assert!(n > 50, "{n}");
}

/// What a replay observed.
struct Replay {
    outcome: Option<Outcome>,
    events: Vec<(Duration, Event)>,
    registry: Registry,
    id: watchdog_core::SessionId,
}

/// Replay a capture in virtual time: the registry is driven by its own timer between
/// entries, stdout lines go to `observe_line`, stdin lines to `observe_input`, and the exit
/// (or the end of the recording) to `end`.
fn replay(c: &Capture, limits: Limits) -> Replay {
    let t0 = std::time::Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut r = Registry::new(Limits::default());
    let id = r.register(t0, SessionConfig::default().with_limits(limits));
    let mut events = Vec::new();
    let drain = |r: &mut Registry, t: std::time::Instant, events: &mut Vec<(Duration, Event)>| {
        while let Some(e) = r.poll_event() {
            events.push((t - t0, e));
        }
    };
    let mut last = 0;
    let mut outcome = None;
    for e in &c.entries {
        while let Some(p) = r.poll_timeout() {
            if p > at(e.t_ms) {
                break;
            }
            r.handle_timeout(p);
            drain(&mut r, p, &mut events);
        }
        last = e.t_ms;
        match &e.record {
            Record::Line(v) => {
                r.observe_line(at(e.t_ms), id, v.to_string().as_bytes());
            }
            Record::Raw(s) => {
                r.observe_line(at(e.t_ms), id, s.as_bytes());
            }
            Record::Stdin(v) => {
                if let Ok(view) = LineView::from_value(v) {
                    r.observe_input(at(e.t_ms), id, &view);
                }
            }
            Record::Exit { .. } => outcome = r.end(at(e.t_ms), id),
            _ => {}
        }
        drain(&mut r, at(e.t_ms), &mut events);
    }
    if outcome.is_none() {
        outcome = r.end(at(last), id);
        drain(&mut r, at(last), &mut events);
    }
    Replay {
        outcome,
        events,
        registry: r,
        id,
    }
}

fn kills(events: &[(Duration, Event)]) -> Vec<(KillKind, Duration)> {
    events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Killed(k) => Some((k.kind, k.elapsed)),
            _ => None,
        })
        .collect()
}

#[test]
fn every_capture_replays_to_its_real_outcome_with_default_limits() {
    let success = Outcome::Success;
    let mut expected: BTreeMap<&str, Outcome> = [
        "s1_text",
        "s1_thinking",
        "s1_thinking_nopartial",
        "s2_tool",
        "s2_tool_nopartial",
        "s3_429_retry_apikey",
        "s3_ratelimit_gwjwt",
        "s3_ratelimit_warning_gwjwt",
        "s4_stall_long_silent",
        "s4_stall_ping",
        "s5_max_tokens_once",
        "s5_resume_continue",
        "s6_bidir_canusetool",
        "s6_bidir_hooks",
        "s6_bidir_minimal",
    ]
    .into_iter()
    .map(|n| (n, success.clone()))
    .collect();
    expected.insert("s4_sigint", Outcome::NoResult);
    expected.insert("s4_sigterm_during_bash", Outcome::NoResult);
    expected.insert(
        "s5_max_tokens",
        Outcome::ErrorResult(Box::new(ResultFacts {
            subtype: Some("success".into()),
            is_error: Some(true),
            terminal_reason: Some("api_error".into()),
            stop_reason: Some("stop_sequence".into()),
            api_error: Some("max_output_tokens".into()),
            num_turns: Some(4),
            total_cost_usd: Some(0.0032),
            ..ResultFacts::default()
        })),
    );
    let all = captures();
    for c in &all {
        let r = replay(c, Limits::default());
        if c.name == "s3_429_rejected_fast_gwjwt" {
            match r.outcome.as_ref().unwrap() {
                Outcome::ErrorResult(r) => {
                    assert_eq!(r.subtype.as_deref(), Some("success"));
                    assert_eq!(r.terminal_reason.as_deref(), Some("api_error"));
                    assert_eq!(r.api_error.as_deref(), Some("usage_limit_reached"));
                }
                other => panic!("{}: {other:?}", c.name),
            }
        } else {
            let want = expected
                .get(c.name.as_str())
                .unwrap_or_else(|| panic!("no expectation for capture {}", c.name));
            assert_eq!(r.outcome.as_ref(), Some(want), "{}", c.name);
        }
        assert!(kills(&r.events).is_empty(), "{}: {:?}", c.name, r.events);
        let ended: Vec<_> = r
            .events
            .iter()
            .filter(|(_, e)| matches!(e, Event::Ended { .. }))
            .collect();
        assert_eq!(ended.len(), 1, "{}", c.name);
        assert!(r.registry.claude_session_id(r.id).is_some(), "{}", c.name);
    }
}

#[test]
fn s4_stall_ping_is_killed_no_progress_with_small_limits() {
    // Progress stops with the second delta at 550 ms; pings every 10 s keep the idle clock
    // alive, the no-progress cap (60 s) ends it exactly 60 s after that delta.
    let limits = Limits::default()
        .with_idle(Duration::from_secs(15))
        .unwrap()
        .with_no_progress(Duration::from_secs(60))
        .unwrap();
    let r = replay(&capture("s4_stall_ping"), limits);
    assert_eq!(
        kills(&r.events),
        vec![(KillKind::NoProgress, Duration::from_millis(60_550))]
    );
    assert_eq!(
        r.outcome,
        Some(Outcome::Killed {
            kind: KillKind::NoProgress
        })
    );
    let k = r.registry.kill(r.id).unwrap();
    assert_eq!(k.last_signal, Some(Signal::KeepAlive));
    assert_eq!(k.since_keepalive, Duration::from_millis(60_550 - 50_554));
}

#[test]
fn s4_stall_long_silent_is_killed_idle_with_small_limits() {
    // Pre-write: patience 2 × 60 s after the last delta at 592 ms.
    let limits = Limits::default()
        .with_idle(Duration::from_secs(60))
        .unwrap();
    let r = replay(&capture("s4_stall_long_silent"), limits);
    assert_eq!(
        kills(&r.events),
        vec![(KillKind::Idle, Duration::from_millis(120_592))]
    );
    let extended: Vec<_> = r
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Extended { .. }))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(extended, vec![Duration::from_millis(60_592)]);
}

#[test]
fn s2_tool_a_long_bash_call_is_caught_by_idle_or_by_no_progress() {
    let c = capture("s2_tool");
    // The Write landed at 731 ms: post-write patience. Heartbeats come at 30.8 s and 60.8 s.
    let r = replay(
        &c,
        Limits::default()
            .with_idle(Duration::from_secs(20))
            .unwrap(),
    );
    assert_eq!(
        kills(&r.events),
        vec![(KillKind::Idle, Duration::from_millis(3_835 + 20_000))]
    );
    assert!(r.registry.snapshot(r.id).unwrap().wrote);
    // With a longer idle the heartbeats keep it alive, and the no-progress cap catches it
    // 50 s after task_started (3835 ms), the last progress before the tool's end.
    let limits = Limits::default()
        .with_idle(Duration::from_secs(40))
        .unwrap()
        .with_no_progress(Duration::from_secs(50))
        .unwrap();
    let r = replay(&c, limits);
    assert_eq!(
        kills(&r.events),
        vec![(KillKind::NoProgress, Duration::from_millis(53_835))]
    );
    // Default limits: the full run, write detected, success.
    let r = replay(&c, Limits::default());
    assert_eq!(r.outcome, Some(Outcome::Success));
    let snap = r.registry.snapshot(r.id).unwrap();
    assert!(snap.wrote && snap.ended && !snap.paused);
}

#[test]
fn s6_can_use_tool_pauses_until_the_host_answers() {
    let c = capture("s6_bidir_canusetool");
    let t0 = std::time::Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut r = Registry::new(Limits::default());
    let id = r.register(t0, SessionConfig::default());
    let mut paused_seen = false;
    for e in &c.entries {
        match &e.record {
            Record::Line(v) => {
                let class = r.observe(at(e.t_ms), id, &LineView::from_value(v).unwrap());
                if class.signal == Signal::HumanWait {
                    assert!(r.snapshot(id).unwrap().paused);
                    paused_seen = true;
                }
            }
            Record::Stdin(v) => {
                if let Ok(view) = LineView::from_value(v) {
                    r.observe_input(at(e.t_ms), id, &view);
                }
            }
            _ => {}
        }
    }
    assert!(paused_seen);
    assert!(
        !r.snapshot(id).unwrap().paused,
        "the host's control_response ended the wait"
    );
    assert_eq!(r.end(at(700), id), Some(Outcome::Success));
}

#[test]
fn s6_can_use_tool_without_an_answer_waits_for_the_human() {
    // Drop the host's answer: the session waits on a human; no idle kill for an hour.
    let c = capture("s6_bidir_canusetool");
    let t0 = std::time::Instant::now();
    let mut r = Registry::new(Limits::default().with_idle(Duration::from_secs(1)).unwrap());
    let id = r.register(t0, SessionConfig::default());
    for e in &c.entries {
        if let Record::Line(v) = &e.record {
            r.observe(
                t0 + Duration::from_millis(e.t_ms),
                id,
                &LineView::from_value(v).unwrap(),
            );
            if v["type"] == "control_request" {
                break;
            }
        }
    }
    r.handle_timeout(t0 + Duration::from_secs(3600));
    assert!(r.kill(id).is_none());
    assert!(r.snapshot(id).unwrap().paused);
}
