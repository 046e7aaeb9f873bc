//! `agent-watchdog run` with small shell-script children: pass-through, exit codes, summary,
//! record → replay, environment configuration, bad flags, stdin, signals.
//!
//! Real processes: outcomes are asserted, timings only with generous tolerances.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::{first_line, say, script, signal, stderr, watchdog};

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"sess-1"}"#;
const ASSISTANT: &str = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]},"session_id":"sess-1"}"#;
const RESULT_OK: &str = r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","terminal_reason":"completed","session_id":"sess-1","num_turns":1}"#;
const RESULT_ERR: &str = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"stop_reason":"tool_use","terminal_reason":"max_turns","session_id":"sess-1"}"#;
const RESULT_MIDTASK: &str = r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"tool_use","session_id":"sess-1"}"#;
const PING: &str = r#"{"type":"stream_event","event":{"type":"ping"},"session_id":"sess-1"}"#;

fn run(args: &[&str], child: &Path) -> Output {
    watchdog()
        .arg("run")
        .args(args)
        .arg("--")
        .arg(child)
        .output()
        .unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn stdout_is_passed_through_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = Vec::new();
    data.extend_from_slice(INIT.as_bytes());
    data.push(b'\n');
    data.extend_from_slice(b"invalid utf-8: \xff\xfe\xc3\x28 and a NUL \0 byte\r\n");
    data.extend_from_slice(b"\n\n");
    // A 10 MiB line.
    data.extend((0..10 << 20).map(|i| b'a' + (i % 26) as u8));
    data.push(b'\n');
    data.extend_from_slice(RESULT_OK.as_bytes());
    data.push(b'\n');
    data.extend_from_slice(b"no final newline");
    let file = dir.path().join("data.bin");
    std::fs::write(&file, &data).unwrap();
    let child = script(dir.path(), "cat.sh", &format!("cat '{}'", file.display()));
    let summary = dir.path().join("summary.json");
    let out = run(&["--summary", summary.to_str().unwrap()], &child);
    assert!(
        out.stdout == data,
        "stdout differs ({} vs {} bytes)",
        out.stdout.len(),
        data.len()
    );
    // A result came, then the child exited 0 by itself: its own code.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = read_json(&summary);
    assert_eq!(s["outcome"], "success");
    assert_eq!(s["lines"]["unparseable"], 5, "{s}");
}

#[test]
fn exit_codes_follow_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, String, i32)] = &[
        (
            "ok",
            format!("{}\n{}\nexit 0", say(INIT), say(RESULT_OK)),
            0,
        ),
        (
            "ok_own_code",
            format!("{}\n{}\nexit 5", say(INIT), say(RESULT_OK)),
            5,
        ),
        (
            "error_result",
            format!("{}\n{}\nexit 1", say(INIT), say(RESULT_ERR)),
            1,
        ),
        (
            "no_result",
            format!("{}\n{}\nexit 0", say(INIT), say(ASSISTANT)),
            3,
        ),
        (
            "incomplete",
            format!("{}\n{}\nexit 0", say(INIT), say(RESULT_MIDTASK)),
            3,
        ),
        // It ended by itself: its own status, 128 + 9.
        ("crash", format!("{}\nkill -9 $$", say(INIT)), 137),
    ];
    for (name, body, code) in cases {
        let child = script(dir.path(), &format!("{name}.sh"), body);
        let out = run(&[], &child);
        assert_eq!(out.status.code(), Some(*code), "{name}: {}", stderr(&out));
    }
}

struct Killed {
    out: Output,
    summary: Value,
    capture: PathBuf,
    took: Duration,
}

