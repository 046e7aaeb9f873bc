//! `claude-watchdog` with a stand-in `claude` script: finding the real binary, passing the
//! arguments and exit code through, and the synthetic `result` on a kill.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const DROP_IN: &str = env!("CARGO_BIN_EXE_claude-watchdog");
const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"sess-drop-in"}"#;

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

fn drop_in() -> Command {
    let mut c = Command::new(DROP_IN);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AGENT_WATCHDOG_") {
            c.env_remove(k);
        }
    }
    c.stdin(Stdio::null());
    c
}

fn lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_kill_ends_with_one_synthetic_result_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let claude = script(
        dir.path(),
        "claude",
        &format!(
            "printf '%s\\n' '{INIT}'\nprintf '%s\\n' '{}'\nsleep 30",
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash"}]},"session_id":"sess-drop-in"}"#
        ),
    );
    let summary = dir.path().join("summary.json");
    let capture = dir.path().join("capture.jsonl");
    let out = drop_in()
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .env("AGENT_WATCHDOG_IDLE", "1s")
        .env("AGENT_WATCHDOG_EXTEND_FACTOR", "1")
        .env("AGENT_WATCHDOG_GRACE", "1s")
        .env("AGENT_WATCHDOG_SUMMARY", &summary)
        .env("AGENT_WATCHDOG_RECORD", &capture)
        .args(["-p", "hi", "--output-format", "stream-json", "--verbose"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = lines(&out);
    assert_eq!(
        lines[0], INIT,
        "the child's own lines come first, untouched"
    );
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["subtype"], "error_during_execution");
    assert_eq!(last["is_error"], true);
    assert_eq!(last["terminal_reason"], "watchdog_idle");
    assert_eq!(last["session_id"], "sess-drop-in");
    assert_eq!(last["total_cost_usd"], 0);
    assert_eq!(last["num_turns"], 1);
    assert!(last["uuid"].as_str().unwrap().len() == 36);
    assert!(last["usage"]["input_tokens"] == 0 && last["modelUsage"] == serde_json::json!({}));
    assert_eq!(last["permission_denials"], serde_json::json!([]));
    let text = last["result"].as_str().unwrap();
    assert!(text.contains("killed claude (idle)"), "{text}");
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["kill"]["kind"], "idle");
    assert!(std::fs::read_to_string(&capture)
        .unwrap()
        .contains("\"exit\""));
}

#[test]
fn without_a_kill_it_is_transparent() {
    let dir = tempfile::tempdir().unwrap();
    let args_file = dir.path().join("args.txt");
    let claude = script(
        dir.path(),
        "claude",
        &format!(
            "for a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{}'\necho 2.1.332 '(Claude Code)'\nexit 7",
            args_file.display()
        ),
    );
    let out = drop_in()
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .args(["--version", "a b", "--flag=x"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"2.1.332 (Claude Code)\n");
    assert_eq!(
        std::fs::read_to_string(&args_file).unwrap(),
        "--version\na b\n--flag=x\n"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_real_claude_is_found_on_path_skipping_itself() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    std::fs::create_dir_all(&first).unwrap();
    // A `claude` on PATH that is the drop-in itself (as when the drop-in is installed as
    // `claude`): it must be skipped.
    #[cfg(unix)]
    std::os::unix::fs::symlink(DROP_IN, first.join("claude")).unwrap();
    script(&dir.path().join("second"), "claude", "echo real-claude");
    let path = std::env::join_paths([
        first,
        dir.path().join("second"),
        "/usr/bin".into(),
        "/bin".into(),
    ])
    .unwrap();
    let out = drop_in()
        .env("PATH", path)
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"real-claude\n");
}

#[test]
fn a_missing_claude_or_a_bad_policy_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = drop_in()
        .env("PATH", dir.path())
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("AGENT_WATCHDOG_CLAUDE"));
    let out = drop_in()
        .env("AGENT_WATCHDOG_CLAUDE", DROP_IN)
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "pointing at itself must not recurse"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("itself"));
    let claude = script(dir.path(), "claude", "exit 0");
    let out = drop_in()
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .env("AGENT_WATCHDOG_IDLE", "0s")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("AGENT_WATCHDOG_IDLE") && err.contains("0s"),
        "{err}"
    );
}

/// One parser for every variable: `run` and the drop-in read each `AGENT_WATCHDOG_*` value the
/// same way (a boolean in any case, `yes`/`on`/`1`; garbage refused by both with the variable
/// named; an empty variable is an unset one in both), and it means the same in both.
#[test]
fn run_and_the_drop_in_read_every_variable_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    // A stream-json child that ends without a result: exit 3 only when strict.
    let claude = script(
        dir.path(),
        "claude",
        &format!("printf '%s\\n' '{INIT}'\nexit 1"),
    );
    let run = |var: &str, value: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"));
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("AGENT_WATCHDOG_") {
                c.env_remove(k);
            }
        }
        c.env(var, value)
            .stdin(Stdio::null())
            .arg("run")
            .arg("--")
            .arg(&claude)
            .output()
            .unwrap()
    };
    let drop = |var: &str, value: &str| {
        drop_in()
            .env("AGENT_WATCHDOG_CLAUDE", &claude)
            .env(var, value)
            .arg("-p")
            .arg("hi")
            .output()
            .unwrap()
    };
    let cases: &[(&str, &str, Option<i32>)] = &[
        ("AGENT_WATCHDOG_STRICT", "TRUE", Some(3)),
        ("AGENT_WATCHDOG_STRICT", "True", Some(3)),
        ("AGENT_WATCHDOG_STRICT", "YES", Some(3)),
        ("AGENT_WATCHDOG_STRICT", "on", Some(3)),
        ("AGENT_WATCHDOG_STRICT", "1", Some(3)),
        ("AGENT_WATCHDOG_STRICT", "false", Some(1)),
        ("AGENT_WATCHDOG_STRICT", "0", Some(1)),
        ("AGENT_WATCHDOG_STRICT", "", Some(1)),
        ("AGENT_WATCHDOG_STRICT", "maybe", Some(2)),
        ("AGENT_WATCHDOG_STRICT", "2", Some(2)),
        ("AGENT_WATCHDOG_IDLE", "", Some(1)),
        ("AGENT_WATCHDOG_IDLE", "10m", Some(1)),
        ("AGENT_WATCHDOG_IDLE", "400d", Some(2)),
        ("AGENT_WATCHDOG_IDLE", "soon", Some(2)),
        ("AGENT_WATCHDOG_SUMMARY", "", Some(1)),
        ("AGENT_WATCHDOG_WARN_AT", "1.5", Some(2)),
    ];
    for (var, value, code) in cases {
        let r = run(var, value);
        let d = drop(var, value);
        assert_eq!(
            r.status.code(),
            *code,
            "run {var}={value:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert_eq!(
            d.status.code(),
            *code,
            "drop-in {var}={value:?}: {}",
            String::from_utf8_lossy(&d.stderr)
        );
        if *code == Some(2) {
            let err = String::from_utf8_lossy(&d.stderr);
            assert!(
                err.contains(var) && err.contains(&format!("'{value}'")),
                "the drop-in names the variable and the value: {err}"
            );
        }
    }
}
