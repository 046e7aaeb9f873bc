//! Real-process tests with the liveness policy on: the watchdog decides, the ladder stops.
//! Small limits (hundreds of ms); timings asserted only loosely.
#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use agent_sdk_watchdog::{KillCause, Output, Stage, Supervisor, SupervisorConfig};
use common::{dead, quick, run_all, sh};
use watchdog_core::{Event, KillKind, Limits, LineKind, Outcome, SessionConfig};

const LIMIT: Duration = Duration::from_secs(60);

fn policy(limits: Limits) -> SupervisorConfig {
    SupervisorConfig {
        policy: Some(SessionConfig::default().with_limits(limits)),
        ..quick()
    }
}

fn small() -> Limits {
    Limits::default()
        .with_startup(Duration::from_secs(10))
        .unwrap()
        .with_idle(Duration::from_millis(400))
        .unwrap()
        .with_extend_factor(1.0)
        .unwrap()
}

/// [`small`] with an idle limit of 1.5 s.
fn slow_caller_limits() -> Limits {
    small().with_idle(Duration::from_millis(1500)).unwrap()
}

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"sess-1"}"#;

fn killed_kind(report: &agent_sdk_watchdog::Report) -> Option<KillKind> {
    match &report.kill.as_ref()?.cause {
        KillCause::Watchdog(k) => Some(k.kind),
        _ => None,
    }
}

#[tokio::test]
async fn a_child_that_goes_silent_is_killed_for_idle() {
    let script = format!("echo '{INIT}'; exec sleep 1000");
    let sup = Supervisor::spawn(sh(&script), policy(small())).unwrap();
    let pid = sup.pid() as i32;
    let (c, report) = run_all(sup, LIMIT).await;
    assert_eq!(killed_kind(&report), Some(KillKind::Idle));
    assert_eq!(
        report.outcome().cloned(),
        Some(Outcome::Killed {
            kind: KillKind::Idle
        })
    );
    assert_eq!(report.session_id().map(|s| s.as_str()), Some("sess-1"));
    let kill = report.kill.unwrap();
    assert!(kill.decided_after >= Duration::from_millis(400), "{kill:?}");
    assert_eq!(kill.survivors, 0);
    assert!(c
        .other
        .iter()
        .any(|o| matches!(o, Output::Event(Event::Killed(_)))));
    assert!(dead(pid));
}

#[tokio::test]
async fn heartbeats_alone_end_in_a_no_progress_kill() {
    let limits = small()
        .with_no_progress(Duration::from_millis(800))
        .unwrap();
    let script = format!(
        "echo '{INIT}'; while :; do echo '{{\"type\":\"tool_progress\",\"heartbeat\":true}}'; sleep 0.05; done"
    );
    let sup = Supervisor::spawn(sh(&script), policy(limits)).unwrap();
    let (_, report) = run_all(sup, LIMIT).await;
    assert_eq!(killed_kind(&report), Some(KillKind::NoProgress));
    assert!(report.counts().get(LineKind::ToolProgress) > 3);
}

#[tokio::test]
async fn a_child_with_no_output_is_killed_at_startup() {
    let limits = small().with_startup(Duration::from_millis(300)).unwrap();
    let sup = Supervisor::spawn(sh("exec sleep 1000"), policy(limits)).unwrap();
    let (_, report) = run_all(sup, LIMIT).await;
    assert_eq!(killed_kind(&report), Some(KillKind::Startup));
    assert!(report.kill.unwrap().stage >= Stage::Term);
}

#[tokio::test]
async fn exit_zero_without_a_result_is_no_result() {
    let script = format!("echo '{INIT}'; exit 0");
    let sup = Supervisor::spawn(sh(&script), policy(small())).unwrap();
    let (_, report) = run_all(sup, LIMIT).await;
    assert!(report.kill.is_none());
    assert_eq!(report.status.unwrap().code(), Some(0));
    assert_eq!(report.outcome().cloned(), Some(Outcome::NoResult));
}

