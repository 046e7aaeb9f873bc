//! Property test: the registry against a brute-force model that re-evaluates every
//! millisecond.
//!
//! The model keeps plain counters (unpaused milliseconds since the last line, since the last
//! progress) and checks the rules literally at every millisecond, in tie order, before the
//! events of that millisecond and again after each event (a withdrawn extension kills at that
//! very instant; so does a first line that arrives after an already exceeded no-progress cap). The registry must report the same kill, at the same instant,
//! with the same kind, for every session, and nothing else.

mod common;

use std::time::Duration;

use proptest::prelude::*;
use watchdog_core::{Event, KillKind, Limits, LineView, Registry, SessionConfig, SessionId};

#[derive(Debug, Clone)]
enum Act {
    Progress,
    Ping,
    Heartbeat,
    Result,
    WriteUse(u8),
    ReadUse(u8),
    ToolResult(u8, bool),
    Retry(u16),
    CanUseTool(u8),
    Answer(u8),
    Cancel(u8),
    RequiresAction,
    Running,
    Garbage,
    /// `tool_boundary` from a hook: `true` for a completed `Write`, `false` for no name.
    Boundary(bool),
    /// `settle()` by hand.
    Settle,
    /// `end()`: the stream closed.
    End,
}

#[derive(Debug, Clone)]
enum Ev {
    Line(usize, Act),
    Util(Option<f64>),
}

#[derive(Debug, Clone)]
struct Lim {
    startup: u64,
    idle: u64,
    no_progress: u64,
    linger: u64,
    ceiling: Option<u64>,
}

impl Lim {
    fn limits(&self) -> Limits {
        let ms = Duration::from_millis;
        Limits::default()
            .with_startup(ms(self.startup))
            .unwrap()
            .with_idle(ms(self.idle))
            .unwrap()
            .with_no_progress(ms(self.no_progress))
            .unwrap()
            .with_linger(ms(self.linger))
            .unwrap()
            .with_ceiling(self.ceiling.map(ms))
            .unwrap()
    }
}

