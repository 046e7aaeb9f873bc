//! The telemetry guide (`docs/telemetry.md`) against the code: its table lists every metric
//! with its unit and kind, and every name it uses (metrics, events, attributes, Prometheus
//! labels in its queries) is one we export.

use super::table::{metrics, SOURCE};

#[test]
fn the_guide_table_lists_every_metric_with_its_unit_and_no_other() {
    let guide = telemetry_section();
    let cells: Vec<Vec<String>> = guide
        .lines()
        .filter(|l| l.starts_with("| `agent_watchdog."))
        .map(|l| {
            l.split('|')
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect()
        })
        .collect();
    let rows: Vec<(String, String)> = cells.iter().map(|c| (c[1].clone(), c[2].clone())).collect();
    // And each row's kind is the instrument's.
    for (c, m) in cells.iter().zip(metrics()) {
        assert_eq!(c[3], m.kind.as_str(), "{}", m.name);
    }
    let ours: Vec<(String, String)> = metrics()
        .map(|m| (m.name.to_string(), m.unit.to_string()))
        .collect();
    assert_eq!(rows, ours);
    assert!(ours.iter().all(|(n, _)| n.starts_with("agent_watchdog.")));
}

/// The string literals of our telemetry sources that start with `prefix`, up to the quote.
fn literals(prefix: &str) -> std::collections::BTreeSet<String> {
    let sources = [
        include_str!("instruments.rs"),
        include_str!("backfill.rs"),
        include_str!("finished.rs"),
        include_str!("live.rs"),
        include_str!("gauges.rs"),
        include_str!("kill.rs"),
    ];
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

/// The telemetry guide, whole.
fn telemetry_section() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/telemetry.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
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
fn every_name_the_guide_uses_is_one_we_export() {
    let section = telemetry_section();
    // The names our recording code uses (the table itself is not a use), and our source
    // attribute (a constant).
    let mut exported: std::collections::BTreeSet<String> = literals("\"agent_watchdog.")
        .into_iter()
        .map(|n| format!("agent_watchdog.{n}"))
        .collect();
    exported.insert(SOURCE.to_owned());
    let metrics: Vec<&str> = metrics().map(|m| m.name).collect();
    for m in &metrics {
        assert!(
            exported.contains(*m),
            "{m} is in the catalogue for the CLI but never recorded"
        );
    }
    // Dotted names: a metric, an event or our source attribute.
    let dotted = words(&section, "agent_watchdog.");
    assert!(dotted.len() > 20, "{dotted:?}");
    for w in &dotted {
        assert!(
            exported.contains(w),
            "docs/telemetry.md names {w}, which we never export"
        );
    }
    // And every event we emit is documented there.
    for e in exported
        .iter()
        .filter(|n| !metrics.contains(&n.as_str()) && n.as_str() != SOURCE)
    {
        assert!(dotted.contains(e), "event {e} is not in docs/telemetry.md");
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
            "a query of docs/telemetry.md names {w}, which we never export"
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
                    .map(|(k, _)| k.trim().trim_end_matches('!').to_owned()),
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
            "a query of docs/telemetry.md reads the attribute {key}, which we never set"
        );
        read += 1;
    }
    assert!(read >= 3, "{read}");
    for l in &used {
        assert!(
            l == "le" || labels.contains(l),
            "a query of docs/telemetry.md uses the label {l}, which no attribute of ours gives"
        );
    }
}
