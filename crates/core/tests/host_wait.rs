//! Waiting for the host: a session whose child reads the host's messages on an open stdin
//! (`--input-format stream-json`, the SDKs' streaming-input mode) is not hung after a `result`
//! while the host thinks. Virtual time only.

mod common;

use std::time::Duration;

use common::{kill_kinds, lines as l, min, H};
use watchdog_core::{Event, KillKind, Limits, SessionConfig, SessionId};

const NS: Duration = Duration::from_nanos(1);

const USER_MSG: &str =
    r#"{"type":"user","message":{"role":"user","content":"and now turn two"},"session_id":""}"#;
const SET_MODEL: &str = r#"{"type":"control_request","request_id":"req_9","request":{"subtype":"set_model","model":"x"}}"#;

fn streaming(h: &mut H, limits: Option<Limits>) -> SessionId {
    let cfg = SessionConfig::default().with_host_input(true);
    let cfg = match limits {
        Some(l) => cfg.with_limits(l),
        None => cfg,
    };
    h.r.register(h.t0, cfg)
}

/// Turn one: init, an answer, its `result` at `at`.
fn turn(h: &mut H, id: SessionId, at: Duration) {
    h.line(at, id, l::INIT);
    h.line(at, id, l::ASSISTANT_TEXT);
    h.line(at, id, l::RESULT_OK);
}

fn kills_until(h: &mut H, until: Duration) -> Vec<(Duration, KillKind)> {
    h.run_until(until)
        .into_iter()
        .filter_map(|(t, e)| match e {
            Event::Killed(k) => Some((t, k.kind)),
            _ => None,
        })
        .collect()
}

#[test]
fn after_a_result_with_the_host_input_open_no_clock_runs_however_long_the_host_thinks() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    turn(&mut h, id, min(1.0));
    let snap = h.r.snapshot(id).unwrap();
    assert!(snap.settled && snap.paused, "{snap:?}");
    assert_eq!(
        snap.next_deadline, None,
        "no linger, idle or no-progress deadline"
    );
    assert_eq!(h.r.poll_timeout(), None);
    // A day of thinking (default linger 11 m, idle 10 m, no_progress 30 m): still alive.
    assert!(kills_until(&mut h, min(24.0 * 60.0)).is_empty());
    // Keep-alives and the host's control messages while it waits do not start a clock.
    h.line(min(100.0), id, l::PING);
    h.input(min(200.0), id, SET_MODEL);
    h.line(
        min(200.0),
        id,
        r#"{"type":"control_response","response":{"subtype":"success","request_id":"req_9"}}"#,
    );
    assert!(kills_until(&mut h, min(48.0 * 60.0)).is_empty());
}

#[test]
fn the_ceiling_still_runs_while_the_host_thinks() {
    let mut h = H::default();
    let limits = Limits::default().with_ceiling(Some(min(90.0))).unwrap();
    let id = streaming(&mut h, Some(limits));
    turn(&mut h, id, min(1.0));
    assert_eq!(
        kills_until(&mut h, min(500.0)),
        vec![(min(90.0), KillKind::Ceiling)]
    );
    assert!(h.r.kill(id).is_some());
}

#[test]
fn the_host_s_next_message_starts_the_next_turn_with_every_clock_afresh() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    turn(&mut h, id, min(1.0));
    // The user comes back after three hours.
    let back = min(181.0);
    h.input(back, id, USER_MSG);
    let snap = h.r.snapshot(id).unwrap();
    assert!(!snap.settled && !snap.paused, "{snap:?}");
    // Turn two hangs before any line: idle (pre-write patience: 2 × 10 m) from the message.
    let k = kills_until(&mut h, min(600.0));
    assert_eq!(k, vec![(back + min(20.0), KillKind::Idle)]);
}

#[test]
fn turn_two_that_answers_and_settles_waits_again() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    turn(&mut h, id, min(1.0));
    h.input(min(30.0), id, USER_MSG);
    turn(&mut h, id, min(31.0));
    assert!(h.r.snapshot(id).unwrap().paused);
    h.input(min(300.0), id, USER_MSG);
    h.line(min(300.5), id, l::ASSISTANT_TEXT);
    // A stall mid-turn three is still caught: idle 20 m after its last line.
    let k = kills_until(&mut h, min(600.0));
    assert_eq!(k, vec![(min(320.5), KillKind::Idle)]);
}

