//! The opt-in subreaper mode (Linux): orphans re-parent to the host and are reaped.
//! In its own test binary because it changes the test process for good.
#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use agent_sdk_watchdog::{Stage, Supervisor, SupervisorConfig};
use common::{dead, quick, run_all, sh};

fn ppid(pid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[tokio::test]
async fn orphans_re_parent_to_the_host_and_are_killed_and_reaped() {
    // The intermediate shell exits at once: its setsid child is orphaned before any kill.
    let script = r#"sh -c 'setsid sh -c "trap \"\" TERM; exec sleep 1000" & echo $!'
trap '' TERM
while :; do sleep 0.05; done"#;
    let cfg = SupervisorConfig {
        become_subreaper: true,
        ..quick()
    };
    let mut sup = Supervisor::spawn(sh(script), cfg).unwrap();
    let orphan: i32 = match sup.next_output().await {
        Some(agent_sdk_watchdog::Output::Stdout(l)) => {
            String::from_utf8(l.bytes).unwrap().parse().unwrap()
        }
        other => panic!("{other:?}"),
    };
    let me = std::process::id() as i32;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        ppid(orphan),
        Some(me),
        "the orphan re-parents to the subreaper"
    );
    let handle = sup.handle();
    let task = tokio::spawn(run_all(sup, Duration::from_secs(60)));
    handle.kill_now();
    let (_, report) = task.await.unwrap();
    let kill = report.kill.unwrap();
    assert_eq!(kill.stage, Stage::Kill);
    assert_eq!(kill.survivors, 0);
    // Killed and reaped: not even a zombie of ours is left.
    assert!(dead(orphan));
    assert_ne!(ppid(orphan), Some(me), "the orphan {orphan} was not reaped");
}
