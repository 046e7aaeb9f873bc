//! End to end: the real Claude Code CLI against the mock Messages API, under
//! `agent-watchdog run`, for every named scenario of the mock: the outcome, the kill kind,
//! nothing of the session left running, and `--record` then `replay --json` giving the same
//! verdict as the live run.
//!
//! Needs the real `claude` (`scripts/install-claude`, or `CLAUDE_BIN`): a missing binary is
//! a failure that says how to install it, never a skip.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, session_processes, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, ScenarioOptions};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

/// One real CLI at a time: they are heavy on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn claude() -> std::path::PathBuf {
    find_claude()
        .unwrap_or_else(|e| panic!("\n\nThe e2e tests need the real Claude Code CLI.\n{e}\n\n"))
}

// Generous enough that a loaded 2-core machine (a CLI start can take seconds there) never
// trips a healthy run, short enough that the stall scenarios end quickly.
const DEFAULT_FLAGS: &[&str] = &[
    "--idle",
    "8s",
    "--extend-factor",
    "1",
    "--no-progress",
    "20s",
    "--linger",
    "5s",
    "--grace",
    "3s",
];

struct Live {
    summary: Value,
    code: Option<i32>,
    took: Duration,
    stdout: Vec<u8>,
    capture: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn run_scenario(name: &str, flags: &[&str]) -> Live {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let options = ScenarioOptions {
        ping_every: Duration::from_secs(1),
        long_tool: Duration::from_secs(35),
        ..ScenarioOptions::default()
    };
    let scenario = Scenario::named_with(name, &options).expect("a named scenario");
    let gateway = scenario.uses_rate_limit_headers();
    let server = BlockingMockServer::start(scenario).expect("start the mock");
    let mut run = ClaudeRun::new(
        claude(),
        server.base_url(),
        "Write hello.txt, then say hello.",
    )
    .expect("session dirs");
    if gateway {
        run = run.gateway_auth();
    }
    if name == "rejected" {
        // Otherwise the CLI retries the 429 for minutes.
        run = run.env("CLAUDE_CODE_MAX_RETRIES", "0");
    }
    let cmd = run.command();
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let capture = dir.path().join("capture.jsonl");
    let t = Instant::now();
    // These tests are about the watchdog's verdicts; recovery has its own end-to-end tests.
    let out = cmd
        .behind(
            Command::new(BIN)
                .arg("run")
                .args(flags)
                .arg("--no-recover-output-limit")
                .arg("--summary")
                .arg(&summary)
                .arg("--record")
                .arg(&capture)
                .arg("--"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = t.elapsed();
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap_or_default())
        .unwrap_or_else(|e| {
            panic!(
                "{name}: no summary ({e}); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    // Nothing of the session may be left running (the CLI, its Bash tool and that tool's
    // own process group included).
    std::thread::sleep(Duration::from_millis(300));
    let left = session_processes(run.dirs().root());
    assert!(left.is_empty(), "{name}: left running: {left:?}");
    server.shutdown();
    Live {
        summary,
        code: out.status.code(),
        took,
        stdout: out.stdout,
        capture,
        _dir: dir,
    }
}

fn replay(capture: &Path, flags: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("replay")
        .arg(capture)
        .args(flags)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Run `name`, check its outcome / kill kind / exit code, and that replaying the recording
/// gives the same verdict.
fn check(name: &str, flags: &[&str], outcome: &str, kill: Option<&str>, code: i32) -> Live {
    let live = run_scenario(name, flags);
    let s = &live.summary;
    assert_eq!(s["outcome"], outcome, "{name}: {s}");
    assert_eq!(s["kill"]["kind"].as_str(), kill, "{name}: {s}");
    assert_eq!(live.code, Some(code), "{name}: {s}");
    assert!(s["session_id"].is_string(), "{name}: no session id: {s}");
    assert!(
        live.took < Duration::from_secs(90),
        "{name} took {:?}",
        live.took
    );
    // Every stdout line of the CLI was passed through and recorded.
    let lines = live
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count() as u64;
    let counted: u64 = s["lines"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(lines, counted, "{name}: passed-through lines vs counted");
    let v = replay(&live.capture, flags);
    assert_eq!(v["outcome"], outcome, "{name}: replay {v}");
    assert_eq!(v["kill"]["kind"].as_str(), kill, "{name}: replay {v}");
    if let Some(at) = s["kill"]["at_ms"].as_u64() {
        let r = v["kill"]["at_ms"].as_u64().unwrap();
        assert!(
            at.abs_diff(r) < 1000,
            "{name}: live kill at {at} ms, replay at {r} ms"
        );
    }
    live
}

#[test]
fn healthy() {
    check("healthy", DEFAULT_FLAGS, "success", None, 0);
}

#[test]
fn tool_then_answer() {
    check("tool_then_answer", DEFAULT_FLAGS, "success", None, 0);
}

#[test]
fn long_tool_is_killed_while_the_tool_is_silent_and_its_tree_dies() {
    // Heartbeats come only every 30 s: with a 4 s idle limit the silent Bash call is killed,
    // and `session_processes` (checked in `run_scenario`) proves its `setsid` tree died too.
    check("long_tool", DEFAULT_FLAGS, "killed", Some("idle"), 124);
}

#[test]
fn silent_after_tool_result() {
    check(
        "silent_after_tool_result",
        DEFAULT_FLAGS,
        "killed",
        Some("idle"),
        124,
    );
}

#[test]
fn ping_only_stall() {
    // The CLI turns server pings into ping frames every ~10 s: alive, no progress.
    let flags = [
        "--idle",
        "25s",
        "--extend-factor",
        "1",
        "--no-progress",
        "14s",
        "--grace",
        "3s",
    ];
    let live = check(
        "ping_only_stall",
        &flags,
        "killed",
        Some("no_progress"),
        124,
    );
    assert!(
        live.summary["lines"]["ping"].as_u64().unwrap_or(0) >= 1,
        "{}",
        live.summary
    );
}

#[test]
fn headers_only_stall() {
    check(
        "headers_only_stall",
        DEFAULT_FLAGS,
        "killed",
        Some("idle"),
        124,
    );
}

#[test]
fn max_tokens_always() {
    let live = check("max_tokens_always", DEFAULT_FLAGS, "error_result", None, 1);
    assert_eq!(live.summary["result"]["api_error"], "max_output_tokens");
}

#[test]
fn max_tokens_once() {
    check("max_tokens_once", DEFAULT_FLAGS, "success", None, 0);
}

#[test]
fn rate_limit_warning() {
    let live = check("rate_limit_warning", DEFAULT_FLAGS, "success", None, 0);
    // The windows the CLI reported (the mock's warning: five_hour at 95 %, seven_day at 42 %).
    let windows = &live.summary["rate_limits"];
    assert_eq!(
        windows["five_hour"]["utilization"], 0.95,
        "{}",
        live.summary
    );
    assert_eq!(
        windows["five_hour"]["status"], "allowed_warning",
        "{}",
        live.summary
    );
    assert_eq!(
        windows["seven_day"]["utilization"], 0.42,
        "{}",
        live.summary
    );
}

#[test]
fn rate_limited_then_ok() {
    check("rate_limited_then_ok", DEFAULT_FLAGS, "success", None, 0);
}

#[test]
fn rejected() {
    check("rejected", DEFAULT_FLAGS, "error_result", None, 1);
}

#[test]
fn every_named_scenario_is_covered() {
    let covered = [
        "healthy",
        "tool_then_answer",
        "long_tool",
        "silent_after_tool_result",
        "ping_only_stall",
        "headers_only_stall",
        "max_tokens_always",
        "max_tokens_once",
        "rate_limit_warning",
        "rate_limited_then_ok",
        "rejected",
    ];
    for name in Scenario::NAMES {
        assert!(covered.contains(name), "no e2e test for scenario {name}");
    }
}

/// The README's first command (`scripts/demo` runs it): `agent-watchdog demo` on the real CLI
/// and the embedded mock plays its three sessions, each ending as it says (a healthy run, an
/// idle kill, a no-progress kill), and exits 0.
#[test]
fn the_readmes_demo_ends_its_three_sessions_for_their_reasons() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(BIN)
        .arg("demo")
        .env("CLAUDE_BIN", claude())
        .stdin(Stdio::null())
        .output()
        .expect("agent-watchdog demo starts");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "demo failed: {:?}\n{text}",
        out.status
    );
    for ending in [
        "→ ended by itself: success",
        "→ killed (idle)",
        "→ killed (no_progress)",
    ] {
        assert!(
            text.contains(ending),
            "the demo never said {ending:?}:\n{text}"
        );
    }
}
