//! What a finished run tells the collector: its summary (the same JSON `--summary` writes)
//! turned into metric points and log events. Built from the summary alone, so the run path has
//! one call site and `audit` could back-fill from past summaries the same way.
//!
//! Attributes carry `session.id` (Claude Code's key and value), the kill kind and stage, the
//! MCP tool in flight; never prompt text, tool input or the command line.

use std::time::{Duration, SystemTime};

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
use opentelemetry::metrics::Meter;
use opentelemetry::KeyValue;
use opentelemetry_sdk::logs::SdkLogger;
use serde_json::Value;

/// Every metric name, unit and meaning (the README's table says the same).
pub(crate) const METRICS: &[(&str, &str, &str)] = &[
    (
        "agent_watchdog.session.count",
        "{session}",
        "runs supervised, by outcome",
    ),
    (
        "agent_watchdog.session.duration",
        "s",
        "run durations, by outcome",
    ),
    (
        "agent_watchdog.kill.count",
        "{kill}",
        "kills, by kind and ladder stage",
    ),
    (
        "agent_watchdog.kill.lateness",
        "s",
        "from a kill's deadline to the run loop handling the kill event",
    ),
    (
        "agent_watchdog.first_line.duration",
        "s",
        "from spawn to the first stdout line",
    ),
    (
        "agent_watchdog.quiet_spell.duration",
        "s",
        "the quiet spell a kill ended, by clock",
    ),
    (
        "agent_watchdog.stalling_warning.count",
        "{warning}",
        "stalling warnings, by clock",
    ),
    (
        "agent_watchdog.mcp.call.age",
        "s",
        "age of the MCP call outstanding at a kill",
    ),
    (
        "agent_watchdog.recovery.count",
        "{decision}",
        "recovery decisions, by trigger and result",
    ),
    (
        "agent_watchdog.subagent.failure.count",
        "{failure}",
        "failed subagents, by recovered",
    ),
    (
        "agent_watchdog.rate_limit.utilization",
        "1",
        "last rate-limit utilization, by window",
    ),
    (
        "agent_watchdog.output_error.count",
        "{error}",
        "runs stopped because our stdout failed",
    ),
    (
        "agent_watchdog.signal.forwarded.count",
        "{signal}",
        "user signals forwarded to the child",
    ),
    (
        "agent_watchdog.cpu.time",
        "s",
        "the watchdog's own CPU time",
    ),
];

fn unit(name: &str) -> &'static str {
    METRICS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, u, _)| *u)
        .unwrap_or("1")
}

fn description(name: &str) -> &'static str {
    METRICS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, d)| *d)
        .unwrap_or("")
}

/// The attribute on every point and event that says where it comes from: `run` (a live run)
/// or `audit` (back-filled from a past recording by `agent-watchdog audit`).
pub(crate) const SOURCE: &str = "agent_watchdog.source";

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

/// Lateness buckets, in seconds: from 100 µs to a second.
const LATENESS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0,
];

/// Spell and age buckets, in seconds: from a second to a few hours.
const BOUNDARIES: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0, 14400.0,
];

/// The buckets of our histogram `name`: [`LATENESS`] for the kill lateness, else
/// [`BOUNDARIES`].
pub(super) fn buckets(name: &str) -> &'static [f64] {
    if name == "agent_watchdog.kill.lateness" {
        LATENESS
    } else {
        BOUNDARIES
    }
}

fn secs_of_ms(v: &Value) -> Option<f64> {
    v.as_u64().map(|ms| ms as f64 / 1000.0)
}

fn s(v: &Value) -> Option<&str> {
    v.as_str()
}

/// `tool.name`, and for an MCP tool `mcp.server` and `mcp.tool`.
pub(super) fn tool_attrs(t: &str) -> Vec<KeyValue> {
    let mut a = vec![KeyValue::new("tool.name", t.to_owned())];
    if let Some((server, tool)) = watchdog_core::claude_code::mcp_tool_parts(t) {
        a.push(KeyValue::new("mcp.server", server.to_owned()));
        a.push(KeyValue::new("mcp.tool", tool.to_owned()));
    }
    a
}

/// Our counter `name`, with the unit and description of [`METRICS`].
pub(super) fn counter(m: &Meter, name: &'static str) -> opentelemetry::metrics::Counter<u64> {
    m.u64_counter(name)
        .with_unit(unit(name))
        .with_description(description(name))
        .build()
}

