//! Recovery in `agent-watchdog run` with a scripted fake `claude`: the ways it must *not*
//! continue (fail closed), the capture of a continued run, a continuation that runs another
//! session, and a rate-limit wait aborted by Ctrl-C. Each script counts its runs in a file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");
const SID: &str = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";
const OTHER_SID: &str = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";

fn init(sid: &str) -> String {
    format!(r#"{{"type":"system","subtype":"init","session_id":"{sid}"}}"#)
}

fn cut_off(sid: &str) -> String {
    format!(
        r#"{{"type":"result","subtype":"success","is_error":true,"stop_reason":"max_tokens","terminal_reason":"api_error","api_error":"max_output_tokens","session_id":"{sid}","num_turns":4,"total_cost_usd":0.01}}"#
    )
}

const OK: &str = r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","terminal_reason":"completed","session_id":"90455ab9-05b5-4ba0-9d10-01a53fd0bcdc","num_turns":1}"#;

/// A fake `claude` in `dir`: appends its arguments to `runs`, then prints `first` on its
/// first run (then exits 1) and `resumed` when called with `--resume` (then exits 0).
fn fake_claude(dir: &Path, first: &[String], resumed: &[String]) -> PathBuf {
    let say = |lines: &[String]| {
        lines
            .iter()
            .map(|l| format!("printf '%s\\n' '{l}'"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let runs = dir.join("runs");
    let body = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\ncase \" $* \" in\n  *\" --resume \"*)\n{}\n    #resumed\n    exit 0\n    ;;\nesac\n{}\nexit 1\n",
        runs.display(),
        say(resumed),
        say(first)
    );
    let path = dir.join("claude");
    std::fs::write(&path, body).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

fn runs(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("runs"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn watchdog(dir: &Path, flags: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AGENT_WATCHDOG_") {
            c.env_remove(k);
        }
    }
    c.arg("run")
        .args(flags)
        .arg("--summary")
        .arg(dir.join("summary.json"))
        .stdin(Stdio::null());
    c
}

fn run(dir: &Path, flags: &[&str], claude_args: &[&str]) -> Output {
    watchdog(dir, flags)
        .arg("--")
        .arg(dir.join("claude"))
        .args(claude_args)
        .output()
        .unwrap()
}

fn summary(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const P: [&str; 6] = [
    "-p",
    "write it all",
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
];

#[test]
fn a_continued_run_is_recorded_after_a_boundary_in_the_same_capture() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fake_claude(d, &[init(SID), cut_off(SID)], &[init(SID), OK.into()]);
    let capture = d.join("capture.jsonl");
    let state = d.join("state");
    let out = run(
        d,
        &[
            "--state-dir",
            state.to_str().unwrap(),
            "--record",
            capture.to_str().unwrap(),
        ],
        &P,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = runs(d);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[1].contains(&format!("--resume {SID}")), "{r:?}");
    assert!(r[1].contains("output token limit"), "{r:?}");
    // stdout carries both runs, in order.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches(SID).count(), 4, "{stdout}");
    let cap = std::fs::read_to_string(&capture).unwrap();
    let kinds: Vec<String> = cap
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            ["start", "boundary", "exit"]
                .into_iter()
                .find(|k| v.get(*k).is_some())
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(
        kinds,
        ["start", "exit", "boundary", "start", "exit"],
        "{cap}"
    );
    let s = summary(d);
    assert_eq!(s["recovery"]["trigger"], "output_limit");
    assert_eq!(s["recovery"]["continued_outcome"], "success");
    assert!(state.join("continued").read_dir().unwrap().count() == 1);
    // Which run each fact belongs to: the top level is the first run's facts with the
    // process's code; `runs` holds each run's own, with its own code.
    assert_eq!(s["outcome"], "error_result", "{s}");
    assert_eq!(s["exit_code"], 0, "{s}");
    assert_eq!(
        (&s["run"], &s["exit_code_from_run"]),
        (&json!(0), &json!(1)),
        "{s}"
    );
    let runs = s["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{s}");
    assert_eq!((&runs[0]["run"], &runs[1]["run"]), (&json!(0), &json!(1)));
    assert_eq!(runs[0]["outcome"], "error_result", "{s}");
    assert_eq!(runs[1]["outcome"], "success", "{s}");
    assert_eq!(runs[1]["exit_code"], 0, "{s}");
    assert_ne!(runs[0]["exit_code"], 0, "the first run alone failed: {s}");
    assert!(runs
        .iter()
        .all(|r| r.get("runs").is_none() && r.get("recovery").is_none()));
}

#[test]
fn nothing_is_continued_when_recovery_cannot_be_sure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fake_claude(d, &[init(SID), cut_off(SID)], &[init(SID), OK.into()]);
    let state = d.join("state");
    let state_flag = ["--state-dir", state.to_str().unwrap()];

    // Turned off.
    let mut flags = state_flag.to_vec();
    flags.push("--no-recover-output-limit");
    let out = run(d, &flags, &P);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(runs(d).len(), 1);
    let s = summary(d);
    assert!(s["recovery"]["trigger"].is_null());
    // Not continued: the facts and the code are the one run's.
    assert_eq!(
        (&s["run"], &s["exit_code_from_run"]),
        (&json!(0), &json!(0)),
        "{s}"
    );

    // The prompt cannot be located (no -p): fail closed, say why.
    let out = run(d, &state_flag, &P[2..]);
    assert_eq!(runs(d).len(), 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "agent-watchdog: recovery: not continuing session {SID}"
        )) && err.contains("prompt could not be located"),
        "{err}"
    );

    // The state directory is unusable: no marker, no continuation.
    let not_a_dir = d.join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let out = run(d, &["--state-dir", not_a_dir.to_str().unwrap()], &P);
    assert_eq!(runs(d).len(), 3);
    assert!(
        stderr(&out).contains("not continuing session"),
        "{}",
        stderr(&out)
    );
    assert!(summary(d)["recovery"]["error"].is_string());

    // A session id that is not a UUID is never resumed.
    fake_claude(
        d,
        &[init("not-a-uuid"), cut_off("not-a-uuid")],
        &[OK.into()],
    );
    let out = run(d, &state_flag, &P);
    assert_eq!(runs(d).len(), 4);
    assert!(
        stderr(&out).contains("no valid session id"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_marker_from_an_earlier_continuation_forbids_another() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fake_claude(d, &[init(SID), cut_off(SID)], &[init(SID), cut_off(SID)]);
    let state = d.join("state");
    let flags = ["--state-dir", state.to_str().unwrap()];
    let out = run(d, &flags, &P);
    assert_eq!(runs(d).len(), 2, "one continuation");
    assert_eq!(stderr(&out).matches("not continuing again").count(), 1);
    let s = summary(d);
    assert_eq!(s["recovery"]["continued_outcome"], "error_result");
    assert_eq!(s["recovery"]["notice"]["again"], "output_limit");
    // The same original run again (a restart, a duplicate): the marker exists.
    let out = run(d, &flags, &P);
    assert_eq!(runs(d).len(), 3, "no second continuation");
    assert!(
        !stderr(&out).contains("continuing session"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("not continuing again"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_continuation_that_runs_another_session_is_stopped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let slow_other = [init(OTHER_SID)];
    let path = fake_claude(d, &[init(SID), cut_off(SID)], &slow_other);
    // Make the resumed run hang after its init line, so only our stop ends it.
    let script = std::fs::read_to_string(&path)
        .unwrap()
        .replace("#resumed", "sleep 30");
    std::fs::write(&path, script).unwrap();
    let state = d.join("state");
    let t = Instant::now();
    let out = run(
        d,
        &["--state-dir", state.to_str().unwrap(), "--grace", "1s"],
        &P,
    );
    assert!(t.elapsed() < Duration::from_secs(20));
    assert_eq!(runs(d).len(), 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "runs session \"{OTHER_SID}\", not {SID}; stopping it"
        )),
        "{err}"
    );
    let s = summary(d);
    assert!(s["recovery"]["error"]
        .as_str()
        .is_some_and(|e| e.contains(OTHER_SID)));
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("exiting 1"), "{err}");
}

#[test]
fn a_continuation_of_another_session_that_exits_0_still_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The resumed run prints another session's init and exits 0 at once.
    fake_claude(d, &[init(SID), cut_off(SID)], &[init(OTHER_SID)]);
    let state = d.join("state");
    let out = run(
        d,
        &["--state-dir", state.to_str().unwrap(), "--grace", "1s"],
        &P,
    );
    let err = stderr(&out);
    assert_eq!(runs(d).len(), 2);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(summary(d)["exit_code"], 1);
}

#[test]
fn ctrl_c_during_a_rate_limit_wait_aborts_it_without_continuing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 120;
    let rejected = format!(
        r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"rejected","resetsAt":{reset},"rateLimitType":"five_hour"}},"session_id":"{SID}"}}"#
    );
    let result = format!(
        r#"{{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":429,"session_id":"{SID}","num_turns":1}}"#
    );
    fake_claude(d, &[init(SID), rejected, result], &[init(SID), OK.into()]);
    let state = d.join("state");
    let err_path = d.join("err");
    let mut child = watchdog(
        d,
        &["--state-dir", state.to_str().unwrap(), "--wait-for-reset"],
    )
    .arg("--")
    .arg(d.join("claude"))
    .args(P)
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&err_path).unwrap())
    .spawn()
    .unwrap();
    let t = Instant::now();
    while !std::fs::read_to_string(&err_path)
        .unwrap_or_default()
        .contains("waiting")
    {
        assert!(t.elapsed() < Duration::from_secs(20), "no wait message");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(t.elapsed() < Duration::from_secs(30));
    assert_eq!(runs(d).len(), 1, "not continued");
    let err = std::fs::read_to_string(&err_path).unwrap();
    assert!(err.contains("wait was aborted"), "{err}");
    let s = summary(d);
    assert_eq!(s["recovery"]["aborted_wait"], true);
    // The code is recovery's own (the aborted wait), no run's.
    assert_eq!(s["exit_code"], 130, "{s}");
    assert_eq!(s["exit_code_from_run"], Value::Null, "{s}");
}