#[test]
fn the_end_of_the_host_s_input_starts_the_linger_from_then() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    turn(&mut h, id, min(1.0));
    let eof = min(120.0);
    assert!(kills_until(&mut h, eof).is_empty());
    h.r.input_closed(h.at(eof), id);
    assert!(!h.r.snapshot(id).unwrap().paused);
    assert!(h.kills(eof + min(11.0) - NS).is_empty());
    let k = h.kills(eof + min(11.0));
    assert_eq!(
        kill_kinds(&[Event::Killed(k[0].clone())]),
        vec![(id, KillKind::Linger)]
    );
    assert_eq!(k.len(), 1);
}

#[test]
fn input_that_ends_mid_turn_lingers_from_the_next_result() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    h.line(min(0.5), id, l::INIT);
    h.r.input_closed(h.at(min(1.0)), id);
    h.line(min(2.0), id, l::RESULT_OK);
    assert!(!h.r.snapshot(id).unwrap().paused);
    assert_eq!(
        kills_until(&mut h, min(60.0)),
        vec![(min(13.0), KillKind::Linger)]
    );
}

#[test]
fn without_host_input_the_linger_is_unchanged() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    turn(&mut h, id, min(1.0));
    // A `user` line on stdin does not matter either: the session never waits for its host.
    h.input(min(5.0), id, USER_MSG);
    assert_eq!(
        kills_until(&mut h, min(60.0)),
        vec![(min(12.0), KillKind::Linger)]
    );
}

#[test]
fn a_user_message_mid_turn_is_not_a_sign_of_the_child_s_life() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    h.line(min(1.0), id, l::INIT);
    // The host queues a message while the turn runs; the child stays silent.
    h.input(min(15.0), id, USER_MSG);
    assert_eq!(
        kills_until(&mut h, min(60.0)),
        vec![(min(21.0), KillKind::Idle)]
    );
}

#[test]
fn progress_from_the_child_ends_the_wait_by_itself() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    turn(&mut h, id, min(1.0));
    // The child goes on by itself (a queued message): its clocks run again from that line.
    h.line(min(50.0), id, l::ASSISTANT_TEXT);
    assert!(!h.r.snapshot(id).unwrap().paused);
    assert_eq!(
        kills_until(&mut h, min(200.0)),
        vec![(min(70.0), KillKind::Idle)]
    );
}

#[test]
fn a_permission_wait_and_a_host_wait_together_end_only_when_both_do() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    h.line(min(1.0), id, l::INIT);
    h.line(min(1.0), id, &l::can_use_tool("perm_1"));
    h.line(min(2.0), id, l::RESULT_OK);
    h.input(min(100.0), id, &l::control_response("perm_1"));
    assert!(
        h.r.snapshot(id).unwrap().paused,
        "still waiting for the host"
    );
    assert!(kills_until(&mut h, min(300.0)).is_empty());
    h.r.input_closed(h.at(min(300.0)), id);
    assert_eq!(
        kills_until(&mut h, min(400.0)),
        vec![(min(311.0), KillKind::Linger)]
    );
}

#[test]
fn facts_about_an_unknown_ended_or_killed_session_change_nothing() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    turn(&mut h, id, min(1.0));
    h.r.end(h.at(min(2.0)), id);
    h.r.input_closed(h.at(min(3.0)), id);
    h.input(min(3.0), id, USER_MSG);
    assert!(kills_until(&mut h, min(100.0)).is_empty());
    h.r.unregister(id);
    h.r.input_closed(h.at(min(101.0)), id);
    h.input(min(101.0), id, USER_MSG);
    assert!(kills_until(&mut h, min(200.0)).is_empty());
}

#[test]
fn a_settle_by_hand_waits_for_the_host_as_a_result_does() {
    let mut h = H::default();
    let id = streaming(&mut h, None);
    h.line(min(1.0), id, l::INIT);
    h.r.settle(h.at(min(2.0)), id);
    assert!(kills_until(&mut h, min(300.0)).is_empty());
    h.r.input_closed(h.at(min(300.0)), id);
    assert_eq!(
        kills_until(&mut h, min(400.0)),
        vec![(min(311.0), KillKind::Linger)]
    );
}