fn killed(dir: &Path, name: &str, body: &str, flags: &[&str]) -> Killed {
    let child = script(dir, &format!("{name}.sh"), body);
    let summary = dir.join(format!("{name}.summary.json"));
    let capture = dir.join(format!("{name}.capture.jsonl"));
    let mut args = vec![
        "--grace",
        "1s",
        "--summary",
        summary.to_str().unwrap(),
        "--record",
        capture.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    let t = Instant::now();
    let out = run(&args, &child);
    let took = t.elapsed();
    Killed {
        summary: read_json(&summary),
        out,
        capture,
        took,
    }
}

fn replay_verdict(capture: &Path, flags: &[&str]) -> Value {
    let out = watchdog()
        .arg("replay")
        .arg(capture)
        .args(flags)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn each_kill_kind_has_its_code_summary_and_same_replay_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let pings = format!("while :; do {}; sleep 0.1; done", say(PING));
    let progress = format!("while :; do {}; sleep 0.1; done", say(ASSISTANT));
    let cases: Vec<(&str, String, Vec<&str>, &str, i32)> = vec![
        (
            "idle",
            format!("{}\nsleep 30", say(INIT)),
            vec!["--idle", "1s", "--extend-factor", "1"],
            "idle",
            124,
        ),
        (
            "startup",
            "sleep 30".into(),
            vec!["--startup", "1s"],
            "startup",
            125,
        ),
        (
            "no_progress",
            format!("{}\n{pings}", say(INIT)),
            vec!["--no-progress", "1500ms"],
            "no_progress",
            124,
        ),
        (
            "linger",
            format!("{}\n{}\nsleep 30", say(INIT), say(RESULT_OK)),
            vec!["--linger", "1s"],
            "linger",
            124,
        ),
        (
            "ceiling",
            format!("{}\n{progress}", say(INIT)),
            vec!["--ceiling", "1500ms"],
            "ceiling",
            137,
        ),
    ];
    for (name, body, flags, kind, code) in cases {
        let k = killed(dir.path(), name, &body, &flags);
        assert_eq!(
            k.out.status.code(),
            Some(code),
            "{name}: {}",
            stderr(&k.out)
        );
        assert!(k.took < Duration::from_secs(15), "{name} took {:?}", k.took);
        let s = &k.summary;
        assert_eq!(s["outcome"], "killed", "{name}: {s}");
        assert_eq!(s["kill"]["kind"], kind, "{name}: {s}");
        assert!(s["kill"]["ladder"].is_string(), "{name}: {s}");
        assert_eq!(s["exit_code"], code);
        let err = stderr(&k.out);
        assert!(
            err.lines()
                .any(|l| l.starts_with("agent-watchdog: killed") && l.contains(kind)),
            "{name}: {err}"
        );
        // The recording replays to the same verdict.
        let v = replay_verdict(&k.capture, &flags);
        assert_eq!(v["outcome"], "killed", "{name}: {v}");
        assert_eq!(v["kill"]["kind"], kind, "{name}: {v}");
        let live_at = s["kill"]["at_ms"].as_u64().unwrap();
        let replay_at = v["kill"]["at_ms"].as_u64().unwrap();
        assert!(
            live_at.abs_diff(replay_at) < 500,
            "{name}: live {live_at} replay {replay_at}"
        );
    }
}

#[test]
fn a_child_ignoring_sigterm_and_its_setsid_grandchild_are_all_killed() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("agent-watchdog-test-{}", std::process::id());
    let body = format!(
        "trap '' TERM\n{}\nsetsid sh -c \"trap '' TERM; exec sleep 1000 # {marker}\" &\nsleep 1000",
        say(INIT)
    );
    let k = killed(
        dir.path(),
        "stubborn",
        &body,
        &["--idle", "1s", "--extend-factor", "1"],
    );
    assert_eq!(k.out.status.code(), Some(124));
    assert_eq!(k.summary["kill"]["ladder"], "kill");
    std::thread::sleep(Duration::from_millis(300));
    let left = Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[test]
fn summary_json_has_the_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let rl = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","unifiedWindows":{"five_hour":{"utilization":0.5,"resetsAt":4102444800,"status":"allowed"}}},"session_id":"sess-1"}"#;
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "{}\n{}\necho oops >&2\n{}\nexit 0",
            say(INIT),
            say(rl),
            say(RESULT_OK)
        ),
    );
    let summary = dir.path().join("s.json");
    let out = run(&["--summary", summary.to_str().unwrap()], &child);
    assert_eq!(out.status.code(), Some(0));
    let s = read_json(&summary);
    for key in [
        "outcome",
        "kill",
        "exit",
        "exit_code",
        "session_id",
        "result",
        "duration_ms",
        "rate_limits",
        "lines",
        "stderr",
        "events",
        "command",
    ] {
        assert!(s.get(key).is_some(), "missing {key}: {s}");
    }
    assert_eq!(s["session_id"], "sess-1");
    assert_eq!(s["result"]["subtype"], "success");
    assert_eq!(s["result"]["stop_reason"], "end_turn");
    assert_eq!(s["result"]["terminal_reason"], "completed");
    assert_eq!(s["exit"]["code"], 0);
    assert_eq!(s["rate_limits"]["five_hour"]["utilization"], 0.5);
    assert_eq!(s["lines"]["rate_limit_event"], 1);
    assert_eq!(s["stderr"]["lines"], 1);
    assert!(stderr(&out).contains("oops"));

    // `--summary -` writes it to stderr.
    let out = run(&["--summary", "-"], &child);
    let err = stderr(&out);
    let last = err.lines().last().unwrap();
    let s: Value = serde_json::from_str(last).unwrap();
    assert_eq!(s["outcome"], "success");
}

