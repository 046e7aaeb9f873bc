//! The two PromQL queries of docs/telemetry.md, run on a real Prometheus engine (`promtool test rules`,
//! from `scripts/install-query-tools`), over series named as the collector's Prometheus
//! exporter names our instruments: the names come from the instrument table
//! (`agent_watchdog::telemetry::table`) through the collector's rules, and those rules are
//! checked against an implementation that is not ours (the OpenTelemetry Python SDK's
//! Prometheus exporter). The SQL query runs in `telemetry_e2e.rs`, over the records of a real
//! run.

#[path = "common/queries.rs"]
mod queries;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use agent_watchdog::telemetry::table::{self, Kind, Metric, SOURCE};

/// The series names of metric `m` in a scrape.
fn series_names(m: &Metric) -> Vec<String> {
    let base = m.prometheus_name();
    match m.kind {
        Kind::Histogram => ["_bucket", "_sum", "_count"]
            .iter()
            .map(|s| format!("{base}{s}"))
            .collect(),
        _ => vec![base],
    }
}

/// An attribute key as a Prometheus label (the collector replaces what a label cannot hold,
/// the dots here, with `_`).
fn label(key: &str) -> String {
    key.replace('.', "_")
}

fn metric(name: &str) -> &'static Metric {
    table::metric(name).unwrap_or_else(|| panic!("{name} is not in the table"))
}

#[test]
fn our_prometheus_names_are_the_python_exporters_but_for_the_collectors_ratio() {
    let input: Vec<serde_json::Value> = table::metrics()
        .map(|m| serde_json::json!({"name": m.name, "unit": m.unit, "kind": m.kind.as_str()}))
        .collect();
    let text = queries::run_python(
        "prom_names.py",
        &[],
        &serde_json::to_string(&input).unwrap(),
    );
    let theirs: std::collections::BTreeSet<String> = text
        .lines()
        .filter(|l| l.starts_with("agent_watchdog_"))
        .map(|l| l.split(['{', ' ']).next().unwrap().to_owned())
        .collect();
    let mut ours = std::collections::BTreeSet::new();
    for m in table::metrics() {
        for n in series_names(m) {
            // The one rule the two differ on: the collector (and the OpenTelemetry
            // specification) adds `_ratio` to a gauge of unit `1`; the Python exporter does not.
            let expected_there = match n.strip_suffix("_ratio") {
                Some(base) if m.kind == Kind::Gauge && m.unit == "1" => base.to_owned(),
                _ => n.clone(),
            };
            assert!(
                theirs.contains(&expected_there),
                "{}: we name it {n}, the Python exporter has none of that name: {theirs:#?}",
                m.name
            );
            ours.insert(expected_there);
        }
    }
    assert_eq!(ours, theirs);
    // The two differ on one name only, and it is the one the guide's table of the runtime's
    // endpoint uses too.
    assert_eq!(
        metric("agent_watchdog.rate_limit.utilization").prometheus_name(),
        "agent_watchdog_rate_limit_utilization_ratio"
    );
    assert_eq!(
        metric("agent_watchdog.cpu.time").prometheus_name(),
        "agent_watchdog_cpu_time_seconds_total"
    );
}

/// promtool's value notation for a series sampled each minute: absent for `from` minutes,
/// then rising by one a minute to `n` (a cumulative count as it grows), then `n` for `hold`
/// minutes, then absent (stale).
fn rising(from: u32, n: u64, hold: u32) -> String {
    let mut v = String::new();
    if from > 0 {
        write!(v, "_x{from} ").unwrap();
    }
    match n {
        0 => write!(v, "0x{hold}").unwrap(),
        1 => write!(v, "1x{hold}").unwrap(),
        n => write!(v, "1+1x{} {n}x{hold}", n - 2).unwrap(),
    }
    v
}

