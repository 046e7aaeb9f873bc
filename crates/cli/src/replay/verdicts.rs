//! A capture streamed through the core's virtual-time replay: one verdict per run, and the
//! report of what the watchdog would have done (the timeline, or JSON).
//!
//! The rules are the core's ([`watchdog_host::replay`]): one replay for `replay` and `audit`,
//! with the live run's rule at a deadline (a line exactly at a deadline comes too late). This
//! module reads the file line by line ([`watchdog_host::capture::lines`]: 64 MiB cap, a leading BOM
//! skipped), tallies each run's stdout lines, keeps a bounded log of its events
//! ([`crate::event_log`]), and renders the report. Memory does not grow with the capture.
//!
//! A recording of a recovered run (a `boundary` record, then the continuation with `t_ms`
//! from 0) gives one verdict per run.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use watchdog_core::{facts::ClaudeSessionId, Event, Kill, Limits, Outcome, RunRecord};
use watchdog_host::capture::{Entry, EntryView, RecordView};
use watchdog_host::replay::{ExitRecord, Replay, RunVerdict, Step, TimeFaults, TimedEvent};

use crate::event_log::EventLog;
use crate::verdict::{event_json, record_json};
use watchdog_core::config::HumanDuration;
use watchdog_host::capture::lines::{is_blank, Item, Lines};

/// Unreadable lines listed one by one; the rest are only counted.
const SKIPPED_LISTED: usize = 10;

/// One recorded run as replayed for display: the core's [`RunVerdict`] (its record: the
/// outcome, the kill, the facts, the lines, the exit) with the events and the first line
/// `replay` and `audit` show.
#[derive(Debug, Clone)]
pub struct ReplayRun {
    /// The run (0 for the first, one more after each `boundary`).
    pub run: usize,
    /// How the run ends, as the replay's registry recorded it.
    pub record: RunRecord,
    /// The events, bounded (the first and last ones; the rest counted).
    pub events: EventLog<TimedEvent>,
    /// The first stdout line: (t_ms, its type/subtype).
    pub first_line: Option<(u64, String)>,
    /// The exit record, if the run has one (its time; the record has its code and signal).
    pub exit: Option<ExitRecord>,
    /// The last entry's time (the point from which a run without `exit` is silent).
    pub last_t_ms: u64,
    /// Entries after the kill (lines the child printed while it was being stopped).
    pub after_kill: u64,
    /// The run ended at a `boundary` at this time (where the next run's t = 0 lies).
    pub boundary_ms: Option<u64>,
    /// The virtual base instant (t_ms = 0).
    pub base: Instant,
}

/// A whole capture replayed: one verdict per run, and what could not be read.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// One verdict per recorded run, in order (at least one).
    pub runs: Vec<ReplayRun>,
    /// Records read (lines with a known record and a time).
    pub records: u64,
    /// The first unreadable lines: (1-based line number, reason).
    pub skipped: Vec<(u64, String)>,
    /// Unreadable lines in all.
    pub skipped_count: u64,
    /// Times not taken as written (clamped to the previous time), if any.
    pub time_faults: Option<TimeFaults>,
}

impl ReplayRun {
    fn new(run: usize, base: Instant) -> Self {
        ReplayRun {
            run,
            record: RunRecord::unobserved(),
            events: EventLog::default(),
            first_line: None,
            exit: None,
            last_t_ms: 0,
            after_kill: 0,
            boundary_ms: None,
            base,
        }
    }

    fn close(&mut self, v: RunVerdict) {
        self.record = v.record;
        self.exit = v.exit;
        self.last_t_ms = v.last_t_ms;
        self.after_kill = v.after_kill;
        self.boundary_ms = v.boundary_ms;
        self.base = v.base;
    }

    /// How the run ends.
    pub fn outcome(&self) -> &Outcome {
        &self.record.outcome
    }

    /// The kill, if any.
    pub fn kill(&self) -> Option<&Kill> {
        self.record.kill.as_ref()
    }

    /// The session id the lines carried.
    pub fn session_id(&self) -> Option<&str> {
        self.record.session_id.as_ref().map(ClaudeSessionId::as_str)
    }

