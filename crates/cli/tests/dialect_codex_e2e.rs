//! End to end with the real OpenAI Codex CLI (`codex exec --json`, the pinned 0.169.0) against
//! the Responses-API mock, under `agent-watchdog run`: a healthy run with several tool steps
//! outlives a short `--no-progress` and ends in success with Codex's own thread id and stdout
//! passed through byte for byte; a stall mid-answer is killed with nothing left; an open stdin
//! is a startup kill; an API error exits with Codex's own code and outcome `error_result`; a
//! busy command is held to `--busy-cap` and a sleeping one killed at `--no-progress`; the
//! dialect is read from the lines when the command does not say; replay and audit of every
//! capture give the live verdict.
//!
//! Needs the real `codex` (`scripts/install-other-clis`, or `CODEX_BIN`): a missing binary is
//! a failure that says how to install it, never a skip.
#![cfg(target_os = "linux")]

#[path = "common/dialect_run.rs"]
mod dialect_run;

use std::process::Stdio;

use dialect_run::{assert_replay_and_audit_agree, run, Live, SERIAL};
use mock_api::other_clis::{cli_version, find_codex, CodexRun, CODEX_VERSION};
use mock_api::responses::{ResponseTurn, ResponsesMockServer, ResponsesScenario};
use mock_api::Stall;
use serde_json::Value;

fn codex() -> std::path::PathBuf {
    let bin = find_codex()
        .unwrap_or_else(|e| panic!("\n\nThe dialect tests need the real Codex CLI.\n{e}\n\n"));
    assert_eq!(
        cli_version(&bin).unwrap(),
        CODEX_VERSION,
        "{}",
        bin.display()
    );
    bin
}

/// `codex exec --json PROMPT` against `scenario` under `run FLAGS`, stdin `/dev/null` unless
/// given; also the requests the mock saw.
fn run_codex(
    name: &str,
    scenario: ResponsesScenario,
    flags: &[&str],
    stdin: Option<Stdio>,
) -> (Live, usize) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = ResponsesMockServer::start(scenario).expect("start the mock");
    let run_ = CodexRun::new(codex(), server.base_url(), "Do the task.").expect("session dirs");
    let cmd = run_.command().expect("the run's config");
    let live = run(
        &cmd,
        flags,
        stdin.unwrap_or_else(Stdio::null),
        run_.dirs().root(),
    );
    live.keep_as(name, run_.dirs().root());
    let requests = server.requests().len();
    server.shutdown();
    (live, requests)
}

/// The thread id Codex printed (`thread.started`).
fn thread_id(live: &Live) -> Value {
    let first = live
        .lines()
        .into_iter()
        .find(|l| l["type"] == "thread.started")
        .unwrap_or_else(|| panic!("no thread.started: {}", live.stderr));
    first["thread_id"].clone()
}

/// Three commands, each sleeping 2.5 s, then the answer: 7.5 s of commands, longer than the
/// 6 s no-progress limit, which each step's items reset.
#[test]
fn a_healthy_run_with_tool_steps_outlives_a_short_no_progress_and_succeeds() {
    let step = |n: usize| format!("sleep 2.5; echo step {n}");
    let scenario = ResponsesScenario::new("three_steps")
        .turn(
            ResponseTurn::new()
                .text("Three steps.")
                .command("call_1", step(1)),
        )
        .after_output("call_1", ResponseTurn::new().command("call_2", step(2)))
        .after_output("call_2", ResponseTurn::new().command("call_3", step(3)))
        .after_output("call_3", ResponseTurn::answer("All three done."));
    let flags = ["--no-progress", "6s", "--idle", "60s", "--startup", "2m"];
    let (live, requests) = run_codex("codex_healthy", scenario, &flags, None);
    let s = &live.summary;
    assert_eq!(live.code, Some(0), "{}\n{s}", live.stderr);
    assert_eq!(s["outcome"], "success", "{s}");
    assert!(s["kill"].is_null(), "{s}");
    assert_eq!(s["dialect"], "codex", "{s}");
    assert_eq!(requests, 4, "three tool outputs, then the answer");
    // The session id is Codex's own.
    assert_eq!(s["session_id"], thread_id(&live), "{s}");
    live.assert_passed_through();
    let lines = &s["lines"];
    assert_eq!(lines["thread.started"], 1, "{lines}");
    assert_eq!(lines["turn.completed"], 1, "{lines}");
    assert_eq!(lines["item.started"], 3, "one for each command: {lines}");
    // It outlived the no-progress limit: every line read as a keep-alive (before dialects),
    // it was killed at 6 s.
    let (_, times) = live.captured();
    let span = times.last().unwrap() - times.first().unwrap();
    assert!(span > 6_000, "the run's lines span {span} ms");
    assert_replay_and_audit_agree(&live, &flags);
}