/// `{k="v", …}` with the labels of `attrs` (attribute keys).
fn labels(attrs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = attrs
        .iter()
        .map(|(k, v)| format!("{}=\"{v}\"", label(k)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// Samples a query must give: (labels, value).
type Samples = Vec<(String, f64)>;

struct Promtest {
    /// (series, promtool values)
    series: Vec<(String, String)>,
    /// (query, evaluation time, samples)
    checks: Vec<(String, String, Samples)>,
}

impl Promtest {
    /// A promtool unit test file: one test, sampled each minute.
    fn yaml(&self) -> String {
        let mut y = String::from("rule_files: []\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n");
        for (s, v) in &self.series {
            writeln!(y, "      - series: '{s}'\n        values: '{v}'").unwrap();
        }
        y.push_str("    promql_expr_test:\n");
        for (expr, at, samples) in &self.checks {
            let expr = serde_json::to_string(expr).unwrap();
            writeln!(
                y,
                "      - expr: {expr}\n        eval_time: {at}\n        exp_samples:"
            )
            .unwrap();
            for (l, v) in samples {
                writeln!(y, "          - labels: '{l}'\n            value: {v:?}").unwrap();
            }
        }
        y
    }

    /// Run promtool on it: whether it passed, and what it said.
    fn run(&self) -> (bool, String) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("queries_test.yml");
        std::fs::write(&file, self.yaml()).unwrap();
        let out = std::process::Command::new(queries::promtool())
            .args(["test", "rules"])
            .arg(&file)
            .output()
            .unwrap();
        let said = format!(
            "{}{}\n--- the test file:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.yaml()
        );
        (out.status.success(), said)
    }
}

/// Prometheus's `histogram_quantile`: the `q` quantile of cumulative `buckets` (upper bound,
/// count; the last `+Inf`), interpolated linearly inside its bucket (the first bucket from 0).
fn quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    let total = buckets.last().unwrap().1;
    let rank = q * total;
    let i = buckets.iter().position(|(_, c)| *c >= rank).unwrap();
    let (upper, count) = buckets[i];
    let (lower, below) = if i == 0 { (0.0, 0.0) } else { buckets[i - 1] };
    lower + (upper - lower) * (rank - below) / (count - below)
}

#[test]
fn the_guide_promql_queries_give_kills_per_hour_and_the_p95_spell_per_mcp_tool() {
    let kills = queries::guide_query("promql", "kill_count");
    let spells = queries::guide_query("promql", "quiet_spell");
    let mut t = Promtest {
        series: Vec::new(),
        checks: Vec::new(),
    };

    // Kills: one counter series per session (and kind and stage), present from the kill until
    // it goes stale after the run ends. Minutes from 0.
    let kill = metric("agent_watchdog.kill.count").prometheus_name();
    for (sid, source, kind, stage, values) in [
        // killed at 10 min, gone at 25 min
        ("a", "run", "idle", "term", rising(10, 1, 15)),
        // killed at 30 min (no progress), gone at 40 min
        ("b", "run", "no_progress", "kill", rising(30, 1, 10)),
        // killed at 65 min
        ("c", "run", "idle", "interrupt", rising(65, 1, 10)),
        // killed at 5 min and its continuation again at 150 min: one process for 3 hours
        ("d", "run", "idle", "term", "_x5 1x145 2x30".to_owned()),
        // a back-fill's kill: never made, not counted
        ("e", "audit", "idle", "term", rising(50, 1, 10)),
    ] {
        let l = labels(&[
            ("session.id", sid),
            (SOURCE, source),
            ("kill.kind", kind),
            ("kill.stage", stage),
        ]);
        t.series.push((format!("{kill}{l}"), values));
    }
    let by_kind = |v: &[(&str, f64)]| -> Samples {
        v.iter()
            .map(|(k, n)| (format!("{{kill_kind=\"{k}\"}}"), *n))
            .collect()
    };
    // First hour: a and d (idle), b (no progress). Second: c; d's counter did not move.
    // Third: d's second kill.
    t.checks.push((
        kills.clone(),
        "60m".into(),
        by_kind(&[("idle", 2.0), ("no_progress", 1.0)]),
    ));
    t.checks
        .push((kills.clone(), "120m".into(), by_kind(&[("idle", 1.0)])));
    t.checks
        .push((kills.clone(), "180m".into(), by_kind(&[("idle", 1.0)])));
    // Why the guide does not use increase(): it counts none of these kills.
    let naive = format!(
        "sum by (kill_kind) (increase({kill}{{{}=\"run\"}}[1h]))",
        label(SOURCE)
    );
    t.checks.push((
        naive,
        "60m".into(),
        by_kind(&[("idle", 0.0), ("no_progress", 0.0)]),
    ));

    // Spells: bucket series per session, clock and tool, on our own boundaries.
    let spell = metric("agent_watchdog.quiet_spell.duration").prometheus_name();
    let bounds = table::buckets("agent_watchdog.quiet_spell.duration");
    // (session, source, tool, clock, the spells' lengths in seconds)
    let sessions: [(&str, &str, &str, &str, Vec<f64>); 5] = [
        (
            "a",
            "run",
            "mcp__db__query",
            "idle",
            vec![20.0; 5]
                .into_iter()
                .chain(vec![50.0; 4])
                .chain([100.0])
                .collect(),
        ),
        ("b", "audit", "mcp__db__query", "idle", vec![90.0; 10]),
        ("c", "run", "mcp__web__fetch", "idle", vec![0.5; 4]),
        // Not an MCP tool, and another clock: neither is in the answer.
        ("d", "run", "Bash", "idle", vec![3000.0; 5]),
        (
            "a",
            "run",
            "mcp__db__query",
            "no_progress",
            vec![9000.0; 10],
        ),
    ];
    let mut totals: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for (i, (sid, source, tool, clock, lengths)) in sessions.iter().enumerate() {
        let mut attrs = vec![
            ("session.id", *sid),
            (SOURCE, *source),
            ("clock", *clock),
            ("ended_by", "progress"),
            ("spell.kind", "tool"),
            ("tool.name", *tool),
        ];
        let parts = tool.strip_prefix("mcp__").and_then(|t| t.split_once("__"));
        if let Some((server, name)) = parts {
            attrs.push(("mcp.server", server));
            attrs.push(("mcp.tool", name));
        }
        let les: Vec<(String, f64)> = bounds
            .iter()
            // As the exporter writes them: `1`, `0.5` (Go's shortest form).
            .map(|b| (format!("{b}"), *b))
            .chain([("+Inf".to_owned(), f64::INFINITY)])
            .collect();
        for (le, upper) in &les {
            let count = lengths.iter().filter(|l| *l <= upper).count() as u64;
            let mut a = attrs.clone();
            a.push(("le", le.as_str()));
            // Sessions start at different times and end (go stale) before the day is out.
            let values = rising(5 * i as u32, count, 30);
            t.series
                .push((format!("{spell}_bucket{}", labels(&a)), values));
            if *clock == "idle" {
                if let Some((server, name)) = parts {
                    let b = totals.entry((server.into(), name.into())).or_default();
                    match b.iter_mut().find(|(u, _)| u == upper) {
                        Some((_, c)) => *c += count as f64,
                        None => b.push((*upper, count as f64)),
                    }
                }
            }
        }
    }
    let expected: Samples = totals
        .iter()
        .map(|((server, tool), buckets)| {
            (
                format!("{{mcp_server=\"{server}\",mcp_tool=\"{tool}\"}}"),
                quantile(0.95, buckets),
            )
        })
        .collect();
    // The db tool's 20 spells: the 19th is in (60, 120], 10 of that bucket's 11 spells up.
    assert_eq!(expected[0].1, 60.0 + 60.0 * 10.0 / 11.0, "{expected:?}");
    assert_eq!(expected[1].1, 0.95, "{expected:?}");
    t.checks.push((spells.clone(), "60m".into(), expected));

    let (ok, said) = t.run();
    assert!(ok, "promtool: {said}");

    // The check can fail: one kill more than there were is refused.
    t.checks.truncate(0);
    t.checks.push((
        kills,
        "60m".into(),
        by_kind(&[("idle", 3.0), ("no_progress", 1.0)]),
    ));
    let (ok, said) = t.run();
    assert!(
        !ok && said.contains("FAILED"),
        "promtool accepted a wrong count: {said}"
    );
}
