//! End to end with MCP servers: the real Claude Code CLI against the mock Messages API, with
//! the stdio MCP server of `testdata/mcp/mcp_probe.py` configured through `--mcp-config`,
//! under `agent-watchdog run`.
//!
//! - (a) a hung call that Claude Code aborts by itself is not killed, and the session succeeds;
//! - (b) with Claude Code's own limits disabled the watchdog kills, names the MCP tool, and
//!   leaves nothing running (a server that ignores SIGINT, SIGTERM and stdin EOF included),
//!   also when claude itself dies abruptly and orphans that server;
//! - (c) a server that never answers `initialize`, with `MCP_TIMEOUT` above `--startup`: no
//!   startup kill;
//! - (d) replaying each live run's recording, and the recordings of `testdata/mcp`, gives the
//!   live verdicts.
//!
//! Needs the real `claude` and `python3`: a missing one is a failure that says so, never a skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, session_processes, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, MCP_CALL_ID, MCP_FINAL_TEXT};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");
const TOOL: &str = "mcp__probe__wait";

/// One real CLI at a time: they are heavy on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn claude() -> PathBuf {
    find_claude()
        .unwrap_or_else(|e| panic!("\n\nThe e2e tests need the real Claude Code CLI.\n{e}\n\n"))
}

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/mcp")
}

fn python3() -> &'static str {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the MCP e2e tests need python3 on PATH (for testdata/mcp/mcp_probe.py)"
    );
    "python3"
}

struct Live {
    summary: Value,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    capture: PathBuf,
    /// The MCP server's PID, as it wrote it.
    server_pid: Option<u32>,
    took: Duration,
    _dir: tempfile::TempDir,
}

impl Live {
    /// The `tool_result` of the MCP call, as the CLI printed it.
    fn mcp_result(&self) -> Option<Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "user")
            .find_map(|v| {
                v["message"]["content"]
                    .as_array()?
                    .iter()
                    .find(|b| b["tool_use_id"] == MCP_CALL_ID)
                    .cloned()
            })
    }
}

/// Whether `pid` is a live process (not gone, not a zombie), through /proc.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
    }
}

/// Run the MCP scenario with the probe server in `mode`, `env` in the child's environment
/// and `flags` for the watchdog.
fn run_mcp(mode: &str, env: &[(&str, &str)], flags: &[&str]) -> Live {
    run_mcp_with(mode, env, flags, None)
}

/// What a test does while the run goes on: given the MCP server's pidfile and the capture.
type During<'a> = &'a dyn Fn(&Path, &Path);

