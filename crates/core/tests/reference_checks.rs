//! Parity with the reference TypeScript suite: one test per watchdog check (82), in virtual
//! time, numbered `ref N` in the order of that suite's checks.
//!
//! Conventions. T0 is the registry's base instant. A "lane" is a session with a 70-minute
//! ceiling registered at T0; because the reference counts registration as activity while our
//! startup clock waits for a first line, every lane is fed a `system/init` at T0. A "written"
//! lane also gets `tool_boundary(T0, Some("Write"))` (the reference's `activity('Write', T0)`).
//! The reference's `tick(now)` is `handle_timeout(now)` and then draining `poll_event`.
//!
//! # Deliberately changed checks
//!
//! - Exact deadlines instead of a 30 s tick: a kill is dated exactly at its deadline, so the
//!   numbers that the reference reads at the tick change: ref 11 (`elapsed` 35 min, not 36),
//!   ref 12 (`since_tool` 10 min, not 11), ref 50 (`elapsed` 11 min and `since_tool` 10 min,
//!   not 11.5 and 10.5). Every "killed at the tick" check also asserts the exact instant.
//! - ref 13, 20–23, 51–53 (abort controller, throwing callbacks, `this`): callbacks belong to
//!   the tokio runtime layer, which covers them. Here the core's equivalent is tested: events
//!   are plain values, a kill is recorded on the session once, and other sessions are still
//!   checked and killed in the same pass.
//! - ref 47 (`toolHeartbeats: false`): there is no such option; heartbeats are keep-alives by
//!   contract. The closest equivalent: a session kept up by heartbeats alone is killed by the
//!   no-progress cap.
//! - ref 48 (`getUtilization` called with the tick's `now`): utilization is pushed with
//!   `set_utilization(now, u)`; the check becomes "a change applies from exactly that instant".
//! - ref 54/55 (real timer, `tickMs`): no timer in a sans-IO core; `poll_timeout` names the
//!   exact instant instead, and nothing is due before it.
//! - ref 56–61 (RangeError texts, frozen objects): validation is the `Limits` builders'
//!   `ConfigError` text; `tickMs` has no equivalent (ref 59 checks a NaN on `warn_at`);
//!   "frozen" becomes "builders return new values and never change the original or the
//!   defaults".
//! - ref 66/67 (`close()`): `Registry::clear()`.
//! - ref 71/72: `assistant` and `system/init` ARE progress for us (they move the clock), the
//!   reverse of the reference's verdict.
//! - ref 73/77/79 (settled forever): our linger deadline (11 min) bounds the post-result wait,
//!   so these checks use a 120-minute linger to keep the reference's numbers, and ref 73 also
//!   checks the default linger kill.
//! - ref 74 uses `tool_progress` too: a heartbeat after a result keeps the session settled
//!   (the reference treats `tool_progress` as work).

mod common;

use std::time::Duration;

use common::{kill_kinds, lines as l, min, sec, H};
use watchdog_core::{
    Event, ExtendReason, Kill, KillKind, Limits, Registry, SessionConfig, SessionId, Signal,
};

fn lane_limits() -> Limits {
    Limits::default().with_ceiling(Some(min(70.0))).unwrap()
}

/// A lane: 70-minute ceiling, registered at T0 with a first line at T0.
fn lane(h: &mut H) -> SessionId {
    lane_with(h, lane_limits())
}

fn lane_with(h: &mut H, limits: Limits) -> SessionId {
    let id = h.reg_with(min(0.0), limits.with_ceiling(Some(min(70.0))).unwrap());
    h.line(min(0.0), id, l::INIT);
    id
}

/// A lane whose first write landed at T0.
fn written(h: &mut H) -> SessionId {
    let id = lane(h);
    h.r.tool_boundary(h.at(min(0.0)), id, Some("Write"));
    id
}

fn written_with(h: &mut H, limits: Limits) -> SessionId {
    let id = lane_with(h, limits);
    h.r.tool_boundary(h.at(min(0.0)), id, Some("Write"));
    id
}

fn extended(events: &[Event]) -> Vec<ExtendReason> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Extended { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect()
}

fn only_kill(h: &mut H, at: Duration) -> Kill {
    let kills = h.kills(at);
    assert_eq!(kills.len(), 1, "{kills:?}");
    kills.into_iter().next().unwrap()
}

// ---------------------------------------------------------------- pure policy (1–7)

#[test]
fn ref_01_productive_stall_of_8m48s_post_write_is_ok() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.4));
    assert!(h.kills(sec(8.0 * 60.0 + 48.0)).is_empty());
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_02_eleven_minutes_idle_post_write_is_killed_idle() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.4));
    let k = only_kill(&mut h, min(11.0));
    assert_eq!((k.id, k.kind), (id, KillKind::Idle));
    assert_eq!(h.off(&k), min(10.0));
}

