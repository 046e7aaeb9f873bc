//! Every metric the CLI exports, from the core's catalogue: its name, unit, kind, meaning and
//! buckets (the table of docs/telemetry.md says the same, and a test holds the two together).
//! Plain data, in every build: the tests that run the guide's queries derive the collector's
//! Prometheus names from it.

use watchdog_host::metrics::catalogue::METRICS;
pub use watchdog_host::metrics::catalogue::{Kind, Metric};

/// Every metric the CLI exports, in the guide's order: the catalogue's (the in-process hosts'
/// `/metrics` takes its series from the same entries).
pub fn metrics() -> impl Iterator<Item = &'static Metric> {
    METRICS.iter().filter(|m| m.by_cli())
}

/// The bucket boundaries of our histogram `name` (empty for a name that is not one).
pub fn buckets(name: &str) -> &'static [f64] {
    metric(name).map_or(&[], |m| m.buckets)
}

/// The metric called `name`, if the CLI exports it.
pub fn metric(name: &str) -> Option<&'static Metric> {
    metrics().find(|m| m.name == name)
}

/// The attribute on every point and event that says where it comes from: `run` (a live run)
/// or `audit` (back-filled from a past recording by `agent-watchdog audit`).
pub const SOURCE: &str = "agent_watchdog.source";
