//! The Windows binaries under wine, as a Windows user gets them: `agent-watchdog.exe` and
//! `claude-watchdog.exe` from the npm package `@agent-sdk-watchdog/win32-x64`, installed with
//! `npm install --os=win32 --cpu=x64` next to the TypeScript Agent SDK (whose win32-x64
//! package brings the real Windows `claude.exe`), against the mock Messages API served here on
//! loopback:
//!
//! - a scripted tree (a child, a grandchild, an orphan) is killed on idle, nothing left;
//! - the real `claude.exe` with an MCP server that has a child of its own: a healthy run exits
//!   0 with its `result`; a ping stall is killed `no_progress`, and claude, its MCP server and
//!   that server's child are all gone;
//! - `claude-watchdog.exe` as `pathToClaudeCodeExecutable` for the SDK's `query()` under
//!   Windows' own `node.exe`: a healthy query ends in success, a stalled one in our result
//!   within the thresholds, nothing left.
//!
//! Whether a process is left is read on the Linux side (`ps`): every process wine runs is a
//! Linux process showing its Windows command line, and each test gives its processes a marker
//! no other process has.
//!
//! Run by `scripts/test-windows` only (`test = false`), with:
//! - `WATCHDOG_WINE_RUN`: scripts/wine-run (the project's wine harness);
//! - `WATCHDOG_WIN_PROJECT`: the npm project installed as a win32-x64 user;
//! - `WATCHDOG_WIN_NODE`: Windows' node.exe.
//!
//! A missing prerequisite fails with what is missing, never a skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mock_api::harness::ClaudeRun;
use mock_api::{BlockingMockServer, Scenario, ScenarioOptions, FINAL_TEXT};
use serde_json::Value;

/// One Windows session at a time: wine and claude.exe are heavy on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn required(var: &str) -> PathBuf {
    let p = std::env::var_os(var)
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| panic!("{var} is not set: run scripts/test-windows"));
    let p = PathBuf::from(p);
    assert!(p.exists(), "{var}={} does not exist", p.display());
    p
}

fn wine_run() -> PathBuf {
    required("WATCHDOG_WINE_RUN")
}

fn project() -> PathBuf {
    required("WATCHDOG_WIN_PROJECT")
}

/// The installed win32-x64 package's executable `name` (`agent-watchdog.exe`, …).
fn exe(name: &str) -> PathBuf {
    let p = project()
        .join("node_modules/@agent-sdk-watchdog/win32-x64/bin")
        .join(name);
    assert!(p.is_file(), "{} is not installed", p.display());
    p
}

/// The SDK's own Windows claude.exe (its win32-x64 platform package).
fn claude_exe() -> PathBuf {
    let p = project().join("node_modules/@anthropic-ai/claude-agent-sdk-win32-x64/claude.exe");
    assert!(p.is_file(), "{} is not installed", p.display());
    p
}

/// A Linux path as Windows programs under wine name it (drive Z: is the Linux root).
fn win(p: &Path) -> String {
    format!("Z:{}", p.display()).replace('/', "\\")
}

/// Run a Windows program under the harness; `None` when `limit` passed (it is killed). Its
/// stdout and stderr go to files, read back once it ended: Windows' node.exe under wine
/// cannot write to a Linux pipe.
fn run_wine(args: &[String], env: &[(String, String)], limit: Duration) -> Option<Output> {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut cmd = Command::new(wine_run());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("scripts/wine-run");
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for wine") {
            break status;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Some(Output {
        status,
        stdout: std::fs::read(&out).unwrap_or_default(),
        stderr: std::fs::read(&err).unwrap_or_default(),
    })
}

/// The Linux processes whose command line holds `marker`.
fn with_marker(marker: &str) -> Vec<String> {
    let out = Command::new("ps")
        .args(["-eo", "pid=,args="])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(marker) && !l.contains("ps -eo"))
        .map(str::to_owned)
        .collect()
}

