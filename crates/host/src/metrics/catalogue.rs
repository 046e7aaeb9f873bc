//! Every metric the watchdog exports, once: its name, unit, kind, meaning and buckets. The
//! CLI's OpenTelemetry instruments are built from it, and the `/metrics` exposition of the
//! in-process hosts ([`Metrics::render_prometheus`](super::Metrics::render_prometheus)) takes
//! its series names from it by the collector's rule ([`Metric::prometheus_name`]), so a
//! series served by a host and the same metric exported by the CLI have one name.
//!
//! ```
//! use watchdog_host::metrics::catalogue::{self, KILL_COUNT, KILL_LATENESS};
//! assert_eq!(KILL_COUNT.prometheus_name(), "agent_watchdog_kill_count_total");
//! assert_eq!(KILL_LATENESS.prometheus_name(), "agent_watchdog_kill_lateness_seconds");
//! assert!(catalogue::METRICS.iter().all(|m| m.name.starts_with("agent_watchdog.")));
//! ```

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
    /// As OpenTelemetry's guides and the Prometheus `# TYPE` line name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
            Kind::Gauge => "gauge",
        }
    }
}

/// Where a metric is exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exported {
    /// By `agent-watchdog run` and `audit` (OpenTelemetry) only.
    Cli,
    /// By the in-process hosts' `/metrics` only.
    Hosts,
    /// By both, under one name.
    Both,
}

/// One metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    /// Its OpenTelemetry name, under `agent_watchdog.`.
    pub name: &'static str,
    /// Its unit (UCUM; `{…}` for a count of things).
    pub unit: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// What it measures.
    pub description: &'static str,
    /// A histogram's bucket boundaries, in seconds (empty for the other kinds).
    pub buckets: &'static [f64],
    /// Who exports it.
    pub exported: Exported,
}

impl Metric {
    /// Whether the CLI's OpenTelemetry instruments include it.
    pub fn by_cli(&self) -> bool {
        matches!(self.exported, Exported::Cli | Exported::Both)
    }

    /// Whether the in-process hosts' `/metrics` serves it.
    pub fn by_hosts(&self) -> bool {
        matches!(self.exported, Exported::Hosts | Exported::Both)
    }

    /// Its Prometheus name, as an OpenTelemetry collector's Prometheus exporter makes it:
    /// dots to `_`, then the unit (`_seconds`; `_ratio` for a gauge of unit `1`; nothing for
    /// a count of things), then `_total` for a counter.
    pub fn prometheus_name(&self) -> String {
        let mut n = self.name.replace('.', "_");
        match self.unit {
            "s" if !n.ends_with("_seconds") => n.push_str("_seconds"),
            "1" if self.kind == Kind::Gauge => n.push_str("_ratio"),
            _ => {}
        }
        if self.kind == Kind::Counter {
            n.push_str("_total");
        }
        n
    }
}

/// Upper bounds of the kill-lateness buckets, in seconds: from 100 µs to a second.
pub const LATENESS_BOUNDS: [f64; 10] = [
    0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0,
];

/// Spell, age and duration buckets, in seconds: from a second to a few hours.
pub const SECONDS_BOUNDS: [f64; 14] = [
    1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0, 14400.0,
];

const fn m(
    name: &'static str,
    unit: &'static str,
    kind: Kind,
    description: &'static str,
    exported: Exported,
) -> Metric {
    let buckets: &'static [f64] = match kind {
        Kind::Histogram => &SECONDS_BOUNDS,
        _ => &[],
    };
    Metric {
        name,
        unit,
        kind,
        description,
        buckets,
        exported,
    }
}