/// Our histogram `name` (seconds, spell and age buckets), with the unit and description of
/// [`METRICS`].
pub(super) fn histogram(m: &Meter, name: &'static str) -> opentelemetry::metrics::Histogram<f64> {
    m.f64_histogram(name)
        .with_unit(unit(name))
        .with_description(description(name))
        .with_boundaries(buckets(name).to_vec())
        .build()
}

/// Record one finished run from its summary `summary`; `ended` is when it ended.
pub(crate) fn record_run(
    meter: Option<&Meter>,
    logger: Option<&SdkLogger>,
    summary: &Value,
    ended: SystemTime,
) {
    let session = s(&summary["session_id"]).unwrap_or("").to_owned();
    let sid = KeyValue::new("session.id", session.clone());
    let src = KeyValue::new(SOURCE, "run");
    let outcome = s(&summary["outcome"]).unwrap_or("unknown").to_owned();
    let duration_ms = summary["duration_ms"].as_u64().unwrap_or(0);
    let started = ended
        .checked_sub(Duration::from_millis(duration_ms))
        .unwrap_or(ended);
    let kill = &summary["kill"];
    let kill_kind = s(&kill["kind"]);
    let mcp_tool = s(&kill["mcp_call"]["tool"]);
    let tool_attrs = mcp_tool.map(tool_attrs).unwrap_or_default();
    let event = |name: &'static str, at: SystemTime, attrs: Vec<KeyValue>| {
        if let Some(logger) = logger {
            emit(logger, name, Some(at), &session, "run", attrs);
        }
    };
    let at_ms = |v: &Value| started + Duration::from_millis(v.as_u64().unwrap_or(0));

    if let Some(m) = meter {
        let counter = |name: &'static str| counter(m, name);
        let histogram = |name: &'static str| histogram(m, name);
        let mut attrs = vec![
            sid.clone(),
            src.clone(),
            KeyValue::new("outcome", outcome.clone()),
        ];
        if let Some(k) = kill_kind {
            attrs.push(KeyValue::new("kill.kind", k.to_owned()));
        }
        counter("agent_watchdog.session.count").add(1, &attrs);
        if let Some(secs) = secs_of_ms(&summary["first_line_ms"]) {
            histogram("agent_watchdog.first_line.duration")
                .record(secs, &[sid.clone(), src.clone()]);
        }
        histogram("agent_watchdog.session.duration").record(duration_ms as f64 / 1000.0, &attrs);
        if let Some(k) = kill_kind {
            let mut a = vec![
                sid.clone(),
                src.clone(),
                KeyValue::new("kill.kind", k.to_owned()),
            ];
            if let Some(stage) = s(&kill["ladder"]) {
                a.push(KeyValue::new("kill.stage", stage.to_owned()));
            }
            a.extend(tool_attrs.iter().cloned());
            if k == "output" {
                counter("agent_watchdog.output_error.count").add(1, &a);
            } else {
                counter("agent_watchdog.kill.count").add(1, &a);
                if let Some(us) = kill["late_us"].as_u64() {
                    let name = "agent_watchdog.kill.lateness";
                    m.f64_histogram(name)
                        .with_unit(unit(name))
                        .with_description(description(name))
                        .with_boundaries(buckets(name).to_vec())
                        .build()
                        .record(us as f64 / 1e6, &a);
                }
            }
            let spells = histogram("agent_watchdog.quiet_spell.duration");
            for (clock, field) in [
                ("idle", "since_keepalive_ms"),
                ("no_progress", "since_progress_ms"),
            ] {
                if let Some(secs) = secs_of_ms(&kill[field]) {
                    let mut a = vec![
                        sid.clone(),
                        src.clone(),
                        KeyValue::new("clock", clock),
                        KeyValue::new("ended_by", "kill"),
                    ];
                    a.extend(tool_attrs.iter().cloned());
                    spells.record(secs, &a);
                }
            }
            if let Some(age) = secs_of_ms(&kill["mcp_call"]["outstanding_ms"]) {
                let mut a = vec![sid.clone(), src.clone()];
                a.extend(tool_attrs.iter().cloned());
                histogram("agent_watchdog.mcp.call.age").record(age, &a);
            }
        }
        let warnings = counter("agent_watchdog.stalling_warning.count");
        for e in summary["events"].as_array().into_iter().flatten() {
            if e["event"] == "stalling" {
                let clock = s(&e["clock"]).unwrap_or("unknown").to_owned();
                warnings.add(
                    1,
                    &[sid.clone(), src.clone(), KeyValue::new("clock", clock)],
                );
            } else if e["event"] == "left_out" {
                // The bounded event log counted these without keeping them.
                if let Some(n) = e["by_kind"]["stalling"].as_u64() {
                    warnings.add(
                        n,
                        &[sid.clone(), src.clone(), KeyValue::new("clock", "unknown")],
                    );
                }
            }
        }
        if let Some((trigger, result)) = recovery_decision(&summary["recovery"]) {
            counter("agent_watchdog.recovery.count").add(
                1,
                &[
                    sid.clone(),
                    src.clone(),
                    KeyValue::new("trigger", trigger),
                    KeyValue::new("result", result),
                ],
            );
        }
        let failures = counter("agent_watchdog.subagent.failure.count");
        for f in summary["subagents"]["failures"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let mut a = vec![
                sid.clone(),
                src.clone(),
                KeyValue::new("recovered", f["recovered"].as_bool().unwrap_or(false)),
            ];
            if let Some(t) = s(&f["agent_type"]) {
                a.push(KeyValue::new("agent.type", t.to_owned()));
            }
            failures.add(1, &a);
        }
        if let Some(windows) = summary["rate_limits"].as_object() {
            let gauge = m
                .f64_gauge("agent_watchdog.rate_limit.utilization")
                .with_unit(unit("agent_watchdog.rate_limit.utilization"))
                .with_description(description("agent_watchdog.rate_limit.utilization"))
                .build();
            for (window, w) in windows {
                if let Some(u) = w["utilization"].as_f64() {
                    gauge.record(
                        u,
                        &[
                            sid.clone(),
                            src.clone(),
                            KeyValue::new("window", window.clone()),
                        ],
                    );
                }
            }
        }
        if let Some(sig) = s(&summary["interrupted"]) {
            counter("agent_watchdog.signal.forwarded.count").add(
                1,
                &[
                    sid.clone(),
                    src.clone(),
                    KeyValue::new("signal", sig.to_owned()),
                ],
            );
        }
        if let Some(us) = summary["cpu"]["watchdog_us"].as_u64() {
            m.f64_counter("agent_watchdog.cpu.time")
                .with_unit("s")
                .with_description(description("agent_watchdog.cpu.time"))
                .build()
                .add(us as f64 / 1e6, &[sid.clone(), src.clone()]);
        }
    }

    // Events, each stamped with when it happened.
    if logger.is_none() {
        return;
    }
    for e in summary["events"].as_array().into_iter().flatten() {
        if e["event"] == "stalling" {
            event(
                "agent_watchdog.stalling_warning",
                at_ms(&e["t_ms"]),
                vec![
                    KeyValue::new("clock", s(&e["clock"]).unwrap_or("unknown").to_owned()),
                    KeyValue::new(
                        "remaining_ms",
                        e["remaining_ms"].as_u64().unwrap_or(0) as i64,
                    ),
                ],
            );
        }
    }
    if let Some(k) = kill_kind {
        let mut a = vec![KeyValue::new("kill.kind", k.to_owned())];
        if k == "output" {
            a.push(KeyValue::new(
                "reader_gone",
                kill["reader_gone"].as_bool().unwrap_or(false),
            ));
            event("agent_watchdog.output_error", ended, a);
        } else {
            if let Some(stage) = s(&kill["ladder"]) {
                a.push(KeyValue::new("kill.stage", stage.to_owned()));
            }
            for f in [
                "elapsed_ms",
                "since_progress_ms",
                "since_keepalive_ms",
                "since_tool_ms",
            ] {
                if let Some(v) = kill[f].as_u64() {
                    a.push(KeyValue::new(f, v as i64));
                }
            }
            if let Some(sig) = s(&kill["last_signal"]) {
                a.push(KeyValue::new("last_signal", sig.to_owned()));
            }
            if let Some(age) = kill["mcp_call"]["outstanding_ms"].as_u64() {
                a.push(KeyValue::new("mcp.outstanding_ms", age as i64));
            }
            if let Some(us) = kill["late_us"].as_u64() {
                a.push(KeyValue::new("late_us", us as i64));
            }
            a.extend(tool_attrs.iter().cloned());
            event("agent_watchdog.kill", at_ms(&kill["at_ms"]), a);
        }
    }
    if let Some((trigger, result)) = recovery_decision(&summary["recovery"]) {
        event(
            "agent_watchdog.recovery",
            ended,
            vec![
                KeyValue::new("trigger", trigger),
                KeyValue::new("result", result),
            ],
        );
    }
    for f in summary["subagents"]["failures"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let mut a = vec![KeyValue::new(
            "recovered",
            f["recovered"].as_bool().unwrap_or(false),
        )];
        if let Some(t) = s(&f["agent_type"]) {
            a.push(KeyValue::new("agent.type", t.to_owned()));
        }
        if let Some(id) = s(&f["agent_id"]) {
            a.push(KeyValue::new("agent.id", id.to_owned()));
        }
        event("agent_watchdog.subagent_failure", ended, a);
    }
    if let Some(sig) = s(&summary["interrupted"]) {
        event(
            "agent_watchdog.signal_forwarded",
            ended,
            vec![KeyValue::new("signal", sig.to_owned())],
        );
    }
    let mut end = vec![
        KeyValue::new("outcome", outcome),
        KeyValue::new("duration_ms", duration_ms as i64),
    ];
    if let Some(code) = summary["exit_code"].as_i64() {
        end.push(KeyValue::new("exit_code", code));
    }
    event("agent_watchdog.session_end", ended, end);
}