#[test]
fn ref_03_eleven_minutes_at_high_utilization_extends() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.92));
    let events = h.tick(min(11.0));
    assert_eq!(extended(&events), vec![ExtendReason::HighUtilization]);
    assert!(kill_kinds(&events).is_empty());
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_04_twenty_one_minutes_at_high_utilization_is_killed() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.92));
    let events = h.tick(min(21.0));
    assert_eq!(kill_kinds(&events), vec![(id, KillKind::Idle)]);
    let k = h.r.kill(id).unwrap();
    assert_eq!(h.off(k), min(20.0));
    assert_eq!(k.extension, Some(ExtendReason::HighUtilization));
}

#[test]
fn ref_05_pre_write_fifteen_minutes_quiet_extends() {
    let mut h = H::default();
    let id = lane(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.3));
    let events = h.tick(min(15.0));
    assert_eq!(extended(&events), vec![ExtendReason::PreWrite]);
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_06_pre_write_twenty_one_minutes_quiet_is_killed() {
    let mut h = H::default();
    let id = lane(&mut h);
    let k = only_kill(&mut h, min(21.0));
    assert_eq!((k.id, k.kind), (id, KillKind::Idle));
    assert_eq!(h.off(&k), min(20.0));
    assert_eq!(k.extension, Some(ExtendReason::PreWrite));
}

#[test]
fn ref_07_busy_session_past_the_ceiling_is_killed_ceiling() {
    let mut h = H::default();
    let id = written(&mut h);
    // Busy: progress every 30 s up to 71 min.
    let mut t = sec(30.0);
    while t <= min(71.0) {
        h.line(t, id, l::DELTA);
        t += sec(30.0);
    }
    let events = h.drain();
    assert_eq!(kill_kinds(&events), vec![(id, KillKind::Ceiling)]);
    assert_eq!(h.off(h.r.kill(id).unwrap()), min(70.0));
}

// ---------------------------------------------------------------- lifecycle (8–15)

/// The lifecycle scenario: a lane, `Read` at +9, `Write` at +25.
fn lifecycle() -> (H, SessionId) {
    let mut h = H::default();
    let id = lane(&mut h);
    h.r.tool_boundary(h.at(min(9.0)), id, Some("Read"));
    (h, id)
}

#[test]
fn ref_08_read_at_9_tick_at_12_no_kill() {
    let (mut h, _) = lifecycle();
    assert!(h.kills(min(12.0)).is_empty());
}

#[test]
fn ref_09_tick_at_24_pre_write_no_kill() {
    let (mut h, _) = lifecycle();
    h.tick(min(12.0));
    assert!(h.kills(min(24.0)).is_empty());
}

#[test]
fn ref_10_extend_reasons_are_exactly_pre_write() {
    let (mut h, _) = lifecycle();
    let mut events = h.tick(min(12.0));
    events.extend(h.tick(min(24.0)));
    assert_eq!(extended(&events), vec![ExtendReason::PreWrite]);
}

fn lifecycle_kill() -> (H, SessionId, Kill) {
    let (mut h, id) = lifecycle();
    h.tick(min(24.0));
    h.r.tool_boundary(h.at(min(25.0)), id, Some("Write"));
    let k = only_kill(&mut h, min(36.0));
    (h, id, k)
}

#[test]
fn ref_11_write_at_25_then_one_idle_kill_dated_exactly() {
    let (h, id, k) = lifecycle_kill();
    assert_eq!((k.id, k.kind), (id, KillKind::Idle));
    // Changed: exact deadline 25 + 10 = 35 min (the reference reads 36 at its tick).
    assert_eq!(k.elapsed, min(35.0));
    assert_eq!(h.off(&k), min(35.0));
}

#[test]
fn ref_12_since_tool_is_measured_from_the_last_tool_boundary() {
    let (_, _, k) = lifecycle_kill();
    // Changed: 10 min at the exact deadline (the reference reads 11 at its tick).
    assert_eq!(k.since_tool, min(10.0));
    assert_eq!(k.extension, None);
}

#[test]
fn ref_13_the_kill_is_reported_as_an_event_and_recorded() {
    // The abort itself is the runtime's job; the core reports the decision.
    let (h, id, k) = lifecycle_kill();
    assert_eq!(h.r.kill(id), Some(&k));
}

#[test]
fn ref_14_a_later_tick_reports_no_second_kill() {
    let (mut h, id, _) = lifecycle_kill();
    assert!(h.tick(min(37.0)).is_empty());
    assert!(h.tick(min(500.0)).is_empty());
    assert!(h.r.kill(id).is_some());
}

#[test]
fn ref_15_unregister_returns_the_reported_kill() {
    let (mut h, id, k) = lifecycle_kill();
    assert_eq!(h.r.unregister(id), Some(k));
    assert_eq!(h.r.unregister(id), None);
}

