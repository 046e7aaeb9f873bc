//! The runnable examples in `examples/` as a user runs them: `examples/ci/claude-job.sh` (a CI
//! job branching on the exit code) with the real Claude Code CLI against the mock Messages
//! API. (The Node and Python examples run against the installed packages, in
//! `installed_packages.rs`, from `scripts/test-packages`.)
//!
//! Needs the real `claude` (`scripts/install-claude`, or `CLAUDE_BIN`): a missing binary is a
//! failure that says how to install it, never a skip.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, ScenarioOptions};

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

/// One real CLI at a time: they are heavy on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn job() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/ci/claude-job.sh")
}

struct Ended {
    code: Option<i32>,
    said: String,
    summary: serde_json::Value,
    transcript: String,
}

/// `claude-job.sh` on the mock's `scenario`, with the watchdog's `idle` limit.
fn run_job(scenario: &str, idle: &str) -> Ended {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let claude = find_claude()
        .unwrap_or_else(|e| panic!("\n\nThe examples need the real Claude Code CLI.\n{e}\n\n"));
    let scenario = Scenario::named_with(scenario, &ScenarioOptions::default()).unwrap();
    let server = BlockingMockServer::start(scenario).unwrap();
    let run = ClaudeRun::new(&claude, server.base_url(), "unused").unwrap();
    let cmd = run.command();
    let out = tempfile::tempdir().unwrap();
    let r = Command::new("bash")
        .arg(job())
        .args([
            "Write hello.txt, then say hello.",
            "--permission-mode",
            "bypassPermissions",
        ])
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("AGENT_WATCHDOG", BIN)
        .env("CLAUDE", &claude)
        .env("IDLE", idle)
        .env("OUT_DIR", out.path())
        .current_dir(&cmd.cwd)
        .output()
        .unwrap();
    let read = |f: &str| std::fs::read_to_string(out.path().join(f)).unwrap_or_default();
    Ended {
        code: r.status.code(),
        said: String::from_utf8_lossy(&r.stdout).into_owned(),
        summary: serde_json::from_str(&read("summary.json")).unwrap_or_default(),
        transcript: read("transcript.jsonl"),
    }
}

#[test]
fn the_ci_job_passes_a_healthy_run_and_keeps_its_transcript() {
    let e = run_job("healthy", "60s");
    assert_eq!(e.code, Some(0), "{}", e.said);
    assert_eq!(e.said, "claude-job: done\n");
    assert_eq!(e.summary["outcome"], "success", "{}", e.summary);
    assert!(
        e.transcript
            .lines()
            .any(|l| l.contains(r#""type":"result""#)),
        "the transcript holds the session's stream"
    );
}

#[test]
fn the_ci_job_fails_a_stalled_run_with_the_watchdogs_code() {
    let e = run_job("silent_after_tool_result", "4s");
    assert_eq!(e.code, Some(124), "{}", e.said);
    assert_eq!(
        e.said,
        "claude-job: the watchdog stopped a stalled session (idle, no progress, or open after its result)\n"
    );
    assert_eq!(e.summary["kill"]["kind"], "idle", "{}", e.summary);
}

#[test]
fn the_ci_job_says_a_bad_limit_is_a_usage_error() {
    let out = tempfile::tempdir().unwrap();
    let r = Command::new("bash")
        .arg(job())
        .arg("hello")
        .env("AGENT_WATCHDOG", BIN)
        .env("CLAUDE", "/bin/true")
        .env("IDLE", "soon")
        .env("OUT_DIR", out.path())
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        "claude-job: a bad flag or value for agent-watchdog\n"
    );
}
