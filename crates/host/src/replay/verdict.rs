//! What a replay reports: the verdict of each recorded run, its events at their virtual
//! times, the exit records, and the times not taken as written.

use watchdog_core::Instant;

use watchdog_core::Class;
use watchdog_core::RunRecord;
use watchdog_core::{Event, Kill, Outcome};

/// Why an entry's `t_ms` was not taken as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFault {
    /// Earlier than the previous entry's time.
    Backwards,
    /// A fraction of a millisecond.
    Fractional,
    /// Below zero.
    Negative,
    /// Above [`MAX_T_MS`](super::MAX_T_MS).
    TooLarge,
}

impl TimeFault {
    /// A short phrase, e.g. `goes backwards`.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeFault::Backwards => "goes backwards",
            TimeFault::Fractional => "is fractional",
            TimeFault::Negative => "is negative",
            TimeFault::TooLarge => "is absurdly large",
        }
    }
}

/// The times that were not taken as written: the first one, and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeFaults {
    /// The line number (as given to [`Replay::feed`](super::Replay::feed)) of the first one.
    pub first_line: u64,
    /// What was wrong with it.
    pub first: TimeFault,
    /// The time it was taken as (the previous entry's), in ms.
    pub taken_ms: u64,
    /// How many entries in all.
    pub count: u64,
}

/// One event of the replay, at its virtual time.
#[derive(Debug, Clone)]
pub struct TimedEvent {
    /// The run it belongs to (0 for the first; one more after each `boundary`).
    pub run: usize,
    /// Milliseconds since the run's spawn.
    pub t_ms: u64,
    /// The event.
    pub event: Event,
}

/// An `exit` record: when, and how the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitRecord {
    /// Milliseconds since spawn.
    pub t_ms: u64,
    /// Exit code, if it exited normally.
    pub code: Option<i32>,
    /// Signal number, if a signal ended it.
    pub signal: Option<i32>,
}

/// What the watchdog would have done with one recorded run.
#[derive(Debug, Clone)]
pub struct RunVerdict {
    /// The run (0 for the first).
    pub run: usize,
    /// How it ends, as one record: what the registry read (outcome, kill, session id, last
    /// `result`, tally, rate-limit readings), the recorded exit, and the run's stdout lines by
    /// kind (a `raw` record counts as [`LineKind::Unparseable`](watchdog_core::LineKind::Unparseable)).
    /// No ladder [`Stage`](watchdog_core::Stage): a replay runs none.
    pub record: RunRecord,
    /// The `exit` record, if the run has one (its time; the record has its code and signal).
    pub exit: Option<ExitRecord>,
    /// The last entry's time: from here on a run without `exit` is silent.
    pub last_t_ms: u64,
    /// Entries after the kill, up to the `exit`.
    pub after_kill: u64,
    /// Entries of this run fed (every record with a usable time).
    pub entries: u64,
    /// The run ended at a `boundary`: its time on this run's clock, which is where the next
    /// run's t = 0 lies on the recording's timeline.
    pub boundary_ms: Option<u64>,
    /// The virtual instant of t = 0 (kills carry instants; subtract this for ms).
    pub base: Instant,
}

impl RunVerdict {
    /// How the run ends (the record's).
    pub fn outcome(&self) -> &Outcome {
        &self.record.outcome
    }

    /// The kill, if any (the record's).
    pub fn kill(&self) -> Option<&Kill> {
        self.record.kill.as_ref()
    }
}

/// What [`Replay::feed`](super::Replay::feed) did with an entry.
#[derive(Debug)]
pub enum Step {
    /// A stdout line was observed, with its class, at this time (ms since the run's spawn).
    /// [`LineKind::Unparseable`](watchdog_core::LineKind::Unparseable) for `raw` records.
    Line {
        /// The line's class.
        class: Class,
        /// Its virtual time.
        t_ms: u64,
    },
    /// Another record was applied (start, stdin, stderr, exit).
    Applied,
    /// The run was already killed or ended: nothing was fed.
    Ignored,
    /// A `boundary`: this run ended (the verdict), the next one begins.
    RunEnded(Box<RunVerdict>),
}
