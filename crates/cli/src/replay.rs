//! `agent-watchdog replay`: feed a capture through the core in virtual time and report what
//! the watchdog would have done.
//!
//! Rules (the same the live `run` follows):
//! - virtual time is a base `Instant` plus each entry's `t_ms` (never going backwards);
//! - before an entry at `t` is delivered, every deadline strictly before `t` fires; an entry
//!   whose `t_ms` equals a pending deadline is delivered first (captures round times down to
//!   the millisecond, so such a line may well have come first live; the core fires a deadline
//!   before a line of the very same instant, so the entry is fed one nanosecond earlier);
//! - `line` and `raw` entries are stdout lines (`raw` ones are unparseable keep-alives), `stdin`
//!   entries go to `observe_input`, `stderr` entries move no clock, `exit` ends the session;
//! - a capture without `exit` means the child stayed silent from its last entry on: deadlines
//!   fire until a kill (or until nothing is pending);
//! - the `start` record's `wall_ms` tells when a rate-limit window's `resetsAt` has passed;
//!   without it no window expires.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use watchdog_core::capture::{Entry, Record};
use watchdog_core::rate_limit::{RateLimitConfig, RateLimitMonitor};
use watchdog_core::{
    Event, Kill, Limits, LineKind, LineView, Outcome, Registry, SessionConfig, SessionId,
};

use crate::duration::format_duration;
use crate::tally::Tally;
use crate::verdict::{event_json, kill_json, offset_ms};

/// Cap on `t_ms` (about 10 years), so that no virtual instant can overflow.
const MAX_T_MS: u64 = 10 * 365 * 24 * 3600 * 1000;

/// A capture read from a file: its entries and the lines that could not be read.
#[derive(Debug, Default)]
pub struct Capture {
    /// The readable entries, in file order.
    pub entries: Vec<Entry>,
    /// Unreadable lines: (1-based line number, reason).
    pub skipped: Vec<(usize, String)>,
}

/// Read a capture. Blank lines are skipped silently, unreadable ones are listed in
/// [`Capture::skipped`] (a crash may truncate the last line).
pub fn read_capture(reader: impl BufRead) -> std::io::Result<Capture> {
    let mut cap = Capture::default();
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match Entry::parse(&line) {
            Ok(Some(e)) => cap.entries.push(e),
            Ok(None) => {}
            Err(e) => cap.skipped.push((i + 1, e.to_string())),
        }
    }
    Ok(cap)
}

/// One event of the replay, at its virtual time.
#[derive(Debug, Clone)]
pub struct TimedEvent {
    /// Milliseconds since spawn.
    pub t_ms: u64,
    /// The event.
    pub event: Event,
}

/// What the watchdog would have done with a capture.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The outcome.
    pub outcome: Outcome,
    /// The kill, if any.
    pub kill: Option<Kill>,
    /// Every event, in order.
    pub events: Vec<TimedEvent>,
    /// The first stdout line: (t_ms, its type/subtype).
    pub first_line: Option<(u64, String)>,
    /// The exit record, if the capture has one: (t_ms, code, signal).
    pub exit: Option<(u64, Option<i32>, Option<i32>)>,
    /// The last entry's time (the point from which a capture without `exit` is silent).
    pub last_t_ms: u64,
    /// Entries after the kill (lines the child printed while it was being stopped).
    pub after_kill: usize,
    /// What the stdout lines said.
    pub tally: Tally,
    /// The virtual base instant (t_ms = 0).
    pub base: Instant,
}

impl Verdict {
    /// The session id the lines carried.
    pub fn session_id(&self) -> Option<&str> {
        self.tally.session_id.as_deref()
    }

    /// The `--json` object.
    pub fn to_json(&self) -> Value {
        json!({
            "outcome": self.outcome.as_str(),
            "kill": self.kill.as_ref().map(|k| kill_json(k, self.base)),
            "events": self
                .events
                .iter()
                .map(|e| event_json(&e.event, self.base + Duration::from_millis(e.t_ms), self.base))
                .collect::<Vec<_>>(),
            "session_id": self.session_id(),
            "result": self.tally.result_json(),
            "exit": self.exit.map(|(t, code, signal)| json!({"t_ms": t, "code": code, "signal": signal})),
            "lines": self.tally.counts_json(),
        })
    }
}

struct Replayer {
    reg: Registry,
    id: SessionId,
    base: Instant,
    events: Vec<TimedEvent>,
    kill: Option<Kill>,
    ended: Option<Outcome>,
    tally: Tally,
    wall_ms: Option<u64>,
    monitor: RateLimitMonitor,
}

