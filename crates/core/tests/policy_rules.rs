//! Every rule of the policy beyond the reference checks: startup, no-progress, linger, human waits,
//! api_retry, keep-alive kinds, hostile input, overrides, withdrawal, exact instants, ties,
//! warnings once per spell, outcomes, and faults of the host (output pauses, lines that waited).

mod common;

use std::time::Duration;

use common::{kill_kinds, lines as l, min, sec, H};
use watchdog_core::{
    facts::ResultFacts, Event, ExtendReason, KillKind, Limits, LineKind, LineView, Outcome,
    SessionId, Signal, StallClock,
};

const NS: Duration = Duration::from_nanos(1);

/// A session whose first write landed at T0 (through the stream, not a hook).
fn written(h: &mut H) -> SessionId {
    written_at(h, Duration::ZERO)
}

fn written_at(h: &mut H, at: Duration) -> SessionId {
    let id = h.reg(at);
    h.line(at, id, l::INIT);
    h.line(at, id, &l::tool_use("toolu_w0", "Write"));
    h.line(at, id, &l::tool_result("toolu_w0", false));
    assert!(h.r.snapshot(id).unwrap().wrote);
    id
}

fn stalls(events: &[Event]) -> Vec<(StallClock, Duration)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Stalling {
                clock, remaining, ..
            } => Some((*clock, *remaining)),
            _ => None,
        })
        .collect()
}

fn extends(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::Extended { .. }))
        .count()
}

// ---------------------------------------------------------------- startup

#[test]
fn a_session_that_never_prints_is_killed_startup_exactly_at_three_minutes() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    assert!(h.kills(min(3.0) - NS).is_empty());
    let k = h.kills(min(3.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Startup)]);
    assert_eq!(k[0].last_signal, None);
    assert_eq!(k[0].elapsed, min(3.0));
}

fn kill_kinds_of(k: &[watchdog_core::Kill]) -> Vec<(SessionId, KillKind)> {
    k.iter().map(|k| (k.id, k.kind)).collect()
}

#[test]
fn any_first_line_ends_the_startup_clock_even_a_keep_alive() {
    for first in [l::PING, l::GARBAGE, l::UNKNOWN, l::RATE_LIMIT] {
        let mut h = H::default();
        let id = h.reg(Duration::ZERO);
        h.line(min(3.0) - NS, id, first);
        assert!(h.kills(min(5.0)).is_empty(), "{first}");
        // From then on the idle clock (pre-write, 20 min) runs from that line.
        let k = h.kills(min(60.0));
        assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Idle)], "{first}");
        assert_eq!(h.off(&k[0]), min(23.0) - NS);
    }
}

#[test]
fn startup_is_per_session_override() {
    let mut h = H::default();
    let quick = h.reg_with(
        Duration::ZERO,
        Limits::default().with_startup(sec(10.0)).unwrap(),
    );
    let slow = h.reg(Duration::ZERO);
    let k = h.kills(min(1.0));
    assert_eq!(kill_kinds_of(&k), vec![(quick, KillKind::Startup)]);
    assert_eq!(h.off(&k[0]), sec(10.0));
    assert!(h.r.kill(slow).is_none());
}

// ---------------------------------------------------------------- no-progress cap

#[test]
fn heartbeats_without_progress_are_killed_by_the_no_progress_cap() {
    let mut h = H::default();
    let id = written(&mut h);
    let mut events = Vec::new();
    let mut t = sec(30.0);
    while t < min(40.0) {
        h.line(t, id, l::TOOL_PROGRESS);
        events.extend(h.drain());
        t += sec(30.0);
    }
    assert_eq!(kill_kinds(&events), vec![(id, KillKind::NoProgress)]);
    let k = h.r.kill(id).unwrap();
    assert_eq!(h.off(k), min(30.0));
    assert_eq!(k.since_progress, min(30.0));
    assert_eq!(k.since_keepalive, sec(30.0));
    assert_eq!(k.last_signal, Some(Signal::KeepAlive));
    // One no-progress warning at 0.8 × 30 min, with 6 min left; never an idle warning.
    assert_eq!(stalls(&events), vec![(StallClock::NoProgress, min(6.0))]);
}

#[test]
fn pings_every_30s_are_not_progress() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(sec(1.0), id, l::DELTA);
    let mut t = sec(30.0);
    while t < min(31.0) {
        assert_eq!(h.line(t, id, l::PING).signal, Signal::KeepAlive);
        t += sec(30.0);
    }
    let k = h.r.kill(id).expect("killed by the no-progress cap");
    assert_eq!(
        (k.kind, h.off(k)),
        (KillKind::NoProgress, min(30.0) + sec(1.0))
    );
}

