//! Evidence from the process tree, with real processes under the supervisor: a tool burning
//! CPU past `no_progress` is held until the busy cap; the same tool blocked in `sleep` or
//! `read` is killed at `no_progress` and its receipt names it asleep; a tool moving bytes on
//! a loopback socket is busy; a memory hog past the guard is killed `memory`, the receipt
//! naming it; processes that exit between two samples cost nothing; and every kill has a
//! receipt of what each stage did to each process.
#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use agent_sdk_watchdog::{Output, Report, Supervisor, SupervisorConfig};
use common::run_all;
use watchdog_core::config::PositiveDuration;
use watchdog_core::evidence::{Ended, ProcState, ReceiptCause, TreeEvidence};
use watchdog_core::{Kill, KillKind, Limits, SessionConfig};

const LIMIT: Duration = Duration::from_secs(60);

/// A scripted claude: `init`, a `Bash` tool call whose command is `tool` (run in a session of
/// its own, as Claude Code's Bash tool runs it, its stdin a pipe nobody writes to), then a
/// heartbeat a second, forever. One process: it starts nothing but the tool.
fn claude_running(tool: &str) -> tokio::process::Command {
    const SCRIPT: &str = r#"
import os, subprocess, sys, time
def say(line):
    sys.stdout.write(line + "\n"); sys.stdout.flush()
say('{"type":"system","subtype":"init","session_id":"s1"}')
time.sleep(float(os.environ.get("DELAY", "0")))
say('{"type":"assistant","message":{"content":[{"type":"tool_use","id":"tb","name":"Bash","input":{}}]},"session_id":"s1"}')
tool = subprocess.Popen(["bash", "-c", os.environ["TOOL"]], stdin=subprocess.PIPE, start_new_session=True)
while True:
    time.sleep(1)
    say('{"type":"tool_progress","tool_name":"Bash","parent_tool_use_id":"tb","session_id":"s1"}')
"#;
    let mut c = tokio::process::Command::new("python3");
    c.arg("-c").arg(SCRIPT).env("TOOL", tool);
    c
}

/// A tool call that begins after the sampler found none outstanding is sampled at the full
/// rate at once (the sampler looks every period, whatever it found the time before).
#[tokio::test]
async fn a_tool_call_that_begins_later_is_sampled_at_once() {
    let mut cmd = claude_running("while :; do :; done");
    // Past the sampler's first look (200 ms), with no tool call outstanding yet.
    cmd.env("DELAY", "1");
    let sup = Supervisor::spawn(cmd, config(limits())).unwrap();
    let (_, report) = run_all(sup, LIMIT).await;
    let kill = report.record.unwrap().kill.unwrap();
    assert!(evidence(&kill).capped, "{kill:?}");
}

/// `no_progress` 2 s, the busy cap 6 s, samples every 200 ms, quick graces.
fn config(limits: Limits) -> SupervisorConfig {
    SupervisorConfig {
        policy: Some(SessionConfig::default().with_limits(limits)),
        interrupt_grace: Duration::from_millis(300),
        term_grace: Duration::from_millis(300),
        drain_timeout: Duration::from_secs(2),
        tree_sample: PositiveDuration::new(Duration::from_millis(200)).ok(),
        ..SupervisorConfig::default()
    }
}

fn limits() -> Limits {
    Limits::default()
        .with_no_progress(Duration::from_secs(2))
        .unwrap()
        .with_busy_cap(Duration::from_secs(6))
        .unwrap()
}

async fn run(tool: &str, limits: Limits) -> (Kill, Report, Vec<Output>) {
    let sup = Supervisor::spawn(claude_running(tool), config(limits)).unwrap();
    let (c, report) = run_all(sup, LIMIT).await;
    let kill = report
        .record
        .as_ref()
        .and_then(|r| r.kill.clone())
        .expect("a kill");
    (kill, report, c.other)
}

fn evidence(k: &Kill) -> &TreeEvidence {
    k.tree.as_deref().expect("the kill says what the tree said")
}

/// A tool burning CPU for longer than `no_progress` is not killed until the busy cap.
#[tokio::test]
async fn a_busy_tool_is_held_until_the_busy_cap() {
    let (kill, report, outputs) = run("while :; do :; done", limits()).await;
    assert_eq!(kill.kind, KillKind::NoProgress);
    let e = evidence(&kill);
    assert!(e.busy && e.capped, "{e:?}");
    assert!(kill.since_progress >= Duration::from_secs(6), "{kill:?}");
    let named = e.named.as_ref().unwrap();
    assert!(named.cmd.contains("while :"), "{named:?}");
    assert_eq!(named.state, ProcState::Running);
    // Every sample went to the output too (a capture keeps them).
    let samples = outputs
        .iter()
        .filter(|o| matches!(o, Output::Tree { .. }))
        .count() as u64;
    let facts = report.record.as_ref().unwrap().tree.clone().unwrap();
    assert!(facts.samples >= 10 && facts.busy_samples >= 10, "{facts:?}");
    assert!(samples >= facts.samples, "{samples} outputs, {facts:?}");
}