#[test]
fn policy_is_read_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(dir.path(), "c.sh", &format!("{}\nsleep 30", say(INIT)));
    let summary = dir.path().join("s.json");
    let out = watchdog()
        .env("AGENT_WATCHDOG_IDLE", "1s")
        .env("AGENT_WATCHDOG_EXTEND_FACTOR", "1")
        .env("AGENT_WATCHDOG_GRACE", "1s")
        .args(["run", "--summary", summary.to_str().unwrap(), "--"])
        .arg(&child)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    assert_eq!(read_json(&summary)["kill"]["kind"], "idle");
}

#[test]
fn bad_flags_are_usage_errors_naming_the_flag() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["--idle", "0s"], &["--idle", "0s", "> 0"]),
        (&["--idle", "ten"], &["--idle", "ten"]),
        (
            &["--extend-factor", "0.5"],
            &["--extend-factor", "0.5", ">= 1"],
        ),
        (
            &["--high-utilization", "1.5"],
            &["--high-utilization", "1.5", "[0, 1]"],
        ),
        (&["--warn-at", "0"], &["--warn-at", "(0, 1]"]),
        (&["--no-such-flag"], &["--no-such-flag"]),
    ];
    for (args, needles) in cases {
        let out = watchdog()
            .arg("run")
            .args(*args)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        for n in *needles {
            assert!(err.contains(n), "{args:?}: {n} not in {err}");
        }
    }
    let out = watchdog()
        .env("AGENT_WATCHDOG_LINGER", "-3s")
        .args(["run", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // The variable the user set is the one named (option_errors.rs: every one of them).
    assert!(
        stderr(&out).contains("AGENT_WATCHDOG_LINGER"),
        "{}",
        stderr(&out)
    );
    let out = watchdog().arg("run").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a command is required");
    let out = watchdog().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("124"));
}