#[test]
fn abandoned_blocks_are_not_progress() {
    let mut h = H::default();
    let id = written(&mut h);
    let c = h.line(min(9.0), id, l::ABANDONED);
    assert_eq!((c.signal, c.kind), (Signal::KeepAlive, LineKind::Abandoned));
    let s = h.r.snapshot(id).unwrap();
    assert_eq!(s.last_progress, h.at(Duration::ZERO));
    assert_eq!(s.last_line, Some(h.at(min(9.0))));
    // It kept the idle clock alive (19 min) but not the no-progress clock.
    assert_eq!(kill_kinds(&h.tick(min(19.0) - NS)), vec![]);
    assert_eq!(kill_kinds(&h.tick(min(19.0))), vec![(id, KillKind::Idle)]);
}

#[test]
fn subagent_stream_events_are_progress() {
    let mut h = H::default();
    let id = written(&mut h);
    assert_eq!(
        h.line(min(9.0), id, l::SUBAGENT_DELTA).signal,
        Signal::Progress
    );
    assert_eq!(h.r.snapshot(id).unwrap().last_progress, h.at(min(9.0)));
}

// ---------------------------------------------------------------- linger

#[test]
fn a_session_that_stays_open_after_its_result_is_killed_linger() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(1.0), id, l::RESULT_OK);
    assert_eq!(h.drain(), vec![Event::Settled { id }]);
    // Keep-alives after the result do not un-settle and do not move the linger clock.
    h.line(min(2.0), id, l::RATE_LIMIT);
    h.line(min(3.0), id, l::TOOL_PROGRESS);
    h.line(min(4.0), id, l::PING);
    assert!(h.r.snapshot(id).unwrap().settled);
    assert!(h.kills(min(12.0) - NS).is_empty());
    let k = h.kills(min(12.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Linger)]);
    assert_eq!(
        h.r.end(h.at(min(13.0)), id),
        Some(Outcome::Killed {
            kind: KillKind::Linger
        })
    );
}

#[test]
fn new_progress_un_settles_and_the_idle_clocks_resume() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(1.0), id, l::RESULT_OK);
    h.line(min(5.0), id, l::INIT); // a new turn
    assert!(!h.r.snapshot(id).unwrap().settled);
    let k = h.kills(min(60.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Idle)]);
    assert_eq!(h.off(&k[0]), min(15.0));
}

#[test]
fn a_second_result_without_progress_does_not_extend_the_linger() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(1.0), id, l::RESULT_OK);
    h.line(min(5.0), id, l::RESULT_OK);
    assert_eq!(h.drain(), vec![Event::Settled { id }], "settled once");
    let k = h.kills(min(60.0));
    assert_eq!(h.off(&k[0]), min(12.0));
}

#[test]
fn linger_override_per_session() {
    let mut h = H::default();
    let short = h.reg_with(
        Duration::ZERO,
        Limits::default().with_linger(sec(5.0)).unwrap(),
    );
    h.line(Duration::ZERO, short, l::RESULT_OK);
    let k = h.kills(min(1.0));
    assert_eq!(kill_kinds_of(&k), vec![(short, KillKind::Linger)]);
    assert_eq!(h.off(&k[0]), sec(5.0));
}

// ---------------------------------------------------------------- human wait

#[test]
fn a_permission_request_pauses_idle_until_the_host_answers_it() {
    let mut h = H::default();
    let id = written(&mut h);
    assert_eq!(
        h.line(min(2.0), id, &l::can_use_tool("r1")).signal,
        Signal::HumanWait
    );
    assert!(h.r.snapshot(id).unwrap().paused);
    // An hour of waiting on the human: no idle, no no-progress kill.
    assert!(h.tick(min(62.0)).is_empty());
    // An unrelated answer does not end it.
    h.input(min(62.0), id, &l::control_response("other"));
    assert!(h.r.snapshot(id).unwrap().paused);
    h.input(min(63.0), id, &l::control_response("r1"));
    assert!(!h.r.snapshot(id).unwrap().paused);
    // Idle resumes where it stopped: the request line at 2 min began both the spell and the
    // pause, so the whole 10 min remain after the answer.
    assert!(h.kills(min(73.0) - NS).is_empty());
    let k = h.kills(min(73.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Idle)]);
    assert_eq!(
        k[0].since_keepalive,
        min(71.0),
        "real time since the last line"
    );
}

#[test]
fn session_state_requires_action_pauses_until_running() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(1.0), id, l::REQUIRES_ACTION);
    assert!(h.tick(min(40.0)).is_empty());
    h.line(min(40.0), id, l::RUNNING);
    assert!(!h.r.snapshot(id).unwrap().paused);
    let k = h.kills(min(60.0));
    assert_eq!(h.off(&k[0]), min(50.0), "the running line is itself a line");
}

#[test]
fn session_state_idle_ends_the_wait_too() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(1.0), id, l::REQUIRES_ACTION);
    h.line(min(20.0), id, l::IDLE_STATE);
    assert!(!h.r.snapshot(id).unwrap().paused);
}

