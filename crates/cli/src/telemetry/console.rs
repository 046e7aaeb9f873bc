//! The `console` exporters (`OTEL_METRICS_EXPORTER=console`, `OTEL_LOGS_EXPORTER=console`):
//! one readable line per metric point and per log record, on **stderr**.
//!
//! Not stdout, as the specification's console exporter would: our stdout is the supervised
//! session's stream and stays byte for byte what the child wrote. Every line starts with
//! `agent-watchdog: telemetry:` like our other stderr lines, so a script can filter them out.
//! A line that cannot be written (stderr closed) is dropped without a word; nothing here
//! panics.
//!
//! ```text
//! agent-watchdog: telemetry: metric agent_watchdog.kill.count {kill} 1 kill.kind=idle session.id=s1
//! agent-watchdog: telemetry: event agent_watchdog.kill at=2026-12-01T22:00:01.203Z kill.kind=idle session.id=s1
//! ```

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, SystemTime};

use opentelemetry::logs::AnyValue;
use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::Temporality;

/// The prefix of every line.
const PREFIX: &str = "agent-watchdog: telemetry:";

/// Write `lines` to stderr in one locked write; errors are dropped (see the module docs).
fn emit(lines: &str) {
    if lines.is_empty() {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(lines.as_bytes());
    let _ = err.flush();
}

/// A value as one token: quoted (with `"` and `\` escaped, controls as `\u{…}`) when it holds
/// a space, a quote, `=` or a control character, bare otherwise.
fn token(out: &mut String, v: &str) {
    let plain = !v.is_empty()
        && !v
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '=' || c == '\\');
    if plain {
        out.push_str(v);
    } else {
        let _ = write!(out, "{v:?}");
    }
}

fn attrs<'a>(out: &mut String, kvs: impl Iterator<Item = &'a KeyValue>) {
    let mut kvs: Vec<&KeyValue> = kvs.collect();
    kvs.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
    for kv in kvs {
        out.push(' ');
        token(out, kv.key.as_str());
        out.push('=');
        token(out, &kv.value.to_string());
    }
}

fn iso(t: SystemTime) -> String {
    let ms = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    watchdog_core::format_iso_ms(ms)
}

/// The metrics exporter: one line per data point (a histogram's: count, sum, min, max).
#[derive(Debug, Default)]
pub(crate) struct ConsoleMetrics;

/// The lines of one collection.
fn metric_lines(metrics: &ResourceMetrics) -> String {
    let mut out = String::new();
    for sm in metrics.scope_metrics() {
        for m in sm.metrics() {
            let mut head = String::new();
            let _ = write!(head, "{PREFIX} metric {}", m.name());
            if !m.unit().is_empty() {
                let _ = write!(head, " {}", m.unit());
            }
            match m.data() {
                AggregatedMetrics::F64(d) => points(&mut out, &head, d),
                AggregatedMetrics::U64(d) => points(&mut out, &head, d),
                AggregatedMetrics::I64(d) => points(&mut out, &head, d),
            }
        }
    }
    out
}

fn points<T: std::fmt::Display + Copy>(out: &mut String, head: &str, d: &MetricData<T>) {
    match d {
        MetricData::Gauge(g) => {
            for p in g.data_points() {
                let _ = write!(out, "{head} {}", p.value());
                attrs(out, p.attributes());
                out.push('\n');
            }
        }
        MetricData::Sum(s) => {
            for p in s.data_points() {
                let _ = write!(out, "{head} {}", p.value());
                attrs(out, p.attributes());
                out.push('\n');
            }
        }
        MetricData::Histogram(h) => {
            for p in h.data_points() {
                let _ = write!(out, "{head} count={} sum={}", p.count(), p.sum());
                if let (Some(min), Some(max)) = (p.min(), p.max()) {
                    let _ = write!(out, " min={min} max={max}");
                }
                attrs(out, p.attributes());
                out.push('\n');
            }
        }
        MetricData::ExponentialHistogram(h) => {
            for p in h.data_points() {
                let _ = write!(out, "{head} count={} sum={}", p.count(), p.sum());
                attrs(out, p.attributes());
                out.push('\n');
            }
        }
    }
}

impl PushMetricExporter for ConsoleMetrics {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        emit(&metric_lines(metrics));
        Ok(())
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    /// Delta: a point is printed once, in the collection after it was recorded, not again at
    /// every interval.
    fn temporality(&self) -> Temporality {
        Temporality::Delta
    }
}

/// The logs exporter: one line per log record.
#[derive(Debug, Default)]
pub(crate) struct ConsoleLogs;

fn any_text(v: &AnyValue) -> String {
    match v {
        AnyValue::String(s) => s.to_string(),
        AnyValue::Int(i) => i.to_string(),
        AnyValue::Double(d) => d.to_string(),
        AnyValue::Boolean(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

/// The lines of one batch.
fn log_lines(batch: &LogBatch<'_>) -> String {
    let mut out = String::new();
    for (r, _scope) in batch.iter() {
        let name = r
            .event_name()
            .map(str::to_owned)
            .or_else(|| r.body().map(any_text))
            .unwrap_or_default();
        let _ = write!(out, "{PREFIX} event ");
        token(&mut out, &name);
        if let Some(t) = r.timestamp() {
            let _ = write!(out, " at={}", iso(t));
        }
        let mut kvs: Vec<(&str, String)> = r
            .attributes_iter()
            .filter(|(k, _)| k.as_str() != "event.name")
            .map(|(k, v)| (k.as_str(), any_text(v)))
            .collect();
        kvs.sort_by(|a, b| a.0.cmp(b.0));
        for (k, v) in kvs {
            out.push(' ');
            token(&mut out, k);
            out.push('=');
            token(&mut out, &v);
        }
        out.push('\n');
    }
    out
}

impl LogExporter for ConsoleLogs {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        emit(&log_lines(&batch));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_bare_or_quoted() {
        let t = |v: &str| {
            let mut s = String::new();
            token(&mut s, v);
            s
        };
        assert_eq!(t("idle"), "idle");
        assert_eq!(t("mcp__db__query"), "mcp__db__query");
        assert_eq!(t(""), "\"\"");
        assert_eq!(t("a b"), "\"a b\"");
        assert_eq!(t("x=1"), "\"x=1\"");
        assert_eq!(t("line\nbreak"), "\"line\\nbreak\"");
        assert_eq!(t("q\"uote"), "\"q\\\"uote\"");
    }

    #[test]
    fn attributes_are_sorted_by_key() {
        let mut s = String::new();
        let kvs = [
            KeyValue::new("session.id", "s1"),
            KeyValue::new("clock", "idle"),
        ];
        attrs(&mut s, kvs.iter());
        assert_eq!(s, " clock=idle session.id=s1");
    }

    #[test]
    fn timestamps_are_iso() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_500);
        assert_eq!(iso(t), "1970-01-01T00:00:01.500Z");
        // Before the epoch: the epoch, not a panic.
        let before = SystemTime::UNIX_EPOCH
            .checked_sub(Duration::from_secs(1))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        assert_eq!(iso(before), "1970-01-01T00:00:00.000Z");
    }
}
