//! The `claude-watchdog` drop-in under the real Agent SDKs (pinned in `.tools/sdk`) and the
//! real `claude`, against the mock Messages API, around the life of its host: a
//! streaming-input session (TypeScript `query()` with an async-iterable prompt, Python
//! `ClaudeSDKClient`) lives through its user's pause between turns, and a TypeScript consumer
//! that `break`s out mid-tool leaves no daemon behind and gets its summary written.
//!
//! Needs node, python, the SDKs in `.tools/sdk` (`scripts/install-sdk-test-deps`) and the real
//! `claude`;
//! a missing prerequisite fails with the command that installs it, never a skip.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, repo_root, session_processes, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, Turn};
use serde_json::Value;

const DROP_IN: &str = env!("CARGO_BIN_EXE_claude-watchdog");

static SERIAL: Mutex<()> = Mutex::new(());

fn sdk_modules() -> PathBuf {
    let modules = repo_root()
        .expect("the repository root")
        .join(".tools/sdk/node_modules");
    assert!(
        modules.join("@anthropic-ai/claude-agent-sdk/sdk.mjs").is_file(),
        "\n\nThe SDK tests need the TypeScript Agent SDK in {}.\nRun `scripts/install-sdk-test-deps`.\n",
        modules.display()
    );
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|o| o.status.success()),
        "\n\nThe SDK tests need node (>= 18) on PATH.\n"
    );
    modules
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk")
        .join(name)
}

/// `node SCRIPT` with the environment of a real claude run against `server` (the drop-in
/// in its place), plus `env`.
fn node(name: &str, server: &BlockingMockServer, env: &[(&str, &Path)]) -> (Command, ClaudeRun) {
    let claude = find_claude().unwrap_or_else(|e| panic!("\n\n{e}\n"));
    let run = ClaudeRun::new(&claude, server.base_url(), "unused").unwrap();
    let cmd = run.command();
    let mut c = Command::new("node");
    c.arg(script(name))
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("SDK_NODE_MODULES", sdk_modules())
        .env("DROP_IN", DROP_IN)
        .env("WORK_DIR", &cmd.cwd)
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    (c, run)
}