impl Replayer {
    fn at(&self, t_ms: u64) -> Instant {
        self.base + Duration::from_millis(t_ms.min(MAX_T_MS))
    }

    fn drain(&mut self, now: Instant) {
        while let Some(event) = self.reg.poll_event() {
            match &event {
                Event::Killed(k) if self.kill.is_none() => self.kill = Some(k.clone()),
                Event::Ended { outcome, .. } if self.ended.is_none() => {
                    self.ended = Some(outcome.clone());
                }
                _ => {}
            }
            // A kill is stamped with its own instant; other events with the current one.
            let at = match &event {
                Event::Killed(k) => k.at,
                _ => now,
            };
            self.events.push(TimedEvent {
                t_ms: offset_ms(self.base, at),
                event,
            });
        }
    }

    /// Fire every deadline strictly before `until` (or all of them when `None`), stopping at
    /// a kill.
    fn fire_until(&mut self, until: Option<Instant>) {
        let mut last: Option<Instant> = None;
        while self.kill.is_none() && self.ended.is_none() {
            let Some(d) = self.reg.poll_timeout() else {
                break;
            };
            if until.is_some_and(|u| d >= u) {
                break;
            }
            // Guard against a deadline that does not move (never loop forever).
            if last.is_some_and(|l| d <= l) {
                break;
            }
            last = Some(d);
            self.reg.handle_timeout(d);
            self.drain(d);
        }
    }

    /// Wall-clock epoch ms at `t_ms`; without a `start` record 0, so that no window's reset
    /// has passed.
    fn wall_now(&self, t_ms: u64) -> u64 {
        self.wall_ms.map_or(0, |w| w.saturating_add(t_ms))
    }

    fn utilization_now(&self, t_ms: u64) -> Option<f64> {
        self.monitor.utilization(self.wall_now(t_ms))
    }
}

/// Replay `entries` under `limits`.
pub fn replay(entries: &[Entry], limits: Limits) -> Verdict {
    let base = Instant::now();
    let mut reg = Registry::new(limits);
    let id = reg.register(base, SessionConfig::default());
    let mut r = Replayer {
        reg,
        id,
        base,
        events: Vec::new(),
        kill: None,
        ended: None,
        tally: Tally::default(),
        wall_ms: None,
        monitor: RateLimitMonitor::new(RateLimitConfig::default()),
    };
    let mut first_line = None;
    let mut exit = None;
    let mut t_ms = 0u64;
    let mut after_kill = 0usize;
    let mut util: Option<f64> = None;

    for entry in entries {
        if r.kill.is_some() || r.ended.is_some() {
            if r.kill.is_some() && exit.is_none() {
                after_kill += 1;
                if let Record::Exit { code, signal } = entry.record {
                    exit = Some((entry.t_ms, code, signal));
                }
            }
            continue;
        }
        t_ms = t_ms.max(entry.t_ms.min(MAX_T_MS));
        let at = r.at(t_ms);
        r.fire_until(Some(at));
        // An entry exactly at a pending deadline comes first (see the module docs).
        let now = if r.reg.poll_timeout() == Some(at) {
            at.checked_sub(Duration::from_nanos(1)).unwrap_or(at)
        } else {
            at
        };
        if r.kill.is_some() {
            after_kill += 1;
            if let Record::Exit { code, signal } = entry.record {
                exit = Some((entry.t_ms, code, signal));
            }
            continue;
        }
        match &entry.record {
            Record::Start { wall_ms, .. } => r.wall_ms = *wall_ms,
            Record::Line(v) => {
                match LineView::from_value(v) {
                    Ok(view) => {
                        let class = r.reg.observe(now, r.id, &view);
                        r.tally.observe(&view, class);
                        if class.kind == LineKind::RateLimit {
                            let wall = r.wall_now(t_ms);
                            let _ = r.monitor.observe(wall, &view);
                        }
                        if first_line.is_none() {
                            let mut name = view.kind().map(|k| k.into_owned()).unwrap_or_default();
                            if let Some(s) = view.subtype() {
                                name = format!("{name}/{s}");
                            }
                            first_line = Some((t_ms, name));
                        }
                    }
                    Err(_) => {
                        r.reg.observe_line(now, r.id, v.to_string().as_bytes());
                        r.tally.unparseable();
                        first_line.get_or_insert((t_ms, "unparseable".into()));
                    }
                }
                let u = r.utilization_now(t_ms);
                if u != util {
                    util = u;
                    r.reg.set_utilization(now, u);
                }
            }
            Record::Raw(s) => {
                r.reg.observe_line(now, r.id, s.as_bytes());
                r.tally.unparseable();
                first_line.get_or_insert((t_ms, "unparseable".into()));
            }
            Record::Stdin(v) => {
                if let Ok(view) = LineView::from_value(v) {
                    r.reg.observe_input(now, r.id, &view);
                }
            }
            Record::Stderr(_) | Record::Boundary(_) => {}
            Record::Exit { code, signal } => {
                exit = Some((t_ms, *code, *signal));
                let out = r.reg.end(now, r.id);
                if r.ended.is_none() {
                    r.ended = out;
                }
            }
        }
        r.drain(now);
        // A window whose reset passed lowers the utilization even without a new line.
        if r.wall_ms.is_some() && r.monitor.latest().is_some() {
            let u = r.utilization_now(t_ms);
            if u != util {
                util = u;
                r.reg.set_utilization(now, u);
                r.drain(now);
            }
        }
    }

    if r.kill.is_none() && r.ended.is_none() {
        // No exit: the child is silent from its last entry on.
        r.fire_until(None);
    }
    let outcome = if let Some(k) = &r.kill {
        Outcome::Killed { kind: k.kind }
    } else if let Some(o) = r.ended.clone() {
        o
    } else {
        let now = r.at(t_ms);
        let o = r.reg.end(now, r.id).unwrap_or(Outcome::NoResult);
        r.drain(now);
        o
    };
    Verdict {
        outcome,
        kill: r.kill,
        events: r.events,
        first_line,
        exit,
        last_t_ms: t_ms,
        after_kill,
        tally: r.tally,
        base,
    }
}