/// The answer begins, then the API stalls, keeping the connection alive with SSE comments:
/// Codex prints nothing more (its own idle timer is 300 s). Killed at `--no-progress`, the
/// whole tree gone.
#[test]
fn a_stall_mid_answer_is_killed_and_nothing_is_left() {
    let stall = ResponseTurn::answer("Working on the answer")
        .stall(Stall::Forever)
        .keep_alive_every(std::time::Duration::from_secs(1));
    let flags = [
        "--no-progress",
        "5s",
        "--idle",
        "60s",
        "--startup",
        "2m",
        "--grace",
        "3s",
    ];
    let (live, _) = run_codex(
        "codex_stall",
        ResponsesScenario::new("stall").turn(stall),
        &flags,
        None,
    );
    let s = &live.summary;
    assert_eq!(live.code, Some(124), "{}\n{s}", live.stderr);
    assert_eq!(s["kill"]["kind"], "no_progress", "{s}");
    assert_eq!(s["dialect"], "codex", "{s}");
    assert_eq!(s["session_id"], thread_id(&live), "{s}");
    let since = s["kill"]["since_progress_ms"].as_u64().unwrap();
    assert!((5_000..6_000).contains(&since), "{s}");
    live.assert_passed_through();
    assert_replay_and_audit_agree(&live, &flags);
}

/// Codex reads its stdin to the end when it is not a terminal, even with the prompt in argv:
/// an open pipe that nobody closes is a wait without a line, which `--startup` ends.
#[test]
fn an_open_stdin_is_a_startup_kill() {
    let flags = ["--startup", "5s", "--grace", "2s"];
    let (mut feeder, pipe) = open_pipe();
    let (live, requests) = run_codex(
        "codex_stdin_hang",
        ResponsesScenario::new("never_asked").turn(ResponseTurn::answer("unused")),
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
        live.stderr.contains("hint: codex reads its stdin"),
        "the hint names the cause: {}",
        live.stderr
    );
}

/// A pipe whose writer never writes nor closes (a child holding it), as stdin.
fn open_pipe() -> (std::process::Child, Stdio) {
    let mut feeder = std::process::Command::new("sleep")
        .arg("300")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = feeder.stdout.take().unwrap();
    (feeder, Stdio::from(out))
}

/// The API refuses the request: Codex prints its `error` and `turn.failed` and exits 1; so
/// does the run, with the outcome `error_result`.
#[test]
fn an_api_error_exits_with_codex_s_own_code_and_outcome_error() {
    let flags = ["--startup", "2m"];
    let refused = ResponseTurn::error(400, "mock: the request is invalid");
    let (live, _) = run_codex(
        "codex_api_error",
        ResponsesScenario::new("refused").turn(refused),
        &flags,
        None,
    );
    let s = &live.summary;
    assert_eq!(live.code, Some(1), "{}\n{s}", live.stderr);
    assert!(s["kill"].is_null(), "{s}");
    assert_eq!(s["outcome"], "error_result", "{s}");
    assert_eq!(s["outcome_detail"]["terminal_reason"], "turn.failed", "{s}");
    assert_eq!(s["exit"]["code"], 1, "{s}");
    assert!(
        live.stderr
            .contains("codex exited with code 1 after an error result (error, turn.failed)"),
        "{}",
        live.stderr
    );
    live.assert_passed_through();
    assert_replay_and_audit_agree(&live, &flags);
}

/// An overloaded API: Codex retries twice (its config here), printing `Reconnecting... n/2`
/// notices, then fails the turn. The notices are keep-alives, neither progress nor an end:
/// the outcome is the `turn.failed`'s.
#[test]
fn retry_notices_are_keep_alives_not_an_end() {
    let flags = ["--startup", "2m"];
    let overloaded = ResponseTurn::error(500, "mock: overloaded");
    let (live, requests) = run_codex(
        "codex_retries",
        ResponsesScenario::new("overloaded").turn(overloaded),
        &flags,
        None,
    );
    let s = &live.summary;
    assert!(requests >= 3, "the first try and its retries: {requests}");
    let notices = live
        .lines()
        .into_iter()
        .filter(|l| l["type"] == "error")
        .filter(|l| {
            l["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("Reconnecting...")
        })
        .count();
    assert!(notices >= 2, "{}", String::from_utf8_lossy(&live.stdout));
    assert_eq!(live.code, Some(1), "{}\n{s}", live.stderr);
    assert_eq!(s["outcome"], "error_result", "{s}");
    assert!(
        s["lines"]["error"].as_u64().unwrap() >= notices as u64,
        "{s}"
    );
    // No `settled` before the turn failed: the notices did not end the turn.
    let settled = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "settled")
        .count();
    assert_eq!(settled, 1, "{s}");
    assert_replay_and_audit_agree(&live, &flags);
}