fn run_mcp_with(mode: &str, env: &[(&str, &str)], flags: &[&str], during: Option<During>) -> Live {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let python = python3();
    let server = BlockingMockServer::start(Scenario::mcp_tool_call(TOOL)).expect("start the mock");
    let mut run = ClaudeRun::new(claude(), server.base_url(), "Call the MCP wait tool.")
        .expect("session dirs");
    let root = run.dirs().root().to_path_buf();
    let pidfile = root.join("mcp_probe.pid");
    let config = root.join("mcp.json");
    let probe = testdata().join("mcp_probe.py");
    assert!(probe.is_file(), "missing {}", probe.display());
    let cfg = json!({"mcpServers": {"probe": {
        "command": python,
        "args": [probe, mode, "--pidfile", pidfile, "--tag", root],
    }}});
    std::fs::write(&config, cfg.to_string()).unwrap();
    run = run.arg("--mcp-config").arg(&config);
    for (k, v) in env {
        run = run.env(*k, *v);
    }
    let cmd = run.command();
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let capture = dir.path().join("capture.jsonl");
    let t = Instant::now();
    let child = cmd
        .behind(
            Command::new(BIN)
                .arg("run")
                .args(flags)
                .arg("--no-recover-output-limit")
                .arg("--summary")
                .arg(&summary)
                .arg("--record")
                .arg(&capture)
                .arg("--"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(f) = during {
        f(&pidfile, &capture);
    }
    let out = child.wait_with_output().unwrap();
    let took = t.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap_or_default())
        .unwrap_or_else(|e| panic!("{mode}: no summary ({e}); stderr: {stderr}"));
    let server_pid = std::fs::read_to_string(&pidfile)
        .ok()
        .and_then(|p| p.trim().parse().ok());
    // Give the processes a moment to be reaped, then look through /proc.
    std::thread::sleep(Duration::from_millis(500));
    let left = session_processes(&root);
    let server_alive = server_pid.is_some_and(alive);
    if server_alive || !left.is_empty() {
        // Never leak what this test started: end the leftovers by their id, then fail.
        for (pid, _) in &left {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
        }
        if let Some(pid) = server_pid {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
        }
        panic!(
            "{mode}: left running after the run: {left:?} (MCP server {server_pid:?} alive: \
             {server_alive}); stderr: {stderr}"
        );
    }
    server.shutdown();
    Live {
        summary,
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
        capture,
        server_pid,
        took,
        _dir: dir,
    }
}

fn replay(capture: &Path, flags: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("replay")
        .arg(capture)
        .args(flags)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (d) The replay of the live run's recording gives the live verdict.
fn replay_agrees(live: &Live, flags: &[&str]) {
    let v = replay(&live.capture, flags);
    let s = &live.summary;
    assert_eq!(v["outcome"], s["outcome"], "replay {v}\nlive {s}");
    assert_eq!(v["kill"]["kind"], s["kill"]["kind"], "replay {v}\nlive {s}");
    if let (Some(a), Some(b)) = (s["kill"]["at_ms"].as_u64(), v["kill"]["at_ms"].as_u64()) {
        assert!(
            a.abs_diff(b) < 1000,
            "live kill at {a} ms, replay at {b} ms"
        );
    }
}

#[test]
fn a_call_claude_code_aborts_itself_is_not_killed_and_the_session_succeeds() {
    // (a) Claude Code's idle limit set short in the child's environment; the watchdog with
    // its default rules.
    let env = [("CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT", "1000")];
    let live = run_mcp("never", &env, &[]);
    let s = &live.summary;
    assert_eq!(s["outcome"], "success", "{s}\n{}", live.stderr);
    assert_eq!(s["kill"], Value::Null, "{s}");
    assert_eq!(live.code, Some(0), "{s}");
    let result = live.mcp_result().expect("the MCP call's tool_result");
    assert_eq!(
        result["is_error"], true,
        "Claude Code's own abort: {result}"
    );
    assert!(live.stdout.contains(MCP_FINAL_TEXT));
    assert!(live.took >= Duration::from_secs(25), "{:?}", live.took);
    replay_agrees(&live, &[]);
}

#[test]
fn the_floor_holds_a_short_no_progress_limit_back_until_claude_code_aborts_the_call() {
    // Claude Code gives up on the 30 s tick; the floor is 30 s + 30 s, so a 10 s
    // no-progress limit does not fire while the call is outstanding.
    let env = [("CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT", "1000")];
    let flags = ["--no-progress", "10s", "--grace", "2s"];
    let live = run_mcp("never", &env, &flags);
    let s = &live.summary;
    assert_eq!(s["outcome"], "success", "{s}\n{}", live.stderr);
    assert_eq!(s["kill"], Value::Null, "{s}");
    assert_eq!(live.mcp_result().expect("tool_result")["is_error"], true);
    replay_agrees(&live, &flags);
}

#[test]
fn an_answering_server_is_unaffected() {
    let flags = ["--no-progress", "20s"];
    let live = run_mcp("answer", &[], &flags);
    let s = &live.summary;
    assert_eq!(s["outcome"], "success", "{s}\n{}", live.stderr);
    let result = live.mcp_result().expect("tool_result");
    assert_ne!(result["is_error"], true, "{result}");
    replay_agrees(&live, &flags);
}

#[test]
fn with_claude_codes_limits_off_the_watchdog_kills_and_no_server_survives() {
    // (b) Claude Code will never give up (both limits 0): the plain no-progress limit applies,
    // the kill names the hung MCP tool, and the server, which ignores SIGINT, SIGTERM and
    // stdin EOF, is gone afterwards (checked in `run_mcp` through /proc).
    let env = [
        ("CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT", "0"),
        ("MCP_TOOL_TIMEOUT", "0"),
    ];
    let flags = ["--no-progress", "6s", "--grace", "2s"];
    let live = run_mcp("stubborn", &env, &flags);
    let s = &live.summary;
    assert_eq!(s["outcome"], "killed", "{s}\n{}", live.stderr);
    assert_eq!(s["kill"]["kind"], "no_progress", "{s}");
    assert_eq!(s["kill"]["mcp_call"]["tool"], TOOL, "{s}");
    let outstanding = s["kill"]["mcp_call"]["outstanding_ms"].as_u64().unwrap();
    assert!((5_900..7_000).contains(&outstanding), "{s}");
    assert!(
        live.stderr.contains(&format!("tool {TOOL}")),
        "the kill message names the MCP tool: {}",
        live.stderr
    );
    let pid = live.server_pid.expect("the MCP server started");
    assert!(!alive(pid), "the MCP server {pid} survived the kill");
    replay_agrees(&live, &flags);
}

#[test]
fn a_server_that_never_initializes_gets_the_startup_claude_code_gives_it() {
    // (c) MCP_TIMEOUT 8 s holds system/init back ~7 s; --startup 4s would kill it, so the
    // run extends startup for MCP_TIMEOUT + 30 s and says so.
    let env = [("MCP_TIMEOUT", "8000")];
    let flags = ["--startup", "4s", "--no-progress", "20s"];
    let live = run_mcp("noinit", &env, &flags);
    let s = &live.summary;
    assert_eq!(s["outcome"], "success", "{s}\n{}", live.stderr);
    assert_eq!(s["kill"], Value::Null, "{s}");
    assert!(
        live.stderr.contains("MCP_TIMEOUT=8000") && live.stderr.contains("startup extended"),
        "{}",
        live.stderr
    );
    assert_eq!(
        live.stderr.matches("startup extended").count(),
        1,
        "said once: {}",
        live.stderr
    );
    // The tool never loaded: the model's call failed, and the session still ended well.
    assert!(live.stdout.contains(MCP_FINAL_TEXT), "{}", live.stdout);
    // The capture kept MCP_TIMEOUT, so the replay extends startup the same way.
    let cap = std::fs::read_to_string(&live.capture).unwrap();
    assert!(cap
        .lines()
        .next()
        .unwrap_or("")
        .contains("\"MCP_TIMEOUT\":\"8000\""));
    // The extension mattered: the first line came after the 4 s --startup asked for.
    let first_line_ms = cap
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r.get("line").is_some())
        .and_then(|r| r["t_ms"].as_u64())
        .expect("a stdout line");
    assert!(first_line_ms > 4000, "system/init at {first_line_ms} ms");
    replay_agrees(&live, &flags);
}

#[test]
fn replaying_the_recordings_gives_their_live_verdicts_under_the_default_policy() {
    // (d) The recordings of testdata/mcp (live runs without a watchdog) under the default
    // policy: none is killed; each ends as it ended live.
    for (file, outcome) in [
        ("hang_idle20.capture.jsonl", "success"),
        ("slow45.capture.jsonl", "success"),
        ("noinit_text.capture.jsonl", "success"),
        ("hang_term.capture.jsonl", "no_result"),
    ] {
        let v = replay(&testdata().join(file), &[]);
        assert_eq!(v["outcome"], outcome, "{file}: {v}");
        assert_eq!(v["kill"], Value::Null, "{file}: {v}");
    }
}

/// Poll `cond` every 100 ms for up to `secs` seconds.
fn wait_for(secs: u64, what: &str, cond: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn when_claude_dies_abruptly_its_stubborn_mcp_server_does_not_survive_the_run() {
    // claude SIGKILLed mid-call (as by the OOM killer): it cannot stop its server, which
    // ignores SIGINT, SIGTERM and stdin EOF and stays in claude's process group, re-parented
    // to us. The run must still end it (checked in `run_mcp_with` through /proc).
    let during = |pidfile: &Path, capture: &Path| {
        wait_for(60, "the MCP call", || {
            std::fs::read_to_string(capture).is_ok_and(|c| c.contains(MCP_CALL_ID))
                && std::fs::read_to_string(pidfile).is_ok()
        });
        let pid: u32 = std::fs::read_to_string(pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The server's parent is claude.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let ppid: u32 = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap();
        let comm = std::fs::read_to_string(format!("/proc/{ppid}/cmdline")).unwrap_or_default();
        assert!(
            comm.contains("claude"),
            "the server's parent is claude: {comm:?}"
        );
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(ppid.to_string())
            .status();
    };
    let env = [
        ("CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT", "0"),
        ("MCP_TOOL_TIMEOUT", "0"),
    ];
    let flags = ["--no-progress", "60s", "--grace", "2s"];
    let live = run_mcp_with("stubborn", &env, &flags, Some(&during));
    assert_eq!(live.summary["outcome"], "no_result", "{}", live.summary);
    let pid = live.server_pid.expect("the MCP server started");
    assert!(!alive(pid), "the MCP server {pid} survived");
}

#[test]
fn the_default_policy_lets_claude_code_abort_a_call_after_its_default_1800_s() {
    // The case, rebuilt from `hang_idle20` with Claude Code's default idle limit:
    // heartbeats every 30 s until 1,800.9 s, its own abort at 1,801.2 s, then the same end.
    // Under the old rule replay said `killed / no_progress` at 1,800.9 s.
    let text = std::fs::read_to_string(testdata().join("hang_idle20.capture.jsonl")).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_hb = records
        .iter()
        .position(|r| r["line"]["type"] == "tool_progress")
        .expect("a heartbeat");
    let hb = records[first_hb].clone();
    let call_start = hb["t_ms"].as_u64().unwrap() - 30_000;
    let shift = 1_801_200 - records[first_hb + 1]["t_ms"].as_u64().unwrap();
    let mut out: Vec<Value> = records[..first_hb].to_vec();
    for n in 0..60u64 {
        let mut h = hb.clone();
        h["t_ms"] = json!(call_start + 30_000 * (n + 1));
        h["line"]["tool_use_id"] = json!(format!("{MCP_CALL_ID}-heartbeat-{n}"));
        h["line"]["elapsed_time_seconds"] = json!(30 * (n + 1));
        out.push(h);
    }
    for r in &records[first_hb + 1..] {
        let mut r = r.clone();
        r["t_ms"] = json!(r["t_ms"].as_u64().unwrap() + shift);
        out.push(r);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hang_idle1800.capture.jsonl");
    let body: Vec<String> = out.iter().map(Value::to_string).collect();
    std::fs::write(&path, body.join("\n") + "\n").unwrap();
    let v = replay(&path, &[]);
    assert_eq!(v["outcome"], "success", "{v}");
    assert_eq!(v["kill"], Value::Null, "{v}");

    // The same recording with a `start` record saying Claude Code's idle limit was off: no
    // floor, and the plain 30-minute limit fires where it used to, 0.3 s before the abort.
    let start = json!({"t_ms": 0, "start": {"argv": ["claude"], "version": 1,
        "env": {"CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT": "0"}}});
    std::fs::write(&path, format!("{start}\n{}\n", body.join("\n"))).unwrap();
    let v = replay(&path, &[]);
    assert_eq!(v["kill"]["kind"], "no_progress", "{v}");
    let at = v["kill"]["at_ms"].as_u64().unwrap();
    assert!((1_800_800..1_801_200).contains(&at), "{at}");
    assert_eq!(v["kill"]["mcp_call"]["tool"], TOOL, "{v}");
}

fn audit(paths: &[&Path], flags: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("audit")
        .args(paths)
        .args(flags)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn audit_reports_quiet_spells_per_mcp_tool_and_applies_the_mcp_rule() {
    // Heartbeats are keep-alives: the spell of a hung call lasts until its tool result (the
    // "Connection closed" at 200.2 s of hang_term, after the call began at 0.8 s).
    let v = audit(&[&testdata()], &["--no-progress", "20s"]);
    let spells = &v["tool_spells"][TOOL];
    assert_eq!(spells["max_ms"], 199_365, "{spells}");
    assert_eq!(spells["p90_ms"], 45_018, "slow45's one 45 s call: {spells}");
    // A 20 s no-progress limit would have killed every hung or slow call; the MCP floor
    // (Claude Code's 1,800 s + 30 s) leaves them to Claude Code.
    assert_eq!(v["would_kill"], json!([]), "{v}");

    // A capture whose start record says Claude Code never gives up: no floor, killed.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(testdata().join("hang_term.capture.jsonl")).unwrap();
    let start = json!({"t_ms": 0, "start": {"argv": ["claude"], "version": 1,
        "env": {"CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT": "0"}}});
    let path = dir.path().join("hang_term_noidle.capture.jsonl");
    std::fs::write(&path, format!("{start}\n{text}")).unwrap();
    let v = audit(&[&path], &["--no-progress", "20s"]);
    let kills = v["would_kill"].as_array().expect("would_kill");
    assert_eq!(kills.len(), 1, "{v}");
    assert_eq!(kills[0]["kind"], "no_progress", "{v}");
}
