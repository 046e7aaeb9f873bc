//! Bench 5: memory of a supervised run. `agent-watchdog run` supervises the real `claude` CLI
//! on the mock Messages API's `long_tool` scenario (a Bash tool that runs 35 s, with
//! `tool_progress` heartbeats); `/proc/<pid>/status` of the watchdog and of `claude` is sampled
//! every 50 ms. Reports the peak RSS (`VmHWM`) of both: the watchdog's is the figure, the CLI's
//! is the scale it sits next to.
//!
//! Run: `cargo build --release --bin agent-watchdog --bin claude-watchdog &&
//! cargo bench -p watchdog-benches --bench supervised_rss` (needs the real CLI: `scripts/install-claude`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mock_api::harness::{claude_version, find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, ScenarioOptions};
use watchdog_benches::{agent_watchdog_bin, rss_kb};

/// Direct children of `pid` (from `/proc/<pid>/task/*/children`).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
            }
        }
    }
    out
}

/// The watchdog's own CPU in the summary: to the microsecond (`watchdog_us`, the process
/// CPU-time clock) when the binary reports it, else its 10 ms ticks.
fn own_us(s: &serde_json::Value) -> u64 {
    s["cpu"]["watchdog_us"]
        .as_u64()
        .unwrap_or_else(|| s["cpu"]["watchdog_ms"].as_u64().expect("cpu.watchdog_ms") * 1000)
}

/// One supervised real session on `scenario`: (watchdog CPU µs, claude CPU ms, wall s, exit).
fn cpu_of(
    claude: &std::path::Path,
    watchdog: &std::path::Path,
    scenario: Scenario,
) -> (u64, u64, f64, String) {
    let server = BlockingMockServer::start(scenario).expect("mock server");
    let run = ClaudeRun::new(claude, server.base_url(), "Say hello.").expect("session dirs");
    let cc = run.command();
    let summary = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("bench-supervised-cpu-summary.json");
    let t = Instant::now();
    let status = Command::new(watchdog)
        .arg("run")
        .arg("--summary")
        .arg(&summary)
        .arg("--")
        .arg(&cc.program)
        .args(&cc.args)
        .env_clear()
        .envs(cc.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&cc.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run agent-watchdog");
    let wall = t.elapsed().as_secs_f64();
    let s: serde_json::Value = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .expect("the run's summary");
    (
        own_us(&s),
        s["cpu"]["child_ms"].as_u64().expect("cpu.child_ms"),
        wall,
        format!("{} ({status})", s["outcome"].as_str().unwrap_or("?")),
    )
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn main() {
    let claude = find_claude().unwrap_or_else(|e| {
        panic!(
            "bench supervised_rss needs the real Claude Code CLI: {e} (run scripts/install-claude)"
        )
    });
    let version = claude_version(&claude).unwrap_or_else(|e| panic!("{e}"));
    let watchdog = agent_watchdog_bin();
    let scenario = Scenario::named("long_tool").expect("the long_tool scenario");
    let server = BlockingMockServer::start(scenario).expect("mock server");
    // Keep the run (and so its temporary HOME and working directory) alive until the end.
    let run =
        ClaudeRun::new(&claude, server.base_url(), "Run the long command.").expect("session dirs");
    let cc = run.command();
    println!(
        "bench supervised_rss: agent-watchdog run -- claude {version} on the mock's long_tool scenario"
    );
    let summary = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("bench-supervised-rss-summary.json");
    let t = Instant::now();
    let mut child = Command::new(&watchdog)
        .arg("run")
        .arg("--summary")
        .arg(&summary)
        .arg("--")
        .arg(&cc.program)
        .args(&cc.args)
        .env_clear()
        .envs(cc.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&cc.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agent-watchdog");
    let pid = child.id();
    let (mut wd_hwm, mut cli_hwm, mut samples) = (0u64, 0u64, 0u32);
    let mut cli_pid = None;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if let Some((hwm, _)) = rss_kb(pid) {
            wd_hwm = wd_hwm.max(hwm);
            samples += 1;
        }
        // The CLI is the watchdog's direct child (`node` running claude's cli.js).
        if cli_pid.is_none() {
            cli_pid = children(pid).first().copied();
        }
        if let Some((hwm, _)) = cli_pid.and_then(rss_kb) {
            cli_hwm = cli_hwm.max(hwm);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let wall = t.elapsed();
    drop(run);
    let requests = server.requests().len();
    println!(
        "  run: {:.1} s, exit {status}, {requests} API requests, {samples} samples",
        wall.as_secs_f64()
    );
    assert!(
        wall > Duration::from_secs(30),
        "the long_tool run ended after {wall:?}: not the long session this bench is about"
    );
    println!(
        "  agent-watchdog peak RSS (VmHWM): {:>7.1} MB (target ≤ 10 MB): {}",
        mb(wd_hwm),
        if mb(wd_hwm) <= 10.0 { "met" } else { "MISSED" }
    );
    println!(
        "  claude CLI peak RSS (VmHWM)    : {:>7.1} MB ({:.1}× the watchdog)",
        mb(cli_hwm),
        cli_hwm as f64 / wd_hwm.max(1) as f64
    );
    // Issue 17 target 1: what supervising costs next to claude itself (the summary's `cpu`,
    // from /proc/self/stat of the watchdog: its own time, and the children it waited for).
    let s: serde_json::Value = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .expect("the run's summary");
    let (own, kid) = (
        own_us(&s),
        s["cpu"]["child_ms"].as_u64().expect("cpu.child_ms"),
    );
    let pct = |own_us: u64, kid_ms: u64| own_us as f64 / 10.0 / kid_ms.max(1) as f64;
    println!(
        "  CPU: agent-watchdog {:.1} ms, claude (and its tools) {kid} ms (10 ms ticks): {:.2} % of claude's (target ≤ 1 %)",
        own as f64 / 1000.0,
        pct(own, kid)
    );
    // The demo's short sessions and a 20 s ping stall (partial messages on): CPU only.
    let stall = ScenarioOptions {
        stall: Some(Duration::from_secs(20)),
        ..ScenarioOptions::default()
    };
    let (mut own_all, mut kid_all) = (own, kid);
    for (name, opts) in [
        ("healthy", ScenarioOptions::default()),
        ("tool_then_answer", ScenarioOptions::default()),
        ("ping_only_stall", stall),
    ] {
        let scenario = Scenario::named_with(name, &opts).expect("a named scenario");
        let (own, kid, wall, how) = cpu_of(&claude, &watchdog, scenario);
        own_all += own;
        kid_all += kid;
        println!(
            "  CPU, {name:<17} {wall:>5.1} s, {how}: agent-watchdog {:.1} ms, claude {kid} ms: {:.2} %",
            own as f64 / 1000.0,
            pct(own, kid)
        );
    }
    println!(
        "  CPU, all four sessions: agent-watchdog {:.1} ms, claude {kid_all} ms: {:.2} % (target ≤ 1 %)",
        own_all as f64 / 1000.0,
        pct(own_all, kid_all)
    );
}
