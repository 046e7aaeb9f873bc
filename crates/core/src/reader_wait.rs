//! The output-blocked bound ([`Limits::output_blocked`](crate::Limits::output_blocked)), as one
//! rule: how long a host's reader has taken no byte while output waited for it
//! ([`ReaderWait`]).
//!
//! The host measures where it writes (its stdout, not a queue in front of it) and looks at
//! its writer now and then ([`ReaderWait::look`]): whether bytes wait, and whether the reader
//! took any since the last look. The rule turns those looks into a verdict:
//!
//! - only time during which bytes waited counts; any byte taken restarts the count;
//! - time the host itself did not run (stopped by SIGSTOP or Ctrl-Z, suspended, starved for
//!   long) does not count: a look that comes more than [`STOPPED_AFTER`] after the previous
//!   one counts only [`LOOK_EVERY`] of the gap, so a reader that drained while the host was
//!   stopped is never blamed for the stop;
//! - once the count reaches the bound, the reader is blocked ([`Look::Blocked`]); no bound
//!   (`None`), no verdict.
//!
//! The same rule holds while the child runs (the host then stops it: `output_blocked`) and
//! after it ended (the host then drops what is left), and when the run is being stopped, with
//! a shorter bound from then on ([`ReaderWait::tighten`]). No I/O, no clock: `now` is a
//! parameter.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use watchdog_core::reader_wait::{Look, ReaderWait, LOOK_EVERY};
//! let t0 = Instant::now();
//! let mut w = ReaderWait::new(Some(Duration::from_secs(3)));
//! let mut t = t0;
//! // The reader takes a byte now and then: never blocked.
//! for i in 0..100 {
//!     assert!(!matches!(w.look(t, true, i % 20 == 0), Look::Blocked(_)));
//!     t += LOOK_EVERY;
//! }
//! // Then nothing for 3 s while bytes wait: blocked.
//! let verdict = loop {
//!     match w.look(t, true, false) {
//!         Look::Blocked(d) => break d,
//!         _ => t += LOOK_EVERY,
//!     }
//! };
//! assert!(verdict >= Duration::from_secs(3));
//! ```

use std::time::Duration;

use crate::Instant;

/// How often a host looks at its writer while bytes wait for the reader.
pub const LOOK_EVERY: Duration = Duration::from_millis(100);

/// A look this long after the previous one means the host did not run for most of the gap
/// (it was stopped, suspended or starved): only [`LOOK_EVERY`] of the gap counts.
pub const STOPPED_AFTER: Duration = Duration::from_millis(500);

/// What a look found ([`ReaderWait::look`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// Nothing waits for the reader, or no bound applies: look again once bytes wait.
    Idle,
    /// Bytes wait and the bound is not reached: look again at this instant at the latest.
    Again(Instant),
    /// The reader took no byte for the bound while bytes waited: for this long, counted
    /// (at least the bound; time the host did not run left out).
    Blocked(Duration),
}

/// How long a host's reader has taken no byte while output waited for it, against a bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderWait {
    /// The bound (`None`: no verdict).
    bound: Option<Duration>,
    /// Since when the reader has taken nothing while bytes waited, moved forward past time
    /// the host did not run; `None` while nothing waits.
    since: Option<Instant>,
    /// The previous look.
    looked: Option<Instant>,
    /// Time left out because the host did not run while bytes waited.
    not_counted: Duration,
}

impl ReaderWait {
    /// A wait with this bound (`None`: never blocked).
    pub fn new(bound: Option<Duration>) -> Self {
        ReaderWait {
            bound,
            since: None,
            looked: None,
            not_counted: Duration::ZERO,
        }
    }

    /// The bound in force.
    pub fn bound(&self) -> Option<Duration> {
        self.bound
    }

    /// A new bound (a new run under the same host); what was counted so far stays counted.
    pub fn set_bound(&mut self, bound: Option<Duration>) {
        self.bound = bound;
    }

    /// The run is ending at `now`: from now on the reader may take nothing for at most
    /// `bound` (counted from `now` at the earliest); a shorter bound in force stays.
    pub fn tighten(&mut self, now: Instant, bound: Duration) {
        self.bound = Some(self.bound.map_or(bound, |b| b.min(bound)));
        if let Some(s) = self.since.as_mut() {
            *s = (*s).max(now);
        }
    }

    /// A look at `now`: whether bytes wait for the reader (`waiting`) and whether it took any
    /// byte since the previous look (`took`).
    pub fn look(&mut self, now: Instant, waiting: bool, took: bool) -> Look {
        let gap = self.looked.map(|l| now.saturating_duration_since(l));
        self.looked = Some(now);
        let since = match self.since {
            Some(_) if !waiting => {
                self.since = None;
                return Look::Idle;
            }
            None if !waiting => return Look::Idle,
            None => now,
            Some(_) if took => now,
            Some(s) => match gap {
                // The host did not run for most of the gap: one look's worth counts.
                Some(g) if g > STOPPED_AFTER => {
                    let skipped = g - LOOK_EVERY;
                    self.not_counted += skipped;
                    s.checked_add(skipped).map_or(now, |t| t.min(now))
                }
                _ => s,
            },
        };
        self.since = Some(since);
        let Some(bound) = self.bound else {
            return Look::Idle;
        };
        let counted = now.saturating_duration_since(since);
        if counted >= bound {
            return Look::Blocked(counted);
        }
        let next = now.checked_add(LOOK_EVERY).unwrap_or(now);
        Look::Again(since.checked_add(bound).map_or(next, |due| due.min(next)))
    }

