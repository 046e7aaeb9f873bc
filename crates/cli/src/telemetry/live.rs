//! What a run records while it runs, as each decision is made: every quiet spell as its line
//! ends it (the core's `Event::QuietSpells`, by the classifier `audit` uses), every stalling
//! warning, every signal forwarded, the time to the first line, the gauges (`gauges`), and a
//! kill or an output error when its ladder ends (`stop`; the spell a kill ended is the core's
//! `Activity::spell`). The run loop calls in at a few points; the
//! facts come from the core observer (its events, its class of each line), never from reading
//! the lines again. Off, [`Live`] is empty and each call is one branch; on, a call records into
//! the SDK's instruments (in memory; the SDK exports on its own threads) and never waits on
//! the network.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use agent_sdk_watchdog::{LineMeta, SupervisorHandle};
use opentelemetry::metrics::{Meter, ObservableGauge};
use opentelemetry::{KeyValue, StringValue};
use opentelemetry_sdk::logs::SdkLogger;
use watchdog_core::facts::{QuietSpell, SpellKind};
use watchdog_core::{Event, LineKind, StallClock};

use crate::run_report::RunReport;

use super::gauges::Gauges;
use super::instruments::{emit, tool_attrs, Instruments, SOURCE};
use super::kill::KilledSpell;

/// The live recording of an invocation's runs: empty when telemetry is off.
pub(crate) struct Live {
    on: Option<Box<Recorder>>,
}

struct Recorder {
    inst: Option<Instruments>,
    logger: Option<SdkLogger>,
    gauges: Gauges,
    /// Keeps the gauges registered.
    _gauges: Vec<ObservableGauge<f64>>,
    run: RunState,
}

/// What one run has told so far.
#[derive(Default)]
struct RunState {
    /// `session.id`, shared by the points (empty until the core names it).
    session: Arc<str>,
    first_line: bool,
    /// The spell the run's kill ended, as the activity showed it at the kill.
    killed: Option<KilledSpell>,
    /// The attributes of each tool, made once.
    tools: HashMap<Arc<str>, Vec<KeyValue>>,
    /// The attributes of the point being recorded (kept: no allocation per spell).
    attrs: Vec<KeyValue>,
}

impl Live {
    /// Nothing recorded.
    pub(crate) fn off() -> Live {
        Live { on: None }
    }

    /// Record into `meter` and `logger` (either may be off).
    pub(super) fn new(meter: Option<&Meter>, logger: Option<SdkLogger>) -> Live {
        let gauges = Gauges::default();
        Live {
            on: Some(Box::new(Recorder {
                inst: meter.map(Instruments::new),
                _gauges: meter.map(|m| gauges.register(m)).unwrap_or_default(),
                gauges,
                logger,
                run: RunState::default(),
            })),
        }
    }

    /// Whether anything is recorded (the session then reports its live facts).
    pub(crate) fn is_on(&self) -> bool {
        self.on.is_some()
    }

    /// A run begins; `session`: its Claude Code session id when known already (a
    /// continuation).
    pub(crate) fn run_started(&mut self, session: Option<&str>) {
        if let Some(r) = &mut self.on {
            r.run = RunState {
                session: Arc::from(session.unwrap_or("")),
                ..RunState::default()
            };
            r.gauges.start_run(session.unwrap_or(""));
        }
    }

    /// Stdout lines read together `since_spawn` after the run spawned, with the class the
    /// policy gave each: the first line's time, and the rate-limit readings when a
    /// `rate_limit_event` line came.
    pub(crate) fn stdout(
        &mut self,
        since_spawn: Duration,
        lines: &[LineMeta],
        handle: &SupervisorHandle,
    ) {
        let Some(r) = &mut self.on else { return };
        if !r.run.first_line {
            r.run.first_line = true;
            if let Some(i) = &r.inst {
                i.first_line.record(since_spawn.as_secs_f64(), &r.base());
            }
        }
        if lines.iter().any(|m| m.class.kind == LineKind::RateLimit) {
            r.read_rate_limits(handle);
        }
    }

    /// An event of the policy, handled by the run loop at `now`.
    pub(crate) fn event(&mut self, ev: &Event, now: Instant, handle: &SupervisorHandle) {
        let Some(r) = &mut self.on else { return };
        match ev {
            Event::QuietSpells { spells, .. } if r.run.killed.is_none() => {
                // After a kill, the lines are the child's shutdown: the kill ended the spell.
                for s in spells {
                    r.spell(s);
                }
            }
            Event::McpCalls { calls, .. } => r.gauges.set_mcp(calls),
            Event::SessionIdentified { session, .. } => {
                r.run.session = Arc::from(session.as_str());
                r.gauges.set_session(session);
            }
            Event::Stalling {
                clock, remaining, ..
            } => r.stalling(*clock, *remaining, now),
            Event::RateLimit { .. } => r.read_rate_limits(handle),
            Event::Killed(_) if r.run.killed.is_none() => {
                // The spell in progress, as the status line's activity shows it.
                r.run.killed = Some(handle.activity().map_or((SpellKind::Model, None), |a| {
                    let (kind, tool) = a.spell();
                    (kind, tool.map(str::to_owned))
                }));
            }
            _ => {}
        }
    }

