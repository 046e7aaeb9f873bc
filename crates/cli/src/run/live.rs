//! What one supervised run shows and keeps while it runs ([`Live`]): the child's output passed
//! on and recorded, the policy's events said, the status line, and the stop when our output
//! cannot be delivered. The loop that drives it is in `drive.rs`.

use std::time::{Duration, Instant};

use agent_sdk_watchdog::{
    Batch, LineMeta, Output, RunPhase, StdoutBatch, Supervisor, SupervisorHandle,
};
use serde_json::{json, Value};
use watchdog_core::facts::Activity;
use watchdog_core::{facts::ClaudeSessionId, Event, Kill, LineKind, Signal, StallClock};
use watchdog_host::capture::Record;

use super::host::{wall_ms, Host};
use super::record::trim_cr;
use super::stderr_dedup::StderrDedup;
use super::stdout::{Failure, WriteError, OUTPUT_DRAIN};
use crate::event_log::EventLog;
use crate::status;
use crate::verdict::{event_json, killed_clause, ms};
use watchdog_core::config::HumanDuration;

// The longest stdout line handled as one line (the supervisor's default, and the cap `replay`
// and `audit` read captures with); longer ones come in pieces.
use watchdog_core::config::MAX_LINE;

/// What a run shows and keeps while it runs.
pub(super) struct Live<'h> {
    pub(super) host: &'h mut Host,
    pub(super) handle: SupervisorHandle,
    pub(super) start: Instant,
    pub(super) what: String,
    pub(super) stderr_filter: StderrDedup,
    pub(super) events: EventLog<Value>,
    pub(super) kill: Option<Kill>,
    /// Our stdout could not be written: the child is being stopped.
    pub(super) output_error: Option<WriteError>,
    pub(super) last_progress: Option<Instant>,
    pub(super) activity: Activity,
    pub(super) activity_since: Instant,
    /// Bytes of the over-long line being read, if one is.
    pub(super) overlong: Option<usize>,
    /// The continuation runs another session than the one it resumes: the id it runs.
    pub(super) session_mismatch: Option<String>,
    /// When the first stdout batch came (time to first line).
    pub(super) first_line: Option<Instant>,
    /// How long after its deadline the kill event reached this loop.
    pub(super) kill_late: Option<Duration>,
    /// We forwarded a signal of the user's: the run is being stopped.
    pub(super) interrupted: bool,
    /// The run is ending (a kill, or the child's end, [`Live::on_phase`]): since when, and
    /// whether it is a stop.
    pub(super) ending: Option<(Instant, bool)>,
    /// What the run's records may say of a command line.
    pub(super) command_lines: crate::tree_report::CommandLines,
    /// A result nobody asked for was said (once a run; the summary counts them all).
    pub(super) unsolicited_said: bool,
    /// Bytes our stdout had dropped before this run (the host's count spans its runs).
    pub(super) dropped_before: u64,
}

impl<'h> Live<'h> {
    /// The run of `sup`'s child, `what` (its program's name), shown on `host`; its records say
    /// of command lines what `command_lines` allows.
    pub(super) fn new(
        host: &'h mut Host,
        sup: &Supervisor,
        what: String,
        command_lines: crate::tree_report::CommandLines,
    ) -> Self {
        let start = sup.started();
        Live {
            handle: sup.handle(),
            dropped_before: host.stdout.dropped(),
            host,
            start,
            what,
            stderr_filter: StderrDedup::default(),
            events: EventLog::default(),
            kill: None,
            output_error: None,
            last_progress: None,
            activity: Activity::Starting,
            activity_since: start,
            overlong: None,
            session_mismatch: None,
            first_line: None,
            kill_late: None,
            interrupted: false,
            ending: None,
            command_lines,
            unsolicited_said: false,
        }
    }

    /// Hand the buffered child stdout to our stdout's writer (never waits).
    pub(super) fn flush_stdout(&mut self) {
        self.host.stdout.flush();
    }

