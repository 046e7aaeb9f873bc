//! A host that cannot hand the output on: the idle and no-progress clocks stand still while
//! it cannot (`Registry::output_blocked`), and that hold is never a kill of the registry's own:
//! how long the reader may take nothing is one rule the host applies where it writes
//! (`reader_wait::ReaderWait`), judged by the bytes the reader takes, never by a queue in front
//! of it, and blind to time the host itself did not run. Virtual time only.

mod common;

use std::time::Duration;

use common::{lines as l, min, sec, H};
use watchdog_core::reader_wait::{Look, ReaderWait, LOOK_EVERY};
use watchdog_core::recovery::{trigger_of, Skip, TerminalFacts};
use watchdog_core::{Event, KillKind, Limits, Outcome, SessionConfig, SessionId};

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

fn kills_until(h: &mut H, until: Duration) -> Vec<(Duration, KillKind)> {
    h.run_until(until)
        .into_iter()
        .filter_map(|(_, e)| match e {
            Event::Killed(k) => Some((h.off(&k), k.kind)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_held_output_is_never_a_kill_of_the_registry() {
    // In every state a blocked reader can meet, for far longer than the bound: the host holds
    // the output (its queue is full: a slow reader, or none), and only the host's rule, where
    // it writes, may stop the session for it. The ceiling still holds.
    type Setup = fn(&mut H, SessionId);
    let setups: [(&str, Setup); 3] = [
        ("working", |h, id| {
            h.line(Duration::ZERO, id, l::INIT);
            h.line(Duration::ZERO, id, l::ASSISTANT_TEXT);
        }),
        ("human wait", |h, id| {
            h.line(Duration::ZERO, id, l::INIT);
            h.line(Duration::ZERO, id, &l::can_use_tool("r1"));
        }),
        ("startup", |_, _| {}),
    ];
    for (what, setup) in setups {
        let lim = limits()
            .with_output_blocked(min(1.0))
            .with_startup(min(600.0))
            .and_then(|l| l.with_ceiling(Some(min(300.0))))
            .unwrap();
        let mut h = H::new(lim);
        let id = h.r.register(h.t0, SessionConfig::default());
        setup(&mut h, id);
        h.r.output_blocked(h.at(sec(1.0)), id, true);
        assert_eq!(
            kills_until(&mut h, min(400.0)),
            [(min(300.0), KillKind::Ceiling)],
            "{what}"
        );
    }
}

#[test]
fn the_held_time_does_not_count_toward_idle() {
    let mut h = H::new(limits());
    let id = working(&mut h);
    // Held for 29 m 59 s at a time, with a moment of reading (and a line) in between.
    let mut t = min(1.0);
    for _ in 0..4 {
        h.r.output_blocked(h.at(t), id, true);
        t += min(30.0) - sec(1.0);
        h.r.output_blocked(h.at(t), id, false);
        h.line(t, id, l::ASSISTANT_TEXT);
    }
    assert_eq!(kills_until(&mut h, t), []);
    // Then the idle clock runs again (the held time did not count).
    assert_eq!(
        kills_until(&mut h, t + min(11.0)),
        [(t + min(10.0), KillKind::Idle)]
    );
}

#[test]
fn the_host_rule_judges_the_reader_by_the_bytes_it_takes() {
    // The three readers, with a bound of 3 s, looked at as a host does.
    let t0 = std::time::Instant::now();
    let judge = |took: &dyn Fn(Duration) -> bool, waiting: &dyn Fn(Duration) -> bool| {
        let mut w = ReaderWait::new(Some(sec(3.0)));
        let mut t = Duration::ZERO;
        while t < sec(60.0) {
            if let Look::Blocked(d) = w.look(t0 + t, waiting(t), took(t)) {
                return Some((t, d));
            }
            t += LOOK_EVERY;
        }
        None
    };
    // A reader taking 256 KiB/s from a 20 MB flood: bytes always wait, some are always taken.
    assert_eq!(judge(&|_| true, &|_| true), None);
    // A reader that takes nothing while the child writes 20 KB/s: our pipe is full from
    // about 3 s on, then nothing is taken: stopped 3 s later.
    let full = sec(3.2);
    let (at, d) = judge(&|t| t < full, &|t| t >= Duration::ZERO).unwrap();
    assert!(at >= full + sec(2.9) && at <= full + sec(3.0), "{at:?}");
    assert!(d >= sec(3.0));
    // Nothing waits (the child is quiet): nothing to judge, however long.
    assert_eq!(judge(&|_| false, &|_| false), None);
}

#[test]
fn a_stop_of_the_host_is_not_the_readers_fault() {
    // The host is stopped for 5 s (SIGSTOP, Ctrl-Z) while its reader drains what waits: the
    // first look after it counts one look's worth of the gap, then finds the bytes taken.
    let t0 = std::time::Instant::now();
    let mut w = ReaderWait::new(Some(sec(3.0)));
    for i in 0..20 {
        assert!(matches!(
            w.look(t0 + LOOK_EVERY * i, true, false),
            Look::Again(_)
        ));
    }
    // 1.9 s counted; stopped from 2 s to 7 s.
    assert!(matches!(w.look(t0 + sec(7.0), true, false), Look::Again(_)));
    assert!(w.blocked_for(t0 + sec(7.0)) < Some(sec(3.0)));
    assert!(matches!(w.look(t0 + sec(7.1), true, true), Look::Again(_)));
    assert_eq!(w.blocked_for(t0 + sec(7.1)), Some(Duration::ZERO));
}

#[test]
fn an_output_blocked_stop_is_never_continued() {
    let facts = TerminalFacts::new(
        Outcome::Killed {
            kind: KillKind::OutputBlocked,
        },
        0,
    );
    assert_eq!(
        trigger_of(&facts),
        Err(Skip::KillKind(KillKind::OutputBlocked))
    );
}
