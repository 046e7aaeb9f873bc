//! End to end with the real Claude Code CLI: claude with its own telemetry on and
//! `agent-watchdog run` with ours on, both exporting to one OTLP receiver on loopback (which
//! decodes with the official OpenTelemetry definitions). A stalled session is killed (idle),
//! and the receiver then holds Claude Code's `claude_code.session.count` and our
//! `agent_watchdog.kill` event and counters, all with the same `session.id`: the join a fleet
//! dashboard makes.
//!
//! The SQL join of docs/telemetry.md ("sessions whose last Claude Code event is older than their kill")
//! then runs, as the guide prints it, on DuckDB over the log records received, loaded into a
//! table shaped like the collector's ClickHouse exporter's `otel_logs`: it finds this session.
//!
//! Needs the real `claude` (`scripts/install-claude`, or `CLAUDE_BIN`), DuckDB
//! (`scripts/install-query-tools`) and the binary built with the cargo feature `telemetry`:
//! any of them missing is a failure that says so, never a skip.
//!
//! `WATCHDOG_TEST_AGENT_WATCHDOG=PATH` runs another `agent-watchdog` instead of this build's:
//! `scripts/test-packages` points it at the released binary installed from the wheel, a build
//! with the default features only (what `cargo install` builds), so the test shows that a
//! default build exports telemetry.

#[path = "common/otlp.rs"]
mod otlp;
#[path = "common/queries.rs"]
mod queries;

use std::process::{Command, Stdio};
use std::time::Duration;

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, ScenarioOptions};
use otlp::{Answer, Receiver};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

/// The `agent-watchdog` under test: this build's, or `WATCHDOG_TEST_AGENT_WATCHDOG`'s (which
/// must be an executable file: a wrong path fails, it never falls back).
fn agent_watchdog() -> std::path::PathBuf {
    match std::env::var_os("WATCHDOG_TEST_AGENT_WATCHDOG") {
        None => BIN.into(),
        Some(p) => {
            let p = std::path::PathBuf::from(p);
            assert!(
                p.is_file(),
                "WATCHDOG_TEST_AGENT_WATCHDOG={} is not a file",
                p.display()
            );
            p
        }
    }
}

#[test]
fn claude_code_telemetry_and_ours_join_by_session_id() {
    let claude = find_claude()
        .unwrap_or_else(|e| panic!("\n\nThis test needs the real Claude Code CLI.\n{e}\n\n"));
    let rx = Receiver::start(Answer::Ok);
    let scenario = Scenario::named_with(
        "silent_after_tool_result",
        &ScenarioOptions {
            ping_every: Duration::from_secs(1),
            ..ScenarioOptions::default()
        },
    )
    .expect("a named scenario");
    let server = BlockingMockServer::start(scenario).expect("start the mock");
    let run = ClaudeRun::new(
        claude,
        server.base_url(),
        "Write hello.txt, then say hello.",
    )
    .expect("session dirs")
    // Claude Code's own telemetry (the harness turns it off by default).
    .env("CLAUDE_CODE_ENABLE_TELEMETRY", "1")
    .env("DISABLE_TELEMETRY", "0")
    .env("OTEL_METRICS_EXPORTER", "otlp")
    .env("OTEL_LOGS_EXPORTER", "otlp")
    .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint())
    .env("OTEL_METRIC_EXPORT_INTERVAL", "1000")
    .env("OTEL_LOGS_EXPORT_INTERVAL", "500");
    let cmd = run.command();
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let out = cmd
        .behind(
            Command::new(agent_watchdog())
                .arg("run")
                .args([
                    "--idle",
                    "8s",
                    "--extend-factor",
                    "1",
                    "--no-progress",
                    "20s",
                ])
                .args(["--grace", "3s", "--no-recover-output-limit", "--summary"])
                .arg(&summary)
                .arg("--"),
        )
        // Ours: the same receiver, read from our own environment (the child's is its own).
        .env("AGENT_WATCHDOG_TELEMETRY", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("this build has no telemetry"),
        "agent-watchdog was built without the cargo feature `telemetry` (use --all-features)"
    );
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no summary ({e}); stderr: {err}"));
    server.shutdown();
    assert_eq!(summary["kill"]["kind"], "idle", "{summary}");
    assert_eq!(out.status.code(), Some(124), "{err}");
    let sid = summary["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no session id: {summary}"))
        .to_owned();

    // Claude Code's session counter, exported by claude itself.
    let theirs = rx.wait_for(Duration::from_secs(10), |i| {
        i.service == "claude-code" && i.name == "claude_code.session.count"
    });
    let what = rx.describe();
    let theirs = theirs.unwrap_or_else(|| panic!("no claude_code.session.count: {what}"));
    assert_eq!(theirs.attr("session.id"), Some(sid.as_str()), "{theirs:?}");
    // Ours, flushed at our exit.
    let items = rx.items();
    let ours = |signal: &str, name: &str| {
        items
            .iter()
            .filter(|i| i.service == "agent-watchdog" && i.signal == signal && i.name == name)
            .collect::<Vec<_>>()
    };
    let kill = ours("logs", "agent_watchdog.kill");
    assert_eq!(kill.len(), 1, "{what}");
    assert_eq!(kill[0].attr("session.id"), Some(sid.as_str()));
    assert_eq!(kill[0].attr("kill.kind"), Some("idle"));
    let kills = ours("metrics", "agent_watchdog.kill.count");
    assert_eq!(kills.len(), 1, "{what}");
    assert_eq!(kills[0].attr("session.id"), Some(sid.as_str()));
    assert_eq!(kills[0].value, 1.0);
    let sessions = ours("metrics", "agent_watchdog.session.count");
    assert_eq!(sessions.len(), 1, "{what}");
    assert_eq!(sessions[0].attr("session.id"), Some(sid.as_str()));
    assert_eq!(sessions[0].attr("outcome"), Some("killed"));
    // Claude Code's events carry the same session id: the join works both ways.
    assert!(
        items.iter().any(|i| i.service == "claude-code"
            && i.signal == "logs"
            && i.attr("session.id") == Some(sid.as_str())),
        "{what}"
    );
    assert!(rx.got.lock().unwrap().undecoded.is_empty(), "{what}");

    // The guide's join, on the records as a ClickHouse `otel_logs` table would hold them:
    // `Timestamp` is the record's time, or its observed time when it has none (as the
    // exporter does), `ServiceName` the resource's, `LogAttributes` the attributes as text.
    let records: Vec<Value> = items
        .iter()
        .filter(|i| i.signal == "logs")
        .map(|i| {
            let ts = if i.time_ns == 0 {
                i.observed_ns
            } else {
                i.time_ns
            };
            serde_json::json!({"timestamp_ns": ts, "service": i.service, "attributes": i.attrs})
        })
        .collect();
    let claude_events = records
        .iter()
        .filter(|r| r["service"] == "claude-code")
        .count();
    assert!(claude_events > 0, "{what}");
    let sql = queries::guide_query("sql", "otel_logs");
    let rows: Vec<Vec<String>> = serde_json::from_str(&queries::run_python(
        "sql_join.py",
        &[&sql],
        &serde_json::to_string(&records).unwrap(),
    ))
    .unwrap();
    assert_eq!(rows.len(), 1, "{rows:?} from {} records", records.len());
    assert_eq!(rows[0][0], sid, "{rows:?}");
    // The kill (row's second column) came after Claude Code's last event (the third).
    assert!(rows[0][1] > rows[0][2], "{rows:?}");
}
