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

/// This process's children that are zombies, but for `except` (the supervised child).
fn zombie_children(except: i32) -> usize {
    let me = std::process::id();
    let mut n = 0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let f: Vec<&str> = s[s.rfind(')').unwrap() + 1..].split_whitespace().collect();
        if pid != except && f[0] == "Z" && f[1] == me.to_string() {
            n += 1;
        }
    }
    n
}

/// Issue 41 (6): 500 orphans from one burst (a Bash tool's short-lived background processes)
/// re-parent to the subreaper that claims orphans and are reaped as they end: at most a
/// handful are left as zombies a second later, none at the end.
#[tokio::test]
async fn a_subreaper_that_claims_orphans_reaps_them_as_they_end() {
    let script = r#"i=0
while [ $i -lt 500 ]; do (sleep 0 &); i=$((i+1)); done
echo made
exec sleep 1000"#;
    let cfg = SupervisorConfig {
        become_subreaper: true,
        claim_orphans: true,
        ..quick()
    };
    let mut sup = Supervisor::spawn(sh(script), cfg).unwrap();
    assert!(sup.unavailable().is_empty(), "{:?}", sup.unavailable());
    let pid = sup.pid() as i32;
    match sup.next_output().await {
        Some(agent_sdk_watchdog::Output::Stdout(l)) => assert_eq!(l.bytes, b"made"),
        other => panic!("{other:?}"),
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let a_second_later = zombie_children(pid);
    let handle = sup.handle();
    let task = tokio::spawn(run_all(sup, Duration::from_secs(60)));
    handle.kill_now();
    let (_, report) = task.await.unwrap();
    assert!(report.unavailable.is_empty());
    assert!(
        a_second_later <= 5,
        "{a_second_later} zombies 1 s after 500 orphans ended (at most a handful)"
    );
    assert_eq!(zombie_children(pid), 0, "none left at the end");
}