// ---------------------------------------------------------------- monitor-driven (16–19)

#[test]
fn ref_16_high_utilization_twelve_minutes_idle_no_kill() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.95));
    assert!(h.kills(min(12.0)).is_empty());
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_17_extended_once_with_high_utilization_across_two_ticks() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.95));
    let mut events = h.tick(min(12.0));
    events.extend(h.tick(min(13.0)));
    assert_eq!(
        events,
        vec![Event::Extended {
            id,
            reason: ExtendReason::HighUtilization
        }]
    );
    assert_eq!(h.r.utilization(), Some(0.95));
}

#[test]
fn ref_18_twenty_two_minutes_idle_at_high_utilization_is_killed() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.95));
    h.tick(min(12.0));
    let k = only_kill(&mut h, min(22.0));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Idle, min(20.0)));
    assert_eq!(k.utilization, Some(0.95));
}

#[test]
fn ref_19_an_expired_reading_gives_no_extension() {
    // The monitor's active() turns None at the reset; the host pushes that.
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.95));
    h.r.set_utilization(h.at(min(5.0)), None);
    let k = only_kill(&mut h, min(11.0));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Idle, min(10.0)));
    assert_eq!(k.extension, None);
}

// ---------------------------------------------------------------- callback robustness (20–23)

#[test]
fn ref_20_handling_kills_never_panics_even_if_events_are_not_drained() {
    let mut h = H::default();
    let a = written(&mut h);
    h.r.handle_timeout(h.at(min(11.0)));
    h.r.handle_timeout(h.at(min(12.0)));
    assert_eq!(h.r.kill(a).map(|k| k.kind), Some(KillKind::Idle));
}

#[test]
fn ref_21_the_kill_event_is_emitted_once_even_when_read_late() {
    let mut h = H::default();
    let a = written(&mut h);
    h.r.handle_timeout(h.at(min(11.0)));
    h.r.handle_timeout(h.at(min(30.0)));
    assert_eq!(kill_kinds(&h.drain()), vec![(a, KillKind::Idle)]);
}

#[test]
fn ref_22_the_next_session_is_still_checked_and_killed() {
    let mut h = H::default();
    let a = written(&mut h);
    let b = written(&mut h);
    let events = h.tick(min(11.0));
    assert_eq!(
        kill_kinds(&events),
        vec![(a, KillKind::Idle), (b, KillKind::Idle)]
    );
}

#[test]
fn ref_23_each_kill_names_its_own_session() {
    // The reference calls a class method with its own `this`; the core's equivalent is that
    // each kill carries the id of the session it is about, so the host can route it.
    let mut h = H::default();
    let ids: Vec<_> = (0..3).map(|_| written(&mut h)).collect();
    for (i, id) in ids.iter().enumerate() {
        h.line(min(i as f64), *id, l::DELTA);
    }
    let events = h.tick(min(30.0));
    let killed: Vec<_> = kill_kinds(&events).into_iter().map(|(id, _)| id).collect();
    assert_eq!(killed, ids);
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(h.off(h.r.kill(*id).unwrap()), min(10.0 + i as f64));
    }
}

// ---------------------------------------------------------------- stream vs tool clock (24–26)

#[test]
fn ref_24_a_recent_delta_keeps_a_session_alive_long_after_its_last_tool() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(5.0), id, l::DELTA);
    h.line(min(10.0), id, l::DELTA);
    h.line(min(15.0) - sec(10.0), id, l::DELTA);
    assert!(h.kills(min(15.0)).is_empty());
    assert_eq!(
        h.r.snapshot(id).unwrap().last_tool,
        h.at(min(0.0)),
        "the delta is not a tool boundary"
    );
}

#[test]
fn ref_25_last_delta_nine_and_a_half_minutes_ago_is_ok() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(5.0), id, l::DELTA);
    assert!(h.kills(min(14.5)).is_empty());
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_26_last_delta_ten_and_a_half_minutes_ago_is_killed() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(5.0), id, l::DELTA);
    let k = only_kill(&mut h, min(15.5));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Idle, min(15.0)));
    assert_eq!(k.since_tool, min(15.0));
    assert_eq!(k.since_progress, min(10.0));
}

// ---------------------------------------------------------------- heartbeat (27–28)

fn heartbeat_session() -> (H, SessionId) {
    let mut h = H::default();
    let id = lane(&mut h);
    h.r.tool_boundary(h.at(min(1.0)), id, Some("Write"));
    h.line(min(4.0), id, l::TOOL_PROGRESS);
    (h, id)
}

#[test]
fn ref_27_a_heartbeat_moves_the_idle_clock() {
    let (mut h, _) = heartbeat_session();
    assert!(h.kills(min(13.0)).is_empty());
}

