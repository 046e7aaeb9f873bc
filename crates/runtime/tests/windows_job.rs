//! The Windows backend on real processes (run under wine here: scripts/test-windows): a tree
//! of a child, a grandchild and an orphan is stopped whole on idle, nothing left, the kill
//! confirmed by the job; a child that ends on its stdin's close stops at the graceful rung;
//! what a child leaves behind when it exits is stopped; the evidence reads the job's
//! processes; a missing program fails the spawn naming it.
#![cfg(windows)]

use std::os::windows::process::CommandExt;
use std::time::Duration;

use agent_sdk_watchdog::{Output, Report, Stage, Supervisor, SupervisorConfig};
use watchdog_core::config::PositiveDuration;
use watchdog_core::evidence::Ended;
use watchdog_core::{KillKind, Limits, SessionConfig};

/// Wine is slow to start a process (a second or more on a loaded machine).
const LIMIT: Duration = Duration::from_secs(120);

/// `cmd.exe /d /c <line>`, the line passed as cmd.exe reads it.
fn cmd(line: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new("cmd.exe");
    c.as_std_mut().raw_arg("/d /c").raw_arg(line);
    c
}

/// A child that prints one line, then waits in a grandchild (`cmd` → `ping`), after starting
/// an orphan (a `ping` whose parent, a `cmd`, exits at once). Every sleeper is `ping`: one
/// echo a second, its output to `nul`.
const TREE: &str = "echo up& cmd.exe /d /c start /b ping.exe -n 600 127.0.0.1 ^>nul& cmd.exe /d /c ping.exe -n 600 127.0.0.1 ^>nul";

fn config(idle: Duration) -> SupervisorConfig {
    let limits = Limits::default().with_idle(idle).unwrap();
    SupervisorConfig {
        policy: Some(SessionConfig::default().with_limits(limits)),
        interrupt_grace: Duration::from_millis(500),
        term_grace: Duration::from_millis(500),
        drain_timeout: Duration::from_secs(2),
        tree_sample: PositiveDuration::new(Duration::from_millis(500)).ok(),
        pipe_stdin: false,
        ..SupervisorConfig::default()
    }
}

async fn run_all(mut sup: Supervisor) -> (Vec<String>, Vec<Output>, Report) {
    let collect = async {
        let (mut lines, mut other) = (Vec::new(), Vec::new());
        while let Some(o) = sup.next_output().await {
            match o {
                Output::Stdout(l) => lines.push(String::from_utf8_lossy(&l.bytes).into_owned()),
                o => other.push(o),
            }
        }
        (lines, other, sup.wait().await.expect("a report"))
    };
    tokio::time::timeout(LIMIT, collect)
        .await
        .expect("the supervised run did not end in time")
}

/// Whether the process `pid` created at `start` (a FILETIME, as the receipt has it) still
/// runs: asked of Windows directly, not of the backend under test (wine's `tasklist` lists
/// nothing).
#[allow(unsafe_code)]
fn running(pid: u32, start: u64) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, WAIT_TIMEOUT};
    use windows_sys::Win32::System::Threading::{
        GetProcessTimes, OpenProcess, WaitForSingleObject, PROCESS_QUERY_LIMITED_INFORMATION,
        PROCESS_SYNCHRONIZE,
    };
    let access = PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE;
    // SAFETY: no pointer; the handle returned is checked, used and closed here.
    let h = unsafe { OpenProcess(access, 0, pid) };
    if h.is_null() {
        return false;
    }
    let z = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut c, mut e, mut k, mut u) = (z, z, z, z);
    // SAFETY: a process handle opened above with query rights; four locals the call fills;
    // a zero timeout never blocks; the handle is closed once.
    unsafe {
        let same = GetProcessTimes(h, &mut c, &mut e, &mut k, &mut u) != 0
            && ((u64::from(c.dwHighDateTime) << 32) | u64::from(c.dwLowDateTime)) == start;
        let live = WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
        CloseHandle(h);
        same && live
    }
}

