//! Replaying a capture in virtual time: what the watchdog would have done with a recording.
//!
//! [`Replay`] takes a capture's entries one at a time, each read in place
//! ([`EntryView::parse`]: the `line` record is the same borrowed [`LineView`](watchdog_core::LineView) a live run
//! builds), and drives one [`Registry`] per recorded run in virtual time. Nothing is kept per
//! entry, so a capture of any length replays in constant memory. It is the one replay of the
//! project: `agent-watchdog replay` and `audit`'s simulation of captures both use it.
//!
//! # Rules
//!
//! - **Virtual time** of an entry is a base instant plus its `t_ms`. Time never goes
//!   backwards: a `t_ms` earlier than the previous entry's, fractional, negative, or above
//!   [`MAX_T_MS`] (about ten years) is taken as the previous entry's time, and reported once
//!   per replay ([`Replay::time_faults`]: the first such line and how many there were).
//! - **A line exactly at a deadline comes too late**, as in a live run: before an entry at
//!   `t` is delivered, every deadline at or before `t` fires, in time order (the registry does
//!   the same with a live line: it processes everything due at or before the line's instant
//!   first, and every kill lands exactly at its deadline).
//! - **Records.** `line` is a stdout line ([`Registry::observe`]); `raw`, and a `line` that
//!   is not a JSON object, is an unparseable line (a keep-alive); `stdin` goes to
//!   [`Registry::observe_input`] (the note `{"note": "stdin closed"}` to
//!   [`Registry::input_closed`]); `stderr` moves no clock; `start` gives the wall clock at
//!   spawn, which tells when a rate-limit window's `resetsAt` has passed (without it no window
//!   expires); `exit` ends the session ([`Registry::end`]); `tree` is a sample of the process
//!   tree ([`Registry::observe_tree`]: a busy tool, the memory guard); `receipt` is kept for
//!   the run's record (it comes after a kill, as live).
//! - **Dialects.** A run's lines are read in the dialect its `start` records (else the one
//!   its recorded command line runs, else Claude Code's), confirmed or chosen by its first
//!   decisive line, as live ([`SessionConfig::with_dialect`]).
//! - **Waiting for the host.** When the first run's `start` (its first entry) records a command
//!   line that reads stream-json on stdin, its session is registered with
//!   [`SessionConfig::with_host_input`], as the live run's was: after each `result` it waits
//!   for the host's next `user` message (a `stdin` entry) or the `stdin closed` note. A
//!   continuation (a run after a `boundary`) never does: live, it gets `/dev/null`.
//! - **After a kill** nothing more is fed; the entries that follow up to the `exit` are
//!   counted ([`RunVerdict::after_kill`]: lines the child printed while it was being stopped).
//! - **A run that stops without an `exit`** is silent from its last entry on: deadlines fire
//!   until a kill (or until nothing is pending).
//! - **Runs.** A `boundary` record ends the current run (as if its capture stopped there) and
//!   starts the next one (a recovery continuation) on a new registry, with `t_ms` from 0.
//!
//! # Example
//!
//! ```
//! use std::time::Instant;
//! use watchdog_host::capture::EntryView;
//! use watchdog_host::replay::{Replay, Step};
//! use watchdog_core::{Limits, Outcome};
//!
//! let capture = br#"{"t_ms":0,"start":{"wall_ms":1,"argv":["claude"],"version":1}}
//! {"t_ms":40,"line":{"type":"system","subtype":"init","session_id":"s1"}}
//! {"t_ms":900,"line":{"type":"result","subtype":"success","is_error":false}}
//! {"t_ms":950,"exit":{"code":0,"signal":null}}"#;
//! let mut replay = Replay::new(Limits::default(), Instant::now());
//! for (i, line) in capture.split(|b| *b == b'\n').enumerate() {
//!     let entry = EntryView::parse(line).unwrap().unwrap();
//!     let step = replay.feed(i as u64 + 1, &entry);
//!     assert!(!matches!(step, Step::RunEnded(_)));
//!     while let Some(_event) = replay.poll_event() {}
//! }
//! let verdict = replay.finish();
//! assert_eq!(verdict.record.outcome, Outcome::Success);
//! ```

use std::collections::VecDeque;
use std::time::Duration;

use watchdog_core::Instant;

