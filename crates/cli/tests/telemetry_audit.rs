//! `agent-watchdog audit` with telemetry on back-fills past sessions (docs/telemetry.md):
//! against the loopback OTLP receiver (official OpenTelemetry definitions), an audit over
//! recordings from `testdata/` gives one `agent_watchdog.kill` event per simulated kill, with
//! the recording's `session.id`, stamped with when the kill would have happened on the
//! recording's own clock (observed: now), and marked `agent_watchdog.source = "audit"`; the
//! report itself is the same as without telemetry.
//!
//! Needs the binary built with the cargo feature `telemetry` (`scripts/test` builds with
//! `--all-features`): without it these tests fail and say so, they do not skip.

mod common;
#[path = "common/otlp.rs"]
mod otlp;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{SystemTime, UNIX_EPOCH};

use common::{stderr, watchdog};
use otlp::{Answer, Item, Receiver};
use serde_json::Value;

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

/// The wall clock the test gives the capture's `start` record.
const SPAWN_WALL_MS: u64 = 1_796_030_275_077;

/// The recordings: two transcripts (one killed by the settings, one not), a capture given a
/// `start` record (so it has a wall clock), and a capture without one.
fn recordings(dir: &Path) -> Vec<PathBuf> {
    let stalled =
        std::fs::read_to_string(testdata("captures/s4_stall_long_silent.capture.jsonl")).unwrap();
    let with_start = dir.join("stalled.capture.jsonl");
    std::fs::write(
        &with_start,
        format!(
            "{{\"t_ms\":0,\"start\":{{\"wall_ms\":{SPAWN_WALL_MS},\"argv\":[\"claude\"],\"version\":1}}}}\n{stalled}"
        ),
    )
    .unwrap();
    vec![
        testdata("transcripts/tool-session.jsonl"),
        testdata("transcripts/max-tokens-session.jsonl"),
        with_start,
        testdata("captures/s6_bidir_minimal.capture.jsonl"),
    ]
}

fn audit(files: &[PathBuf], env: &[(&str, String)]) -> Output {
    let mut c = watchdog();
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("OTEL_") {
            c.env_remove(k);
        }
    }
    c.envs(env.iter().map(|(k, v)| (k, v)))
        .args([
            "audit",
            "--json",
            "--quiet",
            "--idle",
            "1s",
            "--no-progress",
            "2s",
        ])
        .args(files)
        .output()
        .unwrap()
}

fn telemetry_env(endpoint: &str, protocol: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AGENT_WATCHDOG_TELEMETRY", "1".into()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.into()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.into()),
    ]
}