#[test]
fn a_run_the_user_interrupted_is_never_continued() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = fake_claude(d, &[init(SID), cut_off(SID)], &[init(SID), OK.into()]);
    // After its cut-off result the first run lingers until the user's Ctrl-C.
    let script = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\nexit 1\n", "\nsleep 30\nexit 1\n");
    std::fs::write(&path, script).unwrap();
    let state = d.join("state");
    let child = watchdog(d, &["--state-dir", state.to_str().unwrap()])
        .arg("--")
        .arg(&path)
        .args(P)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while runs(d).is_empty() {
        assert!(t.elapsed() < Duration::from_secs(20), "never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(20));
    assert_eq!(runs(d).len(), 1, "{}", stderr(&out));
    let s = summary(d);
    assert_eq!(s["interrupted"], "SIGINT");
    assert!(s["recovery"]["trigger"].is_null(), "{s}");
    assert!(s["recovery"]["skipped"]
        .as_str()
        .is_some_and(|r| r.contains("interrupted")));
}

#[test]
fn recovery_is_configured_from_the_environment_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fake_claude(d, &[init(SID), cut_off(SID)], &[init(SID), OK.into()]);
    let state = d.join("env-state");
    let out = watchdog(d, &[])
        .env("AGENT_WATCHDOG_NO_RECOVER_OUTPUT_LIMIT", "1")
        .env("AGENT_WATCHDOG_STATE_DIR", &state)
        .arg("--")
        .arg(d.join("claude"))
        .args(P)
        .output()
        .unwrap();
    assert_eq!(runs(d).len(), 1, "turned off: {}", stderr(&out));
    let out = watchdog(d, &[])
        .env("AGENT_WATCHDOG_STATE_DIR", &state)
        .arg("--")
        .arg(d.join("claude"))
        .args(P)
        .output()
        .unwrap();
    assert_eq!(runs(d).len(), 3, "continued once: {}", stderr(&out));
    let marker = state.join("continued").read_dir().unwrap().count();
    assert_eq!(marker, 1, "the marker lives in AGENT_WATCHDOG_STATE_DIR");
    let out = watchdog(d, &[])
        .env("AGENT_WATCHDOG_MAX_WAIT", "0s")
        .arg("--")
        .arg("true")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // The variable the user set is named, not the flag it stands for.
    assert!(
        stderr(&out).contains("AGENT_WATCHDOG_MAX_WAIT"),
        "{}",
        stderr(&out)
    );
}
