//! A host that never reads again: the idle and no-progress clocks stand still while the host
//! cannot hand the session's output on (`Registry::output_blocked`), but a block that lasts
//! `output_blocked` without a break is a kill of its own (`output_blocked`); the bound restarts
//! whenever the reader takes bytes again. Virtual time only.

mod common;

use std::time::Duration;

use common::{lines as l, min, sec, H};
use watchdog_core::{Event, KillKind, Limits, SessionConfig, SessionId};

const NS: Duration = Duration::from_nanos(1);

/// Idle 10 m, output blocked 30 m (the defaults), no extension.
fn limits() -> Limits {
    Limits::default().with_extend_factor(1.0).unwrap()
}

fn working(h: &mut H) -> SessionId {
    let id = h.reg(Duration::ZERO);
    h.line(Duration::ZERO, id, l::INIT);
    h.line(Duration::ZERO, id, l::ASSISTANT_TEXT);
    id
}

fn kills_until(h: &mut H, until: Duration) -> Vec<(Duration, KillKind, Option<Duration>)> {
    h.run_until(until)
        .into_iter()
        .filter_map(|(_, e)| match e {
            Event::Killed(k) => Some((h.off(&k), k.kind, k.output_blocked)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_reader_that_never_reads_again_is_a_kill_at_the_bound() {
    let mut h = H::new(limits());
    let id = working(&mut h);
    h.r.output_blocked(h.at(min(1.0)), id, true);
    assert_eq!(kills_until(&mut h, min(31.0) - NS), []);
    assert_eq!(
        kills_until(&mut h, min(120.0)),
        [(min(31.0), KillKind::OutputBlocked, Some(min(30.0)))]
    );
}

#[test]
fn the_bound_restarts_whenever_the_reader_takes_bytes() {
    let mut h = H::new(limits());
    let id = working(&mut h);
    // Blocked for 29 m 59 s at a time, with a moment of reading (and a line) in between.
    let mut t = min(1.0);
    for _ in 0..4 {
        h.r.output_blocked(h.at(t), id, true);
        t += min(30.0) - sec(1.0);
        h.r.output_blocked(h.at(t), id, false);
        h.line(t, id, l::ASSISTANT_TEXT);
    }
    assert_eq!(
        kills_until(&mut h, t),
        [],
        "never blocked for 30 m in one go"
    );
    // Then the idle clock runs again (the blocked time did not count).
    assert_eq!(
        kills_until(&mut h, t + min(11.0)),
        [(t + min(10.0), KillKind::Idle, None)]
    );
}

#[test]
fn the_bound_holds_in_every_state_a_blocked_reader_can_meet() {
    // Before the first line, settled after a result, waiting for the host, in a human wait.
    type Setup = fn(&mut H, SessionId);
    let setups: [(&str, Setup); 4] = [
        ("startup", |_, _| {}),
        ("settled", |h, id| {
            h.line(Duration::ZERO, id, l::INIT);
            h.line(Duration::ZERO, id, l::RESULT_OK);
        }),
        ("human wait", |h, id| {
            h.line(Duration::ZERO, id, l::INIT);
            h.line(Duration::ZERO, id, &l::can_use_tool("r1"));
        }),
        ("host wait", |_, _| {}),
    ];
    for (what, setup) in setups {
        // Long startup and linger, so only the bound can decide.
        let lim = limits()
            .with_startup(min(600.0))
            .and_then(|l| l.with_linger(min(600.0)))
            .unwrap();
        let mut h = H::new(lim);
        let cfg = SessionConfig::default().with_host_input(what == "host wait");
        let id = h.r.register(h.t0, cfg);
        if what == "host wait" {
            h.line(Duration::ZERO, id, l::INIT);
            h.line(Duration::ZERO, id, l::RESULT_OK);
        }
        setup(&mut h, id);
        h.r.output_blocked(h.at(min(2.0)), id, true);
        assert_eq!(
            kills_until(&mut h, min(100.0)),
            [(min(32.0), KillKind::OutputBlocked, Some(min(30.0)))],
            "{what}"
        );
    }
}

#[test]
fn zero_turns_the_bound_off_and_an_earlier_ceiling_wins() {
    let mut h = H::new(limits().with_output_blocked(Duration::ZERO));
    let id = working(&mut h);
    h.r.output_blocked(h.at(min(1.0)), id, true);
    assert_eq!(kills_until(&mut h, min(24.0 * 60.0)), []);
    assert_eq!(h.r.poll_timeout(), None, "nothing to wake for");

    let mut h = H::new(limits().with_ceiling(Some(min(20.0))).unwrap());
    let id = working(&mut h);
    h.r.output_blocked(h.at(min(1.0)), id, true);
    let k = kills_until(&mut h, min(100.0));
    assert_eq!(k, [(min(20.0), KillKind::Ceiling, Some(min(19.0)))]);
}

#[test]
fn an_output_blocked_kill_is_never_continued() {
    let mut h = H::new(limits().with_output_blocked(min(1.0)));
    let id = working(&mut h);
    h.r.output_blocked(h.at(sec(5.0)), id, true);
    h.run_until(min(2.0));
    let record = h.r.finish(h.at(min(2.0)), id).unwrap();
    let facts = watchdog_core::recovery::TerminalFacts::from_record(&record, 0);
    assert_eq!(
        watchdog_core::recovery::trigger_of(&facts),
        Err(watchdog_core::recovery::Skip::KillKind(
            KillKind::OutputBlocked
        ))
    );
}