#[test]
fn ref_28_ten_and_a_half_minutes_after_the_heartbeat_is_killed() {
    let (mut h, id) = heartbeat_session();
    let k = only_kill(&mut h, min(14.5));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Idle, min(14.0)));
    assert_eq!(k.since_keepalive, min(10.0));
    assert_eq!(k.since_progress, min(13.0));
    assert_eq!(k.last_signal, Some(Signal::KeepAlive));
}

// ---------------------------------------------------------------- fan-out and isolation (29–32)

fn two_lanes() -> (H, SessionId, SessionId) {
    let mut h = H::default();
    let working = written(&mut h);
    let silent = written(&mut h);
    for i in 1..=12 {
        h.line(min(i as f64), working, l::DELTA);
    }
    (h, working, silent)
}

#[test]
fn ref_29_of_two_lanes_the_working_one_survives() {
    let (mut h, working, _) = two_lanes();
    h.tick(min(12.0));
    assert!(h.r.kill(working).is_none());
}

#[test]
fn ref_30_the_silent_sibling_is_killed_on_its_own_idle_time() {
    let (mut h, working, silent) = two_lanes();
    let events = h.tick(min(12.0));
    assert_eq!(kill_kinds(&events), vec![(silent, KillKind::Idle)]);
    assert_eq!(h.off(h.r.kill(silent).unwrap()), min(10.0));
    assert!(h.r.kill(working).is_none());
}

#[test]
fn ref_31_an_unregistered_id_never_moves_a_live_session() {
    let mut h = H::default();
    let gone = written(&mut h);
    h.r.unregister(gone);
    let live = written(&mut h);
    assert_ne!(gone, live, "ids are never reused");
    h.line(min(5.0), gone, l::DELTA);
    h.r.tool_boundary(h.at(min(6.0)), gone, Some("Write"));
    h.r.settle(h.at(min(7.0)), gone);
    assert_eq!(h.r.end(h.at(min(7.0)), gone), None);
    let k = only_kill(&mut h, min(11.0));
    assert_eq!((k.id, h.off(&k)), (live, min(10.0)));
}

#[test]
fn ref_32_an_ended_session_is_never_killed() {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(1.0), id, l::RESULT_OK);
    assert_eq!(
        h.r.end(h.at(min(2.0)), id),
        Some(watchdog_core::Outcome::Success)
    );
    h.drain();
    assert!(h.tick(min(500.0)).is_empty());
    assert!(h.r.kill(id).is_none());
    assert_eq!(h.r.poll_timeout(), None);
}

// ---------------------------------------------------------------- no cascade (33–36)

fn four_lanes() -> (H, Vec<SessionId>, SessionId) {
    let mut h = H::default();
    let ids: Vec<_> = (0..4).map(|_| written(&mut h)).collect();
    for id in &ids[..3] {
        h.line(min(1.5), *id, l::DELTA);
    }
    let d = ids[3];
    (h, ids[..3].to_vec(), d)
}

#[test]
fn ref_33_d_dies_on_its_own_idle_time() {
    let (mut h, _, d) = four_lanes();
    let events = h.tick(min(10.5));
    assert_eq!(kill_kinds(&events), vec![(d, KillKind::Idle)]);
    assert_eq!(h.off(h.r.kill(d).unwrap()), min(10.0));
}

#[test]
fn ref_34_the_others_survive_nine_minutes_idle_with_a_sibling_dead() {
    let (mut h, others, _) = four_lanes();
    h.tick(min(10.5));
    assert!(others.iter().all(|id| h.r.kill(*id).is_none()));
}

#[test]
fn ref_35_they_are_still_alive_at_nine_and_a_half_minutes() {
    let (mut h, others, _) = four_lanes();
    h.tick(min(10.5));
    assert!(h.kills(min(11.0)).is_empty());
    assert!(others.iter().all(|id| h.r.kill(*id).is_none()));
}

#[test]
fn ref_36_they_die_exactly_at_their_deadline_inclusive() {
    let (mut h, others, _) = four_lanes();
    h.tick(min(10.5));
    assert!(h.kills(min(11.5) - Duration::from_nanos(1)).is_empty());
    let events = h.tick(min(11.5));
    let mut killed: Vec<_> = kill_kinds(&events).into_iter().map(|(id, _)| id).collect();
    killed.sort();
    assert_eq!(killed, others);
}

// ---------------------------------------------------------------- each option (37–61)

#[test]
fn ref_37_idle_one_minute_kills_at_two_minutes_idle() {
    let mut h = H::default();
    let id = written_with(&mut h, Limits::default().with_idle(min(1.0)).unwrap());
    let k = only_kill(&mut h, min(2.0));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Idle, min(1.0)));
}