#[test]
fn running_does_not_end_the_wait_while_a_request_is_pending() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(1.0), id, l::REQUIRES_ACTION);
    h.line(min(1.0), id, &l::can_use_tool("r1"));
    h.line(min(2.0), id, &l::can_use_tool("r2"));
    h.line(min(3.0), id, l::RUNNING);
    assert!(h.r.snapshot(id).unwrap().paused);
    h.input(min(4.0), id, &l::control_response("r1"));
    assert!(h.r.snapshot(id).unwrap().paused, "r2 is still pending");
    h.input(min(30.0), id, &l::control_response("r2"));
    assert!(!h.r.snapshot(id).unwrap().paused);
    // Last line at 3 min, paused from 1 to 30: the spell had 0 min used at the pause end
    // (the line at 3 lies inside the pause), so idle kills 10 min after 30.
    let k = h.kills(min(60.0));
    assert_eq!(h.off(&k[0]), min(40.0));
}

#[test]
fn a_cancelled_request_ends_the_wait() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(1.0), id, &l::can_use_tool("r1"));
    h.line(
        min(5.0),
        id,
        r#"{"type":"control_cancel_request","request_id":"r1"}"#,
    );
    assert!(!h.r.snapshot(id).unwrap().paused);
}

#[test]
fn the_ceiling_keeps_running_during_a_human_wait() {
    let mut h = H::default();
    let id = h.reg_with(
        Duration::ZERO,
        Limits::default().with_ceiling(Some(min(30.0))).unwrap(),
    );
    h.line(Duration::ZERO, id, &l::can_use_tool("r1"));
    let k = h.kills(min(100.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Ceiling)]);
    assert_eq!(h.off(&k[0]), min(30.0));
}

#[test]
fn the_pause_moves_the_no_progress_deadline_too() {
    let mut h = H::new(Limits::default().with_no_progress(min(15.0)).unwrap());
    let id = written(&mut h);
    let mut t = sec(30.0);
    while t < min(5.0) {
        h.line(t, id, l::PING);
        t += sec(30.0);
    }
    h.line(min(5.0), id, &l::can_use_tool("r1"));
    h.input(min(25.0), id, &l::control_response("r1"));
    let mut t = min(25.0) + sec(30.0);
    let mut killed = None;
    while t < min(60.0) && killed.is_none() {
        h.line(t, id, l::PING);
        killed = h.r.kill(id).cloned();
        t += sec(30.0);
    }
    let k = killed.unwrap();
    assert_eq!((k.kind, h.off(&k)), (KillKind::NoProgress, min(35.0)));
}

// ---------------------------------------------------------------- host faults

#[test]
fn an_output_pause_moves_idle_and_no_progress_but_not_the_ceiling() {
    let limits = Limits::default()
        .with_no_progress(min(15.0))
        .unwrap()
        .with_ceiling(Some(min(30.0)))
        .unwrap();
    let mut h = H::new(limits);
    let id = written(&mut h);
    // The host could not take the output from 2 to 9 min: 7 min that were not the child's.
    h.r.pause_clocks(h.at(min(9.0)), id, min(7.0));
    assert!(h.kills(min(17.0) - NS).is_empty(), "idle 10m + 7m paused");
    let k = h.kills(min(17.0));
    assert_eq!((k[0].kind, h.off(&k[0])), (KillKind::Idle, min(17.0)));

    let mut h = H::new(
        Limits::default()
            .with_no_progress(min(15.0))
            .unwrap()
            .with_ceiling(Some(min(30.0)))
            .unwrap(),
    );
    let id = written(&mut h);
    let mut t = sec(30.0);
    while t < min(40.0) && h.r.kill(id).is_none() {
        h.line(t, id, l::PING);
        if t == min(10.0) {
            h.r.pause_clocks(h.at(t), id, min(5.0));
        }
        h.tick(t);
        t += sec(30.0);
    }
    let k = h.r.kill(id).cloned().unwrap();
    assert_eq!((k.kind, h.off(&k)), (KillKind::NoProgress, min(20.0)));

    // The ceiling is never paused.
    let mut h = H::new(Limits::default().with_ceiling(Some(min(30.0))).unwrap());
    let id = written(&mut h);
    let mut t = min(1.0);
    while t < min(30.0) {
        h.line(t, id, l::ASSISTANT_TEXT);
        h.r.pause_clocks(h.at(t), id, min(1.0));
        t += min(1.0);
    }
    let k = h.kills(min(30.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Ceiling)]);
}

#[test]
fn a_line_that_waited_counts_before_the_deadline_it_waited_past() {
    let mut h = H::default();
    let id = written(&mut h);
    let v = LineView::parse_str(l::PING).unwrap();
    // The host was stopped from 1 to 15 min; a line waited in the pipe meanwhile.
    h.r.observe_waited(h.at(min(15.0)), id, Some(&v));
    assert!(h.drain().iter().all(|e| !matches!(e, Event::Killed(_))));
    // The deadline holds from that line on: idle 10 min later.
    assert!(h.kills(min(25.0) - NS).is_empty());
    assert_eq!(h.kills(min(25.0)).len(), 1);
    // The same line read late, not waited: the overdue kill lands first, at its deadline.
    let mut h = H::default();
    let id = written(&mut h);
    h.r.observe(h.at(min(15.0)), id, &v);
    let k = h.r.kill(id).cloned().unwrap();
    assert_eq!((k.kind, h.off(&k)), (KillKind::Idle, min(10.0)));
}

