//! One `createWatchdog()`: the core's [`Registry`] under the reference preset
//! ([`crate::reference`]), its counters, and the table of the host's handles.
//!
//! The host (JavaScript) numbers its registrations with small slots; each slot holds the
//! registry's session id and whether its extension was reported (the reference reports
//! `onExtend` at most once per registration). What the host must act on comes out of
//! [`Watchdog::tick`] as [`Record`]s: a kill to deliver, an extension to report.

use std::collections::HashMap;
use std::time::Duration;

use crate::reference::{self, Row, OBSERVE_TABLE};
use serde_json::{json, Value};
use watchdog_core::Instant;
use watchdog_core::{facts::ResultFacts, LineView, Outcome, Registry, SessionId, Signal};
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
        /// When the query was registered, host ms as given (the kill's `elapsedMs` counts
        /// from it).
        started: f64,
        /// The last tool boundary, host ms as given (its `sinceToolMs` counts from it).
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

/// One registration: the registry's session, and the reference's numbers as the host gave
/// them (it judges the ceiling and dates a kill in them).
#[derive(Debug, Clone, Copy)]
struct Entry {
    id: SessionId,
    /// The order of registration: a check's records come in it.
    seq: u64,
    /// `startedAt`, `hardCeilingMs`, `lastToolAt`: host ms as given.
    started: f64,
    ceiling: f64,
    last_tool: f64,
    /// The latest instant a call about this query gave (a settle that gives none is there).
    latest: f64,
    extension_reported: bool,
    /// The kill the host delivered, if any.
    killed: Option<KillKind>,
}

/// A record of the last tick, with what the registry reported behind it.
#[derive(Debug, Clone)]
struct Pending {
    seq: u64,
    record: Record,
    event: Event,
}

/// Work: moves the clocks, un-settles (what `stream()` and a work row feed).
const WORK: Class = Class {
    signal: Signal::Progress,
    kind: LineKind::StreamEvent,
};
/// A sign of life that does not un-settle (what `heartbeat()` and an alive row feed).
const ALIVE: Class = Class {
    signal: Signal::KeepAlive,
    kind: LineKind::ToolProgress,
};

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
    seq: u64,
    /// The last tick's records and the events behind them, and when it ran.
    pending: Vec<Pending>,
    ticked: Option<Instant>,
    utilization: Option<f64>,
}

/// The registry of a watchdog: checked by its host, every instant as the host gives it.
fn registry(limits: &Limits) -> Registry {
    Registry::new(limits.clone()).checked_by_host(clock::instant(f64::NAN))
}

impl Watchdog {
    /// A watchdog with these limits.
    pub fn new(limits: Limits, tool_heartbeats: bool) -> Self {
        Watchdog {
            registry: registry(&limits),
            limits,
            tool_heartbeats,
            counters: Counters::default(),
            slots: Vec::new(),
            free: Vec::new(),
            by_id: HashMap::new(),
            seq: 0,
            pending: Vec::new(),
            ticked: None,
            utilization: None,
        }
    }

    /// [`OBSERVE_TABLE`] as the host looks a message up in it, under this watchdog's options,
    /// as JSON: `types`, `[type, {any, subs}]` pairs (`any`: the row of any `subtype`, or
    /// null; `subs`: `[subtype, row]` pairs, or null), and `settles`, the row of a `result`. A
    /// row is its effect's code, the `head` and the `fields` (also as `keys`, `,"<field>":`) of
    /// a message the core reads whole, and when it reads one ([`reference::Read`]: `read`,
    /// `readIf`; `adds`).
    pub fn table_json(&self) -> String {
        let row = |r: &Row| {
            json!({
                "effect": r.effect_for(self.tool_heartbeats).code(),
                "head": r.head(),
                "fields": r.fields,
                "keys": r.fields.iter().map(|f| format!(",{}:", json!(f))).collect::<Vec<_>>(),
                "read": r.read.code(),
                "readIf": r.read.field(),
                "adds": r.adds,
            })
        };
        let mut types: Vec<&str> = OBSERVE_TABLE.iter().map(|r| r.kind).collect();
        types.dedup();
        let types: Vec<Value> = types
            .into_iter()
            .map(|kind| {
                let rows = || OBSERVE_TABLE.iter().filter(move |r| r.kind == kind);
                let any = rows().find(|r| r.subtype.is_none()).map(row);
                let subs: Vec<Value> = rows()
                    .filter_map(|r| Some(json!([r.subtype?, row(r)])))
                    .collect();
                let subs = (!subs.is_empty()).then_some(subs);
                json!([kind, {"any": any, "subs": subs}])
            })
            .collect();
        let settles = OBSERVE_TABLE
            .iter()
            .find(|r| r.effect == reference::Effect::Settle)
            .map(row);
        json!({"types": types, "settles": settles}).to_string()
    }

