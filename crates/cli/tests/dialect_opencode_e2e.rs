//! End to end with the real opencode (`opencode run --format json`, the pinned 1.18.33)
//! against the Messages mock, under `agent-watchdog run`: a healthy run with several tool
//! steps outlives a short `--no-progress` and ends in success with opencode's own session id
//! and stdout passed through byte for byte; a stall mid-answer is killed with nothing left; an
//! open stdin is a startup kill; an API error exits with opencode's own code and outcome
//! `error_result`; a busy tool (silent until it ends) is held to `--busy-cap` and a sleeping
//! one killed at `--no-progress`; replay and audit of every capture give the live verdict.
//!
//! Needs the real `opencode` (`scripts/install-other-clis`, or `OPENCODE_BIN`): a missing
//! binary is a failure that says how to install it, never a skip.
#![cfg(target_os = "linux")]

#[path = "common/dialect_run.rs"]
mod dialect_run;

use std::process::Stdio;

use dialect_run::{assert_replay_and_audit_agree, run, Live, SERIAL};
use mock_api::other_clis::{cli_version, find_opencode, OpencodeRun, OPENCODE_VERSION};
use mock_api::{BlockingMockServer, Matcher, Scenario, Turn};
use serde_json::{json, Value};

fn opencode() -> std::path::PathBuf {
    let bin = find_opencode()
        .unwrap_or_else(|e| panic!("\n\nThe dialect tests need the real opencode.\n{e}\n\n"));
    assert_eq!(
        cli_version(&bin).unwrap(),
        OPENCODE_VERSION,
        "{}",
        bin.display()
    );
    bin
}

/// opencode asks for a session title beside the run's own requests: answered by its text.
fn scenario(name: &str) -> Scenario {
    Scenario::new(name).when(
        Matcher::LastUserTextContains(OpencodeRun::TITLE_REQUEST.into()),
        Turn::answer("A title"),
    )
}

/// A call of opencode's `bash` tool.
fn bash(turn: Turn, id: &str, command: &str) -> Turn {
    turn.tool_use(
        id,
        "bash",
        json!({"command": command, "description": "run it"}),
    )
}

/// `opencode run --format json PROMPT` against `scenario` under `run FLAGS`, stdin
/// `/dev/null` unless given; also how many requests the mock saw.
fn run_opencode(
    name: &str,
    scenario: Scenario,
    flags: &[&str],
    stdin: Option<Stdio>,
) -> (Live, usize) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = BlockingMockServer::start(scenario).expect("start the mock");
    let run_ = OpencodeRun::new(opencode(), server.base_url(), "Do the task.").expect("dirs");
    let cmd = run_.command().expect("the run's config");
    let live = run(
        &cmd,
        flags,
        stdin.unwrap_or_else(Stdio::null),
        run_.dirs().root(),
    );
    live.keep_as(name, run_.dirs().root());
    let requests = server.main_request_count();
    server.shutdown();
    (live, requests)
}

/// The session id opencode printed (on every line).
fn session_id(live: &Live) -> Value {
    let first = live.lines().into_iter().next();
    first
        .map(|l| l["sessionID"].clone())
        .unwrap_or_else(|| panic!("no line: {}", live.stderr))
}

/// Six steps whose `bash` calls sleep 4 s each, then the answer: 24 s of tools, longer than
/// the 20 s no-progress limit; each step's lines reset it. A tool prints nothing until it
/// ends, so a step's silence is its tool's time plus opencode's own before it starts the tool:
/// 3.6 s measured at a load of 10, 9 s at 14 (opencode's first line came after 81 s there); the
/// limit keeps 16 s for it.
#[test]
fn a_healthy_run_with_tool_steps_outlives_a_short_no_progress_and_succeeds() {
    let step = |n: usize| format!("sleep 4; echo step {n}");
    let mut scenario = scenario("six_steps");
    for n in 1..6 {
        let next = bash(Turn::new(), &format!("t{}", n + 1), &step(n + 1));
        scenario = scenario.when(Matcher::ToolResultFor(format!("t{n}")), next);
    }
    let scenario = scenario
        .when(
            Matcher::ToolResultFor("t6".into()),
            Turn::answer("All six done."),
        )
        .turn(bash(Turn::new().text("Six steps."), "t1", &step(1)));
    let flags = ["--no-progress", "20s", "--idle", "60s", "--startup", "4m"];
    let (live, _) = run_opencode("opencode_healthy", scenario, &flags, None);
    let s = &live.summary;
    assert_eq!(live.code, Some(0), "{}\n{s}", live.stderr);
    assert_eq!(s["outcome"], "success", "{s}");
    assert!(s["kill"].is_null(), "{s}");
    assert_eq!(s["dialect"], "opencode", "{s}");
    assert_eq!(s["session_id"], session_id(&live), "{s}");
    live.assert_passed_through();
    let lines = &s["lines"];
    assert_eq!(lines["tool_use"], 6, "{lines}");
    assert_eq!(
        lines["step_finish"], 7,
        "six tool steps and the last: {lines}"
    );
    let (_, times) = live.captured();
    let span = times.last().unwrap() - times.first().unwrap();
    assert!(span > 20_000, "the run's lines span {span} ms");
    assert_replay_and_audit_agree(&live, &flags);
}