    /// The user's signal `name` was forwarded to the child.
    pub(crate) fn signal_forwarded(&mut self, name: &'static str) {
        let Some(r) = &mut self.on else { return };
        if let Some(i) = &r.inst {
            let mut a = r.base();
            a.push(KeyValue::new("signal", name));
            i.signals.add(1, &a);
        }
        if let Some(l) = &r.logger {
            let attrs = vec![KeyValue::new("signal", name)];
            let now = Some(SystemTime::now());
            emit(
                l,
                "agent_watchdog.signal_forwarded",
                now,
                &r.run.session,
                "run",
                attrs,
            );
        }
    }

    /// The run ended (its kill ladder too): `run`, before recovery. Records a kill or an
    /// output error, and leaves the gauges at the run's last readings with no MCP call
    /// outstanding.
    pub(crate) fn run_ended(&mut self, run: &RunReport) {
        let Some(r) = &mut self.on else { return };
        if let Some(sid) = run.session_id() {
            r.run.session = Arc::from(sid);
        }
        super::kill::record(
            r.inst.as_ref(),
            r.logger.as_ref(),
            run,
            &r.run.session,
            r.run.killed.as_ref(),
            SystemTime::now(),
        );
        r.gauges.set_session(&r.run.session);
        r.gauges.set_mcp(&[]);
        let rates = &run.record.rate_limits;
        if rates.latest().is_some() || rates.windows().next().is_some() {
            r.gauges.set_rate(
                rates
                    .windows()
                    .filter_map(|w| {
                        Some((w.name.clone(), w.utilization.filter(|u| u.is_finite())?))
                    })
                    .collect(),
            );
        }
    }
}

impl Recorder {
    /// `session.id` and the source: on every point.
    fn base(&self) -> Vec<KeyValue> {
        vec![
            KeyValue::new("session.id", StringValue::from(self.run.session.clone())),
            KeyValue::new(SOURCE, "run"),
        ]
    }

    /// One spell, on both clocks. No allocation once a tool's attributes are made: the
    /// attributes go in a buffer kept for the run, their texts are shared.
    fn spell(&mut self, s: &QuietSpell) {
        let Some(i) = &self.inst else { return };
        let run = &mut self.run;
        let a = &mut run.attrs;
        a.clear();
        a.push(KeyValue::new(
            "session.id",
            StringValue::from(run.session.clone()),
        ));
        a.push(KeyValue::new(SOURCE, "run"));
        a.push(KeyValue::new("ended_by", s.ended_by()));
        a.push(KeyValue::new("spell.kind", s.kind.as_str()));
        if let Some(t) = &s.tool {
            let cached = run.tools.entry(t.clone()).or_insert_with(|| {
                tool_attrs(t)
                    .into_iter()
                    .map(|kv| {
                        let text: Arc<str> = Arc::from(kv.value.as_str().as_ref());
                        KeyValue::new(kv.key, StringValue::from(text))
                    })
                    .collect()
            });
            a.extend(cached.iter().cloned());
        }
        a.push(KeyValue::new("clock", StallClock::Idle.as_str()));
        i.spells.record(s.quiet.as_secs_f64(), a);
        if let Some(last) = a.last_mut() {
            *last = KeyValue::new("clock", StallClock::NoProgress.as_str());
        }
        i.spells.record(s.length.as_secs_f64(), a);
    }

    fn stalling(&self, clock: StallClock, remaining: Duration, now: Instant) {
        let clock = clock.as_str();
        if let Some(i) = &self.inst {
            let mut a = self.base();
            a.push(KeyValue::new("clock", clock));
            i.warnings.add(1, &a);
        }
        if let Some(l) = &self.logger {
            let attrs = vec![
                KeyValue::new("clock", clock),
                KeyValue::new("remaining_ms", remaining.as_millis() as i64),
            ];
            let at = SystemTime::now().checked_sub(now.elapsed());
            emit(
                l,
                "agent_watchdog.stalling_warning",
                at,
                &self.run.session,
                "run",
                attrs,
            );
        }
    }

    /// Copy the policy's rate-limit readings into the gauges (one lock of the policy, taken
    /// only when a reading came).
    fn read_rate_limits(&self, handle: &SupervisorHandle) {
        let Some(m) = handle.rate_limits() else {
            return;
        };
        let rate = m
            .windows()
            .filter_map(|w| Some((w.name.clone(), w.utilization?)))
            .collect();
        self.gauges.set_rate(rate);
    }
}