    /// The soonest a message can bring a deadline back after it, ms: the shortest of the
    /// idle, no-progress and linger limits (work or a background task un-settling a query;
    /// a background task's end starting the linger). A host that tells the core later checks
    /// no later than this after such a message.
    pub fn soonest(&self) -> f64 {
        let l = &self.limits;
        clock::duration_ms(l.idle().min(l.no_progress()).min(l.linger()))
    }

    fn entry(&mut self, slot: u32) -> Option<&mut Entry> {
        self.slots.get_mut(slot as usize)?.as_mut()
    }

    /// Register a query at `now_ms` with its hard ceiling (`NaN` or infinite: none; zero or
    /// less: at once). Returns its slot.
    pub fn register(&mut self, now_ms: f64, ceiling_ms: f64) -> u32 {
        let ceiling = if ceiling_ms.is_nan() || ceiling_ms == f64::INFINITY {
            None
        } else {
            Some(clock::duration(ceiling_ms).unwrap_or(Duration::ZERO))
        };
        let config = reference::session(self.limits.clone(), ceiling);
        let id = self.registry.register(clock::instant(now_ms), config);
        self.seq += 1;
        let entry = Entry {
            id,
            seq: self.seq,
            started: now_ms,
            ceiling: ceiling_ms,
            last_tool: now_ms,
            latest: now_ms,
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

    /// Run `f` on the registry for the query of `slot` (the latest instant it gave moves to
    /// `at`); returns the registry's next deadline, host ms ([`poll_timeout`](Self::poll_timeout)):
    /// the host re-arms its timer when that is sooner than the one it armed.
    fn feed(&mut self, slot: u32, at: f64, f: impl FnOnce(&mut Registry, &Entry)) -> f64 {
        if let Some(e) = self.entry(slot) {
            e.latest = e.latest.max(at);
            let e = *e;
            f(&mut self.registry, &e);
        }
        self.poll_timeout()
    }

    /// What the host kept of a query since it last told the registry (the reference's
    /// assignments, each the last of its kind): its last work at `work_ms`, its last sign of
    /// life of any kind at `last_ms` (`NaN`: none since), and whether it is settled, since
    /// `settled_ms` (`NaN`: since the latest instant the query gave; the reference's
    /// `settle()` takes none). The idle clock runs from the later of the last sign of life
    /// and the last tool boundary, as the reference's does.
    pub fn sync(
        &mut self,
        slot: u32,
        work_ms: f64,
        last_ms: f64,
        settled: bool,
        settled_ms: f64,
    ) -> f64 {
        let at = work_ms.max(last_ms).max(settled_ms);
        self.feed(slot, at, |reg, e| {
            let floor = |ms: f64| clock::instant(ms.max(e.last_tool));
            if !work_ms.is_nan() {
                reg.observe_class(floor(work_ms), e.id, WORK);
            }
            if !last_ms.is_nan() && last_ms.to_bits() != work_ms.to_bits() {
                reg.observe_class(floor(last_ms), e.id, ALIVE);
            }
            if settled {
                let at = if settled_ms.is_nan() {
                    e.latest
                } else {
                    settled_ms
                };
                reg.settle(clock::instant(at), e.id);
            }
        })
    }

    /// A message the core reads whole ([`reference::Effect::Line`]), as the host hands it
    /// over: a JSON object of the row's [`fields`](reference::Row::fields), which the host
    /// writes itself (so it is skimmed, not validated again).
    pub fn observe_line(&mut self, slot: u32, line: &[u8], now_ms: f64) -> f64 {
        self.feed(slot, now_ms, |reg, e| {
            let now = clock::instant(now_ms);
            match LineView::parse_validated(line) {
                Some(view) => {
                    reg.observe(now, e.id, &view);
                }
                None => {
                    reg.observe_line(now, e.id, line);
                }
            }
        })
    }

    /// A message the table ignores: it proves the child started (our startup rule).
    pub fn started(&mut self, slot: u32, now_ms: f64) -> f64 {
        self.feed(slot, now_ms, |reg, e| {
            reg.note_started(clock::instant(now_ms), e.id);
        })
    }

    /// `handle.activity(toolName)`: a tool boundary, a write tool's a completed write.
    pub fn activity(&mut self, slot: u32, tool: Option<&str>, now_ms: f64) -> f64 {
        if let Some(e) = self.entry(slot) {
            e.last_tool = now_ms;
        }
        self.feed(slot, now_ms, |reg, e| {
            reg.tool_boundary(clock::instant(now_ms), e.id, tool)
        })
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

    /// `tick(now)`: the utilization the host read, then the reference's check at `now_ms`:
    /// what fell due by then, each query's verdict as the reference's check names it — a
    /// kill (the ceiling's when it is due at `now_ms`, whatever fell due before) or else the
    /// first extension of the registration. The records come back in `out` (cleared first),
    /// in registration order; the host reports each it delivers with
    /// [`deliver`](Self::deliver) (a callback may end a query before its turn).
    pub fn tick(&mut self, now_ms: f64, utilization: Option<f64>, out: &mut Vec<Record>) {
        out.clear();
        self.pending.clear();
        self.utilization = utilization.filter(|u| !u.is_nan());
        if self.registry.is_empty() {
            return;
        }
        let now = clock::instant(now_ms);
        self.ticked = Some(now);
        self.registry.set_utilization(now, self.utilization);
        self.registry.handle_timeout(now);
        while let Some(event) = self.registry.poll_event() {
            let (id, reason) = match &event {
                Event::Killed(kill) => (kill.id, None),
                Event::Extended { id, reason } => (*id, Some(*reason)),
                _ => continue,
            };
            let Some(&slot) = self.by_id.get(&id) else {
                continue;
            };
            let Some(e) = self.slots[slot as usize] else {
                continue;
            };
            let (record, event) = match (event, reason) {
                (Event::Killed(mut kill), _) => {
                    // A kill replaces the extension the same check found.
                    self.pending.retain(|p| p.seq != e.seq);
                    if kill.kind != KillKind::Ceiling
                        && reference::ceiling_due(e.started, e.ceiling, now_ms)
                    {
                        kill.kind = KillKind::Ceiling;
                        kill.at = clock::instant(e.started + e.ceiling);
                    }
                    let record = Record::Kill {
                        slot,
                        kind: kill.kind,
                        started: e.started,
                        last_tool: e.last_tool,
                    };
                    (record, Event::Killed(kill))
                }
                (event, Some(reason)) if !e.extension_reported => {
                    (Record::Extended { slot, reason }, event)
                }
                _ => continue,
            };
            self.pending.push(Pending {
                seq: e.seq,
                record,
                event,
            });
        }
        self.pending.sort_by_key(|p| p.seq);
        out.extend(self.pending.iter().map(|p| p.record));
    }

    /// The host delivered record `i` of the last tick: counted now (a kill with its lateness
    /// from its deadline to the tick), and the query remembers it (its kill decides how it
    /// ends; its extension is reported once).
    pub fn deliver(&mut self, i: u32) {
        let (Some(p), Some(now)) = (self.pending.get(i as usize), self.ticked) else {
            return;
        };
        let id = match &p.event {
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
        match &p.event {
            Event::Killed(kill) if entry.killed.is_none() => entry.killed = Some(kill.kind),
            Event::Extended { .. } if !entry.extension_reported => entry.extension_reported = true,
            _ => return,
        }
        self.counters.record(&p.event, || now);
    }

    /// When [`tick`](Self::tick) next has work, host ms (`Infinity`: never).
    pub fn poll_timeout(&self) -> f64 {
        self.registry
            .poll_timeout()
            .map_or(f64::INFINITY, clock::ms)
    }

    /// `close()`: forget every query; what registers next starts afresh (the counters stay:
    /// they count the watchdog's life).
    pub fn clear(&mut self) {
        self.registry = registry(&self.limits);
        self.slots.clear();
        self.free.clear();
        self.by_id.clear();
        self.pending.clear();
    }

    /// The counters' snapshot, as the core's JSON with this API's names (`endedKilled`,
    /// `stallingWarnings`, `killLateness` with `sumSeconds`).
    pub fn metrics_json(&self) -> String {
        let mut m = self
            .counters
            .snapshot(self.registry.len(), self.utilization)
            .to_json();
        if let Some(m) = m.as_object_mut() {
            for (from, to) in [
                ("ended_killed", "endedKilled"),
                ("stalling_warnings", "stallingWarnings"),
                ("kill_lateness", "killLateness"),
            ] {
                if let Some(v) = m.remove(from) {
                    m.insert(to.into(), v);
                }
            }
            if let Some(l) = m.get_mut("killLateness").and_then(Value::as_object_mut) {
                if let Some(sum) = l.remove("sum") {
                    l.insert("sumSeconds".into(), sum);
                }
            }
        }
        m.to_string()
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

    /// The kills a tick at `at` delivers, with the instant each fell due (the counters'
    /// lateness is measured from it).
    fn kills(w: &mut Watchdog, at: f64) -> Vec<(u32, KillKind, f64)> {
        let mut out = Vec::new();
        w.tick(at, None, &mut out);
        for i in 0..out.len() {
            w.deliver(i as u32);
        }
        w.pending
            .iter()
            .filter_map(|p| match (&p.record, &p.event) {
                (Record::Kill { slot, kind, .. }, Event::Killed(k)) => {
                    Some((*slot, *kind, clock::ms(k.at)))
                }
                _ => None,
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
        w.started(talking, T0 + MIN);
        let k = kills(&mut w, T0 + 2.0 * MIN);
        assert_eq!(k, [(quiet, KillKind::Startup, T0 + 2.0 * MIN)]);
        // Work at 5 min moves the clock: killed 20 min later (pre-write).
        w.sync(talking, T0 + 5.0 * MIN, T0 + 5.0 * MIN, false, f64::NAN);
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
        // A feed of `b` at 6 min...
        w.sync(b, f64::NAN, f64::NAN, true, T0 + 6.0 * MIN);
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
        assert_eq!(m["endedKilled"]["ceiling"], 1, "{m}");
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

    #[test]
    fn the_hosts_table_resolves_the_heartbeat_row_and_names_what_the_core_reads() {
        let effect = |w: &Watchdog, kind: &str| -> u64 {
            let t: Value = serde_json::from_str(&w.table_json()).unwrap();
            let row = t["types"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p[0] == kind)
                .unwrap();
            row[1]["any"]["effect"].as_u64().unwrap()
        };
        let on = watchdog(options());
        let off = watchdog(Options {
            tool_heartbeats: false,
            ..options()
        });
        let work = u64::from(reference::Effect::Work.code());
        assert_eq!(effect(&on, "tool_progress"), work);
        assert_eq!(
            effect(&off, "tool_progress"),
            u64::from(reference::Effect::None.code())
        );
        let t: Value = serde_json::from_str(&on.table_json()).unwrap();
        let system = t["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0] == "system")
            .unwrap();
        assert!(system[1]["any"].is_null());
        let subs = system[1]["subs"].as_array().unwrap();
        let retry = subs.iter().find(|p| p[0] == "api_retry").unwrap();
        assert_eq!(retry[1]["keys"], json!([",\"retry_delay_ms\":"]));
        assert_eq!(t["settles"]["head"], r#"{"type":"result""#);
    }
}