/// Whether every process with `marker` is gone within `limit` (wine ends a killed process's
/// Linux side a moment after the Windows side).
fn all_gone(marker: &str, limit: Duration) -> Result<(), Vec<String>> {
    let t0 = Instant::now();
    loop {
        let left = with_marker(marker);
        if left.is_empty() {
            return Ok(());
        }
        if t0.elapsed() > limit {
            return Err(left);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn summary(path: &Path) -> Value {
    let s = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no summary at {}: {e}", path.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("summary {s}: {e}"))
}

/// The environment claude.exe gets: the mock's address and key, the privacy variables, and a
/// fresh config folder of its own.
fn claude_env(server: &BlockingMockServer, home: &Path) -> Vec<(String, String)> {
    let run = ClaudeRun::new("claude", server.base_url(), "").expect("session directories");
    let mut env: Vec<(String, String)> = run
        .command()
        .env
        .iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .filter(|(k, _)| {
            k.starts_with("ANTHROPIC_")
                || k.starts_with("DISABLE_")
                || k.starts_with("CLAUDE_CODE_")
                || k == "IS_SANDBOX"
        })
        .collect();
    std::fs::create_dir_all(home.join("config")).unwrap();
    env.push(("CLAUDE_CONFIG_DIR".into(), win(&home.join("config"))));
    env.push(("MCP_TIMEOUT".into(), "60000".into()));
    env
}

/// An MCP config naming `mcp_server_with_child.mjs` under Windows' node.exe, its child's
/// `ping` count `marker`.
fn mcp_config(dir: &Path, marker: &str) -> PathBuf {
    let node = required("WATCHDOG_WIN_NODE");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/windows/mcp_server_with_child.mjs");
    let cfg = serde_json::json!({
        "mcpServers": { "probe": {
            "command": win(&node),
            "args": [win(&script)],
            "env": { "CHILD_MARKER": marker, "NODE_SKIP_PLATFORM_CHECK": "1" },
        } }
    });
    let path = dir.join("mcp.json");
    std::fs::write(&path, cfg.to_string()).unwrap();
    path
}

/// A child, a grandchild (`cmd` → `ping`) and an orphan (a `ping` whose parent `cmd` exits at
/// once), quiet after one line: `run --idle 3s` kills the whole tree, nothing is left.
#[test]
fn a_child_grandchild_and_orphan_are_killed_on_idle_with_nothing_left() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let sum = dir.path().join("s.json");
    let line = "echo up& \
                cmd.exe /d /c start /b ping.exe -n 613 127.0.0.1 ^>nul& \
                cmd.exe /d /c ping.exe -n 614 127.0.0.1 ^>nul";
    let args: Vec<String> = vec![
        win(&exe("agent-watchdog.exe")),
        "run".into(),
        "--idle".into(),
        "3s".into(),
        "--grace".into(),
        "1s".into(),
        "--summary".into(),
        win(&sum),
        "--".into(),
        "cmd.exe".into(),
        "/d".into(),
        "/c".into(),
        line.into(),
    ];
    let t0 = Instant::now();
    let out = run_wine(&args, &[], Duration::from_secs(120)).expect("the run ended");
    let took = t0.elapsed();
    let s = summary(&sum);
    assert_eq!(out.status.code(), Some(124), "{s}\n{}", text(&out.stderr));
    assert_eq!(s["kill"]["kind"], "idle", "{s}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    // The receipt: the child, its grandchild and the orphan, each ended by the job's kill.
    let procs = s["kill"]["tree"]["processes"]
        .as_array()
        .unwrap_or_else(|| panic!("no receipt: {s}"));
    let pings: Vec<&Value> = procs
        .iter()
        .filter(|p| {
            p["command"]
                .as_str()
                .is_some_and(|c| c.to_lowercase().contains("ping"))
        })
        .collect();
    assert_eq!(
        pings.len(),
        2,
        "the grandchild's and the orphan's ping: {s}"
    );
    for p in procs {
        assert_eq!(p["ended"], "kill", "{p}");
        assert!(p["sent"].to_string().contains("TerminateJobObject"), "{p}");
    }
    for marker in ["-n 613 127.0.0.1", "-n 614 127.0.0.1"] {
        if let Err(left) = all_gone(marker, Duration::from_secs(10)) {
            panic!("left running after the kill: {left:?}\n{s}");
        }
    }
}

/// The real claude.exe with an MCP server that starts a child: `run` passes its stream through
/// and exits 0 with its `result`; the server and its child are stopped with the session.
#[test]
fn claude_exe_with_an_mcp_server_runs_healthy_to_its_result() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
    let marker = "-n 711 127.0.0.1";
    let cfg = mcp_config(dir.path(), "711");
    let sum = dir.path().join("s.json");
    let args: Vec<String> = vec![
        win(&exe("agent-watchdog.exe")),
        "run".into(),
        "--startup".into(),
        "120s".into(),
        "--summary".into(),
        win(&sum),
        "--".into(),
        win(&claude_exe()),
        "-p".into(),
        "Say hello.".into(),
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
        "--include-partial-messages".into(),
        "--mcp-config".into(),
        win(&cfg),
    ];
    let env = claude_env(&server, dir.path());
    let out = run_wine(&args, &env, Duration::from_secs(300)).expect("the run ended");
    let stdout = text(&out.stdout);
    let s = summary(&sum);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{s}\n{}\n{stdout}",
        text(&out.stderr)
    );
    let result = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .unwrap_or_else(|| panic!("no result line:\n{stdout}"));
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["result"], FINAL_TEXT, "{result}");
    let init = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "system" && v["subtype"] == "init")
        .expect("a system/init line");
    assert!(
        init["mcp_servers"].to_string().contains("probe"),
        "the MCP server was started: {init}"
    );
    assert!(s["kill"].is_null(), "{s}");
    if let Err(left) = all_gone(marker, Duration::from_secs(15)) {
        panic!("the MCP server's child outlived the session: {left:?}");
    }
}

