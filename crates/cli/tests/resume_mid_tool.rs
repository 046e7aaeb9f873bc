//! A resume after a kill mid-tool is not poisoned, and a continuation starts exactly one new
//! user turn: the real Claude Code CLI under `agent-watchdog run --resume-after-kill`, against
//! the mock Messages API validating every request as the API does (unique `tool_use` ids,
//! every `tool_use` answered by exactly one `tool_result` right after it, roles alternating;
//! `400 invalid_request_error` otherwise, as a poisoned transcript gets).
//!
//! Killed in each place a kill can land: during a running Bash tool, during an MCP call (the
//! repository's MCP server fixture), during a streaming answer; and with the environment that
//! changes what `--resume` does (`CLAUDE_CODE_RESUME_INTERRUPTED_TURN=1` and its kin)
//! inherited. A missing CLI (or `python3` for the MCP server) is a failure, never a skip.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{
    validate_messages, BlockingMockServer, Matcher, RecordedRequest, Scenario, Turn, BASH_TOOL_ID,
    FINAL_TEXT, MCP_FINAL_TEXT,
};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

/// The prompt of the killed run: each request's user turns are counted by it.
const PROMPT: &str = "Do the long task.";

fn claude() -> PathBuf {
    find_claude().unwrap_or_else(|e| panic!("{e}"))
}

/// One `agent-watchdog run` and what it left behind.
struct Watched {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    summary: Value,
}

/// `agent-watchdog run --resume-after-kill --idle 4s … -- claude …` with the claude run's
/// environment (plus `env`) and working directory; killed and failed after `budget`.
fn watch(run: &ClaudeRun, flags: &[&str], state: &Path, budget: Duration) -> Watched {
    let out_dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (out_dir.path().join("out"), out_dir.path().join("err"));
    let summary = out_dir.path().join("summary.json");
    let mut child = run
        .command()
        .behind(
            Command::new(BIN)
                .args(["run", "--no-status", "--resume-after-kill", "--grace", "2s"])
                .args(["--idle", "4s", "--extend-factor", "1"])
                .args(flags)
                .arg("--state-dir")
                .arg(state)
                .arg("--summary")
                .arg(&summary)
                .arg("--"),
        )
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let status = common::wait_within(&mut child, budget, "agent-watchdog run", &err_path);
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let summary = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    Watched {
        status,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr,
        summary,
    }
}

/// Every `POST /v1/messages` the mock got, in order, rejected ones included.
fn message_requests(server: &BlockingMockServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path == "/v1/messages" && r.body.is_some())
        .collect()
}