// ---------------------------------------------------------------- api_retry

#[test]
fn an_announced_back_off_is_not_idleness() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(5.0), id, &l::api_retry(180_000));
    assert!(h.kills(min(18.0) - NS).is_empty());
    let k = h.kills(min(18.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Idle)]);
    assert_eq!(k[0].since_keepalive, min(13.0));
}

#[test]
fn a_short_back_off_followed_by_lines_changes_nothing() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(5.0), id, &l::api_retry(500));
    h.line(min(6.0), id, l::PING);
    let k = h.kills(min(60.0));
    assert_eq!(h.off(&k[0]), min(16.0));
}

#[test]
fn a_huge_or_negative_retry_delay_never_panics() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(
        min(1.0),
        id,
        r#"{"type":"system","subtype":"api_retry","retry_delay_ms":1e300}"#,
    );
    h.line(
        min(1.0),
        id,
        r#"{"type":"system","subtype":"api_retry","retry_delay_ms":-5}"#,
    );
    h.line(
        min(1.0),
        id,
        r#"{"type":"system","subtype":"api_retry","retry_delay_ms":"soon"}"#,
    );
    // The announced wait is out of reach; `max_backoff` (2 h) bounds what a storm holds off:
    // both clocks start at most 2 h after its first retry, and the idle patience runs out
    // first.
    let k = h.kills(min(131.0) - NS);
    assert!(k.is_empty(), "{k:?}");
    let k = h.kills(min(131.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Idle)]);
}

// ---------------------------------------------------------------- hostile input

#[test]
fn unknown_malformed_huge_and_non_utf8_lines_are_keep_alives() {
    let mut h = H::default();
    let id = written(&mut h);
    let huge = {
        let mut s =
            String::from(r#"{"type":"assistant","message":{"content":[{"type":"text","text":""#);
        s.push_str(&"x".repeat(10 * 1024 * 1024));
        s.push_str(r#""}]}}"#);
        s
    };
    let huge_broken = &huge[..huge.len() - 3];
    let cases: Vec<(Vec<u8>, Signal, LineKind)> = vec![
        (l::UNKNOWN.into(), Signal::KeepAlive, LineKind::Unknown),
        (l::GARBAGE.into(), Signal::KeepAlive, LineKind::Unparseable),
        (b"".to_vec(), Signal::KeepAlive, LineKind::Unparseable),
        (
            b"{\"type\":\"assistant\",".to_vec(),
            Signal::KeepAlive,
            LineKind::Unparseable,
        ),
        (
            b"\xff\xfe\x00garbage".to_vec(),
            Signal::KeepAlive,
            LineKind::Unparseable,
        ),
        (
            b"{\"type\":\"\xc3\x28\"}".to_vec(),
            Signal::KeepAlive,
            LineKind::Unparseable,
        ),
        (
            huge_broken.as_bytes().to_vec(),
            Signal::KeepAlive,
            LineKind::Unparseable,
        ),
        (
            huge.as_bytes().to_vec(),
            Signal::Progress,
            LineKind::Assistant,
        ),
    ];
    for (i, (line, signal, kind)) in cases.iter().enumerate() {
        let c = h.r.observe_line(h.at(min(1.0 + i as f64)), id, line);
        assert_eq!((c.signal, c.kind), (*signal, *kind), "case {i}");
    }
    let s = h.r.snapshot(id).unwrap();
    assert_eq!(s.last_line, Some(h.at(min(8.0))));
    assert_eq!(s.last_progress, h.at(min(8.0)));
    assert_eq!(h.r.line_counts()[LineKind::Unparseable.index()], 6);
    assert!(h.r.kill(id).is_none());
}

#[test]
fn lines_for_unknown_ids_are_classified_and_ignored() {
    let mut h = H::default();
    let id = written(&mut h);
    // An id another registry issued: its slot is not live here.
    let mut other = watchdog_core::Registry::new(Limits::default());
    other.register(
        h.at(Duration::ZERO),
        watchdog_core::SessionConfig::default(),
    );
    let ghost: SessionId = other.register(
        h.at(Duration::ZERO),
        watchdog_core::SessionConfig::default(),
    );
    assert_eq!(h.line(min(1.0), ghost, l::DELTA).signal, Signal::Progress);
    h.input(min(1.0), ghost, &l::control_response("r"));
    h.r.tool_boundary(h.at(min(1.0)), ghost, Some("Write"));
    h.r.settle(h.at(min(1.0)), ghost);
    assert_eq!(h.r.end(h.at(min(1.0)), ghost), None);
    assert_eq!(h.r.unregister(ghost), None);
    assert!(h.r.kill(ghost).is_none() && h.r.snapshot(ghost).is_none());
    let k = h.kills(min(30.0));
    assert_eq!(h.off(&k[0]), min(10.0));
    assert_eq!(h.r.kill(id).unwrap().kind, KillKind::Idle);
}

#[test]
fn time_running_backwards_never_panics_and_never_rewinds() {
    let mut h = H::default();
    let id = written_at(&mut h, min(5.0));
    h.line(min(1.0), id, l::DELTA); // earlier than already seen: treated as 5 min
    h.r.handle_timeout(h.t0); // before the epoch
    let k = h.kills(min(60.0));
    assert_eq!(h.off(&k[0]), min(15.0));
}

#[test]
fn escaped_tool_ids_still_match() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    h.line(sec(1.0), id, &l::tool_use("toolu_\\u0041", "Write"));
    h.line(sec(2.0), id, &l::tool_result("toolu_A", false));
    assert!(h.r.snapshot(id).unwrap().wrote);
}

// ---------------------------------------------------------------- overrides

#[test]
fn per_session_overrides_apply_to_that_session_only() {
    let mut h = H::default();
    let fast = h.reg_with(
        Duration::ZERO,
        Limits::default().with_idle(min(1.0)).unwrap(),
    );
    h.line(Duration::ZERO, fast, l::INIT);
    h.r.tool_boundary(h.t0, fast, Some("Write"));
    let normal = written(&mut h);
    let events = h.tick(min(60.0));
    let kills = kill_kinds(&events);
    assert_eq!(
        kills,
        vec![(fast, KillKind::Idle), (normal, KillKind::Idle)]
    );
    assert_eq!(h.off(h.r.kill(fast).unwrap()), min(1.0));
    assert_eq!(h.off(h.r.kill(normal).unwrap()), min(10.0));
}

#[test]
fn write_tools_override_per_session() {
    let mut h = H::default();
    let id = h.reg_with(Duration::ZERO, Limits::default().with_write_tools(["Bash"]));
    h.line(Duration::ZERO, id, &l::tool_use("b1", "Bash"));
    h.line(Duration::ZERO, id, &l::tool_result("b1", false));
    assert!(h.r.snapshot(id).unwrap().wrote);
}

// ---------------------------------------------------------------- write detection, withdrawal

#[test]
fn only_a_completed_write_ends_pre_write() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    h.line(sec(1.0), id, &l::tool_use("w1", "Write"));
    h.line(sec(2.0), id, &l::tool_result("w1", true)); // failed
    h.line(sec(3.0), id, &l::tool_use("r1", "Read"));
    h.line(sec(4.0), id, &l::tool_result("r1", false)); // not a write
    h.line(sec(5.0), id, &l::tool_result("w9", false)); // unknown id
    assert!(!h.r.snapshot(id).unwrap().wrote);
    h.line(sec(6.0), id, &l::tool_use("w2", "Edit"));
    h.line(sec(7.0), id, &l::tool_result("w2", false));
    assert!(h.r.snapshot(id).unwrap().wrote);
    assert_eq!(h.r.snapshot(id).unwrap().last_tool, h.at(sec(7.0)));
}