#[test]
fn ref_38_the_default_idle_keeps_the_same_session_alive() {
    let mut h = H::default();
    let id = written(&mut h);
    assert!(h.kills(min(2.0)).is_empty());
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_39_extend_factor_one_gives_no_pre_write_extension() {
    let mut h = H::default();
    let id = lane_with(&mut h, Limits::default().with_extend_factor(1.0).unwrap());
    let events = h.tick(min(11.0));
    assert!(extended(&events).is_empty(), "factor 1 never extends");
    assert_eq!(kill_kinds(&events), vec![(id, KillKind::Idle)]);
    assert_eq!(h.off(h.r.kill(id).unwrap()), min(10.0));
}

#[test]
fn ref_40_the_default_factor_extends_it() {
    let mut h = H::default();
    let id = lane(&mut h);
    let events = h.tick(min(11.0));
    assert_eq!(extended(&events), vec![ExtendReason::PreWrite]);
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_41_high_utilization_half_with_point_six_extends() {
    let mut h = H::default();
    let id = written_with(
        &mut h,
        Limits::default().with_high_utilization(0.5).unwrap(),
    );
    h.r.set_utilization(h.at(min(0.0)), Some(0.6));
    let events = h.tick(min(11.0));
    assert_eq!(extended(&events), vec![ExtendReason::HighUtilization]);
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_42_the_default_threshold_with_point_six_kills() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.6));
    let k = only_kill(&mut h, min(11.0));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Idle, min(10.0)));
}

#[test]
fn ref_43_write_tools_bash_lets_bash_end_pre_write() {
    let mut h = H::default();
    let id = lane_with(&mut h, Limits::default().with_write_tools(["Bash"]));
    h.r.tool_boundary(h.at(min(0.0)), id, Some("Bash"));
    let k = only_kill(&mut h, min(11.0));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Idle, min(10.0)));
}

#[test]
fn ref_44_by_default_bash_does_not_end_pre_write() {
    let mut h = H::default();
    let id = lane(&mut h);
    h.r.tool_boundary(h.at(min(0.0)), id, Some("Bash"));
    assert!(h.kills(min(11.0)).is_empty());
    assert!(!h.r.snapshot(id).unwrap().wrote);
}

#[test]
fn ref_45_with_bash_as_write_tool_write_is_no_longer_one() {
    let mut h = H::default();
    let id = lane_with(&mut h, Limits::default().with_write_tools(["Bash"]));
    h.r.tool_boundary(h.at(min(0.0)), id, Some("Write"));
    assert!(h.kills(min(11.0)).is_empty());
    assert!(!h.r.snapshot(id).unwrap().wrote);
}

fn heartbeats_every_30s(h: &mut H, id: SessionId, until: Duration) {
    let mut t = sec(30.0);
    while t <= until {
        h.line(t, id, l::TOOL_PROGRESS);
        t += sec(30.0);
    }
}

#[test]
fn ref_46_tool_progress_every_30s_keeps_the_session_alive_at_12_min() {
    let mut h = H::default();
    let id = written(&mut h);
    heartbeats_every_30s(&mut h, id, min(12.0));
    assert!(h.kills(min(12.0)).is_empty());
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_47_heartbeats_alone_do_not_outlive_the_no_progress_cap() {
    // Changed: no `toolHeartbeats` switch; heartbeats are keep-alives, bounded by no_progress.
    let mut h = H::default();
    let id = written_with(
        &mut h,
        Limits::default().with_no_progress(min(11.0)).unwrap(),
    );
    heartbeats_every_30s(&mut h, id, min(12.0));
    let events = h.drain();
    assert_eq!(kill_kinds(&events), vec![(id, KillKind::NoProgress)]);
    assert_eq!(h.off(h.r.kill(id).unwrap()), min(11.0));
}

#[test]
fn ref_48_a_utilization_applies_from_exactly_the_instant_it_is_set() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.95));
    h.r.set_utilization(h.at(min(12.0)), Some(0.5));
    let events = h.drain();
    assert_eq!(kill_kinds(&events), vec![(id, KillKind::Idle)]);
    assert_eq!(h.off(h.r.kill(id).unwrap()), min(12.0));
}

#[test]
fn ref_49_a_high_utilization_extends_patience() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(0.95));
    let events = h.tick(min(19.0));
    assert_eq!(extended(&events), vec![ExtendReason::HighUtilization]);
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_50_every_call_uses_the_instant_it_is_given() {
    let mut h = H::default();
    let id = lane(&mut h);
    h.r.tool_boundary(h.at(min(1.0)), id, Some("Write"));
    let k = only_kill(&mut h, min(11.5));
    // Changed: exact deadline at 11 min (the reference reads 11.5 / 10.5 at its tick).
    assert_eq!(k.elapsed, min(11.0));
    assert_eq!(k.since_tool, min(10.0));
}