use crate::capture::{BadTime, EntryView, RecordView};
use watchdog_core::Registry;
use watchdog_core::{ChildExit, LineCounts, RunRecord};
use watchdog_core::{Dialect, Limits, SessionConfig};
use watchdog_core::{Event, Kill, Outcome, SessionId};

/// The largest `t_ms` taken as given (about ten years): no virtual instant can overflow.
pub const MAX_T_MS: u64 = 10 * 365 * 24 * 3600 * 1000;

/// Bound on deadlines fired for one silent tail (a registry that kept rescheduling could
/// otherwise loop; a real one reaches a kill in a handful).
const MAX_TAIL_STEPS: usize = 100_000;

mod verdict;

pub use verdict::{ExitRecord, RunVerdict, Step, TimeFault, TimeFaults, TimedEvent};

/// One recorded run being replayed.
struct Run {
    reg: Registry,
    id: SessionId,
    t_ms: u64,
    kill: Option<Kill>,
    ended: Option<Outcome>,
    exit: Option<ExitRecord>,
    after_kill: u64,
    entries: u64,
    receipt: Option<watchdog_core::evidence::Receipt>,
}

/// A capture being replayed in virtual time (see the module docs for the rules).
pub struct Replay {
    limits: Limits,
    base: Instant,
    run_index: usize,
    run: Run,
    events: VecDeque<TimedEvent>,
    faults: Option<TimeFaults>,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("run", &self.run_index)
            .field("t_ms", &self.run.t_ms)
            .finish_non_exhaustive()
    }
}

impl Run {
    fn new(limits: &Limits, base: Instant) -> Self {
        let mut reg = Registry::new(limits.clone());
        let id = reg.register(base, session_config());
        // Until a `start` gives the wall clock at spawn: wall time 0, when no window's reset
        // has passed (the readings still set the utilization, as in the live run).
        reg.set_wall_clock(base, 0);
        Run {
            reg,
            id,
            t_ms: 0,
            kill: None,
            ended: None,
            exit: None,
            after_kill: 0,
            entries: 0,
            receipt: None,
        }
    }

    fn done(&self) -> bool {
        self.kill.is_some() || self.ended.is_some()
    }
}

impl Replay {
    /// A replay under `limits`; `base` is the virtual instant of t = 0 (any instant will do).
    pub fn new(limits: Limits, base: Instant) -> Self {
        let run = Run::new(&limits, base);
        Replay {
            limits,
            base,
            run_index: 0,
            run,
            events: VecDeque::new(),
            faults: None,
        }
    }

    /// The current run's time, ms since its spawn.
    pub fn t_ms(&self) -> u64 {
        self.run.t_ms
    }

    /// The current run (0 for the first).
    pub fn run(&self) -> usize {
        self.run_index
    }

    /// The times not taken as written so far, if any.
    pub fn time_faults(&self) -> Option<TimeFaults> {
        self.faults
    }

    /// The next event, in order. Drain after every call; undrained events accumulate.
    pub fn poll_event(&mut self) -> Option<TimedEvent> {
        self.events.pop_front()
    }

    fn at(&self) -> Instant {
        self.base + Duration::from_millis(self.run.t_ms)
    }

    /// Move the clock to the entry's time (never backwards; see the module docs).
    fn advance(&mut self, line: u64, t: Result<u64, BadTime>) {
        let prev = self.run.t_ms;
        let fault = match t {
            Ok(t) if t > MAX_T_MS => Some(TimeFault::TooLarge),
            Ok(t) if t < prev => Some(TimeFault::Backwards),
            Ok(t) => {
                self.run.t_ms = t;
                None
            }
            Err(BadTime::Fractional) => Some(TimeFault::Fractional),
            Err(BadTime::Negative) => Some(TimeFault::Negative),
            Err(BadTime::TooLarge) => Some(TimeFault::TooLarge),
        };
        if let Some(fault) = fault {
            match &mut self.faults {
                Some(f) => f.count += 1,
                None => {
                    self.faults = Some(TimeFaults {
                        first_line: line,
                        first: fault,
                        taken_ms: prev,
                        count: 1,
                    })
                }
            }
        }
    }

