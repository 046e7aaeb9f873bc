//! Telemetry on, and the run's end goes wrong around it (docs/telemetry.md, "It never hurts
//! the run"): a user's SIGTERM or SIGINT arriving during the flush at exit to a slow (5 s)
//! collector, and our stdout a closed pipe (EPIPE). Each run is compared with the same run with
//! telemetry off: the same exit code and summary, the flush still bounded, no panic. Time
//! bounds are generous (the machine is shared); they catch a flush that waits for the
//! collector, not a slow machine.
//!
//! Needs the binary built with the cargo feature `telemetry` (`scripts/test` builds with
//! `--all-features`): without it these tests fail and say so, they do not skip.

mod common;
#[path = "common/otlp.rs"]
mod otlp;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{say, script, signal, stderr, watchdog, INIT};
use otlp::{Answer, Receiver};
use serde_json::Value;

/// `agent-watchdog` without any `OTEL_*` variable of the test's environment.
fn clean_watchdog() -> Command {
    let mut c = watchdog();
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("OTEL_") {
            c.env_remove(k);
        }
    }
    c
}

fn telemetry_env(endpoint: &str, flush_ms: u64) -> Vec<(&'static str, String)> {
    vec![
        ("AGENT_WATCHDOG_TELEMETRY", "1".into()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".into()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.into()),
        ("AGENT_WATCHDOG_TELEMETRY_FLUSH_MS", flush_ms.to_string()),
        // Nothing is exported before the flush at exit, however slow the machine.
        ("OTEL_LOGS_EXPORT_INTERVAL", "600000".into()),
        ("OTEL_METRIC_EXPORT_INTERVAL", "600000".into()),
    ]
}

/// `run --idle 1s --grace 1s --summary FILE -- CHILD`, with `env` added.
fn run_cmd(child: &Path, summary: &Path, env: &[(&str, String)]) -> Command {
    let mut c = clean_watchdog();
    c.envs(env.iter().map(|(k, v)| (k, v)))
        .args(["run", "--idle", "1s", "--grace", "1s", "--summary"])
        .arg(summary)
        .arg("--")
        .arg(child);
    c
}

fn read_summary(path: &Path, out: &Output) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no summary ({e}); stderr: {}", stderr(out)))
}

fn assert_built_with_telemetry(out: &Output) {
    assert!(
        !stderr(out).contains("this build has no telemetry"),
        "agent-watchdog was built without the cargo feature `telemetry`: run the tests with \
         --features telemetry (or --all-features, as scripts/test does)"
    );
}

/// The facts of a summary that telemetry must not change.
fn facts(s: &Value) -> Vec<(String, Value)> {
    [
        "outcome",
        "exit_code",
        "session_id",
        "exit",
        "lines",
        "interrupted",
    ]
    .iter()
    .map(|f| (f.to_string(), s[*f].clone()))
    .chain(
        ["kind", "ladder", "reader_gone"]
            .iter()
            .map(|f| (format!("kill.{f}"), s["kill"][*f].clone())),
    )
    .collect()
}

fn silent_child(dir: &Path) -> PathBuf {
    script(dir, "child.sh", &format!("{}\nexec sleep 60", say(INIT)))
}

/// The watchdog gets `sig` while its flush at exit waits for a collector that answers after
/// 5 s: it still ends within the flush bound, with the exit code and summary of the run
/// without telemetry (the signal comes after the child is gone: there is nothing left to
/// forward it to, and the flush is not a reason to die by it).
fn signal_during_the_flush(sig: i32) {
    const FLUSH_MS: u64 = 2000;
    let dir = tempfile::tempdir().unwrap();
    let child = silent_child(dir.path());
    let base_summary = dir.path().join("base.json");
    let base = run_cmd(&child, &base_summary, &[]).output().unwrap();
    let base_s = read_summary(&base_summary, &base);
    assert_eq!(base.status.code(), Some(124), "{}", stderr(&base));

    let rx = Receiver::start(Answer::Slow(Duration::from_secs(5)));
    let summary = dir.path().join("telemetry.json");
    let mut w = run_cmd(&child, &summary, &telemetry_env(&rx.endpoint(), FLUSH_MS))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first export request arrives: the run is over and the flush is waiting.
    let t = Instant::now();
    loop {
        if !rx.got.lock().unwrap().requests.is_empty() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no export request: {}",
            rx.describe()
        );
        assert!(w.try_wait().unwrap().is_none(), "ended before exporting");
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = Instant::now();
    signal(w.id(), sig);
    let out = w.wait_with_output().unwrap();
    let took = signalled.elapsed();
    assert_built_with_telemetry(&out);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), base.status.code(), "signal {sig}: {err}");
    assert_eq!(
        facts(&read_summary(&summary, &out)),
        facts(&base_s),
        "{err}"
    );
    assert_eq!(out.stdout, base.stdout);
    assert!(
        took < Duration::from_millis(FLUSH_MS) + Duration::from_secs(3),
        "ended {took:?} after the signal (flush bound {FLUSH_MS} ms): {err}"
    );
    // The flush was cut at its bound and said so, once.
    let said: Vec<&str> = err.lines().filter(|l| l.contains("telemetry")).collect();
    assert_eq!(said.len(), 1, "{err}");
}