#[test]
fn the_extension_is_withdrawn_when_the_first_write_lands() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    h.line(Duration::ZERO, id, &l::tool_use("w1", "Write"));
    // Pre-write: 12 min of quiet is fine (extended to 20).
    let events = h.tick(min(12.0));
    assert_eq!(extends(&events), 1);
    h.line(min(12.0), id, &l::tool_result("w1", false));
    let k = h.kills(min(60.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Idle)]);
    assert_eq!(h.off(&k[0]), min(22.0), "base idle after the write, not 32");
    assert_eq!(k[0].extension, None);
}

#[test]
fn a_utilization_drop_kills_a_session_already_past_base_idle_at_that_instant() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.t0, Some(0.95));
    assert_eq!(extends(&h.tick(min(15.0))), 1);
    h.r.set_utilization(h.at(min(15.0) + NS), Some(0.2));
    let events = h.drain();
    assert_eq!(kill_kinds(&events), vec![(id, KillKind::Idle)]);
    assert_eq!(h.off(h.r.kill(id).unwrap()), min(15.0) + NS);
}

#[test]
fn a_utilization_drop_before_base_idle_kills_at_base_idle() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.t0, Some(0.95));
    h.r.set_utilization(h.at(min(4.0)), Some(0.2));
    let k = h.kills(min(60.0));
    assert_eq!(kill_kinds_of(&k), vec![(id, KillKind::Idle)]);
    assert_eq!(h.off(&k[0]), min(10.0));
}

#[test]
fn high_utilization_wins_over_pre_write_as_the_reason() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    h.line(Duration::ZERO, id, l::INIT);
    h.r.set_utilization(h.t0, Some(0.99));
    assert_eq!(
        h.tick(min(10.0)),
        vec![Event::Extended {
            id,
            reason: ExtendReason::HighUtilization
        }]
    );
}

// ---------------------------------------------------------------- exact instants and ties

/// Set up a session, check nothing happens 1 ns before `at` and the kill of `kind` at `at`.
fn exact(kind: KillKind, at: Duration, limits: Limits, setup: impl Fn(&mut H, SessionId)) {
    let mut h = H::default();
    let id = h.reg_with(Duration::ZERO, limits);
    setup(&mut h, id);
    assert!(h.r.kill(id).is_none(), "{kind:?}: killed during setup");
    assert!(h.kills(at - NS).is_empty(), "{kind:?}: killed early");
    let k = h.kills(at);
    assert_eq!(kill_kinds_of(&k), vec![(id, kind)]);
    assert_eq!(h.off(&k[0]), at, "{kind:?}");
}