    /// The `--json` object of this run: the record's fields as `run --summary` writes them
    /// (the one serializer of a run's record), with the run's index, its events, its exit's time and its boundary.
    pub fn to_json(&self) -> Value {
        let mut v = record_json(&self.record, self.base);
        v.insert("run".into(), json!(self.run));
        v.insert(
            "events".into(),
            Value::Array(self.events.to_json_with(|e| {
                event_json(
                    &e.event,
                    self.base + Duration::from_millis(e.t_ms),
                    self.base,
                )
            })),
        );
        if let (Some(e), Some(exit)) = (self.exit, v.get_mut("exit")) {
            exit["t_ms"] = json!(e.t_ms);
        }
        v.insert("boundary_ms".into(), json!(self.boundary_ms));
        Value::Object(v)
    }
}

impl Replayed {
    /// The `--json` object: the first run's fields at the top level (a plain capture has only
    /// that one), every run under `runs`, and what could not be read.
    pub fn to_json(&self) -> Value {
        let mut v = self.runs.first().map_or(Value::Null, ReplayRun::to_json);
        if let Value::Object(m) = &mut v {
            m.remove("run");
            m.insert(
                "runs".into(),
                self.runs.iter().map(ReplayRun::to_json).collect(),
            );
            m.insert("skipped_lines".into(), json!(self.skipped_count));
            m.insert(
                "clamped_times".into(),
                json!(self.time_faults.map_or(0, |f| f.count)),
            );
        }
        v
    }

    /// The first run's verdict.
    pub fn first(&self) -> &ReplayRun {
        &self.runs[0]
    }
}

/// Replay a capture read from `reader`, line by line, under `limits`.
pub fn replay_reader(reader: impl Read, limits: Limits) -> io::Result<Replayed> {
    let base = Instant::now();
    let mut lines = Lines::new(reader);
    let mut replay = Replay::new(limits, base);
    let mut out = Replayed {
        runs: Vec::new(),
        records: 0,
        skipped: Vec::new(),
        skipped_count: 0,
        time_faults: None,
    };
    let mut cur = ReplayRun::new(0, base);
    let skip = |out: &mut Replayed, n: u64, why: String| {
        out.skipped_count += 1;
        if out.skipped.len() < SKIPPED_LISTED {
            out.skipped.push((n, why));
        }
    };
    while let Some(item) = lines.next_item()? {
        let (n, line) = match item {
            Item::Overlong(n, len) => {
                let why = format!(
                    "line of {len} bytes, longer than {} MiB",
                    watchdog_core::config::MAX_LINE >> 20
                );
                skip(&mut out, n, why);
                continue;
            }
            Item::Line { n, line, .. } => (n, line),
        };
        if is_blank(line) {
            continue;
        }
        let entry = match EntryView::parse(line) {
            Ok(Some(e)) => e,
            Ok(None) => continue,
            Err(e) => {
                skip(&mut out, n, e.to_string());
                continue;
            }
        };
        out.records += 1;
        let step = replay.feed(n, &entry);
        if let Step::Line { t_ms, .. } = step {
            match &entry.record {
                RecordView::Line(view) => {
                    if cur.first_line.is_none() {
                        let mut name = view.kind().map(|k| k.into_owned()).unwrap_or_default();
                        if let Some(s) = view.subtype() {
                            name = format!("{name}/{s}");
                        }
                        cur.first_line = Some((t_ms, name));
                    }
                }
                _ => {
                    cur.first_line.get_or_insert((t_ms, "unparseable".into()));
                }
            }
        }
        drain(&mut replay, &mut cur);
        if let Step::RunEnded(v) = step {
            cur.close(*v);
            let next = ReplayRun::new(cur.run + 1, base);
            out.runs.push(std::mem::replace(&mut cur, next));
        }
    }
    let v = replay.finish();
    drain(&mut replay, &mut cur);
    cur.close(v);
    out.runs.push(cur);
    out.time_faults = replay.time_faults();
    Ok(out)
}

fn drain(replay: &mut Replay, cur: &mut ReplayRun) {
    while let Some(e) = replay.poll_event() {
        let kind = match e.event {
            Event::Killed(_) => "killed",
            Event::Extended { .. } => "extended",
            Event::Stalling { .. } => "stalling",
            Event::Settled { .. } => "settled",
            Event::Ended { .. } => "ended",
            _ => "other",
        };
        cur.events.push(kind, e);
    }
}

