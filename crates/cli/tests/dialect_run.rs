//! `run` in front of a scripted `codex` or `opencode` (a script by that name, printing the
//! CLI's recorded lines): the dialect the command names, the summary's `dialect` and session
//! id, recovery that does not continue another CLI's session and says how it resumes, the
//! synthetic end in the CLI's own dialect, the hints.

mod common;

use std::process::{Command, Output, Stdio};

use common::{script, stderr, watchdog};
use serde_json::Value;

const THREAD: &str = r#"{"type":"thread.started","thread_id":"019b-thread"}"#;
const TURN: &str = r#"{"type":"turn.started"}"#;

/// A script named `name` printing `lines` then sleeping (a stall after them).
fn stalled(dir: &std::path::Path, name: &str, lines: &[&str]) -> std::path::PathBuf {
    let body: Vec<String> = lines
        .iter()
        .map(|l| format!("printf '%s\\n' '{l}'"))
        .chain(["exec sleep 60".to_owned()])
        .collect();
    script(dir, name, &body.join("\n"))
}

fn run(args: &[&str], program: &std::path::Path, argv: &[&str]) -> (Output, Value) {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let out = watchdog()
        .arg("run")
        .args(args)
        .arg("--summary")
        .arg(&summary)
        .arg("--")
        .arg(program)
        .args(argv)
        .output()
        .unwrap();
    let s = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    (out, s)
}

/// A `codex` command killed by the watchdog with `--resume-after-kill` on: read as Codex,
/// Codex's thread id, and no continuation (`claude --resume` is not Codex's), with the way
/// Codex resumes it by hand; `--emit-result` ends the stream with Codex's own `turn.failed`.
#[test]
fn a_killed_codex_session_is_not_continued_and_ends_in_codex_s_own_failure() {
    let dir = tempfile::tempdir().unwrap();
    let codex = stalled(dir.path(), "codex", &[THREAD, TURN]);
    let state = dir.path().join("state");
    let (out, s) = run(
        &[
            "--no-progress",
            "1s",
            "--grace",
            "1s",
            "--resume-after-kill",
            "--emit-result",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        &codex,
        &["exec", "--json", "go"],
    );
    let err = stderr(&out);
    assert_eq!(s["dialect"], "codex", "{s}");
    assert_eq!(s["session_id"], "019b-thread", "{s}");
    assert_eq!(s["kill"]["kind"], "no_progress", "{s}");
    let skipped = s["recovery"]["skipped"].as_str().unwrap_or_default();
    assert!(
        skipped.contains("Claude Code sessions only")
            && skipped.contains("codex exec resume 019b-thread"),
        "{s}"
    );
    assert!(
        err.contains("recovery: not continuing: recovery continues Claude Code"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(1), "--emit-result: {err}");
    let last: Value = serde_json::from_slice(
        out.stdout
            .split(|&b| b == b'\n')
            .rfind(|l| !l.is_empty())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["type"], "turn.failed", "{last}");
    assert!(last["error"]["message"]
        .as_str()
        .unwrap()
        .contains("agent-watchdog killed codex (no_progress)"));
    assert!(
        !state.exists() || std::fs::read_dir(&state).unwrap().next().is_none(),
        "no marker"
    );
}

/// An `opencode` command that ended by itself after its last step: success, its session id.
#[test]
fn an_opencode_run_that_ends_by_itself_succeeds_with_its_session_id() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"type":"step_start","sessionID":"ses_9","part":{"type":"step-start"}}"#,
        r#"{"type":"text","sessionID":"ses_9","part":{"type":"text","text":"hi"}}"#,
        r#"{"type":"step_finish","sessionID":"ses_9","part":{"reason":"stop"}}"#,
    ];
    let body: Vec<String> = lines
        .iter()
        .map(|l| format!("printf '%s\\n' '{l}'"))
        .collect();
    let opencode = script(dir.path(), "opencode", &body.join("\n"));
    let (out, s) = run(&[], &opencode, &["run", "--format", "json", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(s["dialect"], "opencode", "{s}");
    assert_eq!(s["outcome"], "success", "{s}");
    assert_eq!(s["session_id"], "ses_9", "{s}");
    assert_eq!(s["lines"]["step_finish"], 1, "{s}");
}

/// A `codex` without `--json` is told the flag; one whose stdin is a pipe is told it waits on
/// it; `--no-hint`-less runs of other commands say neither.
#[test]
fn codex_and_opencode_commands_get_their_hints() {
    let dir = tempfile::tempdir().unwrap();
    let codex = script(dir.path(), "codex", "exit 0");
    let out = watchdog()
        .args(["run", "--"])
        .arg(&codex)
        .args(["exec", "go"])
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("hint: this codex command does not print its JSON events"),
        "{err}"
    );
    assert!(err.contains("add: exec --json"), "{err}");
    assert!(
        err.contains("hint: codex reads its stdin to the end"),
        "{err}"
    );
    // stdin /dev/null: no stdin hint.
    let out = Command::new(common::BIN)
        .args(["run", "--"])
        .arg(&codex)
        .args(["exec", "--json", "go"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("hint:"), "{}", stderr(&out));
}