#[test]
fn sigterm_during_the_flush_to_a_slow_collector_changes_nothing() {
    signal_during_the_flush(15);
}

#[test]
fn sigint_during_the_flush_to_a_slow_collector_changes_nothing() {
    signal_during_the_flush(2);
}

/// Our stdout is a pipe whose reader is gone before we start: the first write fails (EPIPE),
/// the run stops for its output; with telemetry on, the same exit code and summary, and the
/// output error still reaches the collector.
#[test]
fn a_closed_stdout_with_telemetry_on_gives_the_same_exit_code_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(
        dir.path(),
        "talker.sh",
        // Its second line comes well after the first, whose write fails: both runs have read
        // the same one line when they stop (lines that came together were read together, so
        // a busy machine gave one run two).
        &format!("{}\nwhile :; do sleep 0.5; {}; done", say(INIT), say(INIT)),
    );
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    let base_summary = dir.path().join("base.json");
    let base = run_cmd(&child, &base_summary, &[])
        .stdout(closed())
        .output()
        .unwrap();
    let base_s = read_summary(&base_summary, &base);
    assert_eq!(base_s["kill"]["kind"], "output", "{base_s}");
    assert_eq!(base_s["kill"]["reader_gone"], true, "{base_s}");

    let rx = Receiver::start(Answer::Ok);
    let summary = dir.path().join("telemetry.json");
    let out = run_cmd(&child, &summary, &telemetry_env(&rx.endpoint(), 2000))
        .stdout(closed())
        .output()
        .unwrap();
    assert_built_with_telemetry(&out);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), base.status.code(), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert_eq!(
        facts(&read_summary(&summary, &out)),
        facts(&base_s),
        "{err}"
    );
    assert!(!err.contains("telemetry"), "{err}");
    let items = rx.items();
    assert!(
        items
            .iter()
            .any(|i| i.name == "agent_watchdog.output_error" && i.attr("session.id") == Some("s1")),
        "{}",
        rx.describe()
    );
    assert!(
        items
            .iter()
            .any(|i| i.name == "agent_watchdog.output_error.count"),
        "{}",
        rx.describe()
    );
}

/// `audit` with telemetry on and its stdout closed: the exit code of `audit` without
/// telemetry (141, the report could not be written), and the back-fill still exported.
#[test]
fn audit_with_a_closed_stdout_still_backfills_and_keeps_its_exit_code() {
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/s4_stall_long_silent.capture.jsonl");
    let audit = |env: &[(&str, String)]| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        clean_watchdog()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args(["audit", "--quiet", "--idle", "1s"])
            .arg(&capture)
            .stdout(writer)
            .output()
            .unwrap()
    };
    let base = audit(&[]);
    let rx = Receiver::start(Answer::Ok);
    let out = audit(&telemetry_env(&rx.endpoint(), 2000));
    assert_built_with_telemetry(&out);
    assert_eq!(out.status.code(), base.status.code(), "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
    assert_eq!(out.stderr, base.stderr);
    assert!(
        rx.items()
            .iter()
            .any(|i| i.name == "agent_watchdog.kill"
                && i.attr("agent_watchdog.source") == Some("audit")),
        "{}",
        rx.describe()
    );
}