/// What recovery decided, as (`trigger`, `result`), when there was something to decide.
fn recovery_decision(r: &Value) -> Option<(String, String)> {
    let trigger = s(&r["trigger"]);
    let result = if r["continued_outcome"].is_string() {
        "continued"
    } else if !r["notice"].is_null() {
        "notice"
    } else if r["error"].is_string() {
        "error"
    } else if trigger.is_some() {
        "not_continued"
    } else {
        return None;
    };
    Some((trigger.unwrap_or("unknown").to_owned(), result.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    }

    #[test]
    fn recovery_decisions_are_named_only_when_recovery_had_something_to_decide() {
        assert_eq!(recovery_decision(&Value::Null), None);
        assert_eq!(
            recovery_decision(&json!({"trigger": null, "skipped": "no trigger"})),
            None
        );
        let d = |v| recovery_decision(&v).map(|(t, r)| format!("{t}/{r}"));
        assert_eq!(
            d(json!({"trigger": "output_limit", "continued_outcome": "success"})).as_deref(),
            Some("output_limit/continued")
        );
        assert_eq!(
            d(json!({"trigger": "rate_limit", "notice": {"x": 1}})).as_deref(),
            Some("rate_limit/notice")
        );
        assert_eq!(
            d(json!({"trigger": null, "error": "no ledger"})).as_deref(),
            Some("unknown/error")
        );
    }

    #[test]
    fn the_readme_table_lists_every_metric_with_its_unit_and_no_other() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let rows: Vec<(String, String)> = readme
            .lines()
            .filter(|l| l.starts_with("| `agent_watchdog."))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                (
                    cells[1].trim_matches('`').into(),
                    cells[2].trim_matches('`').into(),
                )
            })
            .collect();
        let ours: Vec<(String, String)> = METRICS
            .iter()
            .map(|(n, u, _)| (n.to_string(), u.to_string()))
            .collect();
        assert_eq!(rows, ours);
        assert!(ours.iter().all(|(n, _)| n.starts_with("agent_watchdog.")));
    }

    /// The string literals of our telemetry sources that start with `prefix`, up to the quote.
    fn literals(prefix: &str) -> std::collections::BTreeSet<String> {
        let sources = [include_str!("instruments.rs"), include_str!("backfill.rs")];
        let mut out = std::collections::BTreeSet::new();
        for src in sources {
            let mut rest = src;
            while let Some(i) = rest.find(prefix) {
                let after = &rest[i + prefix.len()..];
                let end = after.find('"').unwrap_or(after.len());
                // A name, not this test's own `"agent_watchdog."` or `{n}`.
                let name = &after[..end];
                if !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._".contains(c))
                {
                    out.insert(after[..end].to_owned());
                }
                rest = &after[end..];
            }
        }
        out
    }

    /// The README's "Fleet telemetry" section.
    fn telemetry_section() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let start = readme.find("\n## Fleet telemetry").expect("the section");
        let body = &readme[start + 1..];
        let end = body[3..].find("\n## ").map_or(body.len(), |e| e + 3);
        body[..end].to_owned()
    }

    /// Every `agent_watchdog.`/`agent_watchdog_` word of `text`.
    fn words(text: &str, prefix: &str) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        let mut rest = text;
        while let Some(i) = rest.find(prefix) {
            // Not the tail of a longer word (`x_agent_watchdog_…`).
            let glued = rest[..i]
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            let after = &rest[i..];
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(after.len());
            if !glued {
                out.insert(after[..end].trim_end_matches('.').to_owned());
            }
            rest = &after[end..];
        }
        out
    }

    #[test]
    fn every_name_the_readme_section_uses_is_one_we_export() {
        let section = telemetry_section();
        let exported: std::collections::BTreeSet<String> = literals("\"agent_watchdog.")
            .into_iter()
            .map(|n| format!("agent_watchdog.{n}"))
            .collect();
        let metrics: Vec<&str> = METRICS.iter().map(|(n, _, _)| *n).collect();
        assert!(exported.contains(SOURCE));
        for m in &metrics {
            assert!(
                exported.contains(*m),
                "{m} is in METRICS but never recorded"
            );
        }
        // Dotted names: a metric, an event or our source attribute.
        let dotted = words(&section, "agent_watchdog.");
        assert!(dotted.len() > 20, "{dotted:?}");
        for w in &dotted {
            assert!(
                exported.contains(w),
                "the README names {w}, which we never export"
            );
        }
        // And every event we emit is documented there.
        for e in exported
            .iter()
            .filter(|n| !metrics.contains(&n.as_str()) && n.as_str() != SOURCE)
        {
            assert!(dotted.contains(e), "event {e} is not in the README section");
        }
        // The attribute keys we set, as Prometheus labels (dots to `_`).
        let mut keys = literals("KeyValue::new(\"");
        keys.extend(literals("add_attribute(\""));
        keys.insert(SOURCE.to_owned());
        let labels: std::collections::BTreeSet<String> =
            keys.iter().map(|k| k.replace('.', "_")).collect();
        assert!(labels.contains("kill_kind") && labels.contains("session_id"));
        // Prometheus names: a metric's, with the collector's unit and type suffixes, or a label.
        let bases: Vec<String> = metrics.iter().map(|m| m.replace('.', "_")).collect();
        let known = |w: &str| {
            let mut forms = vec![w.to_owned()];
            for suffix in ["_total", "_bucket", "_sum", "_count"] {
                if let Some(x) = w.strip_suffix(suffix) {
                    forms.push(x.to_owned());
                }
            }
            for f in forms.clone() {
                for unit in ["_seconds", "_ratio"] {
                    if let Some(x) = f.strip_suffix(unit) {
                        forms.push(x.to_owned());
                    }
                }
            }
            forms.iter().any(|f| bases.contains(f)) || labels.contains(w)
        };
        let prom = words(&section, "agent_watchdog_");
        assert!(prom.len() >= 3, "{prom:?}");
        for w in &prom {
            assert!(
                known(w),
                "the README's query names {w}, which we never export"
            );
        }
        // The labels the queries group and filter by.
        let mut used = Vec::new();
        for block in section.split("```promql").skip(1) {
            let block = block.split("```").next().unwrap_or("");
            let mut rest = block;
            while let Some(i) = rest.find("by (") {
                let after = &rest[i + 4..];
                let end = after.find(')').unwrap_or(after.len());
                used.extend(after[..end].split(',').map(|l| l.trim().to_owned()));
                rest = &after[end..];
            }
        }
        // `{label="value", …}` anywhere in the section.
        let mut rest = section.as_str();
        while let Some(i) = rest.find('{') {
            let after = &rest[i + 1..];
            let end = after.find('}').unwrap_or(after.len());
            let inner = &after[..end];
            if inner.contains("=\"") {
                used.extend(
                    inner
                        .split(',')
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, _)| k.trim().to_owned()),
                );
            }
            rest = &after[end..];
        }
        assert!(used.len() >= 4, "{used:?}");
        // The attributes the SQL reads off log records.
        let mut read = 0;
        for part in section.split("LogAttributes['").skip(1) {
            let key = part.split('\'').next().unwrap_or("");
            assert!(
                keys.contains(key),
                "the README's query reads the attribute {key}, which we never set"
            );
            read += 1;
        }
        assert!(read >= 3, "{read}");
        for l in &used {
            assert!(
                l == "le" || labels.contains(l),
                "the README's query uses the label {l}, which no attribute of ours gives"
            );
        }
    }
}
