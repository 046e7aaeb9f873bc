//! Background work outstanding at a `result` is working, not waiting, with the real Claude
//! Code CLI against the mock's agent scenario (`Scenario::agents` with `background: true`):
//! a background agent that wedges after the interim result is killed `idle` (before: only the
//! linger in `-p` mode, only a ceiling in streaming-input mode), in both modes; one that keeps
//! working for longer than the linger is left alone. A missing CLI is a failure, never a skip.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{AgentScript, BlockingMockServer, CutOffs, Scenario};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

fn claude() -> PathBuf {
    find_claude().unwrap_or_else(|e| panic!("{e}"))
}

/// One run and what it left: its status, stderr, summary and capture.
struct Watched {
    status: ExitStatus,
    stderr: String,
    summary: Value,
    capture: Vec<Value>,
}

impl Watched {
    /// The stdout lines of the capture (`line` records), with their `t_ms`.
    fn lines(&self) -> Vec<(u64, &Value)> {
        self.capture
            .iter()
            .filter_map(|r| Some((r["t_ms"].as_u64()?, r.get("line")?)))
            .collect()
    }

    /// When the first `result` came, ms after the spawn.
    fn first_result_ms(&self) -> Option<u64> {
        self.lines()
            .into_iter()
            .find(|(_, l)| l["type"] == "result")
            .map(|(t, _)| t)
    }

    fn report(&self) -> String {
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
fn watch(run: &ClaudeRun, flags: &[&str], streaming: Option<usize>, budget: Duration) -> Watched {
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

fn background(script: AgentScript) -> (BlockingMockServer, ClaudeRun) {
    let server = BlockingMockServer::start(Scenario::agents(
        "background_agents",
        AgentScript {
            background: true,
            ..script
        },
    ))
    .unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), "Delegate the task.").unwrap();
    (server, run)
}

fn wedged() -> AgentScript {
    AgentScript {
        wedged: true,
        ..AgentScript::default()
    }
}

/// A short linger and a longer idle: a test fails if the linger, not the idle clock, decides.
const LIMITS: [&str; 8] = [
    "--idle",
    "6s",
    "--extend-factor",
    "1",
    "--linger",
    "3s",
    "--no-progress",
    "1h",
];

#[test]
fn a_background_agent_that_wedges_after_the_interim_result_is_killed_idle_in_both_modes() {
    // Measured (2.1.332): `-p` prints no interim result (it waits for the agent), so the idle
    // clock decided there before too; in streaming-input mode the interim `result` comes at
    // once, and the session used to wait for its host with no clock but the ceiling.
    for streaming in [None, Some(usize::MAX)] {
        let (_server, run) = background(wedged());
        let w = watch(&run, &LIMITS, streaming, Duration::from_secs(120));
        let report = w.report();
        assert_eq!(w.summary["kill"]["kind"], "idle", "{streaming:?}\n{report}");
        assert_eq!(w.status.code(), Some(124), "{report}");
        if streaming.is_some() {
            // Killed exactly 6 s (the idle patience) after its last line, which came at or
            // after the interim result: no clock stood still for the host.
            let result = w.first_result_ms().expect("the interim result");
            let k = &w.summary["kill"];
            assert_eq!(k["since_keepalive_ms"], 6000, "{report}");
            let last_line = k["at_ms"].as_u64().unwrap() - 6000;
            assert!(last_line >= result, "{report}");
        }
    }
}

#[test]
fn a_background_agent_that_keeps_working_past_the_linger_is_left_alone() {
    // Each reply of the agent takes a few seconds (one progress line each); it is cut off
    // three times (the CLI continues it itself), then reports; the parent answers on its
    // notification. Far past the 3 s linger after the interim result, never 6 s silent.
    let (server, run) = background(AgentScript {
        cut_offs: CutOffs::Times(3),
        frame_delay: Duration::from_millis(250),
        ..AgentScript::default()
    });
    let w = watch(&run, &LIMITS, Some(2), Duration::from_secs(180));
    let report = w.report();
    assert!(w.summary["kill"].is_null(), "{report}");
    assert_eq!(w.summary["outcome"], "success", "{report}");
    assert_eq!(w.status.code(), Some(0), "{report}");
    let result = w.first_result_ms().expect("the interim result");
    let last_agent_line = w
        .lines()
        .into_iter()
        .filter(|(_, l)| l["parent_tool_use_id"].is_string())
        .map(|(t, _)| t)
        .max()
        .unwrap_or(0);
    assert!(
        last_agent_line > result + 3000,
        "the agent worked past the linger after the interim result: {report}"
    );
    assert!(server.main_request_count() >= 6, "{report}");
}

#[test]
fn replay_of_the_recorded_wedged_run_gives_the_live_kill() {
    // The capture of the streaming-input case above, kept in testdata (live: killed idle at
    // 9141 ms, 6 s after the interim result).
    let capture =
        mock_api::harness::testdata_dir().join("subagents/bg_wedged_streaming.capture.jsonl");
    let out = Command::new(BIN)
        .arg("replay")
        .arg(&capture)
        .args(LIMITS)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kill"]["kind"], "idle", "{v}");
    assert_eq!(v["kill"]["at_ms"], 9141, "{v}");
}
