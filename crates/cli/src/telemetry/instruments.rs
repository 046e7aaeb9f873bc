//! Our instruments and events as the SDK makes them: each metric of the [table](super::table)
//! built with its unit, description and buckets; one log event with the attributes every
//! event carries; the attributes of a tool. What is recorded when: `live` (while a run runs),
//! `finished` (a run's end, from its summary), `backfill` (`audit`).
//!
//! Attributes carry `session.id` (Claude Code's key and value), the kill kind and stage, the
//! tool or MCP tool in flight; never prompt text, tool input or the command line.

use std::time::SystemTime;

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::KeyValue;
use opentelemetry_sdk::logs::SdkLogger;

pub(crate) use super::table::SOURCE;

fn unit(name: &str) -> &'static str {
    super::table::metric(name).map_or("1", |m| m.unit)
}

fn description(name: &str) -> &'static str {
    super::table::metric(name).map_or("", |m| m.description)
}

/// One event: the record's event name and the `event.name` attribute (as Claude Code names
/// its events), `session.id`, [`SOURCE`]; stamped `at` (when it happened; left unset when that
/// is unknown) and observed now.
pub(super) fn emit(
    logger: &SdkLogger,
    name: &'static str,
    at: Option<SystemTime>,
    session: &str,
    source: &'static str,
    attrs: Vec<KeyValue>,
) {
    let mut r = logger.create_log_record();
    r.set_event_name(name);
    r.set_body(AnyValue::from(name));
    if let Some(at) = at {
        r.set_timestamp(at);
    }
    r.set_observed_timestamp(SystemTime::now());
    r.set_severity_number(Severity::Info);
    r.add_attribute("event.name", name);
    r.add_attribute("session.id", session.to_owned());
    r.add_attribute(SOURCE, source);
    for kv in attrs {
        r.add_attribute(kv.key, AnyValue::from(kv.value.to_string()));
    }
    logger.emit(r);
}

/// `tool.name`, and for an MCP tool `mcp.server` and `mcp.tool`.
pub(super) fn tool_attrs(t: &str) -> Vec<KeyValue> {
    let mut a = vec![KeyValue::new("tool.name", t.to_owned())];
    if let Some((server, tool)) = watchdog_core::mcp::mcp_tool_parts(t) {
        a.push(KeyValue::new("mcp.server", server.to_owned()));
        a.push(KeyValue::new("mcp.tool", tool.to_owned()));
    }
    a
}

/// Our counter `name`, with the unit and description of the table.
pub(super) fn counter(m: &Meter, name: &'static str) -> Counter<u64> {
    m.u64_counter(name)
        .with_unit(unit(name))
        .with_description(description(name))
        .build()
}

/// Our counter `name` of seconds (a fraction of a unit adds up).
pub(super) fn f64_counter(m: &Meter, name: &'static str) -> Counter<f64> {
    m.f64_counter(name)
        .with_unit(unit(name))
        .with_description(description(name))
        .build()
}

/// Our histogram `name` (seconds, its [buckets](super::table::buckets)), with the unit and
/// description of the table.
pub(super) fn histogram(m: &Meter, name: &'static str) -> Histogram<f64> {
    m.f64_histogram(name)
        .with_unit(unit(name))
        .with_description(description(name))
        .with_boundaries(super::table::buckets(name).to_vec())
        .build()
}

/// Our gauge `name`, read by `callback` at each collection.
pub(super) fn observable_gauge(
    m: &Meter,
    name: &'static str,
    callback: impl Fn(&dyn opentelemetry::metrics::AsyncInstrument<f64>) + Send + Sync + 'static,
) -> opentelemetry::metrics::ObservableGauge<f64> {
    m.f64_observable_gauge(name)
        .with_unit(unit(name))
        .with_description(description(name))
        .with_callback(callback)
        .build()
}

/// The instruments a run records into while it runs (built once per invocation).
pub(super) struct Instruments {
    pub(super) kills: Counter<u64>,
    pub(super) output_errors: Counter<u64>,
    pub(super) lateness: Histogram<f64>,
    pub(super) spells: Histogram<f64>,
    pub(super) mcp_age: Histogram<f64>,
    pub(super) warnings: Counter<u64>,
    pub(super) signals: Counter<u64>,
    pub(super) first_line: Histogram<f64>,
}

impl Instruments {
    pub(super) fn new(m: &Meter) -> Self {
        Instruments {
            kills: counter(m, "agent_watchdog.kill.count"),
            output_errors: counter(m, "agent_watchdog.output_error.count"),
            lateness: histogram(m, "agent_watchdog.kill.lateness"),
            spells: histogram(m, "agent_watchdog.quiet_spell.duration"),
            mcp_age: histogram(m, "agent_watchdog.mcp.call.age"),
            warnings: counter(m, "agent_watchdog.stalling_warning.count"),
            signals: counter(m, "agent_watchdog.signal.forwarded.count"),
            first_line: histogram(m, "agent_watchdog.first_line.duration"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_tool_names_split_into_server_and_tool() {
        let attrs = |t: &str| -> Vec<(String, String)> {
            tool_attrs(t)
                .into_iter()
                .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                .collect()
        };
        let kv = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(
            attrs("mcp__db__query"),
            [
                kv("tool.name", "mcp__db__query"),
                kv("mcp.server", "db"),
                kv("mcp.tool", "query")
            ]
        );
        assert_eq!(
            attrs("mcp__db__a__b"),
            [
                kv("tool.name", "mcp__db__a__b"),
                kv("mcp.server", "db"),
                kv("mcp.tool", "a__b")
            ]
        );
        assert_eq!(attrs("Bash"), [kv("tool.name", "Bash")]);
        let names = |t| {
            tool_attrs(t)
                .into_iter()
                .map(|kv| format!("{}={}", kv.key, kv.value))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names("mcp__db__query"),
            [
                "tool.name=mcp__db__query",
                "mcp.server=db",
                "mcp.tool=query"
            ]
        );
        assert_eq!(names("Bash"), ["tool.name=Bash"]);
    }

    #[test]
    fn every_histogram_has_our_buckets() {
        use super::super::table::{buckets, metrics, Kind};
        assert_eq!(
            buckets("agent_watchdog.kill.lateness").first(),
            Some(&0.0001)
        );
        assert_eq!(
            buckets("agent_watchdog.quiet_spell.duration").first(),
            Some(&1.0)
        );
        for m in metrics().filter(|m| m.kind == Kind::Histogram) {
            let b = buckets(m.name);
            assert!(b.len() > 1 && b.windows(2).all(|w| w[0] < w[1]), "{b:?}");
        }
    }
}