    fn drain(&mut self, now: Instant) {
        while let Some(event) = self.run.reg.poll_event() {
            match &event {
                Event::Killed(k) if self.run.kill.is_none() => self.run.kill = Some(k.clone()),
                Event::Ended { outcome, .. } if self.run.ended.is_none() => {
                    self.run.ended = Some(outcome.clone());
                }
                _ => {}
            }
            // A kill is dated at its own deadline; the others at the call that made them.
            let at = match &event {
                Event::Killed(k) => k.at,
                _ => now,
            };
            self.events.push_back(TimedEvent {
                run: self.run_index,
                t_ms: ms_since(self.base, at),
                event,
            });
        }
    }

    /// Fire every deadline at or before `until` (all of them when `None`), one at a time so
    /// that each event is dated at its own instant; stops at a kill.
    fn fire_until(&mut self, until: Option<Instant>) {
        let mut last: Option<Instant> = None;
        for _ in 0..MAX_TAIL_STEPS {
            if self.run.done() {
                return;
            }
            let Some(d) = self.run.reg.poll_timeout() else {
                return;
            };
            if until.is_some_and(|u| d > u) || last.is_some_and(|l| d <= l) {
                return;
            }
            last = Some(d);
            self.run.reg.handle_timeout(d);
            self.drain(d);
        }
    }

    /// Feed one entry; `line` is its line number, for [`Replay::time_faults`]. Drain
    /// [`Replay::poll_event`] afterwards.
    pub fn feed(&mut self, line: u64, entry: &EntryView<'_>) -> Step {
        if let RecordView::Boundary = entry.record {
            self.advance(line, entry.t_ms);
            let mut verdict = self.end_run();
            verdict.boundary_ms = Some(self.run.t_ms);
            self.run_index += 1;
            self.run = Run::new(&self.limits, self.base);
            return Step::RunEnded(Box::new(verdict));
        }
        if self.run.done() {
            self.keep_receipt(entry);
            if self.run.kill.is_some() && self.run.exit.is_none() {
                self.run.after_kill += 1;
                if let RecordView::Exit { code, signal } = entry.record {
                    self.advance(line, entry.t_ms);
                    self.run.exit = Some(ExitRecord {
                        t_ms: self.run.t_ms,
                        code,
                        signal,
                    });
                }
            }
            return Step::Ignored;
        }
        self.advance(line, entry.t_ms);
        self.run.entries += 1;
        let now = self.at();
        self.fire_until(Some(now));
        if self.run.kill.is_some() {
            // The kill came first: this entry is one the child printed while being stopped.
            return self.feed_after_kill(entry);
        }
        let (id, t_ms) = (self.run.id, self.run.t_ms);
        let step = match &entry.record {
            RecordView::Start {
                wall_ms,
                stream_json_input,
                dialect,
            } => {
                // Rate-limit windows reset at wall times: the registry knows when from this.
                if let Some(wall) = *wall_ms {
                    self.run.reg.set_wall_clock(now, wall);
                }
                // The first run of a live invocation reads the host's stdin (a continuation gets
                // /dev/null): a stream-json reader there waits for its host after each result.
                // Its lines were expected in the dialect its command ran, as live.
                let host_input = *stream_json_input;
                let dialect = dialect.unwrap_or_default();
                let first = self.run_index == 0 && self.run.entries == 1;
                if first && (host_input || dialect != Dialect::Claude) {
                    let reg = &mut self.run.reg;
                    reg.unregister(id);
                    let config = session_config()
                        .with_host_input(host_input)
                        .with_dialect(dialect);
                    self.run.id = reg.register(now, config);
                }
                Step::Applied
            }
            RecordView::Line(view) => {
                let class = self.run.reg.observe(now, id, view);
                Step::Line { class, t_ms }
            }
            RecordView::Unparseable => {
                let class = self.run.reg.observe_line(now, id, b"");
                Step::Line { class, t_ms }
            }
            RecordView::Stdin(view) => {
                if let Some(view) = view {
                    if is_stdin_closed_note(view) {
                        self.run.reg.input_closed(now, id);
                    } else {
                        self.run.reg.observe_input(now, id, view);
                    }
                }
                Step::Applied
            }
            RecordView::Stderr => Step::Applied,
            RecordView::Exit { code, signal } => {
                self.run.exit = Some(ExitRecord {
                    t_ms,
                    code: *code,
                    signal: *signal,
                });
                let out = self.run.reg.end(now, id);
                if self.run.ended.is_none() {
                    self.run.ended = out;
                }
                Step::Applied
            }
            RecordView::Boundary => Step::Applied,
            RecordView::Tree(sample) => {
                if let Some(sample) = sample {
                    self.run.reg.observe_tree(now, id, sample);
                }
                Step::Applied
            }
            RecordView::Receipt(_) => {
                self.keep_receipt(entry);
                Step::Applied
            }
        };
        self.drain(now);
        step
    }