    /// Our stdout's writer wrote something or failed: a failure is handled once.
    pub(super) fn on_stdout_progress(&mut self) {
        if let Some(e) = self.host.stdout.take_error() {
            self.on_write_error(e);
        }
    }

    /// The first stdout write error: say it once, stop the child (it would work on, and bill,
    /// for a reader that is gone), keep reading and recording what it prints until it ends.
    pub(super) fn on_write_error(&mut self, e: WriteError) {
        if self.output_error.is_some() {
            return;
        }
        if e.failure == Failure::Blocked {
            // It says the stop itself (`killed … (output_blocked) …`).
            self.host.status.say(&e.to_string());
        } else {
            self.host.status.say(&format!(
                "{e}; stopping {} and its whole process tree",
                self.what
            ));
        }
        if self.kill.is_none() {
            self.handle.kill_now();
        }
        self.output_error = Some(e);
    }

    /// Our reader (or, for the drop-in, our host) went away while nothing was written: the
    /// same as a write that failed with EPIPE, noticed at once.
    pub(super) fn on_gone(&mut self, gone: super::vanished::Gone) {
        if self.output_error.is_some() {
            return;
        }
        self.host.stdout.abandon();
        self.on_write_error(WriteError {
            failure: Failure::Closed,
            error: gone.error(),
            blocked_for: None,
        });
    }

    /// The run reached `phase` (a kill under way, or the child's own exit), learnt even while
    /// our reader takes nothing (then none of the child's output, the kill event included,
    /// reaches this loop). After the child's own end the output-blocked bound still holds; once
    /// the run is being stopped, our stdout may take nothing for at most [`OUTPUT_DRAIN`] more
    /// before what waits for it is dropped.
    pub(super) fn on_phase(&mut self, phase: RunPhase) {
        if self.ending.is_some() || phase == RunPhase::Running {
            return;
        }
        let now = Instant::now();
        let stopped = phase == RunPhase::Stopping
            || self.interrupted
            || self.output_error.is_some()
            || self.session_mismatch.is_some();
        if stopped {
            self.host.stdout.tighten(now, OUTPUT_DRAIN);
        }
        self.ending = Some((now, stopped));
    }

    /// Look at our stdout's writer (the loop does every so often while bytes wait): a reader
    /// that took no byte for the bound is handled ([`Live::on_blocked`]).
    pub(super) fn look_at_stdout(&mut self) {
        if let Some(d) = self.host.stdout.look(Instant::now()) {
            self.on_blocked(d);
        }
    }

    /// Our stdout accepted no byte for the bound while bytes waited for it, `blocked_for`
    /// counted: what waits is dropped and nothing more is forwarded (the rest of the child's
    /// output is still read and recorded). While the child runs this is a stop of its own
    /// (`output_blocked`, exit 75: the child is stopped, it would work on for nobody); after
    /// the child's own end it is our output failing (exit 75 too); while the run is being
    /// stopped, the stop's own code stands.
    pub(super) fn on_blocked(&mut self, blocked_for: Duration) {
        let waiting = self.host.stdout.waiting();
        let bound = self.host.stdout.bound().unwrap_or(blocked_for);
        self.host.stdout.abandon();
        let took = format!("our stdout took no byte for {}", HumanDuration(bound));
        match self.ending {
            Some((_, true)) => self.host.status.say(&format!(
                "{took} while {} was being stopped: {waiting} bytes of its output were not \
                 delivered",
                self.what
            )),
            Some((_, false)) => {
                let e = WriteError::blocked(
                    blocked_for,
                    format!(
                        "{took} after {} ended, while {waiting} bytes of its output waited \
                         (the reader stopped reading): they were not delivered",
                        self.what
                    ),
                );
                self.host.status.say(&e.to_string());
                self.output_error = Some(e);
            }
            None => self.on_write_error(WriteError::blocked(
                blocked_for,
                format!(
                    "killed {} (output_blocked) after {}: {took} while {waiting} bytes of its \
                     output waited (the reader stopped reading); stopping its whole process \
                     tree",
                    self.what,
                    HumanDuration(self.start.elapsed()),
                ),
            )),
        }
    }