#[test]
fn a_command_that_cannot_start_is_an_error_naming_it() {
    let out = watchdog()
        .args(["run", "--", "/nonexistent/agent-watchdog-test-binary"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("agent-watchdog: "), "{err}");
    assert!(
        err.contains("/nonexistent/agent-watchdog-test-binary"),
        "{err}"
    );
}

#[test]
fn stdin_is_forwarded_in_order_and_eof_closes_the_childs_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("c.jsonl");
    let mut child = watchdog()
        .args(["run", "--record", capture.to_str().unwrap(), "--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = Vec::new();
    input.extend_from_slice(INIT.as_bytes());
    input.push(b'\n');
    let answer = r#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{}}}"#;
    input.extend_from_slice(answer.as_bytes());
    input.push(b'\n');
    input.extend_from_slice(b"plain text \xff line\n");
    input.extend_from_slice(RESULT_OK.as_bytes());
    input.push(b'\n');
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.stdout, input);
    // `cat` printed a result and exited 0 when its stdin closed.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let cap = std::fs::read_to_string(&capture).unwrap();
    assert!(
        cap.contains(r#""stdin":{"response""#)
            || cap.contains(r#""stdin":{"type":"control_response""#),
        "{cap}"
    );
    assert!(cap.contains("stdin closed"), "{cap}");
}

#[test]
fn a_claude_command_without_stream_json_gets_one_hint() {
    let dir = tempfile::tempdir().unwrap();
    let claude = script(
        dir.path(),
        "claude",
        &format!("{}\n{}", say(INIT), say(RESULT_OK)),
    );
    let out = watchdog()
        .args(["run", "--"])
        .arg(&claude)
        .args(["-p", "hello"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert_eq!(err.matches("hint:").count(), 1, "{err}");
    assert!(
        err.contains("--output-format stream-json --verbose --include-partial-messages"),
        "{err}"
    );
    let out = watchdog()
        .args(["run", "--"])
        .arg(&claude)
        .args([
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ])
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("hint:"));
}

/// Wait for the child's first stdout line: by then the watchdog handles signals.

#[test]
fn sigterm_is_forwarded_and_a_second_one_escalates() {
    let dir = tempfile::tempdir().unwrap();
    // Exits on SIGTERM without a result.
    let polite = script(
        dir.path(),
        "polite.sh",
        &format!(
            "trap 'exit 0' TERM\n{}\nwhile :; do sleep 0.1; done",
            say(INIT)
        ),
    );
    let mut child = watchdog()
        .args(["run", "--"])
        .arg(&polite)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    first_line(&mut child);
    signal(child.id(), 15);
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(t.elapsed() < Duration::from_secs(5));

    // Ignores SIGTERM: the second signal kills it.
    let stubborn = script(
        dir.path(),
        "stubborn.sh",
        &format!(
            "trap '' TERM INT\n{}\nwhile :; do sleep 0.1; done",
            say(INIT)
        ),
    );
    let mut child = watchdog()
        .args(["run", "--"])
        .arg(&stubborn)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    first_line(&mut child);
    signal(child.id(), 2);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first signal must not kill it"
    );
    signal(child.id(), 2);
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn emit_result_ends_a_killed_run_with_a_synthetic_result_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(dir.path(), "c.sh", &format!("{}\nsleep 30", say(INIT)));
    let out = run(
        &[
            "--emit-result",
            "--startup",
            "1s",
            "--idle",
            "1s",
            "--extend-factor",
            "1",
            "--grace",
            "1s",
        ],
        &child,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(INIT));
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["terminal_reason"], "watchdog_idle");
    assert_eq!(last["session_id"], "sess-1");
    // Without a kill, --emit-result adds nothing.
    let ok = script(
        dir.path(),
        "ok.sh",
        &format!("{}\n{}", say(INIT), say(RESULT_OK)),
    );
    let out = run(&["--emit-result"], &ok);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, format!("{INIT}\n{RESULT_OK}\n").as_bytes());
}

#[test]
fn rate_limit_warnings_and_rejections_are_said_once_each() {
    let dir = tempfile::tempdir().unwrap();
    // The frames the real CLI prints under a gateway token (shapes from testdata/captures): two
    // warnings for one window (said once), then a rejection of it (said).
    let warning = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":4102444800,"rateLimitType":"five_hour","utilization":0.95,"overageStatus":"rejected","unifiedWindows":{"five_hour":{"utilization":0.95,"resetsAt":4102444800,"status":"allowed_warning"}}},"session_id":"sess-1"}"#;
    let rejected = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":4102444800,"rateLimitType":"five_hour","overageStatus":"rejected"},"session_id":"sess-1"}"#;
    let child = script(
        dir.path(),
        "limited",
        &[
            say(INIT),
            say(warning),
            say(warning),
            say(rejected),
            say(RESULT_OK),
        ]
        .join("\n"),
    );
    let out = run(&[], &child);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.matches("agent-watchdog: rate limit: five_hour window at 95%")
            .count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches(
            "agent-watchdog: rate limit: five_hour window rejected until 2100-01-01T00:00:00.000Z"
        )
        .count(),
        1,
        "{err}"
    );
}