/// The answer begins, then the API sends nothing but SSE pings: opencode prints its
/// `step_start` and nothing more. Killed at `--no-progress`, the whole tree gone.
#[test]
fn a_stall_mid_answer_is_killed_and_nothing_is_left() {
    let stall = Turn::answer("Working on the answer")
        .stall_forever()
        .pings_every(std::time::Duration::from_secs(1));
    let flags = [
        "--no-progress",
        "5s",
        "--idle",
        "60s",
        "--startup",
        "4m",
        "--grace",
        "3s",
    ];
    let (live, _) = run_opencode(
        "opencode_stall",
        scenario("stall").turn(stall),
        &flags,
        None,
    );
    let s = &live.summary;
    assert_eq!(live.code, Some(124), "{}\n{s}", live.stderr);
    assert_eq!(s["kill"]["kind"], "no_progress", "{s}");
    assert_eq!(s["dialect"], "opencode", "{s}");
    assert_eq!(s["session_id"], session_id(&live), "{s}");
    live.assert_passed_through();
    assert_replay_and_audit_agree(&live, &flags);
}

/// opencode reads its stdin to the end when it is not a terminal: an open pipe nobody closes
/// is a wait without a line (it never asks the API), which `--startup` ends. With `/dev/null`
/// its first line comes in seconds (the other tests).
#[test]
fn an_open_stdin_is_a_startup_kill() {
    let flags = ["--startup", "20s", "--grace", "2s"];
    let mut feeder = std::process::Command::new("sleep")
        .arg("300")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = Stdio::from(feeder.stdout.take().unwrap());
    let (live, requests) = run_opencode(
        "opencode_stdin_hang",
        scenario("never_asked").turn(Turn::answer("unused")),
        &flags,
        Some(pipe),
    );
    let _ = feeder.kill();
    let _ = feeder.wait();
    let s = &live.summary;
    assert_eq!(live.code, Some(125), "{}\n{s}", live.stderr);
    assert_eq!(s["kill"]["kind"], "startup", "{s}");
    assert_eq!(requests, 0, "it never asked the API");
    assert!(live.stdout.is_empty());
    assert!(
        live.stderr.contains("hint: opencode reads its stdin"),
        "{}",
        live.stderr
    );
}

/// The API refuses the request: opencode prints its `error` and exits 1; so does the run,
/// with the outcome `error_result` naming the error.
#[test]
fn an_api_error_exits_with_opencode_s_own_code_and_outcome_error() {
    let flags = ["--startup", "4m"];
    let refused = Turn::error(400, "invalid_request_error", "mock: the request is invalid");
    let (live, _) = run_opencode(
        "opencode_api_error",
        scenario("refused").turn(refused),
        &flags,
        None,
    );
    let s = &live.summary;
    assert_eq!(live.code, Some(1), "{}\n{s}", live.stderr);
    assert!(s["kill"].is_null(), "{s}");
    assert_eq!(s["outcome"], "error_result", "{s}");
    assert_eq!(s["outcome_detail"]["terminal_reason"], "APIError", "{s}");
    assert_eq!(s["outcome_detail"]["api_error_status"], 400, "{s}");
    assert_eq!(s["session_id"], session_id(&live), "{s}");
    assert!(
        live.stderr
            .contains("opencode exited with code 1 after an error result (error, APIError)"),
        "{}",
        live.stderr
    );
    live.assert_passed_through();
    assert_replay_and_audit_agree(&live, &flags);
}

/// Idle far beyond the test; no progress after 15 s but for a busy tool, held up to 30 s after
/// the last progress. opencode prints nothing while its tool runs, and on a loaded machine it
/// takes seconds to start the tool after its step begins (9 s measured at a load of 14): the
/// limits leave room for that before the tool's processes are there to be judged.
const TREE_FLAGS: &[&str] = &[
    "--idle",
    "90s",
    "--no-progress",
    "15s",
    "--busy-cap",
    "30s",
    "--grace",
    "3s",
    "--startup",
    "4m",
];

fn run_tool(name: &str, command: &str) -> Live {
    let scenario = scenario("one_tool")
        .when(Matcher::ToolResultFor("t1".into()), Turn::answer("Done."))
        .turn(bash(Turn::new().text("Running it."), "t1", command));
    run_opencode(name, scenario, TREE_FLAGS, None).0
}

/// opencode's `bash` tool burning a core, silent: `no_progress` waits for the busy cap.
#[test]
fn a_busy_tool_is_held_until_the_busy_cap() {
    let live = run_tool(
        "opencode_busy_tool",
        "echo start; python3 -c 'while True: pass'",
    );
    assert_eq!(live.code, Some(124), "{}", live.stderr);
    let k = &live.summary["kill"];
    assert_eq!(k["kind"], "no_progress", "{k}");
    assert_eq!(k["evidence"]["capped"], true, "{k}");
    assert_eq!(k["evidence"]["tool"]["name"], "opencode", "{k}");
    assert!(k["since_progress_ms"].as_u64().unwrap() >= 30_000, "{k}");
    let named = k["evidence"]["named"]["command"].as_str().unwrap();
    assert!(named.contains("while True"), "{named}");
    let line = live.kill_line();
    assert!(
        line.contains("up to --busy-cap: opencode tool: `"),
        "{line}"
    );
    assert_replay_and_audit_agree(&live, TREE_FLAGS);
}

/// The same tool asleep: killed at `--no-progress`, named asleep.
#[test]
fn a_sleeping_tool_is_killed_at_no_progress() {
    let live = run_tool("opencode_sleeping_tool", "echo start; sleep 100");
    assert_eq!(live.code, Some(124), "{}", live.stderr);
    let k = &live.summary["kill"];
    assert_eq!(k["kind"], "no_progress", "{k}");
    assert_eq!(k["evidence"]["busy"], false, "{k}");
    assert_eq!(k["evidence"]["held_ms"], 0, "{k}");
    let line = live.kill_line();
    assert!(line.contains("; opencode tool: `"), "{line}");
    assert!(line.contains(") asleep "), "{line}");
    assert_replay_and_audit_agree(&live, TREE_FLAGS);
}