#[test]
fn ref_51_unusable_utilization_values_never_panic() {
    let mut h = H::default();
    let id = written(&mut h);
    for u in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 7.0] {
        h.r.set_utilization(h.at(min(1.0)), Some(u));
    }
    h.r.set_utilization(h.at(min(1.0)), Some(f64::NAN));
    assert_eq!(h.r.utilization(), None, "NaN reads as unknown");
    let k = only_kill(&mut h, min(11.0));
    assert_eq!((k.id, k.kind), (id, KillKind::Idle));
}

#[test]
fn ref_52_the_kill_is_still_reported() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.set_utilization(h.at(min(0.0)), Some(f64::NAN));
    let events = h.tick(min(11.0));
    assert_eq!(kill_kinds(&events), vec![(id, KillKind::Idle)]);
}

#[test]
fn ref_53_the_kill_is_recorded_on_the_session_whatever_the_host_does_with_events() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.handle_timeout(h.at(min(11.0)));
    // The host drops the event on the floor.
    while h.r.poll_event().is_some() {}
    assert_eq!(h.r.kill(id).map(|k| k.kind), Some(KillKind::Idle));
    assert!(h.tick(min(20.0)).is_empty());
}

#[test]
fn ref_54_poll_timeout_names_the_exact_deadline() {
    let mut h = H::new(
        Limits::default()
            .with_idle(Duration::from_millis(1))
            .unwrap(),
    );
    let id = h.reg(Duration::ZERO);
    h.r.tool_boundary(h.t0, id, Some("Write"));
    // Warn first at 0.8 ms, then the kill at exactly 1 ms.
    let events = h.run_until(sec(1.0));
    assert_eq!(
        kill_kinds(&events.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>()),
        vec![(id, KillKind::Idle)]
    );
    assert_eq!(h.off(h.r.kill(id).unwrap()), Duration::from_millis(1));
}

#[test]
fn ref_55_nothing_is_due_before_poll_timeout() {
    let mut h = H::default();
    let id = h.reg(Duration::ZERO);
    assert_eq!(
        h.r.poll_timeout(),
        Some(h.at(min(3.0))),
        "the startup deadline"
    );
    assert!(h.tick(min(3.0) - Duration::from_nanos(1)).is_empty());
    assert_eq!(h.r.poll_timeout(), Some(h.at(min(3.0))));
    assert_eq!(kill_kinds(&h.tick(min(3.0))), vec![(id, KillKind::Startup)]);
}

#[test]
fn ref_56_idle_zero_is_rejected_with_a_clear_message() {
    let e = Limits::default().with_idle(Duration::ZERO).unwrap_err();
    assert_eq!(e.to_string(), "idle must be a duration > 0, got 0ns");
}

#[test]
fn ref_57_extend_factor_below_one_is_rejected() {
    let e = Limits::default().with_extend_factor(0.5).unwrap_err();
    assert_eq!(
        e.to_string(),
        "extend_factor must be a number >= 1, got 0.5"
    );
    assert!(Limits::default().with_extend_factor(f64::NAN).is_err());
    assert!(Limits::default().with_extend_factor(f64::INFINITY).is_err());
}

#[test]
fn ref_58_high_utilization_outside_unit_is_rejected() {
    let e = Limits::default().with_high_utilization(1.5).unwrap_err();
    assert_eq!(
        e.to_string(),
        "high_utilization must be a number in [0, 1], got 1.5"
    );
    assert!(Limits::default().with_high_utilization(-0.1).is_err());
    assert!(Limits::default().with_high_utilization(f64::NAN).is_err());
}

#[test]
fn ref_59_nan_is_rejected_where_a_fraction_is_expected() {
    // Changed: there is no tickMs; warn_at is the remaining fraction option.
    let e = Limits::default().with_warn_at(f64::NAN).unwrap_err();
    assert_eq!(e.to_string(), "warn_at must be a number in (0, 1], got NaN");
    assert!(Limits::default().with_warn_at(0.0).is_err());
    assert!(Limits::default()
        .with_ceiling(Some(Duration::ZERO))
        .is_err());
    assert!(Limits::default().with_linger(Duration::ZERO).is_err());
    assert!(Limits::default().with_no_progress(Duration::ZERO).is_err());
    assert!(Limits::default().with_startup(Duration::ZERO).is_err());
}

#[test]
fn ref_60_an_unset_option_keeps_its_default_while_others_apply() {
    let l = Limits::default().with_idle(min(1.0)).unwrap();
    let d = Limits::default();
    assert_eq!(l.idle(), min(1.0));
    assert_eq!(l.extend_factor(), d.extend_factor());
    assert_eq!(l.high_utilization(), 0.9);
    assert_eq!(l.startup(), min(3.0));
    assert_eq!(l.no_progress(), min(30.0));
    assert_eq!(l.linger(), min(11.0));
    assert_eq!(l.ceiling(), None);
    assert_eq!(l.warn_at(), 0.8);
    let tools: Vec<&str> = l.write_tools().iter().map(|t| &**t).collect();
    assert_eq!(tools, ["Write", "Edit", "MultiEdit", "NotebookEdit"]);
}

