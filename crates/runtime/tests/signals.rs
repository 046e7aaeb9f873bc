//! forward_signals: the host's SIGTERM/SIGINT go to the child's group; a second one kills the
//! tree. In its own test binary: it signals the test process itself.
#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use agent_sdk_watchdog::{forward_signals, KillCause, Stage, Supervisor};
use common::{quick, run_all, sh};
use rustix::process::{getpid, kill_process, Signal};

async fn raise(sig: Signal) {
    kill_process(getpid(), sig).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn host_signals_are_forwarded_then_escalate() {
    // One signal: forwarded; the child's trap decides.
    let sup = Supervisor::spawn(
        sh("trap 'exit 5' TERM; echo up; while :; do sleep 0.05; done"),
        quick(),
    )
    .unwrap();
    let forwarder = forward_signals(sup.handle()).unwrap();
    let task = tokio::spawn(run_all(sup, Duration::from_secs(60)));
    tokio::time::sleep(Duration::from_millis(200)).await;
    raise(Signal::TERM).await;
    let (_, report) = task.await.unwrap();
    assert!(report.kill.is_none());
    assert_eq!(report.status.unwrap().code(), Some(5));
    drop(forwarder);

    // A child that ignores them: the second signal SIGKILLs the tree.
    let sup = Supervisor::spawn(
        sh("trap '' TERM INT; echo up; while :; do sleep 0.05; done"),
        quick(),
    )
    .unwrap();
    let _forwarder = forward_signals(sup.handle()).unwrap();
    let task = tokio::spawn(run_all(sup, Duration::from_secs(60)));
    tokio::time::sleep(Duration::from_millis(200)).await;
    raise(Signal::INT).await;
    raise(Signal::INT).await;
    let (_, report) = task.await.unwrap();
    let kill = report.kill.expect("escalated");
    assert_eq!(kill.cause, KillCause::Signal);
    assert_eq!(kill.stage, Stage::Kill);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(report.status.unwrap().signal(), Some(9));
}