#[test]
fn every_kind_fires_exactly_at_its_deadline_and_not_a_nanosecond_before() {
    let d = Limits::default;
    exact(KillKind::Startup, min(3.0), d(), |_, _| {});
    exact(KillKind::Idle, min(21.0), d(), |h, id| {
        h.line(min(1.0), id, l::INIT);
    });
    exact(KillKind::Idle, min(11.0), d(), |h, id| {
        h.r.tool_boundary(h.at(min(1.0)), id, Some("Write"));
    });
    exact(
        KillKind::NoProgress,
        min(8.0),
        d().with_no_progress(min(7.0)).unwrap(),
        |h, id| {
            h.line(min(1.0), id, l::INIT);
            for i in 1..28 {
                h.line(min(1.0) + sec(15.0 * i as f64), id, l::PING);
            }
        },
    );
    exact(KillKind::Linger, min(12.0), d(), |h, id| {
        h.line(min(1.0), id, l::RESULT_OK);
    });
    exact(
        KillKind::Ceiling,
        min(50.0),
        d().with_ceiling(Some(min(50.0))).unwrap(),
        |h, id| {
            for i in 1..300 {
                h.line(sec(10.0 * i as f64), id, l::DELTA);
            }
        },
    );
}

#[test]
fn ties_go_to_ceiling_then_startup_then_linger_then_idle_then_no_progress() {
    // ceiling vs startup
    let mut h = H::default();
    let id = h.reg_with(
        Duration::ZERO,
        Limits::default().with_ceiling(Some(min(3.0))).unwrap(),
    );
    assert_eq!(kill_kinds(&h.tick(min(3.0))), vec![(id, KillKind::Ceiling)]);
    // ceiling vs linger
    let mut h = H::default();
    let id = h.reg_with(
        Duration::ZERO,
        Limits::default().with_ceiling(Some(min(12.0))).unwrap(),
    );
    h.line(min(1.0), id, l::RESULT_OK);
    assert_eq!(
        kill_kinds(&h.tick(min(12.0))),
        vec![(id, KillKind::Ceiling)]
    );
    // ceiling vs idle
    let mut h = H::default();
    let id = h.reg_with(
        Duration::ZERO,
        Limits::default().with_ceiling(Some(min(10.0))).unwrap(),
    );
    h.r.tool_boundary(h.t0, id, Some("Write"));
    assert_eq!(
        kill_kinds(&h.tick(min(10.0))),
        vec![(id, KillKind::Ceiling)]
    );
    // idle vs no_progress
    let mut h = H::default();
    let id = h.reg_with(
        Duration::ZERO,
        Limits::default().with_no_progress(min(10.0)).unwrap(),
    );
    h.r.tool_boundary(h.t0, id, Some("Write"));
    assert_eq!(kill_kinds(&h.tick(min(10.0))), vec![(id, KillKind::Idle)]);
    // ceiling vs no_progress
    let mut h = H::default();
    let id = h.reg_with(
        Duration::ZERO,
        Limits::default()
            .with_no_progress(min(10.0))
            .unwrap()
            .with_ceiling(Some(min(10.0)))
            .unwrap(),
    );
    h.r.tool_boundary(h.t0, id, Some("Write"));
    h.line(min(5.0), id, l::PING);
    assert_eq!(
        kill_kinds(&h.tick(min(10.0))),
        vec![(id, KillKind::Ceiling)]
    );
}

#[test]
fn kill_order_follows_deadlines_when_handled_late() {
    let mut h = H::default();
    let late = written_at(&mut h, min(1.0));
    let early = written_at(&mut h, min(2.0));
    h.line(min(3.0), late, l::DELTA);
    let events = h.tick(min(100.0));
    let kills = kill_kinds(&events);
    assert_eq!(kills, vec![(early, KillKind::Idle), (late, KillKind::Idle)]);
}

// ---------------------------------------------------------------- warnings once per spell

#[test]
fn stalling_is_reported_once_per_quiet_spell() {
    let mut h = H::default();
    let id = written(&mut h);
    let e = h.tick(min(9.0));
    assert_eq!(stalls(&e), vec![(StallClock::Idle, min(2.0))]);
    assert!(h.tick(min(9.5)).is_empty(), "not twice in one spell");
    h.line(min(9.5), id, l::PING); // a new idle spell (but not a new progress spell)
    let e = h.tick(min(18.0));
    assert_eq!(stalls(&e), vec![(StallClock::Idle, min(2.0))]);
    h.line(min(18.0), id, l::DELTA);
    let e = h.tick(min(26.5));
    assert_eq!(stalls(&e), vec![(StallClock::Idle, min(2.0))]);
}