#[test]
fn ref_61_limits_are_values_builders_never_change_the_original() {
    let d = Limits::default();
    let copy = d.clone();
    let changed = copy.clone().with_write_tools(["Bash"]);
    assert_eq!(copy, d);
    assert_eq!(Limits::default(), d, "defaults are fixed");
    assert!(changed.is_write_tool("Bash") && !changed.is_write_tool("Write"));
    assert!(d.is_write_tool("Write"));
    // A registry keeps its own copy.
    let r = Registry::new(d.clone());
    assert_eq!(r.limits(), &d);
}

// ---------------------------------------------------------------- instances, tick, close (62–67)

#[test]
fn ref_62_another_registry_never_checks_this_ones_sessions() {
    let mut h = H::default();
    let id = written(&mut h);
    let mut other = Registry::new(Limits::default());
    other.handle_timeout(h.at(min(30.0)));
    assert_eq!(other.poll_event(), None);
    assert!(h.r.kill(id).is_none());
}

#[test]
fn ref_63_its_own_registry_does() {
    let mut h = H::default();
    let id = written(&mut h);
    assert_eq!(kill_kinds(&h.tick(min(30.0))), vec![(id, KillKind::Idle)]);
}

#[test]
fn ref_64_a_pass_reports_exactly_its_kills_and_spares_the_pre_write_lane() {
    let mut h = H::default();
    let w = written(&mut h);
    let pre = lane(&mut h);
    let kills = h.kills(min(11.0));
    assert_eq!(kills.len(), 1);
    assert_eq!(Some(&kills[0]), h.r.kill(w));
    assert!(h.r.kill(pre).is_none());
}

#[test]
fn ref_65_a_session_killed_earlier_is_not_reported_again() {
    let mut h = H::default();
    let w = written(&mut h);
    let pre = lane(&mut h);
    assert_eq!(h.kills(min(11.0)).len(), 1);
    let later = h.kills(min(25.0));
    assert_eq!(later.iter().map(|k| k.id).collect::<Vec<_>>(), vec![pre]);
    assert!(h.r.kill(w).is_some());
}

#[test]
fn ref_66_a_cleared_registry_reports_nothing() {
    let mut h = H::default();
    written(&mut h);
    h.r.clear();
    assert!(h.tick(min(30.0)).is_empty());
    assert_eq!(h.r.poll_timeout(), None);
    assert!(h.r.is_empty());
    // Registering after a clear works.
    let id = written(&mut h);
    assert_eq!(kill_kinds(&h.tick(min(41.0))), vec![(id, KillKind::Idle)]);
}

#[test]
fn ref_67_cleared_sessions_are_never_killed() {
    let mut h = H::default();
    let id = written(&mut h);
    h.r.clear();
    h.tick(min(100.0));
    assert!(h.r.kill(id).is_none());
    h.line(min(101.0), id, l::DELTA);
    assert!(h.tick(min(200.0)).is_empty());
}

// ---------------------------------------------------------------- observe classification (68–72)

/// One frame at +5 on a written lane, tick at +11: alive iff the frame moved the clock.
fn frame_at_5(frame: &str) -> Vec<Event> {
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(5.0), id, frame);
    let events = h.tick(min(11.0));
    assert_eq!(h.r.snapshot(id).unwrap().last_line, Some(h.at(min(5.0))));
    events
}

#[test]
fn ref_68_a_stream_event_moves_the_clock() {
    assert!(kill_kinds(&frame_at_5(l::DELTA)).is_empty());
}

#[test]
fn ref_69_thinking_tokens_move_the_clock() {
    assert!(kill_kinds(&frame_at_5(l::THINKING)).is_empty());
}

#[test]
fn ref_70_a_rate_limit_event_moves_the_idle_clock() {
    assert!(kill_kinds(&frame_at_5(l::RATE_LIMIT)).is_empty());
}

#[test]
fn ref_71_an_assistant_message_moves_the_clock_changed() {
    // Changed: an assistant message is progress for us.
    assert!(kill_kinds(&frame_at_5(l::ASSISTANT_TEXT)).is_empty());
}

#[test]
fn ref_72_system_init_moves_the_clock_changed() {
    // Changed: system/init is progress for us.
    assert!(kill_kinds(&frame_at_5(l::INIT)).is_empty());
}

// ---------------------------------------------------------------- settled (73–79)

fn long_linger() -> Limits {
    Limits::default().with_linger(min(120.0)).unwrap()
}

