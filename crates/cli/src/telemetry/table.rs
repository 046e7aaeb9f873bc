//! Every metric we export: its name, unit, kind and meaning (the table of docs/telemetry.md says the same,
//! and a test holds the two together). Plain data, in every build: the tests that run the
//! the guide's queries derive the collector's Prometheus names from it.

/// What kind of instrument a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A monotonic sum.
    Counter,
    /// A histogram (explicit buckets).
    Histogram,
    /// A gauge: the last value.
    Gauge,
}

impl Kind {
    /// As the guide's table names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
            Kind::Gauge => "gauge",
        }
    }
}

/// One metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// Its OpenTelemetry name, under `agent_watchdog.`.
    pub name: &'static str,
    /// Its unit (UCUM; `{…}` for a count of things).
    pub unit: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// What it measures.
    pub description: &'static str,
}

const fn m(
    name: &'static str,
    unit: &'static str,
    kind: Kind,
    description: &'static str,
) -> Metric {
    Metric {
        name,
        unit,
        kind,
        description,
    }
}

/// Every metric, in the guide's order.
pub const METRICS: &[Metric] = &[
    m(
        "agent_watchdog.session.count",
        "{session}",
        Kind::Counter,
        "runs supervised, by outcome",
    ),
    m(
        "agent_watchdog.session.duration",
        "s",
        Kind::Histogram,
        "run durations, by outcome",
    ),
    m(
        "agent_watchdog.kill.count",
        "{kill}",
        Kind::Counter,
        "kills, by kind and ladder stage",
    ),
    m(
        "agent_watchdog.kill.lateness",
        "s",
        Kind::Histogram,
        "from a kill's deadline to the run loop handling the kill event",
    ),
    m(
        "agent_watchdog.first_line.duration",
        "s",
        Kind::Histogram,
        "from spawn to the first stdout line",
    ),
    m(
        "agent_watchdog.quiet_spell.duration",
        "s",
        Kind::Histogram,
        "quiet spells as each ends, by clock and spell kind",
    ),
    m(
        "agent_watchdog.stalling_warning.count",
        "{warning}",
        Kind::Counter,
        "stalling warnings, by clock",
    ),
    m(
        "agent_watchdog.mcp.call.age",
        "s",
        Kind::Histogram,
        "age of the MCP call outstanding at a kill",
    ),
    m(
        "agent_watchdog.mcp.call.outstanding",
        "{call}",
        Kind::Gauge,
        "MCP calls outstanding now, by tool",
    ),
    m(
        "agent_watchdog.mcp.call.oldest_age",
        "s",
        Kind::Gauge,
        "age of the oldest MCP call outstanding now, by tool",
    ),
    m(
        "agent_watchdog.recovery.count",
        "{decision}",
        Kind::Counter,
        "recovery decisions, by trigger and result",
    ),
    m(
        "agent_watchdog.subagent.failure.count",
        "{failure}",
        Kind::Counter,
        "failed subagents, by recovered",
    ),
    m(
        "agent_watchdog.rate_limit.utilization",
        "1",
        Kind::Gauge,
        "rate-limit utilization now, by window",
    ),
    m(
        "agent_watchdog.output_error.count",
        "{error}",
        Kind::Counter,
        "runs stopped because our stdout failed",
    ),
    m(
        "agent_watchdog.signal.forwarded.count",
        "{signal}",
        Kind::Counter,
        "user signals forwarded to the child",
    ),
    m(
        "agent_watchdog.cpu.time",
        "s",
        Kind::Counter,
        "the watchdog's own CPU time",
    ),
];

/// Lateness buckets, in seconds: from 100 µs to a second, the core's Prometheus ones, so the
/// two can be summed.
pub const LATENESS: &[f64] = &watchdog_host::metrics::LATENESS_BOUNDS;

/// Spell, age and duration buckets, in seconds: from a second to a few hours.
pub const SECONDS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0, 14400.0,
];

/// The bucket boundaries of our histogram `name`: [`LATENESS`] for the kill lateness, else
/// [`SECONDS`].
pub fn buckets(name: &str) -> &'static [f64] {
    if name == "agent_watchdog.kill.lateness" {
        LATENESS
    } else {
        SECONDS
    }
}

/// The metric called `name`, if it is one of ours.
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// The attribute on every point and event that says where it comes from: `run` (a live run)
/// or `audit` (back-filled from a past recording by `agent-watchdog audit`).
pub const SOURCE: &str = "agent_watchdog.source";
