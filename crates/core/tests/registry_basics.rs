//! Basic registry behaviour: the deadlines of one session, exact and in virtual time.

mod common;

use common::{lines as l, min, H};
use std::time::Duration;
use watchdog_core::{Event, KillKind, Limits};

#[test]
fn a_post_write_session_is_killed_exactly_at_idle() {
    let mut h = H::default();
    let id = h.reg(min(0.0));
    h.line(min(1.0), id, &l::tool_use("w1", "Write"));
    h.line(min(1.0), id, &l::tool_result("w1", false));
    let deadline = min(11.0);
    assert!(h.kills(deadline - Duration::from_nanos(1)).is_empty());
    let kills = h.kills(deadline);
    assert_eq!(kills.len(), 1);
    assert_eq!(kills[0].kind, KillKind::Idle);
    assert_eq!(h.off(&kills[0]), deadline);
    assert_eq!(kills[0].elapsed, min(11.0));
    assert_eq!(kills[0].since_progress, min(10.0));
}

#[test]
fn poll_timeout_drives_every_deadline_in_order() {
    let mut h = H::default();
    let id = h.reg(min(0.0));
    h.line(min(0.5), id, l::DELTA);
    let events = h.run_until(min(60.0));
    let kinds: Vec<_> = events.iter().map(|(t, e)| (*t, e.clone())).collect();
    // pre-write: Stalling{idle} at 0.8 × 20 min, Extended at 10 min, kill at 20 min.
    assert_eq!(
        kinds,
        vec![
            (
                min(10.5),
                Event::Extended {
                    id,
                    reason: watchdog_core::ExtendReason::PreWrite
                }
            ),
            (
                min(16.5),
                Event::Stalling {
                    id,
                    clock: watchdog_core::StallClock::Idle,
                    remaining: min(4.0)
                }
            ),
            (min(20.5), Event::Killed(h.r.kill(id).unwrap().clone())),
        ]
    );
    assert_eq!(h.r.poll_timeout(), None);
}

#[test]
fn handle_timeout_leaves_poll_timeout_in_the_future() {
    let mut h = H::new(Limits::default().with_idle(min(1.0)).unwrap());
    let ids: Vec<_> = (0..50).map(|i| h.reg(min(i as f64 * 0.1))).collect();
    for (i, id) in ids.iter().enumerate() {
        h.line(min(i as f64 * 0.37 % 3.0), *id, l::PING);
    }
    let mut now = min(0.0);
    while now < min(100.0) {
        h.r.handle_timeout(h.at(now));
        if let Some(t) = h.r.poll_timeout() {
            assert!(t > h.at(now));
        }
        now += Duration::from_millis(7_919);
    }
}
