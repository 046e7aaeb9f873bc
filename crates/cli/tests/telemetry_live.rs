//! A run's telemetry arrives while it runs (docs/telemetry.md, what is recorded when):
//! with a short export interval, the loopback receiver (official OpenTelemetry definitions)
//! holds the quiet spells already ended, the stalling warning, and the gauges of the MCP call
//! still outstanding, while the child is still running; and once it is over, each point was
//! recorded once (the summary gives only how the run ended).
//!
//! Needs the binary built with the cargo feature `telemetry`: without it these tests fail and
//! say so, they do not skip.

mod common;
#[path = "common/otlp.rs"]
mod otlp;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{say, script, signal, watchdog, INIT, RESULT_OK};
use otlp::{Answer, Item, Receiver};

const CALL: &str = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"m1","name":"mcp__db__query"}]},"session_id":"s1"}"#;
const ANSWER: &str = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"m1"}]},"session_id":"s1"}"#;

fn env(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AGENT_WATCHDOG_TELEMETRY", "1".into()),
        ("OTEL_METRICS_EXPORTER", "otlp".into()),
        ("OTEL_LOGS_EXPORTER", "otlp".into()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".into()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.into()),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200".into()),
        ("OTEL_LOGS_EXPORT_INTERVAL", "200".into()),
    ]
}

/// A series: its name and attributes.
fn key(i: &Item) -> String {
    format!("{} {:?}", i.name, i.attrs)
}

/// The last value of each series of our metric `name` (exports repeat cumulative values).
fn last(items: &[Item], name: &str) -> BTreeMap<String, Item> {
    let mut out = BTreeMap::new();
    for i in items
        .iter()
        .filter(|i| i.signal == "metrics" && i.name == name)
    {
        out.insert(key(i), i.clone());
    }
    out
}

/// A started `agent-watchdog`, killed if the test fails before it ends (its child then gets
/// SIGTERM: the watchdog's death signal).
struct Running(Option<std::process::Child>);

impl Running {
    fn get(&mut self) -> &mut std::process::Child {
        self.0.as_mut().expect("running")
    }