#[test]
fn stalling_comes_before_the_kill_and_never_with_warn_at_one() {
    let mut h = H::new(Limits::default().with_warn_at(1.0).unwrap());
    written(&mut h);
    let e = h.tick(min(60.0));
    assert!(stalls(&e).is_empty());
    assert_eq!(kill_kinds(&e).len(), 1);
    let mut h = H::new(Limits::default().with_warn_at(0.5).unwrap());
    let id = written(&mut h);
    let e = h.run_until(min(60.0));
    assert_eq!(
        e[0],
        (
            min(5.0),
            Event::Stalling {
                id,
                clock: StallClock::Idle,
                remaining: min(5.0)
            }
        )
    );
    assert!(matches!(e[1], (t, Event::Killed(_)) if t == min(10.0)));
    assert_eq!(e.len(), 2);
}

#[test]
fn extended_is_reported_once_per_quiet_spell() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    h.line(Duration::ZERO, id, l::INIT);
    let e = h.tick(min(15.0));
    assert_eq!(
        e,
        vec![Event::Extended {
            id,
            reason: ExtendReason::PreWrite
        }]
    );
    h.r.set_utilization(h.at(min(15.0)), Some(0.95)); // reason changes, same spell
    assert_eq!(extends(&h.tick(min(19.0))), 0);
    h.line(min(19.0), id, l::DELTA);
    assert_eq!(extends(&h.tick(min(30.0))), 1);
}

// ---------------------------------------------------------------- outcomes

fn ended(lines: &[&str]) -> Outcome {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    for (i, line) in lines.iter().enumerate() {
        h.line(sec(i as f64), id, line);
    }
    h.drain();
    let out = h.r.end(h.at(min(1.0)), id).unwrap();
    assert_eq!(
        h.drain(),
        vec![Event::Ended {
            id,
            outcome: out.clone()
        }]
    );
    assert_eq!(h.r.end(h.at(min(2.0)), id), Some(out.clone()), "idempotent");
    assert!(h.drain().is_empty(), "Ended is emitted once");
    out
}

#[test]
fn outcome_success() {
    assert_eq!(ended(&[l::INIT, l::RESULT_OK]), Outcome::Success);
}

#[test]
fn outcome_no_result() {
    assert_eq!(ended(&[l::INIT, l::DELTA]), Outcome::NoResult);
    assert_eq!(ended(&[]), Outcome::NoResult);
}

#[test]
fn outcome_incomplete() {
    assert_eq!(ended(&[l::INIT, l::RESULT_INCOMPLETE]), Outcome::Incomplete);
}

#[test]
fn outcome_error_result_with_a_non_success_subtype() {
    assert_eq!(
        ended(&[l::INIT, l::RESULT_MAX_TURNS]),
        Outcome::ErrorResult(Box::new(ResultFacts {
            subtype: Some("error_max_turns".into()),
            is_error: Some(true),
            terminal_reason: Some("max_turns".into()),
            stop_reason: Some("tool_use".into()),
            ..ResultFacts::default()
        }))
    );
}

#[test]
fn outcome_max_output_tokens_is_an_error_despite_subtype_success() {
    assert_eq!(
        ended(&[l::INIT, l::RESULT_MAX_TOKENS]),
        Outcome::ErrorResult(Box::new(ResultFacts {
            subtype: Some("success".into()),
            is_error: Some(true),
            terminal_reason: Some("api_error".into()),
            stop_reason: Some("stop_sequence".into()),
            api_error: Some("max_output_tokens".into()),
            num_turns: Some(4),
            ..ResultFacts::default()
        }))
    );
}

#[test]
fn outcome_the_last_result_decides() {
    assert_eq!(
        ended(&[l::RESULT_MAX_TURNS, l::INIT, l::RESULT_OK]),
        Outcome::Success
    );
    assert!(matches!(
        ended(&[l::RESULT_OK, l::INIT, l::RESULT_MAX_TOKENS]),
        Outcome::ErrorResult(_)
    ));
}

#[test]
fn outcome_killed_and_no_events_after_end() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(1.0), id, l::RESULT_OK);
    // Killed at 12 (linger); end() at 13 reports the kill as the outcome.
    assert_eq!(
        h.r.end(h.at(min(13.0)), id),
        Some(Outcome::Killed {
            kind: KillKind::Linger
        })
    );
    let e = h.drain();
    assert!(matches!(e[1], Event::Killed(_)));
    assert_eq!(
        e[2],
        Event::Ended {
            id,
            outcome: Outcome::Killed {
                kind: KillKind::Linger
            }
        }
    );
    // Ended sessions have no deadlines and ignore lines.
    h.line(min(14.0), id, l::DELTA);
    assert!(h.tick(min(200.0)).is_empty());
}

#[test]
fn an_end_before_the_deadline_prevents_the_kill() {
    let mut h = H::default();
    let id = written(&mut h);
    assert_eq!(h.r.end(h.at(min(10.0) - NS), id), Some(Outcome::NoResult));
    assert!(kill_kinds(&h.tick(min(100.0))).is_empty());
    // At the deadline the kill wins (processed first).
    let mut h = H::default();
    let id = written(&mut h);
    assert_eq!(
        h.r.end(h.at(min(10.0)), id),
        Some(Outcome::Killed {
            kind: KillKind::Idle
        })
    );
}