/// This test process, as [`running`] names it.
fn me() -> (u32, u64) {
    #[allow(unsafe_code)]
    // SAFETY: the pseudo-handle of this process needs no closing; four locals the call fills.
    let created = unsafe {
        use windows_sys::Win32::Foundation::FILETIME;
        use windows_sys::Win32::System::Threading::{GetCurrentProcess, GetProcessTimes};
        let z = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut c, mut e, mut k, mut u) = (z, z, z, z);
        GetProcessTimes(GetCurrentProcess(), &mut c, &mut e, &mut k, &mut u);
        (u64::from(c.dwHighDateTime) << 32) | u64::from(c.dwLowDateTime)
    };
    (std::process::id(), created)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_grandchild_and_orphan_are_stopped_whole_on_idle() {
    let sup = Supervisor::spawn(cmd(TREE), config(Duration::from_secs(4))).unwrap();
    assert!(sup.unavailable().is_empty(), "{:?}", sup.unavailable());
    let (lines, other, report) = run_all(sup).await;
    assert_eq!(lines.first().map(|l| l.trim_end()), Some("up"), "{lines:?}");
    let record = report.record.as_ref().expect("a record");
    let kill = record.kill.as_ref().expect("killed");
    assert_eq!(kill.kind, KillKind::Idle);
    let k = report.kill.as_ref().unwrap();
    // No console under a test runner: the graceful rung is the closed stdin alone, then the
    // job is terminated; the kill is confirmed by the job's accounting.
    assert_eq!(k.stage, Stage::Kill, "{k:?}");
    assert_eq!(k.survivors, 0);
    assert!(
        k.descendants_killed >= 3,
        "cmd, ping and the orphan ping: {k:?}"
    );
    assert!(report.tree_known);
    // The receipt names each process and how it ended: every one in the kill.
    let receipt = record.receipt.as_ref().expect("a receipt");
    let pids: Vec<(u32, u64)> = receipt
        .tree
        .procs
        .iter()
        .map(|p| (p.pid, p.start))
        .collect();
    let pings = receipt
        .tree
        .procs
        .iter()
        .filter(|p| p.cmd.to_lowercase().contains("ping"))
        .count();
    assert_eq!(
        pings, 2,
        "the grandchild's and the orphan's ping: {receipt:?}"
    );
    for (p, a) in receipt.processes() {
        let a = a.unwrap();
        assert_eq!(a.ended, Some(Ended::Kill), "{p:?}: {a:?}");
        assert!(
            a.sent.iter().any(|s| s == "TerminateJobObject"),
            "{p:?}: {a:?}"
        );
    }
    assert!(pids.iter().any(|&(pid, _)| pid == report.pid));
    let (pid, start) = me();
    assert!(running(pid, start), "the probe sees a live process");
    for (pid, start) in pids {
        assert!(!running(pid, start), "{pid} is still running");
    }
    // The tree was sampled while it ran: the job's processes, with their CPU and memory.
    let sampled = other.iter().any(|o| match o {
        Output::Tree { sample, .. } => {
            sample.fault.is_none() && sample.procs.len() >= 3 && sample.total_rss() > 0
        }
        _ => false,
    });
    assert!(sampled, "no sample of the job's processes: {other:?}");
}

/// A child that ends when its stdin closes stops at the graceful rung: the job is never
/// terminated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graceful_rung_closes_stdin() {
    let cfg = SupervisorConfig {
        pipe_stdin: true,
        term_grace: Duration::from_secs(20),
        ..config(Duration::from_secs(3))
    };
    // `more` copies its stdin to stdout until the end of input.
    let sup = Supervisor::spawn(cmd("echo up& more"), cfg).unwrap();
    let (_, _, report) = run_all(sup).await;
    let k = report.kill.as_ref().expect("killed on idle");
    assert_eq!(k.stage, Stage::Term, "ended on its closed stdin: {k:?}");
    assert_eq!(report.status.and_then(|s| s.code()), Some(0));
}

/// What the child leaves running when it exits by itself is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_of_a_child_that_exited_are_stopped() {
    let line = "echo up& cmd.exe /d /c start /b ping.exe -n 600 127.0.0.1 ^>nul& ping.exe -n 2 127.0.0.1 >nul";
    let sup = Supervisor::spawn(cmd(line), config(Duration::from_secs(60))).unwrap();
    let (_, _, report) = run_all(sup).await;
    assert!(report.kill.is_none());
    assert_eq!(report.status.and_then(|s| s.code()), Some(0));
    assert!(report.leftovers_killed >= 1, "{report:?}");
    let receipt = report.record.unwrap().receipt.expect("a receipt");
    for (p, a) in receipt.processes() {
        assert_ne!(a.unwrap().ended, Some(Ended::Survived), "{p:?}");
    }
}

#[tokio::test]
async fn a_missing_program_fails_the_spawn_naming_it() {
    let cfg = SupervisorConfig {
        policy: None,
        ..SupervisorConfig::default()
    };
    let err = Supervisor::spawn(
        tokio::process::Command::new(r"C:\nonexistent\claude-xyz.exe"),
        cfg,
    )
    .unwrap_err();
    assert!(err.to_string().contains("claude-xyz"), "{err}");
}