/// `agent_watchdog.sessions`: the sessions registered now (hosts).
pub const SESSIONS: Metric = m(
    "agent_watchdog.sessions",
    "{session}",
    Kind::Gauge,
    "sessions registered with the watchdog now",
    Exported::Hosts,
);
/// `agent_watchdog.session.count`: sessions that ended, by outcome.
pub const SESSION_COUNT: Metric = m(
    "agent_watchdog.session.count",
    "{session}",
    Kind::Counter,
    "sessions that ended, by outcome",
    Exported::Both,
);
/// `agent_watchdog.kill.count`: kills, by kind.
pub const KILL_COUNT: Metric = m(
    "agent_watchdog.kill.count",
    "{kill}",
    Kind::Counter,
    "kills, by kind (the CLI adds the ladder stage)",
    Exported::Both,
);
/// `agent_watchdog.kill.lateness`: from a kill's deadline to its delivery.
pub const KILL_LATENESS: Metric = Metric {
    buckets: &LATENESS_BOUNDS,
    ..m(
        "agent_watchdog.kill.lateness",
        "s",
        Kind::Histogram,
        "from a kill's deadline to the watchdog handling the kill",
        Exported::Both,
    )
};
/// `agent_watchdog.stalling_warning.count`: stalling warnings, by clock.
pub const STALLING_WARNING_COUNT: Metric = m(
    "agent_watchdog.stalling_warning.count",
    "{warning}",
    Kind::Counter,
    "stalling warnings, by clock",
    Exported::Both,
);
/// `agent_watchdog.extension.count`: idle-patience extensions, by reason (hosts).
pub const EXTENSION_COUNT: Metric = m(
    "agent_watchdog.extension.count",
    "{extension}",
    Kind::Counter,
    "idle-patience extensions, by reason",
    Exported::Hosts,
);
/// `agent_watchdog.rate_limit.utilization`: the rate-limit utilization now.
pub const RATE_LIMIT_UTILIZATION: Metric = m(
    "agent_watchdog.rate_limit.utilization",
    "1",
    Kind::Gauge,
    "rate-limit utilization now, highest window (the CLI: by window)",
    Exported::Both,
);

/// Every metric: the CLI's in its guide's order, then the hosts' own.
pub const METRICS: &[Metric] = &[
    SESSION_COUNT,
    m(
        "agent_watchdog.session.duration",
        "s",
        Kind::Histogram,
        "run durations, by outcome",
        Exported::Cli,
    ),
    KILL_COUNT,
    KILL_LATENESS,
    m(
        "agent_watchdog.first_line.duration",
        "s",
        Kind::Histogram,
        "from spawn to the first stdout line",
        Exported::Cli,
    ),
    m(
        "agent_watchdog.quiet_spell.duration",
        "s",
        Kind::Histogram,
        "quiet spells as each ends, by clock and spell kind",
        Exported::Cli,
    ),
    STALLING_WARNING_COUNT,
    m(
        "agent_watchdog.mcp.call.age",
        "s",
        Kind::Histogram,
        "age of the MCP call outstanding at a kill",
        Exported::Cli,
    ),
    m(
        "agent_watchdog.mcp.call.outstanding",
        "{call}",
        Kind::Gauge,
        "MCP calls outstanding now, by tool",
        Exported::Cli,
    ),
    m(
        "agent_watchdog.mcp.call.oldest_age",
        "s",
        Kind::Gauge,
        "age of the oldest MCP call outstanding now, by tool",
        Exported::Cli,
    ),
    m(
        "agent_watchdog.recovery.count",
        "{decision}",
        Kind::Counter,
        "recovery decisions, by trigger and result",
        Exported::Cli,
    ),
    m(
        "agent_watchdog.subagent.failure.count",
        "{failure}",
        Kind::Counter,
        "failed subagents, by recovered",
        Exported::Cli,
    ),
    RATE_LIMIT_UTILIZATION,
    m(
        "agent_watchdog.output_error.count",
        "{error}",
        Kind::Counter,
        "runs stopped because our stdout failed",
        Exported::Cli,
    ),
    m(
        "agent_watchdog.signal.forwarded.count",
        "{signal}",
        Kind::Counter,
        "user signals forwarded to the child",
        Exported::Cli,
    ),
    m(
        "agent_watchdog.cpu.time",
        "s",
        Kind::Counter,
        "the watchdog's own CPU time",
        Exported::Cli,
    ),
    SESSIONS,
    EXTENSION_COUNT,
];

/// The metric called `name` (its OpenTelemetry name), if it is one of ours.
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_buckets_rise() {
        for (i, a) in METRICS.iter().enumerate() {
            assert!(
                METRICS[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
            assert!(a.buckets.windows(2).all(|w| w[0] < w[1]), "{}", a.name);
            assert_eq!(
                a.kind == Kind::Histogram,
                !a.buckets.is_empty(),
                "{}",
                a.name
            );
        }
    }

    #[test]
    fn prometheus_names_follow_the_collectors_rule() {
        let names: Vec<String> = METRICS
            .iter()
            .filter(|m| m.by_hosts())
            .map(Metric::prometheus_name)
            .collect();
        assert_eq!(
            names,
            [
                "agent_watchdog_session_count_total",
                "agent_watchdog_kill_count_total",
                "agent_watchdog_kill_lateness_seconds",
                "agent_watchdog_stalling_warning_count_total",
                "agent_watchdog_rate_limit_utilization_ratio",
                "agent_watchdog_sessions",
                "agent_watchdog_extension_count_total",
            ]
        );
        assert_eq!(
            metric("agent_watchdog.cpu.time").map(Metric::prometheus_name),
            Some("agent_watchdog_cpu_time_seconds_total".into())
        );
    }
}
