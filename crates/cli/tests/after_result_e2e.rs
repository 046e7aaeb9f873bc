//! What may keep a session open after (or before) its `result` (field report N7: an MCP
//! server stuck in `needs-auth` or `pending`, a `SessionStart` hook that never exits), with
//! the real Claude Code CLI 2.1.332 against the mock. Measured here: a `needs-auth` or
//! `pending` server does not keep 2.1.332 open (it exits within a second of its result, in
//! `-p` and streaming-input modes); a `SessionStart` hook that never exits holds the session
//! *before* its first turn until Claude Code cancels it (its timeout), and the watchdog waits
//! for that; a process that keeps the output open after the result is ended by the linger
//! and the tree kill, nothing left running. A missing CLI or python3 is a failure, never a
//! skip.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mock_api::harness::{testdata_dir, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, FINAL_TEXT};
use serde_json::{json, Value};

#[path = "common/watched.rs"]
mod watched;

use watched::{claude, watch, Watched};

fn python3() -> &'static str {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "this test needs python3 on PATH (testdata/mcp)");
    "python3"
}

fn healthy() -> (BlockingMockServer, ClaudeRun) {
    let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), "Say hello.").unwrap();
    (server, run)
}

fn write_json(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// The `system/init` line's MCP servers.
fn mcp_servers(w: &Watched) -> Value {
    w.lines()
        .into_iter()
        .find(|(_, l)| l["subtype"] == "init")
        .map(|(_, l)| l["mcp_servers"].clone())
        .unwrap_or(Value::Null)
}

/// The time from the first `result` to the end of the run.
fn after_result(w: &Watched) -> u64 {
    let result = w.first_result_ms().expect("a result");
    w.summary["duration_ms"].as_u64().unwrap() - result
}

/// A linger of 10 s: far above the time 2.1.332 takes to exit after its result (0.1 s
/// measured, a few seconds on a loaded machine), so a test fails if claude stays open.
const LIMITS: [&str; 6] = ["--idle", "20s", "--extend-factor", "1", "--linger", "10s"];

struct Auth401 {
    child: std::process::Child,
    port: u16,
}

impl Drop for Auth401 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn auth401(dir: &Path) -> Auth401 {
    let portfile = dir.join("port");
    let child = std::process::Command::new(python3())
        .arg(testdata_dir().join("mcp/mcp_auth401.py"))
        .arg(&portfile)
        .spawn()
        .unwrap();
    let t = Instant::now();
    let port = loop {
        if let Some(p) = std::fs::read_to_string(&portfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the 401 server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    Auth401 { child, port }
}

#[test]
fn a_server_stuck_in_needs_auth_does_not_keep_the_session_open_in_either_mode() {
    let dir = tempfile::tempdir().unwrap();
    let server = auth401(dir.path());
    let config = write_json(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"locked": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", server.port)}}}),
    );
    for streaming in [None, Some(1)] {
        let (_mock, run) = healthy();
        let run = run.arg("--mcp-config").arg(&config);
        let w = watch(&run, &LIMITS, streaming, Duration::from_secs(120));
        let report = w.report();
        assert_eq!(
            mcp_servers(&w),
            json!([{"name": "locked", "status": "needs-auth", "source": "dynamic"}]),
            "{report}"
        );
        assert!(w.summary["kill"].is_null(), "{streaming:?}: {report}");
        assert_eq!(w.summary["outcome"], "success", "{report}");
        // Measured: it ends within a second of its result (the linger, 10 s, never fires).
        assert!(after_result(&w) < 10_000, "{report}");
        assert_eq!(w.summary["leftovers_killed"], 0, "{report}");
    }
}

#[test]
fn a_server_left_pending_at_the_start_does_not_keep_the_session_open_nor_outlive_it() {
    // A stdio server that never answers initialize, with the session started after 3 s
    // (CLAUDE_CODE_MCP_STARTUP_WAIT_MS): listed `pending`; the run ends at its result and the
    // server does not outlive it.
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("server.pid");
    let config = write_json(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"slow": {"type": "stdio", "command": python3(), "args": [
            testdata_dir().join("mcp/mcp_probe.py"), "noinit", "--pidfile", &pidfile,
        ]}}}),
    );
    let (_mock, run) = healthy();
    let run = run
        .arg("--mcp-config")
        .arg(&config)
        .env("CLAUDE_CODE_MCP_STARTUP_WAIT_MS", "3000");
    let w = watch(&run, &LIMITS, None, Duration::from_secs(120));
    let report = w.report();
    assert_eq!(mcp_servers(&w)[0]["status"], "pending", "{report}");
    assert!(w.summary["kill"].is_null(), "{report}");
    assert_eq!(w.summary["outcome"], "success", "{report}");
    assert!(after_result(&w) < 10_000, "{report}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(pid), "the pending server outlived the run: {report}");
}

#[test]
fn a_session_start_hook_that_never_exits_is_waited_out_until_claude_code_cancels_it() {
    // The hook never exits; its own timeout is 20 s. Claude Code prints hook_started, then
    // nothing, cancels the hook at 20 s and runs the turn. An idle patience of 10 s would have
    // killed it 10 s after hook_started; a hook that runs holds the idle kill until Claude
    // Code's own timeout, so the session succeeds, and the hook's processes are gone. (10 s
    // after the cancel is room for a loaded machine: claude took 4.2 s to print its init
    // after a cancelled hook under a load of 20 on 2 cores.)
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("hook.pid");
    let hook = format!("echo $$ > {}; exec sleep 1017", pidfile.display());
    let settings = write_json(
        dir.path(),
        "settings.json",
        &json!({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": hook, "timeout": 20}]}]}}),
    );
    let (_mock, run) = healthy();
    let run = run.arg("--settings").arg(&settings);
    let flags = ["--idle", "10s", "--extend-factor", "1", "--linger", "3s"];
    let w = watch(&run, &flags, None, Duration::from_secs(120));
    let report = w.report();
    let started = w
        .lines()
        .into_iter()
        .find(|(_, l)| l["subtype"] == "hook_started")
        .map(|(t, _)| t)
        .expect("hook_started");
    let response = w
        .lines()
        .into_iter()
        .find(|(_, l)| l["subtype"] == "hook_response")
        .map(|(t, l)| (t, l["outcome"].clone()))
        .expect("hook_response");
    assert_eq!(response.1, "cancelled", "{report}");
    assert!(
        response.0 - started >= 19_000,
        "the hook ran its 20 s: {report}"
    );
    assert!(w.summary["kill"].is_null(), "{report}");
    assert_eq!(w.summary["outcome"], "success", "{report}");
    let last = w.lines().into_iter().rfind(|(_, l)| l["type"] == "result");
    assert_eq!(
        last.map(|(_, l)| l["result"].clone()),
        Some(json!(FINAL_TEXT)),
        "{report}"
    );
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(pid), "the hook outlived the run: {report}");
}

#[test]
fn output_held_open_after_the_result_is_ended_by_the_linger_and_the_tree_kill() {
    // The CCA#1494 shape: the result came, but something the session left holds the stream
    // open (here a process that inherited claude's stdout, started after claude exits).
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("holder.pid");
    let wrapper = dir.path().join("claude-then-hold");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n\"$REAL_CLAUDE\" \"$@\"\necho $$ > {}\nexec sleep 1017\n",
            pidfile.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
    let run = ClaudeRun::new(&wrapper, server.base_url(), "Say hello.")
        .unwrap()
        .env("REAL_CLAUDE", claude());
    let flags = ["--idle", "20s", "--extend-factor", "1", "--linger", "3s"];
    let w = watch(&run, &flags, None, Duration::from_secs(120));
    let report = w.report();
    assert_eq!(w.summary["kill"]["kind"], "linger", "{report}");
    assert_eq!(w.status.code(), Some(124), "{report}");
    let result = w.first_result_ms().unwrap();
    let at = w.summary["kill"]["at_ms"].as_u64().unwrap();
    assert!((result + 3000..result + 4000).contains(&at), "{report}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(pid), "the holder outlived the kill: {report}");
    let tree = w.summary["kill"]["tree"]["processes"].as_array().unwrap();
    assert!(
        tree.iter()
            .any(|p| p["pid"] == pid && p["command"].as_str().is_some_and(|c| c.contains("sleep"))),
        "the receipt names the holder: {report}"
    );
}