/// Replay owned entries (for tests and tools that build captures in memory).
pub fn replay_entries(entries: &[Entry], limits: Limits) -> Replayed {
    let mut text = Vec::new();
    for e in entries {
        text.extend_from_slice(e.to_json().as_bytes());
        text.push(b'\n');
    }
    // Reading from memory cannot fail.
    replay_reader(&text[..], limits).unwrap_or_else(|_| Replayed {
        runs: vec![ReplayRun::new(0, Instant::now())],
        records: 0,
        skipped: Vec::new(),
        skipped_count: 0,
        time_faults: None,
    })
}

fn secs(t_ms: u64) -> String {
    format!("{:>9.3}s", t_ms as f64 / 1000.0)
}

fn event_line(v: &ReplayRun, e: &TimedEvent) -> String {
    match &e.event {
        Event::Settled { .. } => {
            let sub = v.record.result.as_ref().and_then(|r| r.subtype.clone());
            let sub = sub.unwrap_or_default();
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
                other => other.as_str(),
            },
            HumanDuration(*remaining)
        ),
        Event::Killed(k) => format!("KILL {}: {}", k.kind, crate::verdict::kill_detail(k)),
        Event::Ended { outcome, .. } => format!("ended: {}", outcome.as_str()),
        Event::TaskSilent { task, .. } => crate::outstanding::task_silent_notice(task),
        Event::UnsolicitedResult {
            results, messages, ..
        } => crate::outstanding::unsolicited_notice(*results, *messages),
        other => format!("{other:?}"),
    }
}

/// The human report: per run, a short timeline and the verdict.
pub fn write_human(
    r: &Replayed,
    name: &str,
    limits: &Limits,
    out: &mut impl Write,
) -> io::Result<()> {
    writeln!(
        out,
        "replay of {name} (idle {}, no-progress {}, startup {}, linger {}, ceiling {})",
        HumanDuration(limits.idle()),
        HumanDuration(limits.no_progress()),
        HumanDuration(limits.startup()),
        HumanDuration(limits.linger()),
        limits
            .ceiling()
            .map_or("none".into(), |d| HumanDuration(d).to_string()),
    )?;
    let many = r.runs.len() > 1;
    for v in &r.runs {
        if many {
            let what = if v.run == 0 {
                "the first run".to_string()
            } else {
                format!("continuation {}", v.run)
            };
            writeln!(
                out,
                "run {} of {} ({what}), t from 0:",
                v.run + 1,
                r.runs.len()
            )?;
        }
        write_run(v, out)?;
    }
    Ok(())
}

fn write_run(v: &ReplayRun, out: &mut impl Write) -> io::Result<()> {
    if let Some((t, what)) = &v.first_line {
        let sid = v
            .session_id()
            .map(|s| format!(", session {s}"))
            .unwrap_or_default();
        writeln!(out, "{}  first line ({what}){sid}", secs(*t))?;
    }
    for e in v.events.head() {
        writeln!(out, "{}  {}", secs(e.t_ms), event_line(v, e))?;
    }
    if v.events.left_out() > 0 {
        writeln!(
            out,
            "{:>10}  … {} more events left out: {}",
            "",
            v.events.left_out(),
            v.events.left_out_json()
        )?;
    }
    for e in v.events.tail() {
        writeln!(out, "{}  {}", secs(e.t_ms), event_line(v, e))?;
    }
    match v.exit {
        None => writeln!(
            out,
            "{}  (capture ends without an exit: assumed silent from here on)",
            secs(v.last_t_ms)
        )?,
        Some(e) => {
            let how = match (e.code, e.signal) {
                (Some(c), _) => format!("code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "unknown status".into(),
            };
            let note = if v.kill().is_some() {
                " (after the kill)"
            } else {
                ""
            };
            writeln!(out, "{}  process exited, {how}{note}", secs(e.t_ms))?;
        }
    }
    let verdict = match (v.kill(), v.outcome()) {
        (Some(k), _) => format!(
            "killed ({}) at {}, {} since the last progress",
            k.kind,
            HumanDuration(k.elapsed),
            HumanDuration(k.since_progress)
        ),
        (None, o) => o.as_str().to_string(),
    };
    writeln!(out, "verdict: {verdict}")
}