fn secs(t_ms: u64) -> String {
    format!("{:>9.3}s", t_ms as f64 / 1000.0)
}

/// The human report: a short timeline and the verdict.
pub fn write_human(
    v: &Verdict,
    name: &str,
    limits: &Limits,
    out: &mut impl Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "replay of {name} (idle {}, no-progress {}, startup {}, linger {}, ceiling {})",
        format_duration(limits.idle()),
        format_duration(limits.no_progress()),
        format_duration(limits.startup()),
        format_duration(limits.linger()),
        limits.ceiling().map_or("none".into(), format_duration),
    )?;
    if let Some((t, what)) = &v.first_line {
        let sid = v
            .session_id()
            .map(|s| format!(", session {s}"))
            .unwrap_or_default();
        writeln!(out, "{}  first line ({what}){sid}", secs(*t))?;
    }
    for e in &v.events {
        let line = match &e.event {
            Event::Settled { .. } => {
                let r = v.tally.result.as_ref();
                let sub = r.and_then(|r| r.subtype.clone()).unwrap_or_default();
                format!("settled: result {sub}")
            }
            Event::Extended { reason, .. } => {
                format!("idle patience extended ({})", reason.as_str())
            }
            Event::Stalling {
                clock, remaining, ..
            } => format!(
                "stalling: {} clock, {} left",
                match clock {
                    watchdog_core::StallClock::Idle => "idle",
                    watchdog_core::StallClock::NoProgress => "no-progress",
                },
                format_duration(*remaining)
            ),
            Event::Killed(k) => format!("KILL {}: {}", k.kind, crate::verdict::kill_detail(k)),
            Event::Ended { outcome, .. } => format!("ended: {}", outcome.as_str()),
            other => format!("{other:?}"),
        };
        writeln!(out, "{}  {line}", secs(e.t_ms))?;
    }
    if v.exit.is_none() {
        writeln!(
            out,
            "{}  (capture ends without an exit: assumed silent from here on)",
            secs(v.last_t_ms)
        )?;
    } else if let Some((t, code, signal)) = v.exit {
        let how = match (code, signal) {
            (Some(c), _) => format!("code {c}"),
            (None, Some(s)) => format!("signal {s}"),
            _ => "unknown status".into(),
        };
        let note = if v.kill.is_some() {
            " (after the kill)"
        } else {
            ""
        };
        writeln!(out, "{}  process exited, {how}{note}", secs(t))?;
    }
    let verdict = match (&v.kill, &v.outcome) {
        (Some(k), _) => format!(
            "killed ({}) at {}, {} since the last progress",
            k.kind,
            format_duration(k.elapsed),
            format_duration(k.since_progress)
        ),
        (None, o) => o.as_str().to_string(),
    };
    writeln!(out, "verdict: {verdict}")?;
    Ok(())
}
