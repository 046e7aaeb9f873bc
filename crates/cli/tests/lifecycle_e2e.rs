//! End to end with the real Claude Code CLI against the mock Messages API: the session's life
//! around its host. A multi-turn streaming-input session (`--input-format stream-json`, stdin
//! kept open, as the SDKs' `ClaudeSDKClient` / streaming `query()` run it) is not killed while
//! its host thinks between turns, and its replay agrees.
//!
//! Needs the real `claude` (`scripts/install-claude`, or `CLAUDE_BIN`): a missing binary is a
//! failure that says how to install it, never a skip.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, session_processes, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

/// One real CLI at a time: they are heavy on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn claude() -> std::path::PathBuf {
    find_claude()
        .unwrap_or_else(|e| panic!("\n\nThe e2e tests need the real Claude Code CLI.\n{e}\n\n"))
}

fn user_message(text: &str) -> String {
    serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": null,
        "session_id": "",
    })
    .to_string()
}

/// Stdout lines as they come, on a thread.
fn lines_of(stdout: std::process::ChildStdout) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let v = serde_json::from_str(&line).unwrap_or(Value::Null);
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    rx
}

/// Wait (at most `limit`) for the next `result`; every line read meanwhile is returned too.
fn next_result(rx: &mpsc::Receiver<Value>, limit: Duration) -> Value {
    let end = Instant::now() + limit;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(v) if v["type"] == "result" => return v,
            Ok(_) => {}
            Err(e) => panic!("no result within {limit:?}: {e}"),
        }
    }
}

#[test]
fn a_streaming_input_session_lives_through_a_pause_longer_than_its_linger() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Every request gets the same short answer: one per turn.
    let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), "unused").unwrap();
    let mut cmd = run.command();
    // `-p PROMPT` → `-p` reading its messages from stdin.
    assert_eq!(cmd.args[0], "-p");
    cmd.args.remove(1);
    cmd.args
        .extend(["--input-format", "stream-json"].map(std::ffi::OsString::from));
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let capture = dir.path().join("capture.jsonl");
    let flags = ["--linger", "2s", "--idle", "20s", "--grace", "3s"];
    let mut child = cmd
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
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let rx = lines_of(child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());

    writeln!(stdin, "{}", user_message("turn one")).unwrap();
    let one = next_result(&rx, Duration::from_secs(60));
    assert_eq!(one["subtype"], "success", "{one}");
    // The user thinks for more than twice the linger (2 s): no kill.
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the session ended while its host thought"
    );
    writeln!(stdin, "{}", user_message("turn two")).unwrap();
    let two = next_result(&rx, Duration::from_secs(60));
    assert_eq!(two["subtype"], "success", "{two}");
    // The host ends its input: claude exits by itself.
    drop(stdin);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no exit after EOF");
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = err.join().unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(!err.contains("linger"), "stderr: {err}");
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["outcome"], "success", "{s}");
    assert!(s["kill"].is_null(), "{s}");
    std::thread::sleep(Duration::from_millis(300));
    let left = session_processes(run.dirs().root());
    assert!(left.is_empty(), "left running: {left:?}");
    server.shutdown();

    // The replay of the recording agrees: the same pause, no linger kill.
    let out = Command::new(BIN)
        .arg("replay")
        .arg(&capture)
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
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "success", "replay: {v}");
    assert!(v["kill"].is_null(), "replay: {v}");
    // The same capture under the old reading (no stream-json input) would have been killed:
    // the test can fail.
    let text = std::fs::read_to_string(&capture).unwrap();
    let plain = text.replacen("\"--input-format\",\"stream-json\"", "", 1);
    assert_ne!(plain, text, "the capture records the command line");
    let plain_path = dir.path().join("plain.jsonl");
    std::fs::write(&plain_path, plain).unwrap();
    let out = Command::new(BIN)
        .arg("replay")
        .arg(&plain_path)
        .args(flags)
        .arg("--json")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["kill"]["kind"], "linger",
        "replay without stream-json input: {v}"
    );
}