/// Idle far beyond the test; no progress after 8 s but for a busy tool, held up to 20 s after
/// the last progress. Codex yields a command after 30 s at most: both ends come before.
const TREE_FLAGS: &[&str] = &[
    "--idle",
    "90s",
    "--no-progress",
    "8s",
    "--busy-cap",
    "20s",
    "--grace",
    "3s",
    "--startup",
    "2m",
];

fn run_command(name: &str, command: &str) -> Live {
    let scenario = ResponsesScenario::new("one_command")
        .turn(
            ResponseTurn::new()
                .text("Running it.")
                .command("call_1", command),
        )
        .after_output("call_1", ResponseTurn::answer("Done."));
    run_codex(name, scenario, TREE_FLAGS, None).0
}

/// Codex's command burning a core: `no_progress` waits for the busy cap.
#[test]
fn a_busy_command_is_held_until_the_busy_cap() {
    let live = run_command(
        "codex_busy_command",
        "echo start; python3 -c 'while True: pass'",
    );
    assert_eq!(live.code, Some(124), "{}", live.stderr);
    let k = &live.summary["kill"];
    assert_eq!(k["kind"], "no_progress", "{k}");
    assert_eq!(k["evidence"]["capped"], true, "{k}");
    assert_eq!(k["evidence"]["tool"]["name"], "exec_command", "{k}");
    assert!(k["since_progress_ms"].as_u64().unwrap() >= 20_000, "{k}");
    let named = k["evidence"]["named"]["command"].as_str().unwrap();
    assert!(named.contains("while True"), "{named}");
    let line = live.kill_line();
    assert!(
        line.contains("up to --busy-cap: exec_command tool: `"),
        "{line}"
    );
    assert_replay_and_audit_agree(&live, TREE_FLAGS);
}

/// The same command asleep: killed at `--no-progress`, named asleep.
#[test]
fn a_sleeping_command_is_killed_at_no_progress() {
    let live = run_command("codex_sleeping_command", "echo start; sleep 100");
    assert_eq!(live.code, Some(124), "{}", live.stderr);
    let k = &live.summary["kill"];
    assert_eq!(k["kind"], "no_progress", "{k}");
    assert_eq!(k["evidence"]["busy"], false, "{k}");
    assert_eq!(k["evidence"]["held_ms"], 0, "{k}");
    let line = live.kill_line();
    assert!(line.contains("exec_command tool: `"), "{line}");
    assert!(line.contains(") asleep "), "{line}");
    assert_replay_and_audit_agree(&live, TREE_FLAGS);
}

/// Behind a shell that copies Codex's stdout to a file, the command says nothing of the
/// dialect: the lines choose it. What the run passed on is byte for byte that file.
#[test]
fn behind_a_shell_the_lines_choose_the_dialect_and_stdout_is_untouched() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = ResponsesMockServer::start(
        ResponsesScenario::new("answer").turn(ResponseTurn::answer("Hello from the mock.")),
    )
    .unwrap();
    let run_ = CodexRun::new(codex(), server.base_url(), "Say hello.").unwrap();
    let mut cmd = run_.command().unwrap();
    let copy = run_.dirs().root().join("direct.jsonl");
    let mut args = vec![
        "-c".into(),
        r#""$0" "$@" | tee "$COPY""#.into(),
        cmd.program.clone().into_os_string(),
    ];
    args.append(&mut cmd.args);
    cmd.args = args;
    cmd.program = "sh".into();
    cmd.env.push(("COPY".into(), copy.clone().into_os_string()));
    let flags = ["--startup", "2m"];
    let live = run(&cmd, &flags, Stdio::null(), run_.dirs().root());
    server.shutdown();
    let s = &live.summary;
    assert_eq!(live.code, Some(0), "{}\n{s}", live.stderr);
    assert_eq!(s["dialect"], "codex", "{s}");
    assert_eq!(s["outcome"], "success", "{s}");
    assert_eq!(s["session_id"], thread_id(&live), "{s}");
    assert_eq!(live.stdout, std::fs::read(&copy).unwrap());
    assert_replay_and_audit_agree(&live, &flags);
}