/// The fields `run` needs from stdout lines are read as the lines are passed on, however far
/// the supervisor's reader is ahead: with 20 MB around them, the rate-limit warning is still
/// said once, the counts are exact, and the summary's session and result are those of the
/// init and the last result.
#[test]
fn fields_seen_on_the_reader_are_exact_under_a_flood() {
    let dir = tempfile::tempdir().unwrap();
    let warning = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":4102444800,"rateLimitType":"five_hour","utilization":0.95,"unifiedWindows":{"five_hour":{"utilization":0.95,"resetsAt":4102444800,"status":"allowed_warning"}}},"session_id":"sess-1"}"#;
    let sub_result = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"sess-1","parent_tool_use_id":"t1"}"#;
    let flood = format!("yes '{PING}' | head -n 150000");
    let child = script(
        dir.path(),
        "flood",
        &[
            say(INIT),
            flood.clone(),
            say(warning),
            "echo 'not json'".into(),
            say(sub_result),
            flood.clone(),
            say(warning),
            say(RESULT_OK),
            flood,
        ]
        .join("\n"),
    );
    let summary = dir.path().join("s.json");
    let out = run(&["--summary", summary.to_str().unwrap()], &child);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let others = [INIT, warning, "not json", sub_result, warning, RESULT_OK];
    let others: usize = others.iter().map(|l| l.len() + 1).sum();
    assert_eq!(out.stdout.len(), 3 * 150000 * (PING.len() + 1) + others);
    let err = stderr(&out);
    assert_eq!(
        err.matches("rate limit: five_hour window at 95%").count(),
        1,
        "{err}"
    );
    let s = read_json(&summary);
    assert_eq!(s["lines"]["ping"], 450000, "{s}");
    assert_eq!(s["lines"]["unparseable"], 1);
    assert_eq!(s["lines"]["result"], 2);
    assert_eq!(s["lines"]["rate_limit_event"], 2);
    assert_eq!(s["session_id"], "sess-1");
    assert_eq!(s["result"]["subtype"], "success");
    assert_eq!(s["result"]["stop_reason"], "end_turn");
}

/// The summary names the session the `init` announced (the id `claude --resume` accepts),
/// not one an earlier or later line carried, and its result fields are the last result's, all
/// of them (`null` when the line lacked one).
#[test]
fn the_summary_session_is_the_inits_and_the_result_is_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let hook = r#"{"type":"system","subtype":"hook_started","session_id":"before-init"}"#;
    let late = r#"{"type":"stream_event","event":{"type":"ping"},"session_id":"after-result"}"#;
    let child = script(
        dir.path(),
        "ids",
        &[
            say(hook),
            say(INIT),
            say(RESULT_ERR),
            say(RESULT_OK),
            say(late),
        ]
        .join("\n"),
    );
    let summary = dir.path().join("s.json");
    let out = run(&["--summary", summary.to_str().unwrap()], &child);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = read_json(&summary);
    assert_eq!(s["session_id"], "sess-1", "{s}");
    assert_eq!(s["result"]["subtype"], "success");
    assert_eq!(s["result"]["num_turns"], 1);
    assert_eq!(s["result"]["api_error_status"], Value::Null);
    assert_eq!(s["result"]["total_cost_usd"], Value::Null);
}

/// A rate-limit reading printed by the child reaches the policy while it runs: at 95% the idle
/// patience is extended for high utilization (the reason the kill names), and the warning is
/// said once.
#[test]
fn a_rate_limit_reading_reaches_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let warning = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":4102444800,"rateLimitType":"five_hour","utilization":0.95,"unifiedWindows":{"five_hour":{"utilization":0.95,"resetsAt":4102444800,"status":"allowed_warning"}}},"session_id":"sess-1"}"#;
    let body = format!("{}\n{}\nexec sleep 1000", say(INIT), say(warning));
    let k = killed(dir.path(), "hot", &body, &["--idle", "1s"]);
    assert_eq!(k.out.status.code(), Some(124), "{}", stderr(&k.out));
    assert_eq!(k.summary["kill"]["kind"], "idle", "{}", k.summary);
    assert_eq!(k.summary["kill"]["extension"], "high_utilization");
    let err = stderr(&k.out);
    assert_eq!(
        err.matches("rate limit: five_hour window at 95%").count(),
        1,
        "{err}"
    );
}