/// The first `timestamp` of a transcript, epoch ms: the origin its kills' `at_ms` count from.
fn first_timestamp_ms(file: &Path) -> i64 {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| {
            v["timestamp"]
                .as_str()
                .and_then(watchdog_core::parse_iso_ms)
        })
        .unwrap()
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn backfills(protocol: &str) {
    let dir = tempfile::tempdir().unwrap();
    let files = recordings(dir.path());
    let base = audit(&files, &[]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let report: Value = serde_json::from_slice(&base.stdout).unwrap();
    let kills = report["would_kill"].as_array().unwrap().clone();
    // The settings kill the stalled capture and the tool transcript, not the others.
    assert!(kills.len() >= 2, "{report}");
    let t0 = now_ns();
    let rx = Receiver::start(Answer::Ok);
    let out = audit(&files, &telemetry_env(&rx.endpoint(), protocol));
    assert!(
        !stderr(&out).contains("this build has no telemetry"),
        "agent-watchdog was built without the cargo feature `telemetry`: run the tests with \
         --features telemetry (or --all-features, as scripts/test does)"
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The report is the one without telemetry.
    assert_eq!(out.stdout, base.stdout);
    assert!(!stderr(&out).contains("telemetry"), "{}", stderr(&out));
    let items = rx.items();
    let what = rx.describe();
    assert!(rx.got.lock().unwrap().undecoded.is_empty(), "{what}");
    assert!(!items.is_empty(), "{what}");
    for i in &items {
        assert_eq!(i.service, "agent-watchdog", "{i:?}");
        assert_eq!(i.attr("agent_watchdog.source"), Some("audit"), "{i:?}");
        assert!(i.attr("session.id").is_some_and(|s| !s.is_empty()), "{i:?}");
    }
    let events: Vec<&Item> = items
        .iter()
        .filter(|i| i.signal == "logs" && i.name == "agent_watchdog.kill")
        .collect();
    assert_eq!(events.len(), kills.len(), "{what}");
    for k in &kills {
        let sid = k["session_id"].as_str().unwrap();
        let file = Path::new(k["file"].as_str().unwrap());
        let at_ms = k["at_ms"].as_u64().unwrap();
        let name = file.to_string_lossy();
        // A capture without a `start` record has no wall clock: no timestamp, only the
        // observed time.
        let want_ns = if name.ends_with("stalled.capture.jsonl") {
            (SPAWN_WALL_MS + at_ms) * 1_000_000
        } else if name.ends_with(".capture.jsonl") {
            0
        } else {
            (first_timestamp_ms(file) as u64 + at_ms) * 1_000_000
        };
        let e = events
            .iter()
            .find(|e| e.attr("session.id") == Some(sid))
            .unwrap_or_else(|| panic!("no kill event for {sid}: {what}"));
        assert_eq!(e.time_ns, want_ns, "{e:?} for {k}");
        assert!(e.observed_ns >= t0, "{e:?}");
        assert_eq!(e.attr("kill.kind"), k["kind"].as_str(), "{e:?}");
        assert_eq!(e.attr("elapsed_ms"), Some(at_ms.to_string().as_str()));
        assert_eq!(e.attr("event.name"), Some("agent_watchdog.kill"));
    }
    // Per session: one count by outcome and one end event; the capture without a `start`
    // record has no wall clock, so its end event carries only the observed time.
    let sessions = report["sessions"].as_array().unwrap();
    let counted: Vec<&Item> = items
        .iter()
        .filter(|i| i.signal == "metrics" && i.name == "agent_watchdog.session.count")
        .collect();
    assert_eq!(counted.len(), sessions.len(), "{what}");
    for s in sessions {
        let sid = s["session_id"].as_str().unwrap();
        let c = counted
            .iter()
            .find(|c| c.attr("session.id") == Some(sid))
            .unwrap_or_else(|| panic!("no session.count for {sid}: {what}"));
        let want = if s["would_kill"].is_null() {
            "success"
        } else {
            "killed"
        };
        assert_eq!(c.attr("outcome"), Some(want), "{c:?}");
        assert_eq!(c.attr("audit.ending"), s["ending"].as_str(), "{c:?}");
    }
    let ends: Vec<&Item> = items
        .iter()
        .filter(|i| i.signal == "logs" && i.name == "agent_watchdog.session_end")
        .collect();
    assert_eq!(ends.len(), sessions.len(), "{what}");
    let untimed = ends.iter().filter(|e| e.time_ns == 0).count();
    assert_eq!(
        untimed, 1,
        "only the capture without a start record: {ends:#?}"
    );
    assert!(ends.iter().all(|e| e.observed_ns >= t0), "{ends:#?}");
    // Every quiet spell, on both clocks, and the kill counters.
    let spells: usize = sessions
        .iter()
        .map(|s| s["spells"].as_u64().unwrap() as usize)
        .sum();
    let spell_points: f64 = items
        .iter()
        .filter(|i| i.name == "agent_watchdog.quiet_spell.duration")
        .map(|i| i.value)
        .sum();
    assert_eq!(spell_points as usize, 2 * spells, "{what}");
    // Our buckets (a second to hours), not the SDK's defaults.
    for i in items
        .iter()
        .filter(|i| i.name.ends_with(".duration") && i.signal == "metrics")
    {
        assert_eq!(i.bounds.first(), Some(&1.0), "{i:?}");
        assert_eq!(i.bounds.last(), Some(&14400.0), "{i:?}");
    }
    let killed: f64 = items
        .iter()
        .filter(|i| i.name == "agent_watchdog.kill.count")
        .map(|i| i.value)
        .sum();
    assert_eq!(killed as usize, kills.len(), "{what}");
}

#[test]
fn audit_backfills_one_kill_event_per_simulated_kill_over_http_protobuf() {
    backfills("http/protobuf");
}

#[test]
fn audit_backfills_over_http_json() {
    backfills("http/json");
}

#[test]
fn audit_without_the_switch_exports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let files = recordings(dir.path());
    let rx = Receiver::start(Answer::Ok);
    let mut env = telemetry_env(&rx.endpoint(), "http/protobuf");
    env.retain(|(k, _)| *k != "AGENT_WATCHDOG_TELEMETRY");
    let out = audit(&files, &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(rx.got.lock().unwrap().requests.is_empty());
    assert!(!stderr(&out).contains("telemetry"), "{}", stderr(&out));
}

/// More sessions than the SDK keeps series for a metric: every event still goes out, the
/// metrics' extra sessions are summed in the SDK's overflow series, and one stderr line says
/// so; the report is unchanged.
#[test]
fn a_backfill_over_the_series_limit_says_so_and_keeps_every_event() {
    const SESSIONS: usize = 2001;
    let dir = tempfile::tempdir().unwrap();
    for i in 0..SESSIONS {
        std::fs::write(
            dir.path().join(format!("s{i}.jsonl")),
            format!(
                "{{\"type\":\"user\",\"timestamp\":\"2026-11-30T09:00:00.000Z\",\"sessionId\":\"sess-{i}\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\n\
                 {{\"type\":\"assistant\",\"timestamp\":\"2026-11-30T09:00:05.000Z\",\"sessionId\":\"sess-{i}\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"ok\"}}],\"stop_reason\":\"end_turn\"}}}}\n"
            ),
        )
        .unwrap();
    }
    let files = [dir.path().to_path_buf()];
    let base = audit(&files, &[]);
    let rx = Receiver::start(Answer::Ok);
    let out = audit(&files, &telemetry_env(&rx.endpoint(), "http/protobuf"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, base.stdout);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["sessions_scanned"], SESSIONS as u64);
    let err = stderr(&out);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("telemetry")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains("2001 sessions, over the 2000 series"),
        "{err}"
    );
    let items = rx.items();
    let ends = items
        .iter()
        .filter(|i| i.name == "agent_watchdog.session_end")
        .count();
    assert_eq!(ends, SESSIONS, "{}", rx.describe());
    let counted: Vec<&Item> = items
        .iter()
        .filter(|i| i.name == "agent_watchdog.session.count")
        .collect();
    let total: f64 = counted.iter().map(|i| i.value).sum();
    assert_eq!(total as usize, SESSIONS);
    assert!(
        counted
            .iter()
            .any(|i| i.attr("otel.metric.overflow") == Some("true")),
        "{}",
        rx.describe()
    );
}