#[tokio::test]
async fn a_result_just_before_exit_is_seen() {
    let script = format!(
        "echo '{INIT}'; printf '%s' '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"stop_reason\":\"end_turn\"}}'"
    );
    let sup = Supervisor::spawn(sh(&script), policy(small())).unwrap();
    let (c, report) = run_all(sup, LIMIT).await;
    assert_eq!(report.outcome().cloned(), Some(Outcome::Success));
    assert_eq!(report.counts().get(LineKind::Result), 1);
    assert!(!c.stdout.last().unwrap().newline);
    // The end event comes after every line.
    assert!(matches!(
        c.other.last(),
        Some(Output::Event(Event::Ended { .. }))
    ));
}

#[tokio::test]
async fn lines_written_after_the_kill_decision_are_still_delivered() {
    let script = format!("trap 'echo bye-term; exit 1' TERM; echo '{INIT}'; sleep 1000 & wait");
    let sup = Supervisor::spawn(sh(&script), policy(small())).unwrap();
    let (c, report) = run_all(sup, LIMIT).await;
    assert_eq!(killed_kind(&report), Some(KillKind::Idle));
    assert_eq!(c.stdout_text().last().map(String::as_str), Some("bye-term"));
}

/// A permission request pauses the idle clock; the host's answer (written through the
/// supervisor's stdin) resumes it.
#[tokio::test]
async fn a_permission_wait_pauses_idle_until_the_host_answers() {
    let script = format!(
        "echo '{INIT}'; echo '{{\"type\":\"control_request\",\"request_id\":\"r1\",\"request\":{{\"subtype\":\"can_use_tool\",\"tool_name\":\"Write\"}}}}'; exec cat >/dev/null"
    );
    let mut sup = Supervisor::spawn(sh(&script), policy(small())).unwrap();
    let stdin = sup.stdin().unwrap();
    let start = tokio::time::Instant::now();
    let mut lines = 0;
    let waited = tokio::time::timeout(Duration::from_millis(1500), async {
        while let Some(o) = sup.next_output().await {
            match o {
                Output::Stdout(_) => lines += 1,
                Output::Event(Event::Killed(k)) => panic!("killed during the wait: {k:?}"),
                _ => {}
            }
        }
    })
    .await;
    assert!(waited.is_err(), "still running after 3× the idle limit");
    assert_eq!(lines, 2);
    stdin
        .write_line(br#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow"}}}"#)
        .await
        .unwrap();
    let (_, report) = run_all(sup, LIMIT).await;
    assert_eq!(killed_kind(&report), Some(KillKind::Idle));
    assert!(start.elapsed() >= Duration::from_millis(1500));
}

/// Supervised children registered on one shared `Watchdog`: its one timer task kills the one
/// that goes silent, the busy one finishes, the ids free up, and the watchdog's own callback
/// hears of the supervised kill like of any session's.
#[tokio::test]
async fn supervised_children_share_one_watchdog_timer() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let kills = Arc::new(AtomicUsize::new(0));
    let seen = kills.clone();
    let watchdog = agent_sdk_watchdog::Watchdog::new(
        agent_sdk_watchdog::WatchdogConfig::new(small()).on_kill(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let shared = |limits: Option<Limits>| SupervisorConfig {
        policy: Some(match limits {
            Some(l) => SessionConfig::default().with_limits(l),
            None => SessionConfig::default(),
        }),
        watchdog: Some(watchdog.clone()),
        ..quick()
    };
    let silent = format!("echo '{INIT}'; exec sleep 1000");
    let busy = format!(
        "echo '{INIT}'; for i in 1 2 3 4 5 6 7 8 9 10; do echo '{{\"type\":\"assistant\",\"message\":{{\"content\":[]}}}}'; sleep 0.1; done; echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false}}'"
    );
    let a = Supervisor::spawn(sh(&silent), shared(None)).unwrap();
    let b = Supervisor::spawn(sh(&silent), shared(Some(small()))).unwrap();
    let c = Supervisor::spawn(sh(&busy), shared(None)).unwrap();
    assert_eq!(watchdog.len(), 3, "one session each on the shared watchdog");
    let pids = [a.pid() as i32, b.pid() as i32];
    let ((_, ra), (_, rb), (_, rc)) =
        tokio::join!(run_all(a, LIMIT), run_all(b, LIMIT), run_all(c, LIMIT));
    assert_eq!(killed_kind(&ra), Some(KillKind::Idle));
    assert_eq!(killed_kind(&rb), Some(KillKind::Idle));
    assert_eq!(killed_kind(&rc), None, "{rc:?}");
    assert_eq!(rc.outcome().cloned(), Some(Outcome::Success));
    assert!(pids.iter().all(|&p| dead(p)));
    assert_eq!(kills.load(Ordering::SeqCst), 2);
    assert_eq!(watchdog.len(), 0, "sessions end with their supervisors");
}

/// A caller that takes the output late holds the child back; the child is not idle: the same
/// pause rule whether the child's session is on a private cell or on a shared watchdog (whose
/// timer used to apply the pause only at each tree scan, and could kill during a block).
#[tokio::test]
async fn a_slow_caller_pauses_the_clocks_on_a_private_and_on_a_shared_cell_alike() {
    let assistant = r#"{"type":"assistant","message":{"content":[]}}"#;
    let result = r#"{"type":"result","subtype":"success","is_error":false}"#;
    // ~9 MB at once: past the 4 MiB the supervisor buffers, the child waits on its pipe.
    let script = format!("yes '{assistant}' | head -n 200000; echo '{result}'");
    let watchdog = agent_sdk_watchdog::Watchdog::new(agent_sdk_watchdog::WatchdogConfig::new(
        Limits::default(),
    ));
    for shared in [false, true] {
        let config = SupervisorConfig {
            watchdog: shared.then(|| watchdog.clone()),
            // No tree scan in between: nothing but the core's rule can hold the clocks.
            tree_scan: None,
            // An idle limit well above a loaded machine's scheduling gaps: the child must fill
            // the budget before it can be called idle (at 400 ms a starved `yes` was killed
            // before it ever blocked).
            ..policy(slow_caller_limits())
        };
        let mut sup = Supervisor::spawn(sh(&script), config).unwrap();
        // Take nothing until the child is blocked on its full pipe (how long that takes is the
        // machine's load), then for two idle limits more.
        let blocked = wait_until_blocked_writing(sup.pid(), Duration::from_secs(120)).await;
        assert!(blocked, "shared: {shared}: the child never filled its pipe");
        tokio::time::sleep(Duration::from_millis(3500)).await;
        let mut lines = 0;
        while let Some(out) = sup.next_output().await {
            if let Output::Stdout(_) = out {
                lines += 1;
            }
        }
        let report = sup.wait().await.unwrap();
        assert_eq!(killed_kind(&report), None, "shared: {shared}: {report:?}");
        assert_eq!(
            report.outcome().cloned(),
            Some(Outcome::Success),
            "shared: {shared}"
        );
        assert_eq!(lines, 200_001, "shared: {shared}: nothing lost");
        // Held back for longer than the idle limit (else the test proves nothing).
        assert!(
            report.blocked_on_output > Duration::from_millis(1500),
            "shared: {shared}: {:?}",
            report.blocked_on_output
        );
    }
    assert_eq!(watchdog.len(), 0);
}

/// Whether `parent`'s child `head` (the writer of the supervised stdout; `yes` before it always
/// waits on `head`) sleeps in a pipe write (its reader takes nothing), polled until
/// `limit`: the kernel's own account (`/proc/<pid>/wchan`), so no fixed sleep guesses how
/// long a loaded machine needs to fill a pipe.
async fn wait_until_blocked_writing(parent: u32, limit: Duration) -> bool {
    let until = std::time::Instant::now() + limit;
    let mut blocked_since = None;
    while std::time::Instant::now() < until {
        let entries = std::fs::read_dir("/proc").into_iter().flatten().flatten();
        let blocked = entries
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .any(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                // The parent pid is the second field after the command's closing parenthesis.
                let ppid = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1));
                stat.starts_with(&format!("{pid} (head) "))
                    && ppid == Some(parent.to_string().as_str())
                    && std::fs::read_to_string(format!("/proc/{pid}/wchan"))
                        .is_ok_and(|w| w.ends_with("pipe_write"))
            });
        // Blocked at every look for a second: the supervisor stopped reading, not a slow read.
        blocked_since = if blocked {
            blocked_since.or(Some(std::time::Instant::now()))
        } else {
            None
        };
        if blocked_since.is_some_and(|t| t.elapsed() >= Duration::from_secs(1)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