    fn wait(mut self) -> std::process::Output {
        self.0.take().expect("running").wait_with_output().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_until(rx: &Receiver, limit: Duration, what: &str, ok: impl Fn(&[Item]) -> bool) {
    let end = Instant::now() + limit;
    while !ok(&rx.items()) {
        assert!(
            Instant::now() < end,
            "no {what} within {limit:?}: {}",
            rx.describe()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn spells_warnings_and_mcp_gauges_arrive_while_the_run_runs() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    // init, an MCP call 1 s later, then silence until the test says go: the answer and a
    // result.
    let child = script(
        dir.path(),
        "child.sh",
        &format!(
            "{}\nsleep 1\n{}\nwhile [ ! -f '{}' ]; do sleep 0.05; done\n{}\n{}",
            say(INIT),
            say(CALL),
            go.display(),
            say(ANSWER),
            say(RESULT_OK)
        ),
    );
    let rx = Receiver::start(Answer::Ok);
    let summary = dir.path().join("summary.json");
    let mut run = Running(Some(
        watchdog()
            .envs(env(&rx.endpoint()))
            .args(["run", "--idle", "60s", "--warn-at", "0.02", "--summary"])
            .arg(&summary)
            .arg("--")
            .arg(&child)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));

    // While the child waits: the spell its call ended, the warning, the outstanding call.
    let limit = Duration::from_secs(30);
    wait_until(&rx, limit, "live points", |items| {
        let spell = last(items, "agent_watchdog.quiet_spell.duration")
            .values()
            .any(|i| i.attr("spell.kind") == Some("model"));
        let warned = items
            .iter()
            .any(|i| i.name == "agent_watchdog.stalling_warning");
        let outstanding = last(items, "agent_watchdog.mcp.call.outstanding")
            .values()
            .any(|i| i.value == 1.0);
        let aged = last(items, "agent_watchdog.mcp.call.oldest_age")
            .values()
            .any(|i| i.value >= 1.0);
        spell && warned && outstanding && aged
    });
    assert!(
        run.get().try_wait().unwrap().is_none(),
        "the run ended before its points were seen: they were not live"
    );
    let items = rx.items();
    let outstanding = last(&items, "agent_watchdog.mcp.call.outstanding");
    let call = outstanding.values().next().unwrap();
    assert_eq!(call.attr("session.id"), Some("s1"), "{call:?}");
    assert_eq!(call.attr("mcp.server"), Some("db"), "{call:?}");
    assert_eq!(call.attr("mcp.tool"), Some("query"), "{call:?}");
    assert_eq!(call.attr("agent_watchdog.source"), Some("run"), "{call:?}");
    let warning = items
        .iter()
        .find(|i| i.name == "agent_watchdog.stalling_warning")
        .unwrap();
    assert_eq!(warning.attr("clock"), Some("idle"), "{warning:?}");
    assert_eq!(warning.attr("session.id"), Some("s1"), "{warning:?}");
    // Nothing of the end yet.
    assert!(
        !items
            .iter()
            .any(|i| i.name == "agent_watchdog.session.count"
                || i.name == "agent_watchdog.session_end"),
        "{}",
        rx.describe()
    );

    std::fs::write(&go, "").unwrap();
    let out = run.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["outcome"], "success", "{s}");

    // Once over: every spell once, the call done, the end recorded once.
    let items = rx.items();
    let what = rx.describe();
    let spells = last(&items, "agent_watchdog.quiet_spell.duration");
    let mut seen: Vec<(String, String, String)> = spells
        .values()
        .filter(|i| i.attr("clock") == Some("no_progress"))
        .flat_map(|i| {
            let row = (
                i.attr("spell.kind").unwrap_or("").to_owned(),
                i.attr("tool.name").unwrap_or("").to_owned(),
                i.attr("ended_by").unwrap_or("").to_owned(),
            );
            std::iter::repeat_n(row, i.value as usize)
        })
        .collect();
    seen.sort();
    // init → call (model), call → answer (the MCP tool), answer → result (model).
    assert_eq!(
        seen,
        [
            ("model".into(), "".into(), "progress".into()),
            ("model".into(), "".into(), "progress".into()),
            ("tool".into(), "mcp__db__query".into(), "progress".into()),
        ],
        "{what}"
    );
    // Both clocks, once each per spell.
    let idle: f64 = spells
        .values()
        .filter(|i| i.attr("clock") == Some("idle"))
        .map(|i| i.value)
        .sum();
    assert_eq!(idle, 3.0, "{what}");
    let outstanding = last(&items, "agent_watchdog.mcp.call.outstanding");
    assert_eq!(outstanding.len(), 1, "{what}");
    assert_eq!(outstanding.values().next().unwrap().value, 0.0, "{what}");
    let warnings = last(&items, "agent_watchdog.stalling_warning.count");
    assert_eq!(
        warnings.values().map(|i| i.value).sum::<f64>(),
        1.0,
        "{what}"
    );
    let sessions = last(&items, "agent_watchdog.session.count");
    assert_eq!(sessions.len(), 1, "{what}");
    assert_eq!(
        sessions.values().next().unwrap().attr("outcome"),
        Some("success")
    );
    let ends = items
        .iter()
        .filter(|i| i.name == "agent_watchdog.session_end")
        .count();
    assert_eq!(ends, 1, "{what}");
    assert!(
        last(&items, "agent_watchdog.kill.count").is_empty(),
        "{what}"
    );
    assert!(rx.got.lock().unwrap().undecoded.is_empty(), "{what}");
}

#[test]
fn a_forwarded_signal_is_recorded_once() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let child = script(
        dir.path(),
        "child.sh",
        &format!("{}\n: > '{}'\nexec sleep 60", say(INIT), started.display()),
    );
    let rx = Receiver::start(Answer::Ok);
    let mut run = Running(Some(
        watchdog()
            .envs(env(&rx.endpoint()))
            .args(["run", "--idle", "60s", "--grace", "1s", "--"])
            .arg(&child)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let t = Instant::now();
    while !started.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the child never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The init line is read: the session id is known.
    wait_until(&rx, Duration::from_secs(20), "the first line", |items| {
        !last(items, "agent_watchdog.first_line.duration").is_empty()
    });
    signal(run.get().id(), 15);
    let out = run.wait();
    assert_ne!(out.status.code(), Some(0));
    let items = rx.items();
    let what = rx.describe();
    let counted = last(&items, "agent_watchdog.signal.forwarded.count");
    assert_eq!(counted.len(), 1, "{what}");
    let c = counted.values().next().unwrap();
    assert_eq!(
        (c.value, c.attr("signal"), c.attr("session.id")),
        (1.0, Some("SIGTERM"), Some("s1")),
        "{what}"
    );
    let events: Vec<&Item> = items
        .iter()
        .filter(|i| i.name == "agent_watchdog.signal_forwarded")
        .collect();
    assert_eq!(events.len(), 1, "{what}");
    assert_eq!(events[0].attr("signal"), Some("SIGTERM"));
}
