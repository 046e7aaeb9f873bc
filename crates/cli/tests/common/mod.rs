//! Helpers shared by the `run` tests: script children and a clean `agent-watchdog` command.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The `agent-watchdog` binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

pub const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s1"}"#;
pub const ASSISTANT: &str =
    r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]},"session_id":"s1"}"#;
pub const RESULT_OK: &str = r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","session_id":"s1"}"#;
pub const PING: &str = r#"{"type":"stream_event","event":{"type":"ping"},"session_id":"s1"}"#;

/// An executable `/bin/sh` script `name` in `dir`.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A shell command that prints `line` (single-quoted).
pub fn say(line: &str) -> String {
    format!("printf '%s\\n' '{line}'")
}

/// `agent-watchdog` with no `AGENT_WATCHDOG_*` variable of ours leaking in, stdin `/dev/null`.
pub fn watchdog() -> Command {
    let mut c = Command::new(BIN);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AGENT_WATCHDOG_") {
            c.env_remove(k);
        }
    }
    c.stdin(Stdio::null());
    c
}

/// The output's stderr, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Send signal `sig` to `pid`.
pub fn signal(pid: u32, sig: i32) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// `agent-watchdog run ARGS -- CHILD` with stdout and stderr piped, started.
pub fn spawn_run(args: &[&str], child: &Path) -> std::process::Child {
    watchdog()
        .arg("run")
        .args(args)
        .arg("--")
        .arg(child)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait for the child's first stdout line (its `init`: it is running), then keep draining its
/// stdout on a thread so it never blocks on a full pipe.
pub fn first_line(child: &mut std::process::Child) {
    use std::io::BufRead;
    let stdout = child.stdout.take().unwrap();
    let mut reader = std::io::BufReader::new(stdout);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("init"), "{line}");
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
}

/// Whether `pid` is a live process (not gone, not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            let state = s[s.rfind(')').unwrap() + 1..].split_whitespace().next();
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

/// Wait (at most `limit`) until none of `pids` is alive; the ones still alive.
pub fn wait_gone(pids: &[i32], limit: Duration) -> Vec<i32> {
    let t = Instant::now();
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || t.elapsed() > limit {
            return left;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Wait (at most 20 s) until `path` holds `n` lines; its lines as pids.
pub fn read_pids(path: &Path, n: usize) -> Vec<i32> {
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.len() >= n {
            return pids;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "no pids in {path:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `child` at most `budget`; past it, kills it and fails the test with `what` and
/// the file `log` (its stderr or stdout so far).
pub fn wait_within(child: &mut Child, budget: Duration, what: &str, log: &Path) -> ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if t.elapsed() > budget {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not finish within {budget:?}; {}:\n{}",
                log.display(),
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
