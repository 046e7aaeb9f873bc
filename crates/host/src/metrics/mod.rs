//! Fleet metrics, sans-IO: what a host counts as it delivers the registry's [`Event`]s
//! ([`Counters`]), the snapshot of it ([`Metrics`]), and its one rendering in the Prometheus
//! text exposition format 0.0.4 ([`Metrics::render_prometheus`]) that every host serves (the
//! runtime's `Watchdog`, the Node and Python in-process APIs). [`scrape`] answers a scrape's
//! request head with bytes, for a host's own socket.
//!
//! No clock, no I/O, no lock: counting is a relaxed atomic add per event, so the counters can
//! be shared by every thread that delivers events; the instant a kill is delivered (for its
//! lateness) is passed in by the host. Only the snapshot and the rendering allocate. What each
//! series is, and its name, is the [`catalogue`]'s (the CLI's OpenTelemetry instruments are
//! built from the same entries).
//!
//! ```
//! use std::time::{Duration, Instant};
//! use watchdog_host::metrics::Counters;
//! use watchdog_core::{Event, KillKind, Limits, Registry, SessionConfig};
//!
//! let t0 = Instant::now();
//! let mut registry = Registry::new(Limits::default().with_startup(Duration::from_secs(30)).unwrap());
//! let id = registry.register(t0, SessionConfig::default());
//! let counters = Counters::default();
//! let due = registry.poll_timeout().unwrap();
//! registry.handle_timeout(due + Duration::from_millis(3)); // the host woke 3 ms late
//! registry.end(due + Duration::from_millis(3), id);
//! while let Some(event) = registry.poll_event() {
//!     counters.record(&event, || due + Duration::from_millis(3));
//! }
//! let metrics = counters.snapshot(registry.len(), registry.utilization());
//! assert_eq!(metrics.kills(KillKind::Startup), 1);
//! assert_eq!(metrics.ended("killed"), 1);
//! assert_eq!(metrics.kill_lateness().sum(), Duration::from_millis(3));
//! assert!(metrics.render_prometheus().contains(
//!     r#"agent_watchdog_kill_count_total{kill_kind="startup",agent_watchdog_source="run"} 1"#
//! ));
//! ```

pub mod bounds;
pub mod catalogue;
mod exposition;
pub mod scrape;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use watchdog_core::Instant;

use serde_json::{json, Map, Value};

use watchdog_core::{Event, ExtendReason, KillKind, Outcome, OutcomeKind, StallClock};

/// Every kill kind, in the order the counters keep them.
const KINDS: [KillKind; KillKind::ALL.len()] = KillKind::ALL;

/// The outcomes other than `killed` (which is counted by kill kind), in counter order:
/// [`OutcomeKind::ALL`] without it.
const OTHER_OUTCOMES: [OutcomeKind; OutcomeKind::ALL.len() - 1] = {
    let mut out = [OutcomeKind::Success; OutcomeKind::ALL.len() - 1];
    let (mut i, mut j) = (0, 0);
    while i < OutcomeKind::ALL.len() {
        if !matches!(OutcomeKind::ALL[i], OutcomeKind::Killed) {
            out[j] = OutcomeKind::ALL[i];
            j += 1;
        }
        i += 1;
    }
    out
};

const CLOCKS: [StallClock; 2] = StallClock::ALL;

const REASONS: [ExtendReason; 2] = [ExtendReason::HighUtilization, ExtendReason::PreWrite];

use catalogue::LATENESS_BOUNDS;

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
    KINDS.iter().position(|k| *k == kind).unwrap_or(0)
}

fn clock_index(clock: StallClock) -> usize {
    CLOCKS.iter().position(|c| *c == clock).unwrap_or(0)
}

fn reason_index(reason: ExtendReason) -> usize {
    REASONS.iter().position(|r| *r == reason).unwrap_or(0)
}