/// The same tool blocked in `sleep` or in `read`: killed at `no_progress`, the receipt
/// naming it asleep, and saying what each stage did to it.
#[tokio::test]
async fn a_blocked_tool_is_killed_at_no_progress_and_named_asleep() {
    // `sleep` left the child's process group: the group's SIGTERM never reached it, SIGKILL
    // did. `cat` reads a pipe of the child's: the child gone, its input ends, and it exits
    // in the SIGTERM stage without being sent anything.
    let cases: [(&str, &str, &[&str], Ended); 2] = [
        ("exec sleep 1000", "sleep 1000", &["SIGKILL"], Ended::Kill),
        ("exec cat", "cat", &[], Ended::Term),
    ];
    for (tool, named, sent, ended) in cases {
        let (kill, report, _) = run(tool, limits()).await;
        assert_eq!(kill.kind, KillKind::NoProgress, "{tool}");
        let e = evidence(&kill);
        assert!(!e.busy && !e.capped && e.held.is_zero(), "{tool}: {e:?}");
        assert!(
            kill.since_progress < Duration::from_secs(3),
            "{tool}: {kill:?}"
        );
        let p = e.named.as_ref().unwrap();
        assert_eq!(
            (p.cmd.as_str(), p.state),
            (named, ProcState::Asleep),
            "{tool}"
        );
        let receipt = report.record.unwrap().receipt.expect("a receipt");
        assert_eq!(receipt.cause, ReceiptCause::Kill);
        let (_, action) = receipt
            .processes()
            .find(|(q, _)| q.pid == p.pid && q.start == p.start)
            .expect("the named process is in the receipt");
        let action = action.unwrap();
        assert_eq!(action.sent, sent, "{tool}");
        assert_eq!(action.ended, Some(ended), "{tool}");
        let (_, child) = receipt.processes().next().unwrap();
        assert_eq!(child.unwrap().sent, ["SIGTERM"], "{tool}");
    }
}

/// A tool moving bytes on a loopback socket, with next to no CPU, is busy.
#[tokio::test]
async fn a_tool_moving_bytes_on_a_socket_is_busy() {
    let tool = r#"exec python3 -c '
import socket, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
while True:
    c.sendall(b"x" * 8192); a.recv(65536); time.sleep(0.05)
'"#;
    let (kill, _, _) = run(tool, limits()).await;
    let e = evidence(&kill);
    assert!(e.capped, "held to the cap by the bytes: {kill:?}");
    let p = e.named.as_ref().unwrap();
    assert!(p.tcp >= 2 && p.net.unwrap_or(0) > 100_000, "{p:?}");
}

/// A memory hog past the guard is killed `memory`, the kill and the receipt naming it.
#[tokio::test]
async fn a_memory_hog_is_killed_memory() {
    let limits = limits()
        .with_no_progress(Duration::from_secs(60))
        .unwrap()
        .with_max_rss(Some(300 << 20))
        .unwrap();
    let hog = r#"exec python3 -c '
import time
a = [bytearray(8 << 20) for _ in range(64)]
time.sleep(1000)
'"#;
    let (kill, report, _) = run(hog, limits).await;
    assert_eq!(kill.kind, KillKind::Memory);
    let e = evidence(&kill);
    assert!(
        e.rss.unwrap() > 300 << 20 && e.over_rss >= Some(Duration::from_secs(5)),
        "{e:?}"
    );
    let hog = e.named.as_ref().unwrap();
    assert!(
        hog.cmd.contains("bytearray") && hog.rss > 400 << 20,
        "{hog:?}"
    );
    let receipt = report.record.unwrap().receipt.unwrap();
    let largest = receipt.tree.largest().unwrap();
    assert_eq!((largest.pid, largest.start), (hog.pid, hog.start));
}

/// A tool whose work is done by short-lived processes, each gone before the next sample:
/// the samples never fail and the work still counts (the CPU of the children the tool's
/// shell waited for is its own).
#[tokio::test]
async fn processes_that_exit_between_samples_cost_nothing() {
    let tool = r#"while :; do python3 -c 'import time
t = time.time()
while time.time() - t < 0.05: pass'; done"#;
    let (kill, report, _) = run(tool, limits()).await;
    assert!(evidence(&kill).capped, "{kill:?}");
    let facts = report.record.unwrap().tree.unwrap();
    assert_eq!(facts.failed, 0, "{facts:?}");
}

/// Without sampling the supervisor reads nothing, and the rules are the stream's alone.
#[tokio::test]
async fn without_sampling_the_stream_alone_decides() {
    let cfg = SupervisorConfig {
        tree_sample: None,
        ..config(limits())
    };
    let sup = Supervisor::spawn(claude_running("while :; do :; done"), cfg).unwrap();
    let (c, report) = run_all(sup, LIMIT).await;
    let record = report.record.unwrap();
    let kill = record.kill.unwrap();
    assert_eq!(kill.kind, KillKind::NoProgress);
    assert!(kill.tree.is_none() && record.tree.is_none() && record.receipt.is_none());
    assert!(!c.other.iter().any(|o| matches!(o, Output::Tree { .. })));
}
