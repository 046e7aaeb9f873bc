//! One supervised run of the real CLI and what it left (`agent-watchdog run … --record
//! --summary`): its status, stderr, summary and capture, for the suites that drive the real
//! Claude Code CLI against the mock in `-p` and streaming-input modes.
#![allow(dead_code)]

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, ClaudeRun};
use serde_json::Value;

/// The `agent-watchdog` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

/// One real CLI at a time per suite: they are heavy on a 2-core machine, and the suites'
/// bounds hold for one run at a time (tests that drive the CLI themselves take it too).
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The real CLI (a missing one is a failure, never a skip).
pub fn claude() -> PathBuf {
    find_claude().unwrap_or_else(|e| panic!("{e}"))
}

/// One run and what it left: its status, stderr, summary and capture.
pub struct Watched {
    pub status: ExitStatus,
    pub stderr: String,
    pub summary: Value,
    pub capture: Vec<Value>,
}

impl Watched {
    /// The stdout lines of the capture (`line` records), with their `t_ms`.
    pub fn lines(&self) -> Vec<(u64, &Value)> {
        self.capture
            .iter()
            .filter_map(|r| Some((r["t_ms"].as_u64()?, r.get("line")?)))
            .collect()
    }

    /// When the first `result` came, ms after the spawn.
    pub fn first_result_ms(&self) -> Option<u64> {
        self.lines()
            .into_iter()
            .find(|(_, l)| l["type"] == "result")
            .map(|(t, _)| t)
    }

    pub fn report(&self) -> String {
        let lines: Vec<String> = self
            .lines()
            .into_iter()
            .map(|(t, l)| {
                format!(
                    "{t:>6} {} {} {}",
                    l["type"].as_str().unwrap_or(""),
                    l["subtype"].as_str().unwrap_or(""),
                    l["parent_tool_use_id"].as_str().unwrap_or("")
                )
            })
            .collect();
        format!(
            "stderr:\n{}\nsummary: {}\nlines:\n{}",
            self.stderr,
            self.summary,
            lines.join("\n")
        )
    }
}

/// `agent-watchdog run FLAGS --record … --summary … -- claude …` (its `-p PROMPT` replaced by
/// `-p --input-format stream-json` with `streaming: Some(n)`: the prompt then goes on stdin,
/// which stays open like an SDK client's until the `n`th `result`); killed and failed after
/// `budget`.
pub fn watch(
    run: &ClaudeRun,
    flags: &[&str],
    streaming: Option<usize>,
    budget: Duration,
) -> Watched {
    let mut cmd = run.command();
    if streaming.is_some() {
        let at = cmd.args.iter().position(|a| a == "-p").unwrap();
        cmd.args.remove(at + 1);
        cmd.args
            .extend(["--input-format", "stream-json"].map(std::ffi::OsString::from));
    }
    let dir = tempfile::tempdir().unwrap();
    let (err_path, summary, capture) = (
        dir.path().join("err"),
        dir.path().join("summary.json"),
        dir.path().join("capture.jsonl"),
    );
    let mut child = cmd
        .behind(
            Command::new(BIN)
                .args(["run", "--no-status", "--grace", "2s"])
                .args(flags)
                .arg("--record")
                .arg(&capture)
                .arg("--summary")
                .arg(&summary)
                .arg("--"),
        )
        .stdin(if streaming.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    // The SDK client's first message; its input stays open until the run ends.
    let mut stdin = child.stdin.take().map(|mut s| {
        let line = serde_json::json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
            "message": {"role": "user", "content": [{"type": "text", "text": "Delegate the task."}]}});
        s.write_all(format!("{line}\n").as_bytes()).unwrap();
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        // The host ends its input after the result it waits for.
        if let (Some(n), true) = (streaming, stdin.is_some()) {
            let text = std::fs::read_to_string(&capture).unwrap_or_default();
            if text.matches(r#""type":"result""#).count() >= n {
                stdin = None;
            }
        }
        if t.elapsed() > budget {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "agent-watchdog run did not finish within {budget:?}; stderr:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    if let Some(keep) = std::env::var_os("FIELDHANGS_RECORD_TO") {
        let _ = std::fs::copy(&capture, keep);
    }
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let summary = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    let capture = std::fs::read_to_string(&capture)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Watched {
        status,
        stderr,
        summary,
        capture,
    }
}