    /// How long the reader has taken nothing while bytes waited, counted up to `now` (`None`:
    /// nothing waits).
    pub fn blocked_for(&self, now: Instant) -> Option<Duration> {
        self.since.map(|s| now.saturating_duration_since(s))
    }

    /// Time left out of the count so far because the host did not run while bytes waited.
    pub fn not_counted(&self) -> Duration {
        self.not_counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x` tenths of a second.
    fn s(x: u64) -> Duration {
        Duration::from_millis(x * 100)
    }

    /// Look every [`LOOK_EVERY`] from `from` to `to` with `waiting`, the reader taking a byte
    /// at the looks `took` says; the first verdict of `Blocked`, as an offset from `t0`.
    fn drive(
        w: &mut ReaderWait,
        t0: Instant,
        from: Duration,
        to: Duration,
        took: impl Fn(Duration) -> bool,
    ) -> Option<Duration> {
        let mut t = from;
        while t <= to {
            if let Look::Blocked(_) = w.look(t0 + t, true, took(t)) {
                return Some(t);
            }
            t += LOOK_EVERY;
        }
        None
    }

    #[test]
    fn readers_of_every_pace_are_judged_by_the_bytes_they_take() {
        let t0 = Instant::now();
        let bound = Some(s(30));
        // Steady slow: a byte every look.
        let mut w = ReaderWait::new(bound);
        assert_eq!(drive(&mut w, t0, s(0), s(600), |_| true), None);
        // Bursty: a byte every 2.9 s.
        let mut w = ReaderWait::new(bound);
        let bursty = |t: Duration| (t.as_millis() % 2900) < 100;
        assert_eq!(drive(&mut w, t0, s(0), s(600), bursty), None);
        // Stop-and-go: takes for 1 s, then nothing for 3.5 s: blocked 3 s into the first stop.
        let mut w = ReaderWait::new(bound);
        let stop_and_go = |t: Duration| (t.as_millis() % 4500) < 1000;
        let at = drive(&mut w, t0, s(0), s(600), stop_and_go).unwrap();
        assert!(at >= s(39) && at <= s(40) + LOOK_EVERY, "{at:?}");
        // Never: blocked at the bound.
        let mut w = ReaderWait::new(bound);
        assert_eq!(drive(&mut w, t0, s(0), s(600), |_| false), Some(s(30)));
    }

    #[test]
    fn only_time_while_bytes_wait_counts() {
        let t0 = Instant::now();
        let mut w = ReaderWait::new(Some(s(30)));
        assert_eq!(w.look(t0, false, false), Look::Idle);
        assert_eq!(w.look(t0 + s(20), true, false), Look::Again(t0 + s(21)));
        assert_eq!(w.look(t0 + s(40), false, false), Look::Idle);
        assert_eq!(w.blocked_for(t0 + s(40)), None);
        // Waiting again starts a new count.
        assert_eq!(w.look(t0 + s(100), true, false), Look::Again(t0 + s(101)));
        assert_eq!(drive(&mut w, t0, s(101), s(200), |_| false), Some(s(130)));
    }

    #[test]
    fn time_the_host_did_not_run_does_not_count() {
        let t0 = Instant::now();
        let mut w = ReaderWait::new(Some(s(30)));
        assert_eq!(drive(&mut w, t0, s(0), s(10), |_| false), None);
        // Stopped for 5 s: the next look counts one look's worth of the gap.
        assert!(matches!(w.look(t0 + s(60), true, false), Look::Again(_)));
        assert_eq!(w.not_counted(), s(49));
        assert_eq!(w.blocked_for(t0 + s(60)), Some(s(11)));
        // The reader still takes nothing: blocked 3 s of counted time after it began.
        assert_eq!(drive(&mut w, t0, s(61), s(200), |_| false), Some(s(79)));
        // A late look under load (within STOPPED_AFTER) counts in full.
        let mut w = ReaderWait::new(Some(s(30)));
        w.look(t0, true, false);
        w.look(t0 + STOPPED_AFTER, true, false);
        assert_eq!(w.not_counted(), Duration::ZERO);
    }

    #[test]
    fn no_bound_no_verdict_and_a_tightened_bound_counts_from_the_stop() {
        let t0 = Instant::now();
        let mut w = ReaderWait::new(None);
        assert_eq!(drive(&mut w, t0, s(0), s(1000), |_| false), None);
        assert_eq!(w.blocked_for(t0 + s(1000)), Some(s(1000)));
        // The run is being stopped: at most 2 s more, from now.
        w.tighten(t0 + s(1000), s(20));
        assert_eq!(w.bound(), Some(s(20)));
        assert_eq!(
            drive(&mut w, t0, s(1000), s(1100), |_| false),
            Some(s(1020))
        );
        // A shorter bound in force stays; a byte taken restarts the count.
        let mut w = ReaderWait::new(Some(s(10)));
        w.tighten(t0, s(20));
        assert_eq!(w.bound(), Some(s(10)));
        let took = |t: Duration| t == s(5);
        assert_eq!(drive(&mut w, t0, s(0), s(100), took), Some(s(15)));
    }
}
