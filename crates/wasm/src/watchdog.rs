//! One `createWatchdog()`: the core's [`Registry`] under the reference preset
//! ([`crate::reference`]), its counters, and the table of the host's handles.
//!
//! The host (JavaScript) numbers its registrations with small slots; each slot holds the
//! registry's session id and whether its extension was reported (the reference reports
//! `onExtend` at most once per registration). What the host must act on comes out of
//! [`Watchdog::tick`] as [`Record`]s: a kill to deliver, an extension to report.

use std::collections::HashMap;
use std::time::Duration;

use crate::reference::{self, OBSERVE_TABLE};
use watchdog_core::Instant;
use watchdog_core::{facts::ResultFacts, Outcome, Registry, SessionId, Signal};
use watchdog_core::{Class, ConfigError, Event, ExtendReason, KillKind, Limits, LineKind};
use watchdog_host::metrics::Counters;

use crate::clock;

/// The options of one watchdog, in the host's units (milliseconds; `Infinity` for off).
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Base idle patience.
    pub idle_ms: f64,
    /// The extension's factor.
    pub extend_factor: f64,
    /// The utilization at or above which patience is extended.
    pub high_utilization: f64,
    /// Ours: no message at all since registration (`Infinity`: off).
    pub startup_ms: f64,
    /// Ours: settled and nothing new since (`Infinity`: off).
    pub linger_ms: f64,
    /// Ours: no work (`Infinity`: off).
    pub no_progress_ms: f64,
    /// Whether `tool_progress` counts as work.
    pub tool_heartbeats: bool,
}

/// The reference preset with these options (the host validated them with the reference's
/// messages first; a value the core still rejects is its error).
pub fn limits(o: &Options, write_tools: &[&str]) -> Result<Limits, ConfigError> {
    let off = |ms: f64| clock::duration(ms).unwrap_or(reference::OFF);
    reference::limits()
        .with_idle(clock::duration(o.idle_ms).unwrap_or(Duration::ZERO))?
        .with_extend_factor(o.extend_factor)?
        .with_high_utilization(o.high_utilization)?
        .with_startup(off(o.startup_ms))?
        .with_linger(off(o.linger_ms))?
        .with_no_progress(off(o.no_progress_ms))
        .map(|l| l.with_write_tools(write_tools.iter().copied()))
}

/// Something the host acts on after a tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Record {
    /// Deliver this kill (`onKill`, then abort).
    Kill {
        /// The host's slot.
        slot: u32,
        /// Its kind.
        kind: KillKind,
        /// When it fell due, host ms.
        at: f64,
        /// The last tool boundary before it, host ms.
        last_tool: f64,
    },
    /// Report this extension (`onExtend`), the first of the registration.
    Extended {
        /// The host's slot.
        slot: u32,
        /// Why.
        reason: ExtendReason,
    },
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    id: SessionId,
    extension_reported: bool,
    /// The kill the host delivered, if any.
    killed: Option<KillKind>,
}

/// One watchdog.
#[derive(Debug)]
pub struct Watchdog {
    registry: Registry,
    limits: Limits,
    tool_heartbeats: bool,
    counters: Counters,
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    by_id: HashMap<SessionId, u32>,
    /// The events behind the last tick's records, and when it ran.
    pending: Vec<Event>,
    ticked: Option<Instant>,
    utilization: Option<f64>,
}

impl Watchdog {
    /// A watchdog with these limits.
    pub fn new(limits: Limits, tool_heartbeats: bool) -> Self {
        Watchdog {
            registry: Registry::new(limits.clone()).checked_by_host(),
            limits,
            tool_heartbeats,
            counters: Counters::default(),
            slots: Vec::new(),
            free: Vec::new(),
            by_id: HashMap::new(),
            pending: Vec::new(),
            ticked: None,
            utilization: None,
        }
    }

    fn at(&mut self, ms: f64) -> Instant {
        clock::instant(ms)
    }

    fn id(&self, slot: u32) -> Option<SessionId> {
        Some(self.slots.get(slot as usize)?.as_ref()?.id)
    }