/// Index in `OTHER_OUTCOMES`, or `None` for `killed`.
fn outcome_index(outcome: &Outcome) -> Option<usize> {
    let kind = outcome.kind();
    OTHER_OUTCOMES.iter().position(|k| *k == kind)
}

/// The live counters of one host, shared by whatever delivers its events (`&self` methods,
/// relaxed atomic adds: `Sync`, no lock). Counted once, when an event is delivered:
/// [`record`](Self::record) for a registry's events, or the `record_*` methods for a host
/// whose policy does not speak [`Event`] (the Node in-process API's idle policy).
#[derive(Debug, Default)]
pub struct Counters {
    kills: [AtomicU64; KINDS.len()],
    ended_killed: [AtomicU64; KINDS.len()],
    ended_other: [AtomicU64; OTHER_OUTCOMES.len()],
    stalling: [AtomicU64; 2],
    extensions: [AtomicU64; 2],
    /// Per bucket (not cumulative); the last one is `+Inf`.
    lateness_buckets: [AtomicU64; 11],
    lateness_sum_nanos: AtomicU64,
}

impl Counters {
    /// Count one event as it is delivered. `now` (the instant of delivery, on the clock of the
    /// event's instants) is called only for a kill: its lateness is `now - kill.at`. Settles,
    /// and kinds a newer core may add, are not counted.
    pub fn record(&self, ev: &Event, now: impl FnOnce() -> Instant) {
        match ev {
            Event::Killed(k) => {
                self.record_kill(k.kind, now().saturating_duration_since(k.at));
            }
            Event::Stalling { clock, .. } => self.record_stalling(*clock),
            Event::Extended { reason, .. } => self.record_extension(*reason),
            Event::Ended { outcome, .. } => self.record_end(outcome),
            _ => {}
        }
    }

    /// A kill of kind `kind`, delivered `lateness` after its deadline.
    pub fn record_kill(&self, kind: KillKind, lateness: Duration) {
        self.kills[kind_index(kind)].fetch_add(1, Relaxed);
        let nanos = u64::try_from(lateness.as_nanos()).unwrap_or(u64::MAX);
        let bucket = LATENESS_NANOS
            .iter()
            .position(|&b| nanos <= b)
            .unwrap_or(LATENESS_NANOS.len());
        self.lateness_buckets[bucket].fetch_add(1, Relaxed);
        self.lateness_sum_nanos.fetch_add(nanos, Relaxed);
    }

    /// A session ended with `outcome`.
    pub fn record_end(&self, outcome: &Outcome) {
        match (outcome, outcome_index(outcome)) {
            (_, Some(i)) => {
                self.ended_other[i].fetch_add(1, Relaxed);
            }
            (Outcome::Killed { kind }, None) => {
                self.ended_killed[kind_index(*kind)].fetch_add(1, Relaxed);
            }
            _ => {}
        }
    }

    /// A stalling warning of `clock`.
    pub fn record_stalling(&self, clock: StallClock) {
        self.stalling[clock_index(clock)].fetch_add(1, Relaxed);
    }

    /// An idle-patience extension for `reason`.
    pub fn record_extension(&self, reason: ExtendReason) {
        self.extensions[reason_index(reason)].fetch_add(1, Relaxed);
    }

    /// A snapshot, with the two gauges the host reads: the sessions registered now and the
    /// rate-limit utilization (`None` when unknown).
    pub fn snapshot(&self, sessions: usize, utilization: Option<f64>) -> Metrics {
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
/// deadline ([`Kill::at`](watchdog_core::Kill::at)), on the host's clock.
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

/// A snapshot of what a host counted since it started ([`Counters::snapshot`]; the runtime's
/// `Watchdog::metrics`). Plain data: rendering or comparing it touches the host no more.
///
/// Counters are totals over every session the host ever had, never per session: a long-lived
/// host would otherwise grow one series per session for ever.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    sessions: usize,
    utilization: Option<f64>,
    kills: [u64; KINDS.len()],
    ended_killed: [u64; KINDS.len()],
    ended_other: [u64; OTHER_OUTCOMES.len()],
    stalling: [u64; 2],
    extensions: [u64; 2],
    kill_lateness: LatenessHistogram,
}

/// Every series carries this label, as the CLI's exported points do, so the queries of docs/telemetry.md
/// (which select live runs with it) select these too.
const SOURCE: &str = "agent_watchdog_source=\"run\"";

impl Metrics {
    /// Sessions registered now.
    pub fn sessions(&self) -> usize {
        self.sessions
    }