    /// A `receipt` record: the run's record carries the last one.
    fn keep_receipt(&mut self, entry: &EntryView<'_>) {
        if let RecordView::Receipt(Some(r)) = &entry.record {
            self.run.receipt = Some((**r).clone());
        }
    }

    fn feed_after_kill(&mut self, entry: &EntryView<'_>) -> Step {
        self.keep_receipt(entry);
        self.run.after_kill += 1;
        if let RecordView::Exit { code, signal } = entry.record {
            self.run.exit = Some(ExitRecord {
                t_ms: self.run.t_ms,
                code,
                signal,
            });
        }
        Step::Ignored
    }

    /// End the current run: without an `exit`, the child is silent from its last entry on.
    fn end_run(&mut self) -> RunVerdict {
        if !self.run.done() {
            self.fire_until(None);
        }
        // The end comes at the last entry, or at the kill of a silent tail if that is later
        // (a run ended at its `exit` ended there already: nothing new is emitted).
        let now = match &self.run.kill {
            Some(k) => k.at.max(self.at()),
            None => self.at(),
        };
        let (id, counts) = (self.run.id, *self.run.reg.line_counts());
        let mut record = self
            .run
            .reg
            .finish(now, id)
            .unwrap_or_else(RunRecord::unobserved);
        self.drain(now);
        record.lines = LineCounts::from(counts);
        record.exit = self.run.exit.map(|e| ChildExit {
            code: e.code,
            signal: e.signal,
        });
        record.receipt = self.run.receipt.take();
        RunVerdict {
            run: self.run_index,
            record,
            exit: self.run.exit,
            last_t_ms: self.run.t_ms,
            after_kill: self.run.after_kill,
            entries: self.run.entries,
            boundary_ms: None,
            base: self.base,
        }
    }

    /// End the replay: the verdict of the last run. Drain [`Replay::poll_event`] afterwards.
    pub fn finish(&mut self) -> RunVerdict {
        self.end_run()
    }
}

/// How a replayed run's session is registered: with its tally, and keeping the tool calls
/// and tree samples the `tree` records feed.
/// A replayed session's config: as a live run's, whose lines confirm the dialect its command
/// runs (Claude Code's until a `start` says otherwise).
fn session_config() -> SessionConfig {
    SessionConfig::default()
        .with_tally(true)
        .with_tree_evidence(true)
        .with_dialect(Dialect::Claude)
}

/// The note a live run records when the child's stdin was closed:
/// `{"note": "stdin closed"}` (no `type`).
fn is_stdin_closed_note(view: &watchdog_core::LineView<'_>) -> bool {
    view.kind().is_none()
        && view
            .member("note")
            .and_then(|n| n.as_str())
            .is_some_and(|n| n == "stdin closed")
}