/// The user turns a person (or the watchdog) started in a request: user messages whose text
/// is a prompt, not a tool result, a reminder or an interruption marker the CLI wrote.
fn user_turns(body: &Value) -> Vec<String> {
    let mut turns = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        let texts: Vec<String> = match &m["content"] {
            Value::String(s) => vec![s.clone()],
            // A message that answers tool calls: its text belongs to the results.
            Value::Array(blocks) if blocks.iter().any(|b| b["type"] == "tool_result") => Vec::new(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        for t in texts {
            let t = t.trim();
            if t.starts_with("<system-reminder>") || t.starts_with("[Request interrupted") {
                continue;
            }
            turns.push(t.to_owned());
        }
    }
    turns
}

/// What every kill-then-resume case must show: the first run was killed (idle) mid-work and
/// continued once; every request the mock got is valid; the continuation's requests carry the
/// killed conversation plus exactly one new user turn (the continuation prompt); the session
/// ended with the continuation's answer.
fn assert_one_clean_continuation(server: &BlockingMockServer, w: &Watched, answer: &str) {
    let s = &w.summary;
    assert_eq!(s["kill"]["kind"], "idle", "{s}\n{}", w.stderr);
    assert_eq!(s["recovery"]["trigger"], "after_kill", "{s}");
    assert_eq!(
        s["recovery"]["continued_outcome"], "success",
        "{s}\n{}",
        w.stderr
    );
    assert_eq!(w.status.code(), Some(0), "{}", w.stderr);
    let reqs = message_requests(server);
    for (i, r) in reqs.iter().enumerate() {
        if let Err(e) = validate_messages(r.body.as_ref().unwrap()) {
            panic!(
                "request {i} would be rejected by the API: {e}\n{}",
                serde_json::to_string_pretty(&r.body.as_ref().unwrap()["messages"]).unwrap()
            );
        }
    }
    let sid = s["session_id"].as_str().unwrap();
    let resumed: Vec<&RecordedRequest> = reqs
        .iter()
        .filter(|r| {
            let turns = user_turns(r.body.as_ref().unwrap());
            turns.iter().any(|t| t.contains("was stopped"))
        })
        .collect();
    assert!(!resumed.is_empty(), "no continuation request: {}", w.stderr);
    for r in &resumed {
        assert_eq!(
            r.summary.as_ref().and_then(|s| s.session_id.as_deref()),
            Some(sid),
            "the same session"
        );
        let turns = user_turns(r.body.as_ref().unwrap());
        assert_eq!(
            turns.iter().filter(|t| t.as_str() == PROMPT).count(),
            1,
            "the killed turn is not replayed: {turns:?}"
        );
        assert_eq!(
            turns.len(),
            2,
            "exactly one new user turn (the continuation): {turns:?}"
        );
    }
    assert_eq!(
        w.stderr.matches("continuing session").count(),
        1,
        "{}",
        w.stderr
    );
    assert_eq!(s["runs"][1]["outcome"], "success", "{s}");
    // The continuation's result is the mock's answer to the continuation prompt.
    let last = w.stdout.lines().last().unwrap_or_default();
    let last: Value = serde_json::from_str(last).unwrap_or_default();
    assert_eq!(last["type"], "result", "{}", w.stdout);
    assert!(
        last["result"].as_str().is_some_and(|r| r.contains(answer)),
        "the continuation answered: {last}"
    );
}

/// `s` validating, and answering the continuation prompt with `answer`.
fn continued(s: Scenario, answer: &str) -> Scenario {
    s.validating().when(
        Matcher::LastUserTextContains("The previous run was stopped".into()),
        Turn::answer(answer),
    )
}

/// A scenario that validates, answers a continued conversation (whose last tool call is
/// answered) with `answer`, and otherwise first runs `first`.
fn validating(name: &str, first: Turn, answered_call: Option<&str>, answer: &str) -> Scenario {
    let s = continued(Scenario::new(name), answer);
    let s = match answered_call {
        Some(id) => s.when(Matcher::ToolResultFor(id.into()), Turn::answer(answer)),
        None => s,
    };
    s.turn(first).turn(Turn::answer(answer))
}

fn bash_case(env: &[(&str, &str)]) -> (BlockingMockServer, Watched) {
    let scenario = validating(
        "bash_killed_mid_tool",
        Turn::new()
            .text("Running the long command.")
            .bash(BASH_TOOL_ID, "echo start; sleep 120; echo end"),
        Some(BASH_TOOL_ID),
        FINAL_TEXT,
    );
    let server = BlockingMockServer::start(scenario).unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut run = ClaudeRun::new(claude(), server.base_url(), PROMPT).unwrap();
    for (k, v) in env {
        run = run.env(*k, *v);
    }
    let w = watch(&run, &[], state.path(), Duration::from_secs(120));
    (server, w)
}

#[test]
fn a_kill_during_a_running_bash_tool_resumes_cleanly() {
    let (server, w) = bash_case(&[]);
    assert_one_clean_continuation(&server, &w, FINAL_TEXT);
}

#[test]
fn a_kill_during_a_streaming_answer_resumes_cleanly() {
    let scenario = validating(
        "killed_mid_stream",
        Turn::answer("Thinking about the long ").stall_forever(),
        None,
        FINAL_TEXT,
    );
    let server = BlockingMockServer::start(scenario).unwrap();
    let state = tempfile::tempdir().unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), PROMPT).unwrap();
    let w = watch(&run, &[], state.path(), Duration::from_secs(120));
    assert_one_clean_continuation(&server, &w, FINAL_TEXT);
}

/// The MCP server fixture (`testdata/mcp/mcp_probe.py`), its `wait` tool never answering.
fn mcp_config(dir: &Path) -> PathBuf {
    let probe = mock_api::harness::testdata_dir().join("mcp/mcp_probe.py");
    assert!(
        probe.is_file(),
        "the MCP server fixture is missing: {probe:?}"
    );
    let cfg = dir.join("mcp.json");
    let config = serde_json::json!({"mcpServers": {"probe": {
        "command": "python3", "args": [probe, "never"]
    }}});
    std::fs::write(&cfg, config.to_string()).unwrap();
    cfg
}