/// The mock sends only pings: claude.exe forwards one about every 10 s, alive but not moving.
/// `--no-progress 20s` kills it; claude, its MCP server and the server's child are all gone.
#[test]
fn a_ping_stall_is_killed_no_progress_with_claude_its_mcp_server_and_its_child_gone() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let scenario = Scenario::named_with(
        "ping_only_stall",
        &ScenarioOptions {
            ping_every: Duration::from_secs(2),
            ..ScenarioOptions::default()
        },
    )
    .unwrap();
    let server = BlockingMockServer::start(scenario).unwrap();
    let cfg = mcp_config(dir.path(), "733");
    let sum = dir.path().join("s.json");
    // claude.exe's own copy, so that this run's processes have a name no other process has.
    let claude = dir.path().join("claude-stall.exe");
    std::fs::copy(claude_exe(), &claude).unwrap();
    let args: Vec<String> = vec![
        win(&exe("agent-watchdog.exe")),
        "run".into(),
        "--startup".into(),
        "120s".into(),
        "--idle".into(),
        "90s".into(),
        "--no-progress".into(),
        "20s".into(),
        "--grace".into(),
        "2s".into(),
        "--summary".into(),
        win(&sum),
        "--".into(),
        win(&claude),
        "-p".into(),
        "Say hello.".into(),
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
        "--include-partial-messages".into(),
        "--mcp-config".into(),
        win(&cfg),
    ];
    let env = claude_env(&server, dir.path());
    let out = run_wine(&args, &env, Duration::from_secs(300)).expect("the run ended");
    let s = summary(&sum);
    assert_eq!(out.status.code(), Some(124), "{s}\n{}", text(&out.stderr));
    assert_eq!(s["kill"]["kind"], "no_progress", "{s}");
    assert!(s["lines"]["ping"].as_u64().unwrap_or(0) >= 1, "{s}");
    for marker in [
        "claude-stall.exe",
        "mcp_server_with_child.mjs",
        "-n 733 127.0.0.1",
    ] {
        if let Err(left) = all_gone(marker, Duration::from_secs(15)) {
            panic!("{marker}: left running after the kill: {left:?}\n{s}");
        }
    }
}