/// Claude Code's session id: the first valid one seen, until a `system/init` names one; the
/// init's wins (it is the id `claude --resume` accepts), over lines before it and after it.
#[test]
fn the_claude_session_id_is_the_inits_else_the_first_seen() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    let sid = |h: &H| h.r.claude_session_id(id).map(|s| s.as_str().to_owned());
    assert_eq!(sid(&h), None);
    // Empty and control-character ids are not ids.
    h.line(
        sec(0.5),
        id,
        r#"{"type":"system","subtype":"hook_started","session_id":""}"#,
    );
    h.line(
        sec(0.6),
        id,
        r#"{"type":"tool_progress","session_id":"a\u0007b"}"#,
    );
    assert_eq!(sid(&h), None);
    h.line(
        sec(0.7),
        id,
        r#"{"type":"system","subtype":"hook_started","session_id":"pre-init"}"#,
    );
    assert_eq!(sid(&h).as_deref(), Some("pre-init"));
    h.line(sec(0.8), id, l::DELTA); // "s": later non-init lines do not replace it
    assert_eq!(sid(&h).as_deref(), Some("pre-init"));
    h.line(sec(1.0), id, l::INIT);
    assert_eq!(sid(&h).as_deref(), Some("cli-session-1"));
    h.line(sec(2.0), id, l::DELTA);
    h.line(sec(3.0), id, l::RESULT_OK);
    assert_eq!(sid(&h).as_deref(), Some("cli-session-1"));
    // A later init (a forked or new session) names the session from then on.
    h.line(
        sec(4.0),
        id,
        r#"{"type":"system","subtype":"init","session_id":"cli-session-2"}"#,
    );
    assert_eq!(sid(&h).as_deref(), Some("cli-session-2"));
    assert_eq!(
        h.r.snapshot(id)
            .unwrap()
            .claude_session_id
            .as_ref()
            .map(|s| s.as_str()),
        Some("cli-session-2")
    );
}

/// The last `result`'s facts are kept whatever the outcome, for the host to report.
#[test]
fn the_last_results_facts_are_kept() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    assert_eq!(h.r.result(id), None);
    h.line(sec(1.0), id, l::RESULT_MAX_TOKENS);
    assert_eq!(
        h.r.result(id).and_then(|r| r.api_error.as_deref()),
        Some("max_output_tokens")
    );
    h.line(sec(2.0), id, l::RESULT_OK);
    let r = h.r.result(id).unwrap();
    assert_eq!(r.is_error, Some(false));
    assert_eq!(r.api_error, None);
}

#[test]
fn ids_stay_unique_across_slot_reuse() {
    let mut h = H::default();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..100 {
        let id = h.reg(Duration::ZERO);
        assert!(seen.insert(id));
        h.r.unregister(id);
    }
    assert_eq!(h.r.len(), 0);
}

#[test]
fn a_flood_of_unanswered_requests_is_bounded_and_still_a_wait() {
    let mut h = H::default();
    let id = written(&mut h);
    for i in 0..1000 {
        h.line(sec(1.0 + i as f64), id, &l::can_use_tool(&format!("r{i}")));
    }
    assert!(h.r.snapshot(id).unwrap().paused);
    // An unremembered id (beyond the bound) answers nothing; the state change ends the wait
    // only once no remembered request is pending.
    h.input(min(30.0), id, &l::control_response("r999"));
    assert!(h.r.snapshot(id).unwrap().paused);
    for i in 0..64 {
        h.input(min(30.0), id, &l::control_response(&format!("r{i}")));
    }
    assert!(!h.r.snapshot(id).unwrap().paused);
}

// ---------------------------------------------------------------- no extension at factor 1

#[test]
fn with_extend_factor_one_a_kill_reports_no_extension_and_none_is_announced() {
    let limits = Limits::default().with_extend_factor(1.0).unwrap();
    let mut h = H::new(limits);
    // Pre-write (no write tool completed yet) and at high utilization: both would extend.
    let id = h.reg(Duration::ZERO);
    h.line(Duration::ZERO, id, l::INIT);
    h.r.set_utilization(h.at(Duration::ZERO), Some(0.99));
    assert_eq!(h.r.snapshot(id).unwrap().extension, None);
    let events = h.run_until(min(11.0));
    assert!(
        events
            .iter()
            .all(|(_, e)| !matches!(e, Event::Extended { .. })),
        "{events:?}"
    );
    let kill = events
        .iter()
        .find_map(|(at, e)| match e {
            Event::Killed(k) => Some((*at, k.clone())),
            _ => None,
        })
        .expect("killed");
    assert_eq!(kill.0, min(10.0));
    assert_eq!((kill.1.kind, kill.1.extension), (KillKind::Idle, None));
}

#[test]
fn with_the_default_factor_the_same_kill_reports_the_extension_that_held() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    h.line(Duration::ZERO, id, l::INIT);
    let k = h.kills(min(20.0));
    assert_eq!(k[0].extension, Some(ExtendReason::PreWrite));
}
