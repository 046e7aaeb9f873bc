//! The reference package's contract as a preset of the one observer (`watchdog_wasm::reference`),
//! in virtual time: the rules the npm package's `createWatchdog()` keeps, decided by the same
//! `Registry` every other host drives. (The npm package's own suite runs the reference's checks
//! through the installed package: `scripts/test-node-api`.)

use std::time::{Duration, Instant};

use watchdog_core::{Event, ExtendReason, KillKind, Limits, Registry, SessionId};
use watchdog_wasm::reference::{self, row, Timeline, Verdict, OFF};

fn min(m: f64) -> Duration {
    Duration::from_secs_f64(m * 60.0)
}

struct Host {
    t0: Instant,
    reg: Registry,
}

impl Host {
    fn new(limits: Limits) -> Self {
        let t0 = Instant::now();
        Host {
            t0,
            reg: Registry::new(limits).checked_by_host(t0),
        }
    }

    fn at(&self, m: f64) -> Instant {
        self.t0 + min(m)
    }

    fn lane(&mut self, ceiling_min: f64) -> SessionId {
        let t = self.at(0.0);
        let l = self.reg.limits().clone();
        self.reg
            .register(t, reference::session(l, Some(min(ceiling_min))))
    }

    fn message(&mut self, m: f64, id: SessionId, kind: &str, subtype: Option<&str>) {
        let t = self.at(m);
        match row(kind, subtype).and_then(|r| r.class(true)) {
            Some(class) => self.reg.observe_class(t, id, class),
            None => self.reg.note_started(t, id),
        }
    }