#[test]
fn a_kill_during_an_mcp_call_resumes_cleanly() {
    let scenario = continued(Scenario::mcp_tool_call("mcp__probe__wait"), MCP_FINAL_TEXT);
    let server = BlockingMockServer::start(scenario).unwrap();
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), PROMPT)
        .unwrap()
        .arg("--mcp-config")
        .arg(mcp_config(dir.path()));
    let w = watch(&run, &[], state.path(), Duration::from_secs(120));
    assert_one_clean_continuation(&server, &w, MCP_FINAL_TEXT);
    // It was killed during the MCP call.
    assert_eq!(
        w.summary["kill"]["mcp_call"]["tool"], "mcp__probe__wait",
        "{}",
        w.summary
    );
}

#[test]
fn an_inherited_resume_environment_does_not_double_the_continuation() {
    let (server, w) = bash_case(&[
        ("CLAUDE_CODE_RESUME_INTERRUPTED_TURN", "1"),
        ("CLAUDE_CODE_RESUME_PROMPT", "RESUMED BY THE ENVIRONMENT"),
    ]);
    assert_one_clean_continuation(&server, &w, FINAL_TEXT);
}

#[test]
fn the_documented_resume_variable_alone_does_not_double_the_continuation() {
    let (server, w) = bash_case(&[("CLAUDE_CODE_RESUME_INTERRUPTED_TURN", "1")]);
    assert_one_clean_continuation(&server, &w, FINAL_TEXT);
}

/// The prompt of a resume by hand.
const BY_HAND: &str = "Go on from where you stopped.";

#[test]
fn an_interrupt_during_a_bash_tool_in_streaming_input_mode_leaves_a_resumable_session() {
    // Streaming input (the SDKs' multi-turn clients): the ladder's first step is the
    // interrupt request on stdin. Nothing is continued automatically (the prompts come from
    // the host); the user resumes by hand, and the session is not poisoned.
    let scenario = validating(
        "bash_interrupted",
        Turn::new()
            .text("Running the long command.")
            .bash(BASH_TOOL_ID, "echo start; sleep 120; echo end"),
        Some(BASH_TOOL_ID),
        FINAL_TEXT,
    )
    .when(
        Matcher::LastUserTextContains(BY_HAND.into()),
        Turn::answer(FINAL_TEXT),
    );
    let server = BlockingMockServer::start(scenario).unwrap();
    let state = tempfile::tempdir().unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), PROMPT).unwrap();
    let mut cmd = run.command();
    // `-p PROMPT` becomes `-p --input-format stream-json`: the prompt comes on stdin.
    let at = cmd.args.iter().position(|a| a == PROMPT).unwrap();
    cmd.args.remove(at);
    cmd.args
        .extend(["--input-format", "stream-json"].map(std::ffi::OsString::from));
    let out_dir = tempfile::tempdir().unwrap();
    let summary = out_dir.path().join("summary.json");
    let mut child = cmd
        .behind(
            Command::new(BIN)
                .args(["run", "--no-status", "--grace", "2s", "--idle", "4s"])
                .args(["--extend-factor", "1", "--state-dir"])
                .arg(state.path())
                .arg("--summary")
                .arg(&summary)
                .arg("--"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = serde_json::json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
        "message": {"role": "user", "content": [{"type": "text", "text": PROMPT}]}});
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, format!("{line}\n").as_bytes()).unwrap();
    // The host keeps its input open (it would send the next turn).
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the run did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["kill"]["kind"], "idle", "{s}");
    assert_eq!(s["kill"]["ladder"], "interrupt", "{s}");
    assert_eq!(status.code(), Some(124));
    let sid = s["session_id"].as_str().unwrap().to_owned();

    // The resume by hand, under the watchdog.
    let again =
        ClaudeRun::with_dirs(claude(), server.base_url(), BY_HAND, run.dirs().clone()).resume(&sid);
    let w = watch(&again, &[], state.path(), Duration::from_secs(90));
    assert_eq!(w.status.code(), Some(0), "{}", w.stderr);
    assert_eq!(w.summary["outcome"], "success", "{}", w.summary);
    let reqs = message_requests(&server);
    for (i, r) in reqs.iter().enumerate() {
        if let Err(e) = validate_messages(r.body.as_ref().unwrap()) {
            panic!("request {i} would be rejected by the API: {e}");
        }
    }
    let last = reqs.last().unwrap().body.clone().unwrap();
    assert_eq!(
        user_turns(&last),
        [PROMPT, BY_HAND],
        "the interrupted turn and the one typed by hand"
    );
}
