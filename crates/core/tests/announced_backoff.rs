//! An announced back-off is not a hang: `system/api_retry` says when Claude Code tries the API
//! again (`retry_delay_ms`). Neither the idle nor the no-progress clock counts that wait: both
//! start afresh at its end, for as long as the storm (retries with no progress after their
//! back-off) lasts, but at most `max_backoff` after its first retry; the ceiling always holds.
//! A kill during a storm says so ([`Kill::backoff`]) and is never continued. Virtual time only.

mod common;

use std::time::Duration;

use common::{lines as l, min, sec, H};
use watchdog_core::recovery::{trigger_of, Skip, Trigger};
use watchdog_core::{recovery::TerminalFacts, Event, Kill, KillKind, Limits, SessionId};

const NS: Duration = Duration::from_nanos(1);

fn retry(delay: Duration, status: u16, error: &str) -> String {
    format!(
        r#"{{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":{},"error_status":{status},"error":"{error}","session_id":"s"}}"#,
        delay.as_millis()
    )
}

/// A session that has written (no pre-write extension), idle 10 m, no-progress 3 s.
fn working(limits: Limits) -> (H, SessionId) {
    let mut h = H::new(limits);
    let id = h.reg(Duration::ZERO);
    h.line(Duration::ZERO, id, l::INIT);
    h.line(Duration::ZERO, id, &l::tool_use("w", "Write"));
    h.line(Duration::ZERO, id, &l::tool_result("w", false));
    (h, id)
}

fn kills_until(h: &mut H, until: Duration) -> Vec<Kill> {
    h.run_until(until)
        .into_iter()
        .filter_map(|(_, e)| match e {
            Event::Killed(k) => Some(k),
            _ => None,
        })
        .collect()
}

fn short_no_progress() -> Limits {
    Limits::default().with_no_progress(sec(3.0)).unwrap()
}

#[test]
fn an_announced_wait_longer_than_no_progress_is_not_killed_at_no_progress() {
    // Measured before this rule: an 8 s announced wait under `--no-progress 3s` was killed at
    // 3 s. Now the no-progress clock starts at the back-off's end.
    let (mut h, id) = working(short_no_progress());
    h.line(sec(1.0), id, &retry(sec(8.0), 529, "overloaded"));
    assert!(kills_until(&mut h, sec(9.5)).is_empty());
    // The retry answers: progress, then all is well.
    h.line(sec(9.5), id, l::DELTA);
    assert!(kills_until(&mut h, sec(12.5) - NS).is_empty());
    // And the storm is over: the next spell without progress is an ordinary one.
    let k = kills_until(&mut h, sec(60.0));
    assert_eq!((k[0].kind, h.off(&k[0])), (KillKind::NoProgress, sec(12.5)));
    assert_eq!(k[0].backoff, None, "no storm at this kill");
}

#[test]
fn a_retry_that_never_answers_is_killed_after_its_back_off_and_the_kill_says_the_storm() {
    let (mut h, id) = working(short_no_progress());
    h.line(sec(1.0), id, &retry(sec(8.0), 529, "overloaded"));
    // Pings while the retry hangs: keep-alives, the no-progress clock runs from 9 s.
    h.line(sec(10.0), id, l::PING);
    let k = kills_until(&mut h, sec(60.0));
    assert_eq!((k[0].kind, h.off(&k[0])), (KillKind::NoProgress, sec(12.0)));
    let b = k[0].backoff.clone().expect("killed during the storm");
    assert_eq!(
        (b.attempts, b.status, b.error.as_deref(), b.last_delay),
        (1, Some(529), Some("overloaded"), sec(8.0))
    );
    assert_eq!(b.lasted, sec(11.0));
}

#[test]
fn a_storm_holds_the_clocks_at_most_max_backoff() {
    // A relay announcing "Retrying in 2892 seconds", again and again (as with
    // CLAUDE_CODE_RETRY_WATCHDOG=1): the storm counts for at most max_backoff (here 1 h).
    let lim = short_no_progress().with_max_backoff(min(60.0)).unwrap();
    let (mut h, id) = working(lim);
    let mut t = sec(1.0);
    while t < min(180.0) {
        h.line(t, id, &retry(sec(2892.0), 429, "rate_limit"));
        t += min(10.0);
    }
    let k = kills_until(&mut h, min(300.0));
    // The first retry at 1 s; the clocks start at 1 h 0 m 1 s; no-progress (3 s) runs out
    // first.
    assert_eq!(
        (k[0].kind, h.off(&k[0])),
        (KillKind::NoProgress, min(60.0) + sec(4.0))
    );
    assert_eq!(k[0].backoff.as_ref().map(|b| b.attempts), Some(7));
}

#[test]
fn the_ceiling_bounds_an_announced_wait() {
    let lim = short_no_progress().with_ceiling(Some(min(5.0))).unwrap();
    let (mut h, id) = working(lim);
    h.line(sec(1.0), id, &retry(min(30.0), 529, "overloaded"));
    let k = kills_until(&mut h, min(60.0));
    assert_eq!((k[0].kind, h.off(&k[0])), (KillKind::Ceiling, min(5.0)));
    assert!(k[0].backoff.is_some());
}

#[test]
fn the_idle_clock_also_waits_for_the_announced_end() {
    let (mut h, id) = working(Limits::default());
    h.line(min(1.0), id, &retry(min(45.0), 529, "overloaded"));
    assert!(kills_until(&mut h, min(56.0) - NS).is_empty());
    let k = kills_until(&mut h, min(60.0));
    assert_eq!((k[0].kind, h.off(&k[0])), (KillKind::Idle, min(56.0)));
}

#[test]
fn a_kill_during_a_storm_is_never_resumed_and_says_why() {
    let (mut h, id) = working(short_no_progress());
    h.line(sec(1.0), id, &retry(sec(2.0), 529, "overloaded"));
    h.line(sec(3.5), id, &retry(sec(4.0), 529, "overloaded"));
    kills_until(&mut h, sec(60.0));
    let record = h.r.finish(h.at(sec(60.0)), id).unwrap();
    let facts = TerminalFacts::from_record(&record, 0);
    let skip = trigger_of(&facts).unwrap_err();
    assert_eq!(
        skip,
        Skip::DuringBackoff {
            attempts: 2,
            status: Some(529),
            error: Some("overloaded".into())
        }
    );
    let said = skip.to_string();
    assert!(
        said.contains("2 announced retries, last: 529 overloaded"),
        "{said}"
    );
    // The same kill after progress ended the storm is continued as any kill.
    let (mut h, id) = working(short_no_progress());
    h.line(sec(1.0), id, &retry(sec(2.0), 529, "overloaded"));
    h.line(sec(3.5), id, l::DELTA);
    kills_until(&mut h, sec(60.0));
    let record = h.r.finish(h.at(sec(60.0)), id).unwrap();
    assert_eq!(
        trigger_of(&TerminalFacts::from_record(&record, 0)),
        Ok(Trigger::AfterKill)
    );
}