fn line_of(act: &Act) -> Vec<u8> {
    use common::lines as l;
    match act {
        Act::Progress => l::DELTA.into(),
        Act::Ping => l::PING.into(),
        Act::Heartbeat => l::TOOL_PROGRESS.into(),
        Act::Result => l::RESULT_OK.into(),
        Act::WriteUse(k) => l::tool_use(&format!("w{k}"), "Write").into(),
        Act::ReadUse(k) => l::tool_use(&format!("w{k}"), "Read").into(),
        Act::ToolResult(k, err) => l::tool_result(&format!("w{k}"), *err).into(),
        Act::Retry(d) => l::api_retry(u64::from(*d)).into(),
        Act::CanUseTool(k) => l::can_use_tool(&format!("r{k}")).into(),
        Act::Answer(k) => l::control_response(&format!("r{k}")).into(),
        Act::Cancel(k) => {
            format!(r#"{{"type":"control_cancel_request","request_id":"r{k}"}}"#).into()
        }
        Act::RequiresAction => l::REQUIRES_ACTION.into(),
        Act::Running => l::RUNNING.into(),
        Act::Garbage => b"\xff{not json".to_vec(),
        Act::Boundary(_) | Act::Settle | Act::End => unreachable!("not a line"),
    }
}

/// The brute-force model of one session.
#[derive(Debug, Default)]
struct Model {
    lines: bool,
    settled_at: Option<u64>,
    wrote: bool,
    pending_writes: Vec<u8>,
    pending_requests: Vec<u8>,
    state_wait: bool,
    /// The end of the announced back-offs of the storm under way (0: none; progress at or
    /// after it ends the storm).
    retry_end: u64,
    /// Unpaused ms since the last line, counted only at or after `retry_end`.
    idle_count: u64,
    /// Unpaused ms since the last progress (or registration), counted only at or after
    /// `retry_end`.
    np_count: u64,
    killed: Option<(u64, KillKind)>,
    ended: bool,
}

impl Model {
    fn paused(&self) -> bool {
        self.state_wait || !self.pending_requests.is_empty()
    }

    fn check(&mut self, t: u64, lim: &Lim, util: Option<f64>) {
        if self.killed.is_some() || self.ended {
            return;
        }
        let kind = if lim.ceiling.is_some_and(|c| t >= c) {
            Some(KillKind::Ceiling)
        } else if !self.lines {
            (t >= lim.startup).then_some(KillKind::Startup)
        } else if let Some(s) = self.settled_at {
            (t - s >= lim.linger).then_some(KillKind::Linger)
        } else if self.paused() {
            None
        } else {
            let extended = !self.wrote || util.is_some_and(|u| u >= 0.9);
            let patience = if extended { 2 * lim.idle } else { lim.idle };
            if self.idle_count >= patience {
                Some(KillKind::Idle)
            } else if self.np_count >= lim.no_progress {
                Some(KillKind::NoProgress)
            } else {
                None
            }
        };
        if let Some(kind) = kind {
            self.killed = Some((t, kind));
        }
    }

    fn apply(&mut self, t: u64, act: &Act) {
        if self.killed.is_some() || self.ended {
            return;
        }
        match act {
            Act::End => {
                self.ended = true;
                return;
            }
            Act::Settle => {
                self.lines = true;
                if self.settled_at.is_none() {
                    self.settled_at = Some(t);
                }
                return;
            }
            _ => {}
        }
        if let Act::Answer(k) = act {
            // A host line: not a sign of life, only an answer.
            if self.pending_requests.contains(k) {
                self.pending_requests.retain(|p| p != k);
                if self.pending_requests.is_empty() {
                    self.state_wait = false;
                }
            }
            return;
        }
        self.lines = true;
        self.idle_count = 0;
        let progress = matches!(
            act,
            Act::Progress
                | Act::WriteUse(_)
                | Act::ReadUse(_)
                | Act::ToolResult(..)
                | Act::Boundary(_)
        );
        if progress {
            self.np_count = 0;
            self.settled_at = None;
            if t >= self.retry_end {
                self.retry_end = 0;
            }
        }
        match act {
            Act::Result if self.settled_at.is_none() => self.settled_at = Some(t),
            Act::WriteUse(k) if !self.wrote => self.pending_writes.push(*k),
            Act::ToolResult(k, err) if !self.wrote => {
                if let Some(i) = self.pending_writes.iter().position(|p| p == k) {
                    self.pending_writes.remove(i);
                    if !err {
                        self.wrote = true;
                    }
                }
            }
            // An announced back-off: neither clock counts it; both start afresh at its end.
            Act::Retry(d) => {
                self.retry_end = self.retry_end.max(t + u64::from(*d));
                self.np_count = 0;
            }
            Act::CanUseTool(k) => self.pending_requests.push(*k),
            Act::Cancel(k) if self.pending_requests.contains(k) => {
                self.pending_requests.retain(|p| p != k);
                if self.pending_requests.is_empty() {
                    self.state_wait = false;
                }
            }
            Act::RequiresAction => self.state_wait = true,
            Act::Boundary(true) => self.wrote = true,
            Act::Running if self.pending_requests.is_empty() => self.state_wait = false,
            _ => {}
        }
    }

    /// The millisecond `[t, t+1)` passes.
    fn pass(&mut self, t: u64) {
        if !self.paused() && t >= self.retry_end {
            self.idle_count += 1;
            self.np_count += 1;
        }
    }
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        6 => Just(Act::Progress),
        4 => Just(Act::Ping),
        2 => Just(Act::Heartbeat),
        2 => Just(Act::Result),
        2 => (0u8..3).prop_map(Act::WriteUse),
        1 => (0u8..3).prop_map(Act::ReadUse),
        3 => ((0u8..3), any::<bool>()).prop_map(|(k, e)| Act::ToolResult(k, e)),
        2 => (0u16..60).prop_map(Act::Retry),
        2 => (0u8..2).prop_map(Act::CanUseTool),
        2 => (0u8..3).prop_map(Act::Answer),
        1 => (0u8..2).prop_map(Act::Cancel),
        1 => Just(Act::RequiresAction),
        1 => Just(Act::Running),
        2 => Just(Act::Garbage),
        2 => any::<bool>().prop_map(Act::Boundary),
        1 => Just(Act::Settle),
        1 => Just(Act::End),
    ]
}

fn lim() -> impl Strategy<Value = Lim> {
    (
        10u64..60,
        5u64..40,
        10u64..120,
        5u64..60,
        prop::option::weighted(0.4, 20u64..300),
    )
        .prop_map(|(startup, idle, no_progress, linger, ceiling)| Lim {
            startup,
            idle,
            no_progress,
            linger,
            ceiling,
        })
}

fn ev(sessions: usize) -> impl Strategy<Value = (u64, Ev)> {
    (
        0u64..12,
        prop_oneof![
            12 => ((0..sessions), act()).prop_map(|(i, a)| Ev::Line(i, a)),
            1 => prop_oneof![
                Just(None),
                Just(Some(0.95)),
                Just(Some(0.3)),
                Just(Some(0.9)),
            ]
            .prop_map(Ev::Util),
        ],
    )
}

const HORIZON: u64 = 800;

type Kills = Vec<Option<(u64, KillKind)>>;