/// Milliseconds from `base` to `at`, rounded to the nearest (0 before `base`).
// The audit times its simulated kills the same way; not an API for users.
#[doc(hidden)]
pub fn ms_since(base: Instant, at: Instant) -> u64 {
    let ns = at.saturating_duration_since(base).as_nanos();
    u64::try_from(ns.saturating_add(500_000) / 1_000_000).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchdog_core::KillKind;

    fn replay(text: &str, limits: Limits) -> (Vec<RunVerdict>, Vec<TimedEvent>, Replay) {
        let mut r = Replay::new(limits, Instant::now());
        let mut runs = Vec::new();
        let mut events = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Ok(Some(e)) = EntryView::parse(line.as_bytes()) {
                if let Step::RunEnded(v) = r.feed(i as u64 + 1, &e) {
                    runs.push(*v);
                }
            }
            events.extend(std::iter::from_fn(|| r.poll_event()));
        }
        runs.push(r.finish());
        events.extend(std::iter::from_fn(|| r.poll_event()));
        (runs, events, r)
    }

    fn idle(ms: u64) -> Limits {
        Limits::default()
            .with_idle(Duration::from_millis(ms))
            .and_then(|l| l.with_extend_factor(1.0))
            .unwrap()
    }

    /// A line exactly at the idle deadline is too late, as live; a millisecond earlier saves it.
    #[test]
    fn a_line_at_the_deadline_comes_after_the_kill() {
        let at = |t: u64| {
            format!(
                "{{\"t_ms\":0,\"line\":{{\"type\":\"system\",\"subtype\":\"init\"}}}}\n{{\"t_ms\":{t},\"line\":{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false}}}}\n{{\"t_ms\":{t},\"exit\":{{\"code\":0}}}}"
            )
        };
        let (runs, _, _) = replay(&at(1000), idle(1000));
        let k = runs[0].kill().expect("killed at the deadline");
        assert_eq!(k.kind, KillKind::Idle);
        assert_eq!(ms_since(runs[0].base, k.at), 1000);
        assert_eq!(runs[0].after_kill, 2);
        assert_eq!(runs[0].exit.map(|e| e.t_ms), Some(1000));
        let (runs, _, _) = replay(&at(999), idle(1000));
        assert_eq!(runs[0].record.outcome, Outcome::Success);
    }

    /// The same rule as the registry fed live: a line at the deadline's instant.
    #[test]
    fn the_rule_is_the_registry_s_own() {
        let base = Instant::now();
        let mut reg = Registry::new(idle(1000));
        let id = reg.register(base, SessionConfig::default());
        reg.observe_line(base, id, br#"{"type":"system","subtype":"init"}"#);
        reg.observe_line(
            base + Duration::from_millis(1000),
            id,
            br#"{"type":"user"}"#,
        );
        assert_eq!(reg.kill(id).map(|k| k.kind), Some(KillKind::Idle));
    }

    #[test]
    fn bad_times_are_clamped_and_reported_once() {
        let text = "{\"t_ms\":0,\"line\":{\"type\":\"system\",\"subtype\":\"init\"}}\n\
            {\"t_ms\":500,\"line\":{\"type\":\"user\"}}\n\
            {\"t_ms\":100,\"line\":{\"type\":\"user\"}}\n\
            {\"t_ms\":700.5,\"line\":{\"type\":\"user\"}}\n\
            {\"t_ms\":1e300,\"line\":{\"type\":\"user\"}}\n\
            {\"t_ms\":-3,\"line\":{\"type\":\"user\"}}\n\
            {\"t_ms\":99999999999999999999,\"line\":{\"type\":\"user\"}}\n\
            {\"t_ms\":800,\"exit\":{\"code\":0}}";
        let (runs, _, r) = replay(text, Limits::default());
        let f = r.time_faults().unwrap();
        assert_eq!(
            (f.first_line, f.first, f.taken_ms, f.count),
            (3, TimeFault::Backwards, 500, 5)
        );
        assert_eq!(runs[0].exit.unwrap().t_ms, 800);
        assert_eq!(runs[0].record.outcome, Outcome::NoResult);
    }

    #[test]
    fn a_boundary_starts_a_second_run_from_zero() {
        let text = "{\"t_ms\":0,\"line\":{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"a\"}}\n\
            {\"t_ms\":5000,\"line\":{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"api_error\":\"max_output_tokens\"}}\n\
            {\"t_ms\":5010,\"exit\":{\"code\":1}}\n\
            {\"t_ms\":5010,\"boundary\":{\"recovery\":\"max_output_tokens\"}}\n\
            {\"t_ms\":0,\"start\":{\"wall_ms\":1}}\n\
            {\"t_ms\":30,\"line\":{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"a\"}}";
        let (runs, events, r) = replay(text, Limits::default());
        assert_eq!(runs.len(), 2);
        assert!(matches!(runs[0].record.outcome, Outcome::ErrorResult(_)));
        assert_eq!(
            runs[1].record.outcome,
            Outcome::Killed {
                kind: KillKind::Idle
            }
        );
        // Patience is doubled before the first write: 30 ms + 20 min, in the second run's time.
        let k = runs[1].kill().unwrap();
        assert_eq!(ms_since(runs[1].base, k.at), 30 + 20 * 60 * 1000);
        assert!(events.iter().any(|e| e.run == 1));
        assert_eq!(runs[0].boundary_ms, Some(5010));
        assert_eq!(
            r.time_faults(),
            None,
            "t_ms restarting after a boundary is no fault"
        );
    }
}