    /// Register a query at `now_ms` with its hard ceiling (`NaN` or infinite: none; zero or
    /// less: at once). Returns its slot.
    pub fn register(&mut self, now_ms: f64, ceiling_ms: f64) -> u32 {
        let now = self.at(now_ms);
        let ceiling = if ceiling_ms.is_nan() || ceiling_ms == f64::INFINITY {
            None
        } else {
            Some(clock::duration(ceiling_ms).unwrap_or(Duration::ZERO))
        };
        let config = reference::session(self.limits.clone(), ceiling);
        let id = self.registry.register(now, config);
        let entry = Entry {
            id,
            extension_reported: false,
            killed: None,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(entry);
                slot
            }
            None => {
                self.slots.push(Some(entry));
                (self.slots.len() - 1) as u32
            }
        };
        self.by_id.insert(id, slot);
        slot
    }

    /// Run a feed; returns the registry's next deadline (host ms) when the feed brought it
    /// earlier than it was, else `Infinity`: the host re-arms its timer only then.
    fn feed(
        &mut self,
        slot: u32,
        now_ms: f64,
        f: impl FnOnce(&mut Registry, Instant, SessionId),
    ) -> f64 {
        let Some(id) = self.id(slot) else {
            return f64::INFINITY;
        };
        let before = self.registry.poll_timeout();
        f(&mut self.registry, clock::instant(now_ms), id);
        match self.registry.poll_timeout() {
            Some(after) if before.is_none_or(|b| after < b) => clock::ms(after),
            _ => f64::INFINITY,
        }
    }

    /// A message of row `row` of [`OBSERVE_TABLE`] (any other number: a message the table
    /// ignores) at `now_ms`. Returns the next deadline when the feed brought it sooner, else `Infinity`.
    pub fn observe_row(&mut self, slot: u32, row: u32, now_ms: f64) -> f64 {
        let class = OBSERVE_TABLE
            .get(row as usize)
            .and_then(|r| r.class(self.tool_heartbeats));
        self.feed(slot, now_ms, |reg, now, id| match class {
            Some(class) => reg.observe_class(now, id, class),
            None => reg.note_started(now, id),
        })
    }

    /// A message the core reads whole, as its stream-json line ([`reference::Effect::Line`]).
    pub fn observe_line(&mut self, slot: u32, line: &[u8], now_ms: f64) -> f64 {
        self.feed(slot, now_ms, |reg, now, id| {
            reg.observe_line(now, id, line);
        })
    }

    /// `handle.activity(toolName)`: a tool boundary, a write tool's a completed write.
    pub fn activity(&mut self, slot: u32, tool: Option<&str>, now_ms: f64) -> f64 {
        self.feed(slot, now_ms, |reg, now, id| {
            reg.tool_boundary(now, id, tool)
        })
    }

    /// `handle.stream()`: work.
    pub fn stream(&mut self, slot: u32, now_ms: f64) -> f64 {
        self.by_hand(slot, Signal::Progress, LineKind::StreamEvent, now_ms)
    }

    /// `handle.heartbeat()`: a sign of life that does not un-settle.
    pub fn heartbeat(&mut self, slot: u32, now_ms: f64) -> f64 {
        self.by_hand(slot, Signal::KeepAlive, LineKind::ToolProgress, now_ms)
    }

    fn by_hand(&mut self, slot: u32, signal: Signal, kind: LineKind, now_ms: f64) -> f64 {
        self.feed(slot, now_ms, |reg, now, id| {
            reg.observe_class(now, id, Class { signal, kind });
        })
    }

    /// `handle.settle()`.
    pub fn settle(&mut self, slot: u32, now_ms: f64) {
        self.feed(slot, now_ms, |reg, now, id| reg.settle(now, id));
    }

    /// `handle.unregister()`: the query ends, counted by the kill the host delivered, else by
    /// the facts of its last `result` (the host keeps the message) — a deadline that fell due
    /// after the last tick was never delivered: the query ended first — and is forgotten.
    pub fn unregister(&mut self, slot: u32, result: Option<ResultFacts>) {
        let Some(Some(entry)) = self.slots.get(slot as usize).copied() else {
            return;
        };
        let outcome = match (entry.killed, result) {
            (Some(kind), _) => Outcome::Killed { kind },
            (None, Some(facts)) => facts.into_outcome(),
            (None, None) => Outcome::NoResult,
        };
        self.counters.record_end(&outcome);
        self.registry.unregister(entry.id);
        self.by_id.remove(&entry.id);
        self.slots[slot as usize] = None;
        self.free.push(slot);
    }

    /// `tick(now)`: the utilization the host read, then everything due at or before `now_ms`.
    /// The kills and first extensions of registered queries come back in `out` (cleared
    /// first), in the order they fell due; the host reports each it delivers with
    /// [`deliver`](Self::deliver) (a callback may end a query before its turn).
    pub fn tick(&mut self, now_ms: f64, utilization: Option<f64>, out: &mut Vec<Record>) {
        out.clear();
        self.pending.clear();
        self.utilization = utilization.filter(|u| !u.is_nan());
        if self.registry.is_empty() {
            // Nothing to check; and a clock that has seen nothing yet stays unset, so the next
            // registration (after a `close()`, say) starts it where it says.
            return;
        }
        let now = self.at(now_ms);
        self.ticked = Some(now);
        self.registry.set_utilization(now, self.utilization);
        self.registry.handle_timeout(now);
        while let Some(event) = self.registry.poll_event() {
            let record = match &event {
                Event::Killed(kill) => self.by_id.get(&kill.id).map(|&slot| Record::Kill {
                    slot,
                    kind: kill.kind,
                    at: clock::ms(kill.at),
                    last_tool: clock::ms(kill.at) - clock::duration_ms(kill.since_tool),
                }),
                Event::Extended { id, reason } => {
                    let slot = self.by_id.get(id).copied();
                    let first = slot
                        .and_then(|s| self.slots[s as usize].as_ref())
                        .is_some_and(|e| !e.extension_reported);
                    slot.filter(|_| first).map(|slot| Record::Extended {
                        slot,
                        reason: *reason,
                    })
                }
                _ => None,
            };
            if let Some(record) = record {
                out.push(record);
                self.pending.push(event);
            }
        }
    }

    /// The host delivered record `i` of the last tick: counted now (a kill with its lateness
    /// from its deadline to the tick), and the query remembers it (its kill decides how it
    /// ends; its extension is reported once).
    pub fn deliver(&mut self, i: u32) {
        let (Some(event), Some(now)) = (self.pending.get(i as usize), self.ticked) else {
            return;
        };
        let id = match event {
            Event::Killed(kill) => kill.id,
            Event::Extended { id, .. } => *id,
            _ => return,
        };
        let Some(entry) = self
            .by_id
            .get(&id)
            .and_then(|&slot| self.slots[slot as usize].as_mut())
        else {
            return;
        };
        match event {
            Event::Killed(kill) if entry.killed.is_none() => entry.killed = Some(kill.kind),
            Event::Extended { .. } if !entry.extension_reported => entry.extension_reported = true,
            _ => return,
        }
        self.counters.record(event, || now);
    }

    /// When [`tick`](Self::tick) next has work, host ms (`Infinity`: never).
    pub fn poll_timeout(&self) -> f64 {
        self.registry
            .poll_timeout()
            .map_or(f64::INFINITY, clock::ms)
    }

    /// `close()`: forget every query; what registers next starts afresh, on a clock of its
    /// own (the counters stay: they count the watchdog's life).
    pub fn clear(&mut self) {
        self.registry = Registry::new(self.limits.clone()).checked_by_host();
        self.slots.clear();
        self.free.clear();
        self.by_id.clear();
        self.pending.clear();
    }

    /// The counters' snapshot, as the core's JSON.
    pub fn metrics_json(&self) -> String {
        self.counters
            .snapshot(self.registry.len(), self.utilization)
            .to_json()
            .to_string()
    }

    /// The counters' snapshot in the Prometheus text format.
    pub fn render_prometheus(&self) -> String {
        self.counters
            .snapshot(self.registry.len(), self.utilization)
            .render_prometheus()
    }
}

