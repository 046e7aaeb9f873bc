//! Real-process tests of the end of the output: after the child is gone, a caller slow to take
//! what it printed loses none of it, and a process outside the tree that holds the pipe open
//! (silent, or writing without end) cannot keep the run from ending.
#![cfg(target_os = "linux")]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use agent_sdk_watchdog::{Output, Supervisor, SupervisorConfig};
use common::{quick, run_all, sh};

const LIMIT: Duration = Duration::from_secs(60);

fn short_drain() -> SupervisorConfig {
    SupervisorConfig {
        drain_timeout: Duration::from_millis(50),
        ..quick()
    }
}

/// The child prints 6 MB in 6,000 lines (more than the output budget and a pipe hold) and a
/// last line, then exits while most of it still waits for the caller, who takes it slowly (a
/// pause of twice the pipes' grace every 500 lines). Every line still arrives, the last one
/// included, and no pipe is said to be left open.
#[tokio::test]
async fn a_caller_slow_to_take_a_large_output_loses_none_of_it() {
    let n = 6000;
    let script = format!("yes \"$(printf '%0999d' 0)\" | head -n {n}; echo last");
    let mut sup = Supervisor::spawn(sh(&script), short_drain()).unwrap();
    let mut lines = Vec::new();
    while let Some(o) = sup.next_output().await {
        if let Output::Stdout(l) = o {
            lines.push(l.bytes);
            if lines.len() % 500 == 0 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let report = tokio::time::timeout(LIMIT, sup.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lines.len(), n + 1, "every line arrived");
    assert!(lines[..n].iter().all(|l| l.len() == 999));
    assert_eq!(lines[n], b"last");
    assert!(!report.pipe_left_open, "{report:?}");
    assert_eq!(report.status.unwrap().code(), Some(0));
}

/// A process outside the child's tree opens the child's stdout and keeps it: silent, or
/// writing without end. The child exits; the run still ends, says a pipe was left open, and
/// passes on what was written before (the child's last line and the outsider's first).
#[tokio::test]
async fn an_outsider_holding_the_pipe_open_cannot_keep_the_run_alive() {
    for (name, outsider) in [
        ("silent", "echo outsider >&3; exec sleep 30"),
        ("writing without end", "echo outsider >&3; exec yes >&3"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let opened = dir.path().join("opened");
        // The child waits until the outsider has its stdout, then exits.
        let script = format!(
            "echo ready; while [ ! -e '{o}' ]; do sleep 0.01; done; echo child-last",
            o = opened.display()
        );
        let mut sup = Supervisor::spawn(sh(&script), short_drain()).unwrap();
        let Some(Output::Stdout(ready)) = sup.next_output().await else {
            panic!("{name}: no first line");
        };
        assert_eq!(ready.bytes, b"ready");
        // Not the child's descendant: spawned here, it reaches the pipe through /proc.
        let mut holder = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "exec 3>/proc/{pid}/fd/1; : > '{o}'; {outsider}",
                pid = sup.pid(),
                o = opened.display()
            ))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let (c, report) = run_all(sup, LIMIT).await;
        // The silent one is still there; the writer was still writing when the run closed
        // its end of the pipe (it dies of SIGPIPE, as `yes` does).
        let still_there = holder.try_wait().unwrap().is_none();
        let _ = holder.kill();
        let status = holder.wait().unwrap();
        let text = c.stdout_text();
        assert!(report.pipe_left_open, "{name}: {report:?}");
        match name {
            "silent" => assert!(still_there, "{name}: the run ended only when it did"),
            _ => assert_eq!(status.signal(), Some(13), "{name}: {status:?}"),
        }
        assert!(text.iter().any(|l| l == "child-last"), "{name}: {text:?}");
        assert!(text.iter().any(|l| l == "outsider"), "{name}: {text:?}");
    }
}