/// A line over the 64 MiB limit is passed on whole, said once, and counted once: as over-long,
/// not also as unparseable pieces.
#[test]
fn an_over_long_line_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let n = (64 << 20) + 1000;
    let body = [
        say(INIT),
        format!("head -c {n} /dev/zero | tr '\\0' a; echo"),
        say(RESULT_OK),
    ]
    .join("\n");
    let child = script(dir.path(), "long", &body);
    let summary = dir.path().join("s.json");
    let out = run(&["--summary", summary.to_str().unwrap()], &child);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout.len(), INIT.len() + n + RESULT_OK.len() + 3);
    let err = stderr(&out);
    assert_eq!(err.matches("over the 64 MiB limit").count(), 1, "{err}");
    let s = read_json(&summary);
    assert_eq!(s["lines"]["overlong"], 1, "{s}");
    assert_eq!(s["lines"]["unparseable"], Value::Null, "{s}");
    assert_eq!(s["lines"]["system"], 1);
    assert_eq!(s["lines"]["result"], 1);
}

/// Lines the live parser accepts but a stricter JSON reader may refuse (lone surrogate
/// escapes: what Node's `JSON.stringify` writes for half an emoji; a reversed pair; an escaped
/// key that holds one; deep nesting) are recorded as the run read them, and the replay of the
/// capture reaches the live verdict from the same lines, with times that never go backwards.
#[test]
fn a_recording_replays_every_line_the_live_run_accepted() {
    let members: &[(&str, &str)] = &[
        ("lone high surrogate", r#""half \ud83d emoji""#),
        ("lone low surrogate", r#""\ude00 tail""#),
        ("reversed pair", r#""\ude00\ud83d""#),
        ("escaped key", r#""ok","\u0078tra\ud83d":1"#),
        (
            "deep nesting",
            r#"[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]"#,
        ),
    ];
    for (name, text) in members {
        let dir = tempfile::tempdir().unwrap();
        let assistant = format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":{text}}}]}},"session_id":"sess-1"}}"#
        );
        let result = format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","result":{text},"session_id":"sess-1"}}"#
        );
        let lines = dir.path().join("lines.jsonl");
        std::fs::write(&lines, format!("{INIT}\n{assistant}\n{result}\n")).unwrap();
        let child = script(dir.path(), "c.sh", &format!("cat '{}'", lines.display()));
        let summary = dir.path().join("s.json");
        let capture = dir.path().join("c.jsonl");
        let out = run(
            &[
                "--summary",
                summary.to_str().unwrap(),
                "--record",
                capture.to_str().unwrap(),
            ],
            &child,
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        assert_eq!(read_json(&summary)["outcome"], "success", "{name}");
        let recorded = std::fs::read_to_string(&capture).unwrap();
        let stdout_records: Vec<&str> = recorded
            .lines()
            .filter(|l| l.starts_with(r#"{"line":"#) || l.starts_with(r#"{"raw":"#))
            .collect();
        assert_eq!(stdout_records.len(), 3, "{name}: {recorded}");
        assert!(
            stdout_records.iter().all(|l| l.starts_with(r#"{"line":"#)),
            "{name}: every parsed line is recorded as a line: {recorded}"
        );
        let v = replay_verdict(&capture, &[]);
        assert_eq!(v["outcome"], "success", "{name}: {v}");
        assert_eq!(
            v["clamped_times"], 0,
            "{name}: capture times go backwards: {recorded}"
        );
    }
}

/// `--version` says which documented features the build has (these tests run an
/// `--all-features` build: every one of them).
#[test]
fn version_lists_the_features_compiled_in() {
    let out = watchdog().arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(concat!("agent-watchdog ", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(
        lines.next(),
        Some("features: demo, ledger, telemetry, telemetry-grpc")
    );
}
