//! What a [`Watchdog`](crate::Watchdog) counts as it delivers events, and the snapshot of it
//! ([`Metrics`]) with its Prometheus text rendering.
//!
//! Counting is a relaxed atomic add per event (a clock read for a kill): no lock taken, no
//! allocation. Only the snapshot and the rendering allocate.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use watchdog_core::{Event, ExtendReason, KillKind, Outcome, StallClock};

/// Every kill kind, in the order the counters keep them.
const KINDS: [KillKind; 5] = [
    KillKind::Ceiling,
    KillKind::Startup,
    KillKind::Linger,
    KillKind::Idle,
    KillKind::NoProgress,
];

/// The outcomes other than `killed` (which is counted by kill kind), in counter order.
const OTHER_OUTCOMES: [&str; 4] = ["success", "error_result", "no_result", "incomplete"];

const CLOCKS: [StallClock; 2] = [StallClock::Idle, StallClock::NoProgress];

const REASONS: [ExtendReason; 2] = [ExtendReason::HighUtilization, ExtendReason::PreWrite];

/// Upper bounds of the kill-lateness buckets, in seconds: the CLI's OpenTelemetry histogram
/// `agent_watchdog.kill.lateness` has the same ones, so the two can be summed.
pub(crate) const LATENESS_BOUNDS: [f64; 10] = [
    0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0,
];

/// [`LATENESS_BOUNDS`] in nanoseconds (what the event path compares with).
const LATENESS_NANOS: [u64; 10] = [
    100_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    50_000_000,
    100_000_000,
    500_000_000,
    1_000_000_000,
];

fn kind_index(kind: KillKind) -> usize {
    match kind {
        KillKind::Ceiling => 0,
        KillKind::Startup => 1,
        KillKind::Linger => 2,
        KillKind::Idle => 3,
        KillKind::NoProgress => 4,
    }
}

fn clock_index(clock: StallClock) -> usize {
    match clock {
        StallClock::Idle => 0,
        StallClock::NoProgress => 1,
    }
}

fn clock_name(clock: StallClock) -> &'static str {
    match clock {
        StallClock::Idle => "idle",
        StallClock::NoProgress => "no_progress",
    }
}

fn reason_index(reason: ExtendReason) -> usize {
    match reason {
        ExtendReason::HighUtilization => 0,
        ExtendReason::PreWrite => 1,
    }
}

/// Index in `OTHER_OUTCOMES`, or `None` for `killed`.
fn outcome_index(outcome: &Outcome) -> Option<usize> {
    match outcome {
        Outcome::Success => Some(0),
        Outcome::ErrorResult(_) => Some(1),
        Outcome::NoResult => Some(2),
        Outcome::Incomplete => Some(3),
        Outcome::Killed { .. } => None,
    }
}

/// The live counters, shared by the watchdog's cell; bumped by [`Counters::record`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    kills: [AtomicU64; 5],
    ended_killed: [AtomicU64; 5],
    ended_other: [AtomicU64; 4],
    stalling: [AtomicU64; 2],
    extensions: [AtomicU64; 2],
    /// Per bucket (not cumulative); the last one is `+Inf`.
    lateness_buckets: [AtomicU64; 11],
    lateness_count: AtomicU64,
    lateness_sum_nanos: AtomicU64,
}

impl Counters {
    /// Count one event as it is delivered (`now` is read only for a kill).
    pub(crate) fn record(&self, ev: &Event, now: impl FnOnce() -> Instant) {
        match ev {
            Event::Killed(k) => {
                self.kills[kind_index(k.kind)].fetch_add(1, Relaxed);
                let late = now().saturating_duration_since(k.at);
                let nanos = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
                let bucket = LATENESS_NANOS
                    .iter()
                    .position(|&b| nanos <= b)
                    .unwrap_or(LATENESS_NANOS.len());
                self.lateness_buckets[bucket].fetch_add(1, Relaxed);
                self.lateness_sum_nanos.fetch_add(nanos, Relaxed);
                self.lateness_count.fetch_add(1, Relaxed);
            }
            Event::Stalling { clock, .. } => {
                self.stalling[clock_index(*clock)].fetch_add(1, Relaxed);
            }
            Event::Extended { reason, .. } => {
                self.extensions[reason_index(*reason)].fetch_add(1, Relaxed);
            }
            Event::Ended { outcome, .. } => match (outcome, outcome_index(outcome)) {
                (_, Some(i)) => {
                    self.ended_other[i].fetch_add(1, Relaxed);
                }
                (Outcome::Killed { kind }, None) => {
                    self.ended_killed[kind_index(*kind)].fetch_add(1, Relaxed);
                }
                _ => {}
            },
            // Settles, and kinds a newer core may add: not counted.
            _ => {}
        }
    }

