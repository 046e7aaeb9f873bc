//! An announced back-off is not a hang: scripted `system/api_retry` frames and the real
//! Claude Code CLI against the mock's 429 (`retry-after`) and 529 (overloaded) answers. An
//! announced wait longer than `--no-progress` is waited out; a storm longer than
//! `--max-backoff` is killed, says so, and is not resumed by `--resume-after-kill`.
//! A missing CLI is a failure, never a skip.

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, ScenarioOptions, Turn, FINAL_TEXT};
use serde_json::Value;

mod common;

use common::{say, script, watchdog, ASSISTANT, INIT, RESULT_OK};

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");
const SID: &str = "5b1a3c4d-0e2f-4a6b-8c9d-0123456789ab";

fn retry(delay_ms: u64, status: u16, error: &str) -> String {
    format!(
        r#"{{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":{delay_ms},"error_status":{status},"error":"{error}","session_id":"{SID}"}}"#
    )
}

/// `agent-watchdog run FLAGS --summary … -- CHILD` to its end; status, stderr, summary.
fn run_script(child: &Path, flags: &[&str]) -> (ExitStatus, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    let out = watchdog()
        .arg("run")
        .args(flags)
        .args(["--no-status", "--grace", "1s", "--state-dir"])
        .arg(dir.path())
        .arg("--summary")
        .arg(&summary)
        .arg("--")
        .arg(child)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let s = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        s,
    )
}

#[test]
fn a_scripted_announced_wait_longer_than_no_progress_is_waited_out() {
    // Measured before: an announced 8 s wait under `--no-progress 3s` was killed at 3 s.
    let dir = tempfile::tempdir().unwrap();
    let child = script(
        dir.path(),
        "retry_then_answer.sh",
        &format!(
            "{}\n{}\n{}\nsleep 8\n{}\n{}",
            say(INIT),
            say(ASSISTANT),
            say(&retry(8000, 529, "overloaded")),
            say(ASSISTANT),
            say(RESULT_OK)
        ),
    );
    let (status, err, s) = run_script(
        &child,
        &[
            "--no-progress",
            "3s",
            "--idle",
            "30s",
            "--extend-factor",
            "1",
        ],
    );
    assert!(s["kill"].is_null(), "{s}\n{err}");
    assert_eq!(s["outcome"], "success", "{s}");
    assert_eq!(status.code(), Some(0), "{err}");
}

#[test]
fn a_scripted_storm_past_max_backoff_is_killed_and_not_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let init = INIT.replace("\"s1\"", &format!("\"{SID}\""));
    // A retry a second, each announcing 2 s, without end; pings between.
    let child = script(
        dir.path(),
        "storm.sh",
        &format!(
            "{}\nwhile :; do {}; sleep 1; done",
            say(&init),
            say(&retry(2000, 529, "overloaded"))
        ),
    );
    let (status, err, s) = run_script(
        &child,
        &[
            "--no-progress",
            "2s",
            "--max-backoff",
            "4s",
            "--idle",
            "30s",
            "--resume-after-kill",
        ],
    );
    assert_eq!(s["kill"]["kind"], "no_progress", "{s}\n{err}");
    // The clocks start 4 s after the first retry at the latest; then 2 s of no progress.
    let at = s["kill"]["at_ms"].as_u64().unwrap();
    assert!((6000..7500).contains(&at), "{s}");
    let b = &s["kill"]["backoff"];
    assert_eq!(b["error_status"], 529, "{s}");
    assert_eq!(b["error"], "overloaded", "{s}");
    assert!(b["attempts"].as_u64() >= Some(5), "{s}");
    assert_eq!(status.code(), Some(124), "{err}");
    assert!(s["recovery"]["continued_outcome"].is_null(), "{s}");
    let skipped = s["recovery"]["skipped"].as_str().unwrap_or_default();
    assert!(skipped.contains("retrying the API"), "{s}");
    assert!(
        err.contains("recovery: not continuing: the kill came while Claude Code was retrying"),
        "{err}"
    );
    assert!(err.contains("during an announced API back-off"), "{err}");
}

fn claude() -> std::path::PathBuf {
    find_claude().unwrap_or_else(|e| panic!("{e}"))
}

/// `agent-watchdog run FLAGS -- claude …` with the run's environment; bounded by `budget`.
fn watch(run: &ClaudeRun, flags: &[&str], budget: Duration) -> (ExitStatus, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let (err_path, summary) = (dir.path().join("err"), dir.path().join("s.json"));
    let mut child = run
        .command()
        .behind(
            Command::new(BIN)
                .args(["run", "--no-status", "--grace", "2s"])
                .args(flags)
                .arg("--state-dir")
                .arg(dir.path())
                .arg("--summary")
                .arg(&summary)
                .arg("--"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let status = common::wait_within(&mut child, budget, "agent-watchdog run", &err_path);
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let s = serde_json::from_slice(&std::fs::read(&summary).unwrap())
        .unwrap_or_else(|_| panic!("no summary:\n{err}"));
    (status, err, s)
}

#[test]
fn the_real_cli_waiting_out_a_429_retry_after_is_not_killed() {
    // The mock answers 429 with `retry-after: 8`; the CLI announces the wait and retries.
    let options = ScenarioOptions {
        reset_in: Duration::from_secs(8),
        ..ScenarioOptions::default()
    };
    let server =
        BlockingMockServer::start(Scenario::named_with("rate_limited_then_ok", &options).unwrap())
            .unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), "Say hello.").unwrap();
    let (status, err, s) = watch(
        &run,
        &[
            "--no-progress",
            "3s",
            "--idle",
            "30s",
            "--extend-factor",
            "1",
        ],
        Duration::from_secs(90),
    );
    assert!(s["kill"].is_null(), "{s}\n{err}");
    assert_eq!(s["outcome"], "success", "{s}\n{err}");
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(server.main_request_count(), 2, "one 429, one answer");
    assert!(s["lines"]["api_retry"].as_u64() >= Some(1), "{s}");
}

#[test]
fn the_real_cli_in_a_529_storm_is_killed_after_max_backoff_and_not_resumed() {
    let server = BlockingMockServer::start(Scenario::new("overloaded").turn(Turn::error(
        529,
        "overloaded_error",
        "Overloaded",
    )))
    .unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), "Say hello.").unwrap();
    let (status, err, s) = watch(
        &run,
        &[
            "--no-progress",
            "2s",
            "--max-backoff",
            "5s",
            "--idle",
            "60s",
            "--resume-after-kill",
        ],
        Duration::from_secs(120),
    );
    let kind = s["kill"]["kind"].as_str().unwrap_or_default();
    assert!(
        kind == "no_progress" || kind == "idle",
        "killed during the storm: {s}\n{err}"
    );
    let b = &s["kill"]["backoff"];
    assert_eq!(b["error_status"], 529, "{s}");
    assert!(b["attempts"].as_u64() >= Some(2), "{s}");
    assert_eq!(status.code(), Some(124), "{err}");
    assert!(s["recovery"]["continued_outcome"].is_null(), "{s}");
    assert!(
        err.contains("recovery: not continuing: the kill came while Claude Code was retrying"),
        "{err}"
    );
    // Nothing resumed: every request is the first run's.
    let sid = s["session_id"].as_str().unwrap_or_default();
    for r in server.main_requests() {
        let rs = r.summary.unwrap();
        assert_eq!(rs.session_id.as_deref(), Some(sid));
        assert!(
            !rs.last_user_text
                .unwrap_or_default()
                .contains("The previous run was stopped"),
            "no continuation prompt"
        );
    }
    let _ = FINAL_TEXT;
}
