//! A host that stops its child for a reason of its own (its output failed, its reader went
//! away) stops the session's clocks: no deadline adds a second reason while the child is being
//! stopped, and the lines it still prints count. Virtual time only.

mod common;

use common::{lines as l, min, H};
use watchdog_core::{Event, Limits, Outcome, SessionConfig};

#[test]
fn after_stop_clocks_no_deadline_or_warning_falls_due_and_lines_still_count() {
    let mut h = H::default();
    let limits = Limits::default().with_ceiling(Some(min(60.0))).unwrap();
    let id =
        h.r.register(h.t0, SessionConfig::default().with_limits(limits));
    h.line(min(1.0), id, l::INIT);
    h.line(min(1.0), id, l::ASSISTANT_TEXT);
    assert!(
        h.r.poll_timeout().is_some(),
        "idle is armed before the stop"
    );
    assert!(h.r.stop_clocks(h.t0 + min(2.0), id));
    assert_eq!(h.r.poll_timeout(), None, "nothing to wake up for");
    // Idle (10 m), no-progress (30 m), the ceiling (60 m): none of them, no warning either.
    let events = h.run_until(min(24.0 * 60.0));
    assert!(events.is_empty(), "{events:?}");
    assert!(h.r.kill(id).is_none());
    // A result printed while it stops is still its result.
    h.line(min(100.0), id, l::RESULT_OK);
    assert_eq!(h.r.end(h.t0 + min(101.0), id), Some(Outcome::Success));
    assert!(!h.r.stop_clocks(h.t0 + min(102.0), id), "already ended");
}

#[test]
fn what_fell_due_before_the_stop_has_fired() {
    let mut h = H::default();
    let id = h.r.register(h.t0, SessionConfig::default());
    h.line(min(1.0), id, l::INIT);
    h.line(min(1.0), id, l::ASSISTANT_TEXT);
    // Asked to stop an hour later, without the timer having run: the idle kill (at 21 m,
    // pre-write patience) was due first, and stays the reason.
    assert!(!h.r.stop_clocks(h.t0 + min(61.0), id), "killed already");
    let kinds: Vec<_> = std::iter::from_fn(|| h.r.poll_event())
        .filter_map(|e| match e {
            Event::Killed(k) => Some(k.kind),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, vec![watchdog_core::KillKind::Idle]);
}

#[test]
fn an_unknown_or_forgotten_session_is_no_error() {
    let mut h = H::default();
    let id = h.r.register(h.t0, SessionConfig::default());
    h.r.unregister(id);
    assert!(!h.r.stop_clocks(h.t0 + min(1.0), id));
}