/// The SDK's query() under Windows' node.exe, through watchdogOptions(): the lines of
/// `tests/windows/query.mjs`, and how long the run took.
fn query(scenario: Scenario, policy: &[(&str, &str)]) -> (Vec<Value>, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let server = BlockingMockServer::start(scenario).unwrap();
    let out_file = dir.path().join("query.jsonl");
    let mut env = claude_env(&server, dir.path());
    env.push(("OUT_FILE".into(), win(&out_file)));
    env.push(("PROJECT_DIR".into(), win(&project())));
    env.push(("WORK_DIR".into(), win(dir.path())));
    env.push(("NODE_SKIP_PLATFORM_CHECK".into(), "1".into()));
    for (k, v) in policy {
        env.push(((*k).into(), (*v).into()));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/windows/query.mjs");
    let args = vec![win(&required("WATCHDOG_WIN_NODE")), win(&script)];
    let t0 = Instant::now();
    let out = run_wine(&args, &env, Duration::from_secs(300)).expect("the query ended");
    let took = t0.elapsed();
    let lines: Vec<Value> = std::fs::read_to_string(&out_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let stderr = std::fs::read_to_string(dir.path().join("query.jsonl.stderr")).unwrap_or_default();
    assert!(
        lines.iter().any(|l| l["event"] == "done"),
        "the query did not end (exit {:?}): {lines:?}\n{}\n{stderr}",
        out.status.code(),
        text(&out.stderr)
    );
    (lines, took)
}

#[test]
fn the_sdk_under_windows_node_runs_a_healthy_query_through_claude_watchdog_exe() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (lines, _) = query(Scenario::named("healthy").unwrap(), &[]);
    let options = lines.iter().find(|l| l["event"] == "options").unwrap();
    let path = options["path"].as_str().unwrap().to_lowercase();
    assert!(
        path.ends_with(r"@agent-sdk-watchdog\win32-x64\bin\claude-watchdog.exe"),
        "{options}"
    );
    let claude = options["claude"].as_str().unwrap().to_lowercase();
    assert!(
        claude.ends_with(r"claude-agent-sdk-win32-x64\claude.exe"),
        "the SDK's own claude.exe: {options}"
    );
    let result = lines
        .iter()
        .find(|l| l["type"] == "result")
        .unwrap_or_else(|| panic!("no result: {lines:?}"));
    assert_eq!(result["subtype"], "success", "{lines:?}");
    assert_eq!(result["result"], FINAL_TEXT, "{lines:?}");
    let done = lines.iter().find(|l| l["event"] == "done").unwrap();
    assert!(done["error"].is_null() && done["kill"].is_null(), "{done}");
    for marker in ["claude-agent-sdk-win32-x64", "claude-watchdog.exe"] {
        if let Err(left) = all_gone(marker, Duration::from_secs(15)) {
            panic!("{marker}: left running after the query: {left:?}");
        }
    }
}

#[test]
fn a_stalled_query_ends_in_our_result_within_the_thresholds_with_nothing_left() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let scenario = Scenario::named_with(
        "ping_only_stall",
        &ScenarioOptions {
            ping_every: Duration::from_secs(2),
            ..ScenarioOptions::default()
        },
    )
    .unwrap();
    let no_progress = Duration::from_secs(20);
    let (lines, took) = query(
        scenario,
        &[
            ("AGENT_WATCHDOG_NO_PROGRESS", "20s"),
            ("AGENT_WATCHDOG_IDLE", "90s"),
            ("AGENT_WATCHDOG_STARTUP", "120s"),
        ],
    );
    let done = lines.iter().find(|l| l["event"] == "done").unwrap();
    assert_eq!(done["kill"]["kind"], "no_progress", "{lines:?}");
    // The last message is our result (claude's own, on its closed stdin, may come before).
    let result = lines
        .iter()
        .rfind(|l| l["event"] == "message")
        .unwrap_or_else(|| panic!("no message: {lines:?}"));
    assert_eq!(result["type"], "result", "{lines:?}");
    assert_eq!(result["subtype"], "error_during_execution", "{result}");
    assert_eq!(
        result["terminal_reason"], "watchdog_no_progress",
        "{result}"
    );
    assert!(
        result["result"]
            .as_str()
            .is_some_and(|t| t.contains("(no_progress)")),
        "{result}"
    );
    assert!(
        done["error"]
            .as_str()
            .is_some_and(|e| e.contains("agent-watchdog killed")),
        "the SDK raises after the error result: {done}"
    );
    // Within the threshold: the kill comes `no_progress` after the last progress (the
    // session's start, under wine up to a minute), the result a grace later.
    let t = Duration::from_millis(result["t_ms"].as_u64().unwrap());
    assert!(t >= no_progress, "{t:?}");
    assert!(
        t < no_progress + Duration::from_secs(90),
        "{t:?} (whole query {took:?})"
    );
    for marker in ["claude-agent-sdk-win32-x64", "claude-watchdog.exe"] {
        if let Err(left) = all_gone(marker, Duration::from_secs(15)) {
            panic!("{marker}: left running after the query: {left:?}");
        }
    }
}