fn events(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_typescript_streaming_query_lives_through_its_user_s_pause() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sum = dir.path().join("s.json");
    let (mut c, run) = node(
        "streaming.mjs",
        &server,
        &[("AGENT_WATCHDOG_SUMMARY", &sum)],
    );
    // The user thinks 5 s between turns, more than twice the linger.
    c.env("PAUSE_MS", "5000").env("AGENT_WATCHDOG_LINGER", "2s");
    let out = c.output().expect("run node");
    server.shutdown();
    let ev = events(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let results: Vec<&Value> = ev.iter().filter(|e| e["type"] == "result").collect();
    assert_eq!(results.len(), 2, "{ev:?}\nstderr: {err}");
    for r in &results {
        assert_eq!(r["subtype"], "success", "{r}");
    }
    assert!(ev.iter().any(|e| e["event"] == "thinking"), "{ev:?}");
    let done = ev.iter().find(|e| e["event"] == "done").expect("done");
    assert!(done["error"].is_null(), "{done}\nstderr: {err}");
    assert!(!err.contains("linger"), "{err}");
    let s: Value = serde_json::from_slice(&std::fs::read(&sum).unwrap()).unwrap();
    assert_eq!(s["outcome"], "success", "{s}");
    assert!(s["kill"].is_null(), "{s}");
    assert!(session_processes(run.dirs().root()).is_empty());
}

fn python() -> PathBuf {
    let py = repo_root()
        .expect("the repository root")
        .join(".tools/sdk/py/bin/python");
    assert!(
        py.is_file(),
        "\n\nThe Python SDK test needs claude-agent-sdk in {}.\nRun `scripts/install-sdk-test-deps`.\n",
        py.display()
    );
    py
}

#[test]
fn a_python_sdk_client_lives_through_its_user_s_pause() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sum = dir.path().join("s.json");
    let claude = find_claude().unwrap_or_else(|e| panic!("\n\n{e}\n"));
    let run = ClaudeRun::new(&claude, server.base_url(), "unused").unwrap();
    let cmd = run.command();
    let out = Command::new(python())
        .arg(script("client_streaming.py"))
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("DROP_IN", DROP_IN)
        .env("WORK_DIR", &cmd.cwd)
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .env("AGENT_WATCHDOG_SUMMARY", &sum)
        .env("AGENT_WATCHDOG_LINGER", "2s")
        .env("PAUSE_S", "5")
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run python");
    server.shutdown();
    let ev = events(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let results: Vec<&Value> = ev.iter().filter(|e| e["type"] == "result").collect();
    assert_eq!(results.len(), 2, "{ev:?}\nstderr: {err}");
    for r in &results {
        assert_eq!(r["subtype"], "success", "{r}");
        assert_eq!(r["is_error"], false, "{r}");
    }
    assert!(ev.iter().any(|e| e["event"] == "thinking"), "{ev:?}");
    let done = ev.iter().find(|e| e["event"] == "done").expect("done");
    assert!(done["error"].is_null(), "{done}\nstderr: {err}");
    let s: Value = serde_json::from_slice(&std::fs::read(&sum).unwrap()).unwrap();
    assert!(s["kill"].is_null(), "{s}");
    assert!(session_processes(run.dirs().root()).is_empty());
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            let state = s[s.rfind(')').unwrap() + 1..].split_whitespace().next();
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

#[test]
fn a_typescript_consumer_that_breaks_mid_tool_leaves_no_daemon_and_gets_its_summary() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("daemon.pid");
    let sum = dir.path().join("s.json");
    // The tool starts a daemon that left the group, double-forked (claude cannot find it
    // among its tool's descendants: it re-parents to the drop-in) and ignores SIGTERM, then
    // the tool runs on.
    let cmd = format!(
        "( setsid sh -c 'trap \"\" HUP TERM; echo $$ > {p}; while :; do sleep 1; done' \
         > /dev/null 2>&1 < /dev/null & ); sleep 60; echo end",
        p = pid_file.display()
    );
    let scenario = Scenario::new("break_mid_tool")
        .turn(Turn::new().text("Running it.").bash("toolu_daemon", cmd))
        .turn(Turn::answer("done"));
    let server = BlockingMockServer::start(scenario).unwrap();
    let (mut c, run) = node(
        "break_mid_tool.mjs",
        &server,
        &[("AGENT_WATCHDOG_SUMMARY", &sum), ("PID_FILE", &pid_file)],
    );
    c.env("STAY_MS", "9000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("run node");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send((Instant::now(), v));
            }
        }
    });
    // `broke`: the SDK's cleanup sent SIGTERM (its SIGKILL follows 5 s later).
    let mut ev = Vec::new();
    let broke_at = loop {
        let (at, v) = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("no break ({e}): {ev:?}"));
        ev.push(v.clone());
        if v["event"] == "broke" {
            break at;
        }
    };
    let brk = ev.iter().find(|e| e["event"] == "break").cloned();
    assert_eq!(
        brk.as_ref().map(|b| b["daemon"].clone()),
        Some(Value::Bool(true)),
        "{ev:?}"
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The drop-in's whole ladder fits before the host's SIGKILL: the daemon is gone well
    // within the 5 s, and the summary written.
    while alive(pid) && broke_at.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let gone_after = broke_at.elapsed();
    eprintln!(
        "SDK close → setsid daemon gone: {} ms",
        gone_after.as_millis()
    );
    assert!(!alive(pid), "the setsid daemon {pid} outlived the session");
    assert!(
        gone_after < Duration::from_millis(4500),
        "the daemon lived {gone_after:?} after the SDK's SIGTERM: its SIGKILL came first"
    );
    let out = child.wait_with_output().unwrap();
    server.shutdown();
    let err = String::from_utf8_lossy(&out.stderr);
    let s: Value = serde_json::from_slice(&std::fs::read(&sum).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no summary ({e}); stderr: {err}"));
    assert_eq!(s["interrupted"], "SIGTERM", "{s}");
    assert!(session_processes(run.dirs().root()).is_empty());
}