fn run(lims: &[Lim], events: &[(u64, Ev)]) -> Result<Kills, TestCaseError> {
    // Absolute times.
    let mut timed = Vec::new();
    let mut t = 0;
    for (dt, e) in events {
        t += dt;
        timed.push((t, e.clone()));
    }

    // ---- the model, millisecond by millisecond
    let mut models: Vec<Model> = lims.iter().map(|_| Model::default()).collect();
    let mut util: Option<f64> = None;
    let mut next = 0;
    for t in 0..=HORIZON {
        for (m, lim) in models.iter_mut().zip(lims) {
            m.check(t, lim, util);
        }
        while next < timed.len() && timed[next].0 == t {
            match &timed[next].1 {
                Ev::Line(i, a) => models[*i].apply(t, a),
                Ev::Util(u) => util = *u,
            }
            for (m, lim) in models.iter_mut().zip(lims) {
                m.check(t, lim, util);
            }
            next += 1;
        }
        for m in &mut models {
            m.pass(t);
        }
    }

    // ---- the registry, driven by its own timer between the events
    let t0 = std::time::Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut r = Registry::new(Limits::default());
    let ids: Vec<SessionId> = lims
        .iter()
        .map(|l| r.register(t0, SessionConfig::default().with_limits(l.limits())))
        .collect();
    let mut kills: Vec<Option<(u64, KillKind)>> = vec![None; lims.len()];
    let mut collect = |r: &mut Registry, now: u64| -> Result<(), TestCaseError> {
        while let Some(e) = r.poll_event() {
            if let Event::Killed(k) = e {
                let i = ids.iter().position(|id| *id == k.id).unwrap();
                prop_assert!(kills[i].is_none(), "killed twice");
                let off = k.at - t0;
                prop_assert_eq!(off.subsec_nanos() % 1_000_000, 0, "{:?}", off);
                let ms = off.as_millis() as u64;
                prop_assert!(ms <= now, "reported before it happened");
                kills[i] = Some((ms, k.kind));
            }
        }
        if let Some(p) = r.poll_timeout() {
            prop_assert!(p > at(now), "poll_timeout in the past");
        }
        Ok(())
    };
    let drive = |r: &mut Registry,
                 until: u64,
                 collect: &mut dyn FnMut(&mut Registry, u64) -> Result<(), TestCaseError>|
     -> Result<(), TestCaseError> {
        while let Some(p) = r.poll_timeout() {
            if p >= at(until) {
                break;
            }
            r.handle_timeout(p);
            let ms = (p - t0).as_millis() as u64;
            collect(r, ms)?;
        }
        Ok(())
    };
    for (t, e) in &timed {
        if *t > HORIZON {
            break;
        }
        drive(&mut r, *t, &mut collect)?;
        match e {
            Ev::Line(i, Act::Answer(k)) => {
                let bytes = line_of(&Act::Answer(*k));
                let v = LineView::parse(&bytes).unwrap();
                r.observe_input(at(*t), ids[*i], &v);
            }
            Ev::Line(i, Act::Boundary(write)) => {
                r.tool_boundary(at(*t), ids[*i], write.then_some("Write"));
            }
            Ev::Line(i, Act::Settle) => r.settle(at(*t), ids[*i]),
            Ev::Line(i, Act::End) => {
                r.end(at(*t), ids[*i]);
            }
            Ev::Line(i, a) => {
                r.observe_line(at(*t), ids[*i], &line_of(a));
            }
            Ev::Util(u) => r.set_utilization(at(*t), *u),
        }
        collect(&mut r, *t)?;
    }
    drive(&mut r, HORIZON, &mut collect)?;
    r.handle_timeout(at(HORIZON));
    collect(&mut r, HORIZON)?;

    let expected: Vec<_> = models.iter().map(|m| m.killed).collect();
    prop_assert_eq!(&kills, &expected);
    Ok(expected)
}

fn case() -> impl Strategy<Value = (Vec<Lim>, Vec<(u64, Ev)>)> {
    (
        prop::collection::vec(lim(), 1..4),
        prop::collection::vec(ev(3), 0..80),
    )
        .prop_map(|(lims, events)| {
            let n = lims.len();
            let events = events
                .into_iter()
                .map(|(dt, e)| match e {
                    Ev::Line(i, a) => (dt, Ev::Line(i % n, a)),
                    other => (dt, other),
                })
                .collect();
            (lims, events)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn registry_matches_the_brute_force_model((lims, events) in case()) {
        run(&lims, &events)?;
    }
}

/// The generator reaches every kill kind, and sessions that survive, so the property above
/// is not vacuous.
#[test]
fn the_generated_cases_cover_every_kill_kind() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::HashMap::new();
    for _ in 0..200 {
        let (lims, events) = case().new_tree(&mut runner).unwrap().current();
        for k in run(&lims, &events).unwrap() {
            *seen.entry(k.map(|(_, kind)| kind)).or_insert(0u32) += 1;
        }
    }
    for kind in [
        None,
        Some(KillKind::Ceiling),
        Some(KillKind::Startup),
        Some(KillKind::Linger),
        Some(KillKind::Idle),
        Some(KillKind::NoProgress),
    ] {
        assert!(
            seen.get(&kind).copied().unwrap_or(0) >= 3,
            "{kind:?}: {seen:?}"
        );
    }
}

#[test]
fn the_model_itself_kills_a_silent_session_at_startup() {
    let lims = [Lim {
        startup: 7,
        idle: 10,
        no_progress: 50,
        linger: 10,
        ceiling: None,
    }];
    run(&lims, &[]).unwrap();
    let mut m = Model::default();
    for t in 0..10 {
        m.check(t, &lims[0], None);
        m.pass(t);
    }
    assert_eq!(m.killed, Some((7, KillKind::Startup)));
}