    /// A snapshot, with the gauges read by the caller.
    pub(crate) fn snapshot(&self, sessions: usize, utilization: Option<f64>) -> Metrics {
        let load = |a: &[AtomicU64]| a.iter().map(|c| c.load(Relaxed)).collect::<Vec<_>>();
        let mut cumulative = 0;
        let mut buckets = [0; 11];
        for (b, c) in buckets.iter_mut().zip(&self.lateness_buckets) {
            cumulative += c.load(Relaxed);
            *b = cumulative;
        }
        let kills = load(&self.kills);
        let ended_killed = load(&self.ended_killed);
        let ended_other = load(&self.ended_other);
        let stalling = load(&self.stalling);
        let extensions = load(&self.extensions);
        Metrics {
            sessions,
            utilization,
            kills: std::array::from_fn(|i| kills[i]),
            ended_killed: std::array::from_fn(|i| ended_killed[i]),
            ended_other: std::array::from_fn(|i| ended_other[i]),
            stalling: std::array::from_fn(|i| stalling[i]),
            extensions: std::array::from_fn(|i| extensions[i]),
            kill_lateness: LatenessHistogram {
                // The count is the +Inf bucket, so the two always agree in one snapshot.
                count: buckets[10],
                sum: Duration::from_nanos(self.lateness_sum_nanos.load(Relaxed)),
                buckets,
            },
        }
    }
}

/// The kill lateness of a [`Metrics`] snapshot: how late each kill was delivered after its
/// deadline ([`Kill::at`](watchdog_core::Kill::at)), on the runtime clock.
#[derive(Debug, Clone, PartialEq)]
pub struct LatenessHistogram {
    count: u64,
    sum: Duration,
    /// Cumulative counts per bound of [`LATENESS_BOUNDS`], then `+Inf`.
    buckets: [u64; 11],
}

impl LatenessHistogram {
    /// Kills measured.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their lateness added up.
    pub fn sum(&self) -> Duration {
        self.sum
    }

    /// `(upper bound in seconds, kills at most that late)`, cumulative as in Prometheus,
    /// ending with `f64::INFINITY` (which equals [`count`](Self::count)).
    pub fn buckets(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        LATENESS_BOUNDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.buckets.iter().copied())
    }
}

/// A snapshot of what a [`Watchdog`](crate::Watchdog) counted since it started, taken by
/// [`Watchdog::metrics`](crate::Watchdog::metrics). Plain data: rendering or comparing it
/// touches the watchdog no more.
///
/// Counters are totals over every session the watchdog ever had, never per session: a
/// long-lived host would otherwise grow one series per session for ever.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    sessions: usize,
    utilization: Option<f64>,
    kills: [u64; 5],
    ended_killed: [u64; 5],
    ended_other: [u64; 4],
    stalling: [u64; 2],
    extensions: [u64; 2],
    kill_lateness: LatenessHistogram,
}

/// Every series carries this label, as the CLI's exported points do, so the README's queries
/// (which select live runs with it) select these too.
const SOURCE: &str = "agent_watchdog_source=\"run\"";

impl Metrics {
    /// Sessions registered now (a [`Session`](crate::Session) is unregistered when dropped).
    pub fn sessions(&self) -> usize {
        self.sessions
    }

    /// Sessions that ended with `outcome` (its [`Outcome::as_str`] name: `success`,
    /// `error_result`, `killed`, `no_result`, `incomplete`); 0 for any other name. A session
    /// ends when [`Session::end`](crate::Session::end) is called (a [`supervise`](crate::supervise)d
    /// stream calls it when it ends, a supervisor on the shared watchdog when it reaped its
    /// child); one dropped without ending is not counted.
    pub fn ended(&self, outcome: &str) -> u64 {
        if outcome == "killed" {
            return self.ended_killed.iter().sum();
        }
        OTHER_OUTCOMES
            .iter()
            .position(|o| *o == outcome)
            .map_or(0, |i| self.ended_other[i])
    }

    /// Kills of kind `kind`.
    pub fn kills(&self, kind: KillKind) -> u64 {
        self.kills[kind_index(kind)]
    }

    /// Stalling warnings of clock `clock`.
    pub fn stalling_warnings(&self, clock: StallClock) -> u64 {
        self.stalling[clock_index(clock)]
    }

    /// Idle-patience extensions for `reason`.
    pub fn extensions(&self, reason: ExtendReason) -> u64 {
        self.extensions[reason_index(reason)]
    }