    /// A check (the reference's tick) at `m` minutes: the kills it delivers.
    fn tick(&mut self, m: f64) -> Vec<(SessionId, KillKind, Duration)> {
        let t = self.at(m);
        self.reg.handle_timeout(t);
        std::iter::from_fn(|| self.reg.poll_event())
            .filter_map(|e| match e {
                Event::Killed(k) => Some((k.id, k.kind, k.at - self.t0)),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn registering_starts_the_idle_clock_and_only_the_tables_rows_move_it() {
    let mut h = Host::new(reference::limits());
    let silent = h.lane(70.0);
    let chatty = h.lane(70.0);
    // `assistant`, `user`, `system/init` are not in the table: they move no clock.
    h.message(5.0, chatty, "assistant", None);
    h.message(6.0, chatty, "system", Some("init"));
    h.message(7.0, chatty, "user", None);
    // Pre-write: the extended patience, 20 minutes from registration, for both.
    assert_eq!(h.tick(19.9), []);
    let mut kills = h.tick(21.0);
    kills.sort();
    let mut want = vec![
        (silent, KillKind::Idle, min(20.0)),
        (chatty, KillKind::Idle, min(20.0)),
    ];
    want.sort();
    assert_eq!(kills, want);
}

#[test]
fn a_message_handed_over_before_the_check_counts_as_at_the_references_tick() {
    let mut h = Host::new(reference::limits());
    let q = h.lane(70.0);
    let t = h.at(0.0);
    h.reg.tool_boundary(t, q, Some("Write"));
    // No check at 10 minutes (the idle deadline); a frame at 14:50 comes first.
    h.message(14.0 + 50.0 / 60.0, q, "stream_event", None);
    assert_eq!(h.tick(15.0), [], "the frame counts before the check");
    assert_eq!(h.tick(24.5), []);
    assert_eq!(
        h.tick(25.5),
        [(q, KillKind::Idle, min(14.0 + 50.0 / 60.0 + 10.0))],
        "dated at its exact deadline"
    );
}

#[test]
fn settled_by_a_result_only_the_ceiling_applies_and_work_unsettles() {
    let mut h = Host::new(reference::limits());
    let q = h.lane(70.0);
    let p = h.lane(70.0);
    h.message(5.0, q, "result", Some("success"));
    h.message(6.0, q, "rate_limit_event", None); // a sign of life keeps it settled
    h.message(5.0, p, "result", Some("success"));
    h.message(6.0, p, "tool_progress", None); // the reference counts a heartbeat as work
    assert_eq!(h.tick(40.0), [(p, KillKind::Idle, min(26.0))]);
    assert_eq!(h.tick(69.9), []);
    assert_eq!(h.tick(70.0), [(q, KillKind::Ceiling, min(70.0))]);
}

#[test]
fn our_rules_are_off_in_the_preset_and_each_kills_at_its_own_deadline_when_on() {
    // Off: no startup, linger or no-progress kill, whatever the silence.
    let mut h = Host::new(reference::limits());
    let pinging = h.lane(600.0);
    let t = h.at(0.0);
    h.reg.tool_boundary(t, pinging, Some("Write"));
    for m in 1..=120 {
        h.message(f64::from(m), pinging, "rate_limit_event", None);
    }
    assert_eq!(h.tick(120.0), [], "keep-alives only, for two hours: alive");

    let on = reference::limits()
        .with_startup(min(3.0))
        .unwrap()
        .with_linger(min(11.0))
        .unwrap()
        .with_no_progress(min(30.0))
        .unwrap();
    let mut h = Host::new(on);
    let silent = h.lane(70.0);
    let lingering = h.lane(70.0);
    let pinging = h.lane(70.0);
    let started = h.lane(70.0);
    let t = h.at(0.0);
    h.reg.tool_boundary(t, pinging, Some("Write"));
    h.message(1.0, lingering, "result", Some("success"));
    // Any message at all ends the startup wait, even one the table ignores.
    h.message(2.0, started, "assistant", None);
    let mut pinged = 0;
    let mut check = |h: &mut Host, until: f64| {
        while f64::from(pinged + 1) <= until {
            pinged += 1;
            h.message(f64::from(pinged), pinging, "rate_limit_event", None);
        }
        h.tick(until)
    };
    assert_eq!(check(&mut h, 3.0), [(silent, KillKind::Startup, min(3.0))]);
    assert_eq!(
        check(&mut h, 12.0),
        [(lingering, KillKind::Linger, min(12.0))]
    );
    assert_eq!(
        check(&mut h, 30.0),
        [
            (started, KillKind::Idle, min(20.0)),
            (pinging, KillKind::NoProgress, min(30.0)),
        ]
    );
}

#[test]
fn a_utilization_read_at_the_check_applies_to_it() {
    let mut h = Host::new(reference::limits());
    let q = h.lane(70.0);
    let t = h.at(0.0);
    h.reg.tool_boundary(t, q, Some("Write"));
    // Read at the check at 12: high. The base patience (10) passed, the extended (20) did not.
    let t12 = h.at(12.0);
    h.reg.set_utilization(t12, Some(0.95));
    h.reg.handle_timeout(t12);
    let events: Vec<Event> = std::iter::from_fn(|| h.reg.poll_event()).collect();
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::Extended {
                reason: ExtendReason::HighUtilization,
                ..
            }
        )),
        "{events:?}"
    );
    assert!(h.reg.kill(q).is_none());
    // Read at the next check: low. The extension is withdrawn there, and the kill is dated there.
    let t14 = h.at(14.0);
    h.reg.set_utilization(t14, Some(0.4));
    assert_eq!(h.tick(14.0), [(q, KillKind::Idle, min(14.0))]);
}

fn lane(t0: Instant) -> Timeline {
    Timeline {
        started: t0,
        ceiling: Some(min(70.0)),
        last_tool: t0,
        last_activity: t0,
        last_work: t0,
        written: false,
        settled: None,
        seen: true,
    }
}

#[test]
fn the_pure_verdict_is_the_registrys_own() {
    let t0 = Instant::now();
    let l = reference::limits();
    let v = |t: &Timeline, m: f64, u: Option<f64>| reference::verdict(&l, t, t0 + min(m), u);
    let written = Timeline {
        written: true,
        ..lane(t0)
    };
    // The reference's seven policy checks.
    assert_eq!(v(&written, 8.8, Some(0.4)), Verdict::Ok);
    assert_eq!(v(&written, 11.0, Some(0.4)), Verdict::Kill(KillKind::Idle));
    assert_eq!(
        v(&written, 11.0, Some(0.92)),
        Verdict::Extend(ExtendReason::HighUtilization)
    );
    assert_eq!(v(&written, 21.0, Some(0.92)), Verdict::Kill(KillKind::Idle));
    assert_eq!(
        v(&lane(t0), 15.0, Some(0.3)),
        Verdict::Extend(ExtendReason::PreWrite)
    );
    assert_eq!(v(&lane(t0), 21.0, None), Verdict::Kill(KillKind::Idle));
    let busy = Timeline {
        last_activity: t0 + min(71.0) - Duration::from_secs(5),
        ..written
    };
    assert_eq!(v(&busy, 71.0, None), Verdict::Kill(KillKind::Ceiling));
    // Settled: only the ceiling.
    let settled = Timeline {
        settled: Some(t0),
        ..written
    };
    assert_eq!(v(&settled, 25.0, None), Verdict::Ok);
    assert_eq!(v(&settled, 70.0, None), Verdict::Kill(KillKind::Ceiling));
    // Inclusive boundaries; no ceiling never kills.
    assert_eq!(v(&written, 10.0, None), Verdict::Kill(KillKind::Idle));
    let endless = Timeline {
        ceiling: None,
        settled: Some(t0),
        ..lane(t0)
    };
    assert_eq!(v(&endless, 100_000.0, None), Verdict::Ok);
    // A timeline whose last tool boundary lies before its registration counts from there.
    let early = Timeline {
        last_tool: t0 - min(5.0),
        last_activity: t0 - min(5.0),
        last_work: t0 - min(5.0),
        ..written
    };
    assert_eq!(v(&early, 5.0, None), Verdict::Kill(KillKind::Idle));
    // Our rules, when a timeline asks for them.
    let on = l.clone().with_no_progress(min(30.0)).unwrap();
    let pinging = Timeline {
        last_activity: t0 + min(29.0),
        ..written
    };
    assert_eq!(
        reference::verdict(&on, &pinging, t0 + min(30.0), None),
        Verdict::Kill(KillKind::NoProgress)
    );
    assert_eq!(v(&pinging, 30.0, None), Verdict::Ok, "off by default");
    assert_eq!(reference::limits().startup(), OFF);
}

#[test]
fn ours_background_work_and_back_offs_are_read_whole_through_the_preset() {
    // The rows the reference ignores but the registry reads whole.
    for subtype in [
        "background_tasks_changed",
        "task_started",
        "task_updated",
        "task_notification",
        "task_progress",
        "api_retry",
    ] {
        let r = row("system", Some(subtype)).unwrap();
        assert_eq!(r.effect, reference::Effect::Line, "{subtype}");
        assert_eq!(r.class(true), None, "{subtype}: a line, not a class");
    }
    let mut h = Host::new(reference::limits());
    let q = h.lane(70.0);
    let t = h.at(0.0);
    h.reg.tool_boundary(t, q, Some("Write"));
    let t1 = h.at(1.0);
    h.reg.observe_line(
        t1,
        q,
        br#"{"type":"system","subtype":"background_tasks_changed","tasks":[{"task_id":"a1","task_type":"local_agent","description":"p"}],"session_id":"s"}"#,
    );
    let t2 = h.at(2.0);
    h.reg.settle(t2, q);
    // Settled (a result settles without moving a clock, as for the reference), but a background
    // agent is outstanding: working, killed at idle from its last line, named for the task it
    // waited on (ours: task_silent).
    assert_eq!(h.tick(10.9), []);
    assert_eq!(h.tick(12.0), [(q, KillKind::TaskSilent, min(11.0))]);
}