#[test]
fn ref_73_a_result_settles_the_session() {
    let mut h = H::default();
    let id = written_with(&mut h, long_linger());
    h.line(min(5.0), id, l::RESULT_OK);
    assert!(h.kills(min(40.0)).is_empty());
    // With the default linger, the post-result wait is bounded (changed: linger).
    let mut h = H::default();
    let id = written(&mut h);
    h.line(min(5.0), id, l::RESULT_OK);
    let k = only_kill(&mut h, min(40.0));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Linger, min(16.0)));
}

#[test]
fn ref_74_keep_alives_after_the_result_keep_it_settled() {
    let mut h = H::default();
    let id = written_with(&mut h, long_linger());
    h.line(min(5.0), id, l::RESULT_OK);
    h.line(min(6.0), id, l::RATE_LIMIT);
    h.line(min(7.0), id, l::TOOL_PROGRESS);
    assert!(h.r.snapshot(id).unwrap().settled);
    assert!(h.kills(min(40.0)).is_empty());
}

#[test]
fn ref_75_a_stream_frame_after_the_result_restarts_the_idle_clock() {
    let mut h = H::default();
    let id = written_with(&mut h, long_linger());
    h.line(min(5.0), id, l::RESULT_OK);
    h.line(min(7.0), id, l::DELTA);
    assert!(!h.r.snapshot(id).unwrap().settled);
    let k = only_kill(&mut h, min(40.0));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Idle, min(17.0)));
}

#[test]
fn ref_76_a_tool_boundary_after_the_result_does_the_same() {
    let mut h = H::default();
    let id = written_with(&mut h, long_linger());
    h.line(min(5.0), id, l::RESULT_OK);
    h.r.tool_boundary(h.at(min(7.0)), id, None);
    let k = only_kill(&mut h, min(40.0));
    assert_eq!((k.id, k.kind, h.off(&k)), (id, KillKind::Idle, min(17.0)));
}

#[test]
fn ref_77_settle_stops_the_idle_kill() {
    let mut h = H::default();
    let id = written_with(&mut h, long_linger());
    h.line(min(5.0), id, l::DELTA);
    h.r.settle(h.at(min(6.0)), id);
    assert_eq!(h.drain(), vec![Event::Settled { id }]);
    assert!(h.kills(min(30.0)).is_empty());
}

#[test]
fn ref_78_the_ceiling_still_kills_a_settled_session() {
    let mut h = H::default();
    let id = written_with(&mut h, long_linger());
    h.line(min(5.0), id, l::RESULT_OK);
    h.r.settle(h.at(min(6.0)), id);
    h.tick(min(30.0));
    let k = only_kill(&mut h, min(71.0));
    assert_eq!(
        (k.id, k.kind, h.off(&k)),
        (id, KillKind::Ceiling, min(70.0))
    );
}

#[test]
fn ref_79_a_settled_session_twenty_five_minutes_idle_is_ok() {
    let mut h = H::default();
    let id = written_with(&mut h, long_linger());
    h.r.settle(h.at(min(0.0)), id);
    assert!(h.kills(min(25.0)).is_empty());
    assert!(h.r.snapshot(id).unwrap().settled);
}

// ---------------------------------------------------------------- hook (80–82)

fn hook_at_10(tool: Option<&str>) -> (H, SessionId, Vec<Event>) {
    let mut h = H::default();
    let id = lane(&mut h);
    h.r.tool_boundary(h.at(min(10.0)), id, tool);
    let events = h.tick(min(21.0));
    (h, id, events)
}

#[test]
fn ref_80_post_tool_use_write_ends_pre_write() {
    let (h, id, events) = hook_at_10(Some("Write"));
    assert_eq!(kill_kinds(&events), vec![(id, KillKind::Idle)]);
    assert_eq!(h.off(h.r.kill(id).unwrap()), min(20.0));
}

#[test]
fn ref_81_pre_tool_use_is_activity_but_not_a_write() {
    let (h, id, events) = hook_at_10(None);
    assert!(kill_kinds(&events).is_empty());
    let s = h.r.snapshot(id).unwrap();
    assert_eq!(s.last_tool, h.at(min(10.0)));
    assert!(!s.wrote);
}

#[test]
fn ref_82_post_tool_use_failure_is_activity_but_not_a_write() {
    // The hook layer reports a failed call as a boundary without a completed tool name.
    let (h, id, events) = hook_at_10(None);
    assert!(kill_kinds(&events).is_empty());
    assert_eq!(
        h.r.snapshot(id).unwrap().extension,
        Some(ExtendReason::PreWrite)
    );
}

#[test]
fn there_is_one_test_per_reference_check() {
    let src = include_str!("reference_checks.rs");
    let mut numbers: Vec<u32> = src
        .lines()
        .filter_map(|l| l.strip_prefix("fn ref_"))
        .filter_map(|rest| rest.get(..2)?.parse().ok())
        .collect();
    numbers.sort();
    assert_eq!(numbers, (1..=82).collect::<Vec<u32>>());
    let _ = SessionConfig::default();
}