    /// How late kills were delivered after their deadlines.
    pub fn kill_lateness(&self) -> &LatenessHistogram {
        &self.kill_lateness
    }

    /// The rate-limit utilization last set with
    /// [`Watchdog::set_utilization`](crate::Watchdog::set_utilization), `None` when unknown.
    pub fn utilization(&self) -> Option<f64> {
        self.utilization
    }

    /// The snapshot in the Prometheus text exposition format 0.0.4 (what a scrape of
    /// `/metrics` answers; serve it as `text/plain; version=0.0.4`). Every series of known
    /// labels is present, at 0 until counted, so `rate()` sees its first increase; the
    /// utilization sample is left out while it is unknown.
    pub fn render_prometheus(&self) -> String {
        let mut out = String::with_capacity(4096);
        let o = &mut out;
        family(
            o,
            "agent_watchdog_sessions",
            "gauge",
            "Sessions registered with the watchdog now.",
        );
        sample(o, "agent_watchdog_sessions", "", self.sessions as f64);

        let name = "agent_watchdog_session_count_total";
        family(
            o,
            "agent_watchdog_session_count_total",
            "counter",
            "Sessions that ended, by outcome (and kill kind when killed).",
        );
        for (outcome, n) in OTHER_OUTCOMES.iter().zip(self.ended_other) {
            sample(o, name, &format!("outcome=\"{outcome}\","), n as f64);
        }
        for (kind, n) in KINDS.iter().zip(self.ended_killed) {
            let labels = format!("outcome=\"killed\",kill_kind=\"{}\",", kind.as_str());
            sample(o, name, &labels, n as f64);
        }

        family(
            o,
            "agent_watchdog_kill_count_total",
            "counter",
            "Kills, by kind.",
        );
        for (kind, n) in KINDS.iter().zip(self.kills) {
            let labels = format!("kill_kind=\"{}\",", kind.as_str());
            sample(o, "agent_watchdog_kill_count_total", &labels, n as f64);
        }

        family(
            o,
            "agent_watchdog_stalling_warning_count_total",
            "counter",
            "Stalling warnings, by clock.",
        );
        for (clock, n) in CLOCKS.iter().zip(self.stalling) {
            let labels = format!("clock=\"{}\",", clock_name(*clock));
            let name = "agent_watchdog_stalling_warning_count_total";
            sample(o, name, &labels, n as f64);
        }

        family(
            o,
            "agent_watchdog_extension_count_total",
            "counter",
            "Idle-patience extensions, by reason.",
        );
        for (reason, n) in REASONS.iter().zip(self.extensions) {
            let labels = format!("reason=\"{}\",", reason.as_str());
            sample(o, "agent_watchdog_extension_count_total", &labels, n as f64);
        }

        let name = "agent_watchdog_kill_lateness_seconds";
        family(
            o,
            name,
            "histogram",
            "From a kill's deadline to the watchdog delivering the kill, on the runtime clock.",
        );
        let bucket = format!("{name}_bucket");
        for (le, n) in self.kill_lateness.buckets() {
            let labels = format!("le=\"{}\",", fmt_value(le));
            sample(o, &bucket, &labels, n as f64);
        }
        let sum = self.kill_lateness.sum.as_secs_f64();
        sample(o, &format!("{name}_sum"), "", sum);
        let count = self.kill_lateness.count as f64;
        sample(o, &format!("{name}_count"), "", count);

        let name = "agent_watchdog_rate_limit_utilization_ratio";
        family(
            o,
            name,
            "gauge",
            "The rate-limit utilization last set (0-1, highest window); absent while unknown.",
        );
        if let Some(u) = self.utilization {
            sample(o, name, "", u);
        }
        out
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// One sample line; `labels` is empty or `key="value",` pairs (each ending with a comma).
fn sample(out: &mut String, name: &str, labels: &str, value: f64) {
    let _ = writeln!(out, "{name}{{{labels}{SOURCE}}} {}", fmt_value(value));
}

/// A value as Prometheus spells it: `NaN`, `+Inf`, `-Inf`, or a decimal.
fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_spelled_as_prometheus_reads_them() {
        assert_eq!(fmt_value(f64::NAN), "NaN");
        assert_eq!(fmt_value(f64::INFINITY), "+Inf");
        assert_eq!(fmt_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(fmt_value(0.0001), "0.0001");
        assert_eq!(fmt_value(3.0), "3");
    }

    #[test]
    fn the_nanosecond_bounds_are_the_second_bounds() {
        for (s, ns) in LATENESS_BOUNDS.iter().zip(LATENESS_NANOS) {
            assert_eq!(Duration::from_secs_f64(*s), Duration::from_nanos(ns));
        }
    }
}