/// The reference's defaults, with our rules off (for tests).
#[cfg(test)]
pub(crate) fn options() -> Options {
    Options {
        idle_ms: 600_000.0,
        extend_factor: 2.0,
        high_utilization: 0.9,
        startup_ms: f64::INFINITY,
        linger_ms: f64::INFINITY,
        no_progress_ms: f64::INFINITY,
        tool_heartbeats: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: f64 = 60_000.0;
    const T0: f64 = 1e9;

    fn watchdog(o: Options) -> Watchdog {
        Watchdog::new(limits(&o, &["Write", "Edit"]).unwrap(), o.tool_heartbeats)
    }

    fn kills(w: &mut Watchdog, at: f64) -> Vec<(u32, KillKind, f64)> {
        let mut out = Vec::new();
        w.tick(at, None, &mut out);
        for i in 0..out.len() {
            w.deliver(i as u32);
        }
        out.iter()
            .filter_map(|r| match *r {
                Record::Kill { slot, kind, at, .. } => Some((slot, kind, at)),
                Record::Extended { .. } => None,
            })
            .collect()
    }

    #[test]
    fn a_registration_that_never_speaks_is_killed_at_the_extended_patience() {
        let mut w = watchdog(options());
        let s = w.register(T0, 70.0 * MIN);
        assert_eq!(
            w.poll_timeout(),
            T0 + 10.0 * MIN,
            "the pre-write extension first"
        );
        let mut out = Vec::new();
        w.tick(T0 + 10.0 * MIN, None, &mut out);
        assert_eq!(
            out,
            [Record::Extended {
                slot: s,
                reason: ExtendReason::PreWrite
            }]
        );
        w.deliver(0);
        w.tick(T0 + 11.0 * MIN, None, &mut out);
        assert!(out.is_empty(), "reported once");
        assert!(kills(&mut w, T0 + 20.0 * MIN - 1.0).is_empty());
        assert_eq!(
            kills(&mut w, T0 + 21.0 * MIN),
            [(s, KillKind::Idle, T0 + 20.0 * MIN)]
        );
    }

    #[test]
    fn only_the_tables_rows_move_the_clocks_and_any_message_ends_the_startup_wait() {
        let mut w = watchdog(Options {
            startup_ms: 2.0 * MIN,
            ..options()
        });
        let quiet = w.register(T0, f64::NAN);
        let talking = w.register(T0, f64::NAN);
        // An `assistant` message: not in the table. It proves the child started, no more.
        w.observe_row(talking, u32::MAX, T0 + MIN);
        let k = kills(&mut w, T0 + 2.0 * MIN);
        assert_eq!(k, [(quiet, KillKind::Startup, T0 + 2.0 * MIN)]);
        // The stream row at 5 min moves the clock: killed 20 min later (pre-write).
        let stream = reference::row("stream_event", None).unwrap();
        let row = OBSERVE_TABLE.iter().position(|r| r == stream).unwrap() as u32;
        w.observe_row(talking, row, T0 + 5.0 * MIN);
        assert!(kills(&mut w, T0 + 25.0 * MIN - 1.0).is_empty());
        assert_eq!(
            kills(&mut w, T0 + 30.0 * MIN),
            [(talking, KillKind::Idle, T0 + 25.0 * MIN)]
        );
    }

    #[test]
    fn an_unregistered_query_is_never_delivered_and_ends_once() {
        let mut w = watchdog(options());
        let a = w.register(T0, 5.0 * MIN);
        let b = w.register(T0, 5.0 * MIN);
        // A feed of `b` at 6 min brings `a`'s ceiling (due at 5) into the queue...
        w.settle(b, T0 + 6.0 * MIN);
        // ...but `a` ends before any tick delivers it.
        w.unregister(a, None);
        assert_eq!(
            kills(&mut w, T0 + 7.0 * MIN),
            [(b, KillKind::Ceiling, T0 + 5.0 * MIN)]
        );
        let m: serde_json::Value = serde_json::from_str(&w.metrics_json()).unwrap();
        assert_eq!(m["kills"]["ceiling"], 1, "{m}");
        assert_eq!(m["ended"]["no_result"], 1, "{m}");
        assert_eq!(m["sessions"], 1);
        w.unregister(a, None); // twice: nothing
        w.unregister(b, None);
        let m: serde_json::Value = serde_json::from_str(&w.metrics_json()).unwrap();
        assert_eq!(m["sessions"], 0);
    }

    #[test]
    fn a_kill_the_host_did_not_deliver_is_not_counted() {
        let mut w = watchdog(options());
        let a = w.register(T0, 5.0 * MIN);
        let b = w.register(T0, 5.0 * MIN);
        let mut out = Vec::new();
        w.tick(T0 + 6.0 * MIN, None, &mut out);
        assert_eq!(out.len(), 2);
        // `a`'s callback ends `b` before its turn: `b`'s kill is never delivered.
        w.deliver(0);
        w.unregister(b, None);
        w.deliver(1);
        w.deliver(0); // twice: counted once
        w.unregister(a, None);
        let m: serde_json::Value = serde_json::from_str(&w.metrics_json()).unwrap();
        assert_eq!(m["kills"]["ceiling"], 1, "{m}");
        assert_eq!(m["ended_killed"]["ceiling"], 1, "{m}");
        assert_eq!(m["ended"]["no_result"], 1, "{m}");
    }

    #[test]
    fn a_tool_boundary_named_as_a_write_tool_ends_the_pre_write_extension() {
        let mut w = watchdog(options());
        let s = w.register(T0, f64::NAN);
        w.activity(s, Some("Read"), T0 + MIN);
        w.activity(s, Some("Write"), T0 + 2.0 * MIN);
        assert_eq!(
            kills(&mut w, T0 + 13.0 * MIN),
            [(s, KillKind::Idle, T0 + 12.0 * MIN)]
        );
    }
}