    /// The user signalled us while the child had ended and our stdout still had bytes to
    /// deliver: they are dropped (the reader was not taking them).
    pub(super) fn on_drain_interrupted(&mut self, waiting: u64) {
        if let Some((_, true)) = self.ending {
            self.host.status.say(&format!(
                "a signal came while {} was being stopped: {waiting} bytes of its output our \
                 stdout had not taken were not delivered",
                self.what
            ));
            return;
        }
        let e = WriteError::blocked(
            Duration::ZERO,
            format!(
                "a signal came while our stdout still had {waiting} bytes of {}'s output to \
                 deliver: they were not delivered",
                self.what
            ),
        );
        self.host.status.say(&e.to_string());
        if self.output_error.is_none() {
            self.output_error = Some(e);
        }
    }

    /// Record a line written to the child's stdin (`None`: its stdin was closed).
    pub(super) fn record_written(&mut self, note: Option<Vec<u8>>) {
        let t = self.t_ms(Instant::now());
        match note {
            Some(bytes) => {
                if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                    self.host.recorder.write(t, Record::Stdin(v));
                }
            }
            None => self
                .host
                .recorder
                .write(t, Record::Stdin(json!({"note": "stdin closed"}))),
        }
    }

    pub(super) fn t_ms(&self, now: Instant) -> u64 {
        ms(now.saturating_duration_since(self.start))
    }

    pub(super) fn on_batch(&mut self, batch: Batch) {
        match batch {
            Batch::Stdout(b) => self.on_stdout(b),
            Batch::Output(out) => self.on_output(out),
        }
    }

    /// Stdout lines read together: passed on as they are (one write for a large batch) and
    /// recorded. The policy read them already (each line once, in the supervisor); what they
    /// said comes as its events, and the class it gave each line is all this loop looks at.
    pub(super) fn on_stdout(&mut self, b: StdoutBatch) {
        self.host.stdout.push(b.bytes());
        let now = b.at();
        self.first_line.get_or_insert(now);
        self.host.telemetry.stdout(
            now.saturating_duration_since(self.start),
            b.lines(),
            &self.handle,
        );
        for m in b.lines() {
            let bytes = b.line(m);
            if m.piece {
                let n = self.overlong.unwrap_or(0) + bytes.len();
                self.overlong = Some(n);
                if !m.continues {
                    self.overlong = None;
                    self.end_overlong(now, n);
                }
                continue;
            }
            self.stdout_line(now, bytes, m);
        }
        if self.host.status.is_live() {
            // The status line shows the activity the policy's tally holds.
            let activity = self.handle.activity();
            if let Some(a) = activity.filter(|a| *a != self.activity) {
                self.activity_since = now.checked_sub(a.already()).unwrap_or(now);
                self.activity = a;
            }
        }
    }

    pub(super) fn on_output(&mut self, out: Output) {
        let now = Instant::now();
        match out {
            // Stdout comes in batches (`on_stdout`).
            Output::Stdout(_) => {}
            Output::Stderr(line) => {
                let t = self.t_ms(now);
                self.host.recorder.write(
                    t,
                    Record::Stderr(String::from_utf8_lossy(trim_cr(&line.bytes)).into_owned()),
                );
                if self.stderr_filter.admit(&line.bytes) {
                    let mut b = line.bytes;
                    if line.newline {
                        b.push(b'\n');
                    }
                    self.host.status.write_raw(&b);
                }
            }
            Output::Event(ev) => self.on_event(now, ev),
            // A sample of the process tree: the capture keeps it, for replay's rules.
            Output::Tree { at, sample } => {
                let t = self.t_ms(at);
                // The sampler redacted each command line; without command lines, the
                // programs only.
                let mut sample = sample;
                if self.command_lines != crate::tree_report::CommandLines::Redacted {
                    self.command_lines
                        .sample(std::sync::Arc::make_mut(&mut sample));
                }
                if let Ok(v) = serde_json::to_value(&*sample) {
                    self.host.recorder.write(t, Record::Tree(v));
                }
            }
            // Over-long lines are said when they end (`end_overlong`).
            _ => {}
        }
    }

    pub(super) fn end_overlong(&mut self, now: Instant, n: usize) {
        self.host.status.say(&format!(
            "warning: a stdout line of {n} bytes is over the {} MiB limit; counted as a keep-alive",
            MAX_LINE >> 20
        ));
        let t = self.t_ms(now);
        self.host
            .recorder
            .write(t, Record::Raw(format!("<over-long line: {n} bytes>")));
    }

    /// One complete stdout line, passed on: recorded, and its class noted.
    pub(super) fn stdout_line(&mut self, now: Instant, bytes: &[u8], m: &LineMeta) {
        let t = self.t_ms(now);
        let class = m.class;
        self.host
            .recorder
            .stdout_line(t, bytes, class.kind != LineKind::Unparseable);
        if matches!(class.signal, Signal::Progress | Signal::Settle) {
            self.last_progress = Some(now);
        }
    }

    /// A continuation must go on with the same session: stop it when its id differs (the
    /// policy compared the ids: [`Event::SessionMismatch`]).
    pub(super) fn on_mismatch(&mut self, expected: &ClaudeSessionId, got: Option<ClaudeSessionId>) {
        let got = got.map(String::from).unwrap_or_default();
        self.host.status.say(&format!(
            "recovery: the continuation runs session {got:?}, not {expected}; stopping it"
        ));
        self.session_mismatch = Some(got);
        self.handle.kill_now();
    }

    /// Whether the periodic tick has work: a status line to redraw.
    pub(super) fn needs_tick(&self) -> bool {
        self.host.status.is_live()
    }

    pub(super) fn on_event(&mut self, now: Instant, mut ev: Event) {
        // What a kill's evidence names is recorded as the run's records may say it.
        self.command_lines.event(&mut ev);
        if self.host.telemetry.event(&ev, now, &self.handle) {
            return;
        }
        let at = match &ev {
            Event::Killed(k) => k.at,
            _ => now,
        };
        self.events.push_json(event_json(&ev, at, self.start));
        match ev {
            // Warnings (once per window until it resets or falls back), rejections, credits
            // and recoveries: each said once, as the policy's monitor decided.
            Event::RateLimit { event, .. } => self.host.status.say(&event.to_string()),
            Event::SessionMismatch { expected, got, .. } if self.session_mismatch.is_none() => {
                self.on_mismatch(&expected, got);
            }
            Event::Killed(k) if self.kill.is_none() && self.output_error.is_none() => {
                self.host.status.say(&killed_clause(&k, &self.what));
                self.kill_late = Some(now.saturating_duration_since(k.at));
                self.kill = Some(k);
            }
            Event::Stalling {
                clock, remaining, ..
            } => {
                let what = match clock {
                    StallClock::Idle => "no stdout line",
                    StallClock::NoProgress => "no progress (keep-alives only)",
                    _ => "no progress",
                };
                let kind = clock.as_str();
                self.host.status.say(&format!(
                    "warning: {what} for a while; it will be stopped ({kind}) in {} unless it \
                     moves",
                    HumanDuration(remaining)
                ));
            }
            Event::TaskSilent { task, .. } => self
                .host
                .status
                .say(&crate::outstanding::task_silent_notice(&task)),
            // Said for the first only: the summary's `turns` counts them all.
            Event::UnsolicitedResult {
                results, messages, ..
            } if !self.unsolicited_said => {
                self.unsolicited_said = true;
                self.host
                    .status
                    .say(&crate::outstanding::unsolicited_notice(results, messages));
            }
            _ => {}
        }
    }

    pub(super) fn refresh_status(&self, now: Instant) {
        if !self.host.status.is_live() {
            return;
        }
        let wall = wall_ms();
        let monitor = self.handle.rate_limits();
        let rate = monitor
            .filter(|m| m.active_windows(wall).next().is_some())
            .map(|m| m.summary(wall));
        self.host.status.set(status::render(
            now,
            self.start,
            &self.activity.to_string(),
            self.activity_since,
            self.last_progress,
            rate.as_deref(),
        ));
    }
}
