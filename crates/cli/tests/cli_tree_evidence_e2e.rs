//! End to end with the real Claude Code CLI against the mock Messages API: its Bash tool
//! burning CPU is held past `--no-progress` until `--busy-cap`; the same tool blocked in
//! `sleep` is killed at `--no-progress`, the stderr line naming it asleep; nothing of the
//! session is left running; `replay --json` of the capture agrees with the live verdict.
//!
//! Needs the real `claude` (`scripts/install-claude`, or `CLAUDE_BIN`): a missing binary is a
//! failure that says how to install it, never a skip.
#![cfg(target_os = "linux")]

use std::process::{Command, Stdio};
use std::sync::Mutex;

use mock_api::harness::{find_claude, session_processes, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, Turn, BASH_TOOL_ID, FINAL_TEXT};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

/// One real CLI at a time: they are heavy on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

/// Idle far beyond the test (the CLI's heartbeats come at 30 s); no progress after 8 s but
/// for a busy tool, which is held up to 20 s after the last progress.
const FLAGS: &[&str] = &[
    "--idle",
    "90s",
    "--no-progress",
    "8s",
    "--busy-cap",
    "20s",
    "--grace",
    "3s",
];

struct Live {
    summary: Value,
    stderr: String,
    code: Option<i32>,
    capture: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// The real CLI, asked by the mock to run `command` in its Bash tool, under `run FLAGS`.
fn run_bash(command: &str) -> Live {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let claude = find_claude()
        .unwrap_or_else(|e| panic!("\n\nThe e2e tests need the real Claude Code CLI.\n{e}\n\n"));
    let scenario = Scenario::new("bash_tool")
        .turn(Turn::new().text("Running it.").bash(BASH_TOOL_ID, command))
        .turn(Turn::answer(FINAL_TEXT));
    let server = BlockingMockServer::start(scenario).expect("start the mock");
    let run = ClaudeRun::new(claude, server.base_url(), "Run the build.").expect("session dirs");
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let capture = dir.path().join("capture.jsonl");
    let out = run
        .command()
        .behind(
            Command::new(BIN)
                .arg("run")
                .args(FLAGS)
                .arg("--summary")
                .arg(&summary)
                .arg("--record")
                .arg(&capture)
                .arg("--"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no summary ({e}); stderr: {stderr}"));
    // Nothing of the session may be left running: the CLI, its Bash tool's own session.
    let left = session_processes(run.dirs().root());
    assert!(left.is_empty(), "left running: {left:?}");
    server.shutdown();
    Live {
        summary,
        stderr,
        code: out.status.code(),
        capture,
        _dir: dir,
    }
}

fn replay(capture: &std::path::Path) -> Value {
    let out = Command::new(BIN)
        .arg("replay")
        .arg(capture)
        .args(FLAGS)
        .arg("--json")
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("replay: {e}: {}", String::from_utf8_lossy(&out.stderr)))
}

fn kill_line(live: &Live) -> &str {
    live.stderr
        .lines()
        .find(|l| l.contains("agent-watchdog: killed"))
        .unwrap_or_else(|| panic!("no kill line: {}", live.stderr))
}

/// The replay gives the live verdict: the kind, the instant (the recorder's ms), the hold.
fn assert_replay_agrees(live: &Live) {
    let r = replay(&live.capture);
    let (lk, rk) = (&live.summary["kill"], &r["kill"]);
    assert_eq!(rk["kind"], lk["kind"], "replay {r}");
    let at = |k: &Value| k["at_ms"].as_i64().unwrap();
    assert!((at(rk) - at(lk)).abs() < 1000, "live {lk}\nreplay {rk}");
    for f in ["busy", "capped"] {
        assert_eq!(rk["evidence"][f], lk["evidence"][f], "evidence.{f}");
    }
    assert_eq!(rk["tree"], lk["tree"], "the receipt the capture kept");
}

/// Claude Code's Bash tool burning a core: `no_progress` waits for the busy cap.
#[test]
fn the_real_cli_s_busy_bash_tool_is_held_until_the_busy_cap() {
    let live = run_bash("echo start; python3 -c 'while True: pass'");
    assert_eq!(live.code, Some(124), "{}", live.stderr);
    let k = &live.summary["kill"];
    assert_eq!(k["kind"], "no_progress", "{k}");
    assert_eq!(k["evidence"]["capped"], true, "{k}");
    assert_eq!(k["evidence"]["tool"]["name"], "Bash", "{k}");
    assert!(k["since_progress_ms"].as_u64().unwrap() >= 20_000, "{k}");
    let named = &k["evidence"]["named"];
    assert!(
        named["command"].as_str().unwrap().contains("while True"),
        "{named}"
    );
    let line = kill_line(&live);
    assert!(line.contains("up to --busy-cap: Bash tool: `"), "{line}");
    // The receipt: the tool's processes, in a session of their own, got SIGKILL or ended
    // when claude stopped them (SIGTERM lets it clean its tools up).
    let procs = k["tree"]["processes"].as_array().unwrap();
    assert!(procs.iter().any(|p| p["tool"] == true), "{k}");
    assert!(procs.iter().all(|p| p["ended"] != "survived"), "{k}");
    assert_replay_agrees(&live);
}

/// The same tool blocked in `sleep`: killed at `--no-progress`, named asleep.
#[test]
fn the_real_cli_s_blocked_bash_tool_is_killed_at_no_progress() {
    let live = run_bash("echo start; sleep 100");
    assert_eq!(live.code, Some(124), "{}", live.stderr);
    let k = &live.summary["kill"];
    assert_eq!(k["kind"], "no_progress", "{k}");
    assert_eq!(k["evidence"]["busy"], false, "{k}");
    assert_eq!(k["evidence"]["held_ms"], 0, "{k}");
    let line = kill_line(&live);
    assert!(line.contains("; Bash tool: `sleep 100` (pid "), "{line}");
    assert!(line.contains(") asleep "), "{line}");
    assert_replay_agrees(&live);
}