    /// Sessions that ended with `outcome` (its [`Outcome::as_str`] name: `success`,
    /// `error_result`, `killed`, `no_result`, `incomplete`); 0 for any other name. A session
    /// ends when its host says so (the runtime's `Session::end`, a Python `guard()`ed loop's
    /// end, a Node handle's `unregister()`); one dropped without ending is not counted.
    pub fn ended(&self, outcome: &str) -> u64 {
        if outcome == OutcomeKind::Killed.as_str() {
            return self.ended_killed.iter().sum();
        }
        OTHER_OUTCOMES
            .iter()
            .position(|o| o.as_str() == outcome)
            .map_or(0, |i| self.ended_other[i])
    }

    /// Sessions that ended killed, with kill kind `kind`.
    pub fn ended_killed(&self, kind: KillKind) -> u64 {
        self.ended_killed[kind_index(kind)]
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

    /// The rate-limit utilization the host last had (0–1, highest window), `None` when
    /// unknown.
    pub fn utilization(&self) -> Option<f64> {
        self.utilization
    }

    /// The snapshot as one JSON object, keyed by the series' label values, what the language
    /// bindings hand their users (`null` for an unknown utilization; the lateness `sum` in
    /// seconds, its `buckets` cumulative `[le, count]` pairs with `null` for `+Inf`):
    ///
    /// ```json
    /// {"sessions": 0, "utilization": null,
    ///  "ended": {"success": 0, "error_result": 0, "killed": 1, "no_result": 0, "incomplete": 0},
    ///  "ended_killed": {"ceiling": 0, "startup": 1, "linger": 0, "idle": 0, "no_progress": 0},
    ///  "kills": {"ceiling": 0, "startup": 1, "linger": 0, "idle": 0, "no_progress": 0},
    ///  "stalling_warnings": {"idle": 0, "no_progress": 0},
    ///  "extensions": {"high_utilization": 0, "pre_write": 0},
    ///  "kill_lateness": {"count": 1, "sum": 0.0, "buckets": [[0.0001, 1], …, [null, 1]]}}
    /// ```
    pub fn to_json(&self) -> Value {
        fn by<T: Copy>(keys: &[T], name: impl Fn(T) -> &'static str, n: &[u64]) -> Value {
            let map: Map<String, Value> = keys
                .iter()
                .zip(n)
                .map(|(k, n)| (name(*k).to_owned(), json!(n)))
                .collect();
            Value::Object(map)
        }
        let mut ended = Map::new();
        for (outcome, n) in OTHER_OUTCOMES.iter().zip(self.ended_other) {
            ended.insert(outcome.as_str().to_owned(), json!(n));
        }
        let killed = OutcomeKind::Killed.as_str();
        ended.insert(killed.to_owned(), json!(self.ended(killed)));
        let buckets: Vec<Value> = self
            .kill_lateness
            .buckets()
            .map(|(le, n)| json!([le.is_finite().then_some(le), n]))
            .collect();
        json!({
            "sessions": self.sessions,
            "utilization": self.utilization.filter(|u| u.is_finite()),
            "ended": ended,
            "ended_killed": by(&KINDS, KillKind::as_str, &self.ended_killed),
            "kills": by(&KINDS, KillKind::as_str, &self.kills),
            "stalling_warnings": by(&CLOCKS, StallClock::as_str, &self.stalling),
            "extensions": by(&REASONS, ExtendReason::as_str, &self.extensions),
            "kill_lateness": {
                "count": self.kill_lateness.count,
                "sum": self.kill_lateness.sum.as_secs_f64(),
                "buckets": buckets,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nanosecond_bounds_are_the_second_bounds() {
        for (s, ns) in LATENESS_BOUNDS.iter().zip(LATENESS_NANOS) {
            assert_eq!(Duration::from_secs_f64(*s), Duration::from_nanos(ns));
        }
    }

    #[test]
    fn lateness_lands_in_the_first_bucket_that_holds_it_and_bounds_are_inclusive() {
        let c = Counters::default();
        c.record_kill(KillKind::Idle, Duration::ZERO);
        c.record_kill(KillKind::Idle, Duration::from_micros(100));
        c.record_kill(KillKind::Ceiling, Duration::from_micros(101));
        c.record_kill(KillKind::Startup, Duration::from_secs(2));
        c.record_kill(KillKind::Startup, Duration::MAX);
        let m = c.snapshot(0, None);
        let b: Vec<u64> = m.kill_lateness().buckets().map(|(_, n)| n).collect();
        assert_eq!(b, [2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 5]);
        assert_eq!(m.kill_lateness().count(), 5);
        assert_eq!(
            (m.kills(KillKind::Idle), m.kills(KillKind::Startup)),
            (2, 2)
        );
        assert_eq!(m.kills(KillKind::Ceiling), 1);
    }

    #[test]
    fn ends_are_counted_by_outcome_and_killed_ones_by_kind() {
        let c = Counters::default();
        c.record_end(&Outcome::Success);
        c.record_end(&Outcome::ErrorResult(Box::default()));
        c.record_end(&Outcome::Killed {
            kind: KillKind::Linger,
        });
        c.record_end(&Outcome::Killed {
            kind: KillKind::Idle,
        });
        let m = c.snapshot(2, Some(0.25));
        assert_eq!(m.ended("success"), 1);
        assert_eq!(m.ended("error_result"), 1);
        assert_eq!(m.ended("killed"), 2);
        assert_eq!(m.ended_killed(KillKind::Linger), 1);
        assert_eq!(m.ended("no_result"), 0);
        assert_eq!(m.ended("nonsense"), 0);
        assert_eq!((m.sessions(), m.utilization()), (2, Some(0.25)));
    }

    #[test]
    fn the_json_snapshot_is_the_same_counts_under_the_label_values() {
        let c = Counters::default();
        c.record_kill(KillKind::NoProgress, Duration::from_millis(3));
        c.record_end(&Outcome::Killed {
            kind: KillKind::NoProgress,
        });
        c.record_end(&Outcome::Incomplete);
        c.record_stalling(StallClock::NoProgress);
        c.record_extension(ExtendReason::HighUtilization);
        let j = c.snapshot(1, None).to_json();
        assert_eq!(j["sessions"], 1);
        assert!(j["utilization"].is_null());
        assert_eq!(j["kills"]["no_progress"], 1);
        assert_eq!(j["kills"]["idle"], 0);
        assert_eq!(j["ended"]["killed"], 1);
        assert_eq!(j["ended"]["incomplete"], 1);
        assert_eq!(j["ended_killed"]["no_progress"], 1);
        assert_eq!(j["stalling_warnings"]["no_progress"], 1);
        assert_eq!(j["extensions"]["high_utilization"], 1);
        assert_eq!(j["kill_lateness"]["count"], 1);
        assert_eq!(j["kill_lateness"]["sum"], 0.003);
        let buckets = j["kill_lateness"]["buckets"].as_array().unwrap();
        assert_eq!(buckets.len(), 11);
        assert_eq!(buckets[4], json!([0.005, 1]));
        assert_eq!(buckets[3], json!([0.002, 0]));
        assert_eq!(buckets[10], json!([null, 1]));
        let u = c.snapshot(0, Some(0.5)).to_json();
        assert_eq!(u["utilization"], 0.5);
    }
}
