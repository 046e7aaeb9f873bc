//! `run` with telemetry on (docs/telemetry.md), against an OTLP receiver on loopback that
//! decodes with the official OpenTelemetry definitions: a kill arrives as our counters and our
//! `agent_watchdog.kill` event with the session's `session.id`, over `http/protobuf` and
//! `http/json`; off by default; the child's environment untouched; and a collector that is
//! down, slow or failing changes neither the exit code nor the summary, and costs at most the
//! bounded flush and one stderr line.
//!
//! Needs the binary built with the cargo feature `telemetry` (`scripts/test` builds with
//! `--all-features`): without it these tests fail and say so, they do not skip.

mod common;
#[path = "common/otlp.rs"]
mod otlp;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{say, script, stderr, watchdog, INIT};
use otlp::{closed_port, Answer, Item, Receiver};
use serde_json::Value;

/// A word that must never reach the collector: it stands for prompt text on the command line.
const SECRET: &str = "do-not-export-this-prompt";

/// A child that prints `system/init` (session `s1`) and then stays silent: an idle kill.
fn silent_child(dir: &Path) -> std::path::PathBuf {
    script(dir, "child.sh", &format!("{}\nexec sleep 60", say(INIT)))
}

/// `agent-watchdog` without any `OTEL_*` variable of the test's environment.
fn clean_watchdog() -> Command {
    let mut c = watchdog();
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("OTEL_") {
            c.env_remove(k);
        }
    }
    c
}

struct Run {
    out: Output,
    summary: Value,
    took: Duration,
}

/// Run the silent child under a 1 s idle limit, with `env` added.
fn run(dir: &Path, env: &[(&str, String)]) -> Run {
    run_child(dir, &silent_child(dir), env)
}

/// Run `child` under a 1 s idle limit, with `env` added.
fn run_child(dir: &Path, child: &Path, env: &[(&str, String)]) -> Run {
    let summary = dir.join(format!("summary-{}.json", rand_suffix()));
    let t = Instant::now();
    let out = clean_watchdog()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args([
            "run",
            "--idle",
            "1s",
            "--no-progress",
            "30s",
            "--grace",
            "1s",
            "--summary",
        ])
        .arg(&summary)
        .arg("--")
        .arg(child)
        .arg(SECRET)
        .output()
        .unwrap();
    let took = t.elapsed();
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no summary ({e}); stderr: {}", stderr(&out)));
    Run { out, summary, took }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn telemetry_env(endpoint: &str, protocol: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AGENT_WATCHDOG_TELEMETRY", "1".into()),
        ("OTEL_METRICS_EXPORTER", "otlp".into()),
        ("OTEL_LOGS_EXPORTER", "otlp".into()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.into()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.into()),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=test".into(),
        ),
    ]
}

/// The loud failure of a binary built without the feature.
fn assert_built_with_telemetry(out: &Output) {
    assert!(
        !stderr(out).contains("this build has no telemetry"),
        "agent-watchdog was built without the cargo feature `telemetry`: run the tests with \
         --features telemetry (or --all-features, as scripts/test does)"
    );
}

fn find<'a>(items: &'a [Item], signal: &str, name: &str) -> Vec<&'a Item> {
    items
        .iter()
        .filter(|i| i.signal == signal && i.name == name)
        .collect()
}

fn exports_a_kill(protocol: &str) {
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(Answer::Ok);
    let r = run(dir.path(), &telemetry_env(&rx.endpoint(), protocol));
    assert_built_with_telemetry(&r.out);
    assert_eq!(r.out.status.code(), Some(124), "{}", stderr(&r.out));
    assert_eq!(r.summary["kill"]["kind"], "idle");
    // The flush at exit sent everything before the process ended.
    let items = rx.items();
    let what = rx.describe();
    let ctype = if protocol == "http/json" {
        "application/json"
    } else {
        "application/x-protobuf"
    };
    {
        let g = rx.got.lock().unwrap();
        assert!(g.undecoded.is_empty(), "{what}");
        let paths: Vec<&str> = g.requests.iter().map(|(p, _)| p.as_str()).collect();
        assert!(
            paths.contains(&"/v1/metrics") && paths.contains(&"/v1/logs"),
            "{what}"
        );
        assert!(
            g.requests.iter().all(|(_, c)| c.starts_with(ctype)),
            "{what}"
        );
    }
    assert!(!items.is_empty(), "{what}");
    for i in &items {
        assert_eq!(i.service, "agent-watchdog", "{i:?}");
        assert_eq!(i.attr("session.id"), Some("s1"), "{i:?}");
        assert_eq!(i.attr("agent_watchdog.source"), Some("run"), "{i:?}");
        assert!(
            !i.attrs.values().any(|v| v.contains(SECRET)),
            "command-line text exported: {i:?}"
        );
    }
    let kills = find(&items, "metrics", "agent_watchdog.kill.count");
    assert_eq!(kills.len(), 1, "{what}");
    assert_eq!(kills[0].attr("kill.kind"), Some("idle"));
    assert_eq!(kills[0].value, 1.0);
    assert!(kills[0].attr("kill.stage").is_some(), "{:?}", kills[0]);
    let late = find(&items, "metrics", "agent_watchdog.kill.lateness");
    assert!(late.len() == 1 && late[0].value == 1.0, "{what}");
    // Our buckets: 100 µs to a second for the lateness, a second to hours for spells.
    assert_eq!(late[0].bounds.first(), Some(&0.0001), "{:?}", late[0]);
    assert!(r.summary["kill"]["late_us"].is_u64(), "{}", r.summary);
    let first = find(&items, "metrics", "agent_watchdog.first_line.duration");
    assert!(first.len() == 1 && first[0].value == 1.0, "{what}");
    assert!(r.summary["first_line_ms"].is_u64(), "{}", r.summary);
    let sessions = find(&items, "metrics", "agent_watchdog.session.count");
    assert_eq!(sessions.len(), 1, "{what}");
    assert_eq!(sessions[0].attr("outcome"), Some("killed"));
    let spells = find(&items, "metrics", "agent_watchdog.quiet_spell.duration");
    assert!(
        spells.iter().all(|s| s.bounds.first() == Some(&1.0)),
        "{spells:?}"
    );
    assert!(
        spells
            .iter()
            .any(|s| s.attr("clock") == Some("idle") && s.value == 1.0),
        "{what}"
    );
    let kill_events = find(&items, "logs", "agent_watchdog.kill");
    assert_eq!(kill_events.len(), 1, "{what}");
    let k = kill_events[0];
    assert_eq!(k.attr("kill.kind"), Some("idle"));
    assert_eq!(k.attr("event.name"), Some("agent_watchdog.kill"));
    let since: u64 = k.attr("since_keepalive_ms").unwrap().parse().unwrap();
    assert!(since >= 1000, "{k:?}");
    assert_eq!(
        find(&items, "logs", "agent_watchdog.session_end").len(),
        1,
        "{what}"
    );
    // No complaint: the collector took everything.
    assert!(!stderr(&r.out).contains("telemetry"), "{}", stderr(&r.out));
}

/// A write that fails during a kill's grace (the child prints on SIGTERM to a full disk) is
/// exported as what stopped the run: the kill, as the exit code and the summary say, not an
/// output error.
#[test]
fn a_write_that_fails_after_a_kill_is_exported_as_the_kill() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(
        dir.path(),
        "child.sh",
        &format!(
            "trap '{}; exit 0' TERM\nwhile :; do sleep 0.05; done",
            say(INIT)
        ),
    );
    let rx = Receiver::start(Answer::Ok);
    let summary = dir.path().join("s.json");
    let out = clean_watchdog()
        .envs(telemetry_env(&rx.endpoint(), "http/json"))
        .args(["run", "--startup", "1s", "--grace", "5s", "--summary"])
        .arg(&summary)
        .arg("--")
        .arg(&child)
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_built_with_telemetry(&out);
    let err = stderr(&out);
    assert!(err.contains("(startup)"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert_eq!(out.status.code(), Some(125), "{err}");
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["kill"]["kind"], "startup", "{s}");
    let items = rx.items();
    let what = rx.describe();
    let kills = find(&items, "metrics", "agent_watchdog.kill.count");
    assert_eq!(kills.len(), 1, "{what}");
    assert_eq!(kills[0].attr("kill.kind"), Some("startup"), "{what}");
    assert!(
        find(&items, "metrics", "agent_watchdog.output_error.count").is_empty(),
        "{what}"
    );
    let sessions = find(&items, "metrics", "agent_watchdog.session.count");
    assert_eq!(sessions.len(), 1, "{what}");
    assert_eq!(sessions[0].attr("kill.kind"), Some("startup"), "{what}");
    assert_eq!(sessions[0].attr("outcome"), Some("killed"), "{what}");
    let end = find(&items, "logs", "agent_watchdog.session_end");
    assert_eq!(end.len(), 1, "{what}");
    assert_eq!(end[0].attr("exit_code"), Some("125"), "{what}");
}

#[test]
fn a_kill_is_exported_over_http_protobuf() {
    exports_a_kill("http/protobuf");
}

#[test]
fn a_kill_is_exported_over_http_json() {
    exports_a_kill("http/json");
}

#[test]
fn off_by_default_even_with_otel_variables_set() {
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(Answer::Ok);
    let mut env = telemetry_env(&rx.endpoint(), "http/protobuf");
    env.retain(|(k, _)| *k != "AGENT_WATCHDOG_TELEMETRY");
    // Claude Code's switch is for the child, not for us.
    env.push(("CLAUDE_CODE_ENABLE_TELEMETRY", "1".into()));
    let r = run(dir.path(), &env);
    assert_eq!(r.out.status.code(), Some(124));
    std::thread::sleep(Duration::from_millis(300));
    let g = rx.got.lock().unwrap();
    assert!(g.requests.is_empty(), "{:?}", g.requests);
    assert!(!stderr(&r.out).contains("telemetry"), "{}", stderr(&r.out));
}

#[test]
fn the_childs_environment_is_not_changed() {
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(Answer::Ok);
    let env_file = dir.path().join("env.txt");
    let child = script(
        dir.path(),
        "env.sh",
        &format!(
            "env | sort > '{}'\n{}\nexec sleep 60",
            env_file.display(),
            say(INIT)
        ),
    );
    let env = telemetry_env(&rx.endpoint(), "http/protobuf");
    let out = clean_watchdog()
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(["run", "--idle", "1s", "--grace", "1s", "--"])
        .arg(&child)
        .output()
        .unwrap();
    assert_built_with_telemetry(&out);
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    let seen = std::fs::read_to_string(&env_file).unwrap();
    let otel: Vec<&str> = seen
        .lines()
        .filter(|l| l.starts_with("OTEL_") || l.starts_with("AGENT_WATCHDOG_"))
        .collect();
    let mut given: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    given.sort();
    assert_eq!(otel, given, "the child saw another environment: {seen}");
    // And the receiver did get ours (the run was not a no-op).
    assert!(
        rx.wait_for(Duration::from_secs(1), |i| i.name == "agent_watchdog.kill")
            .is_some(),
        "{}",
        rx.describe()
    );
}

/// The run with a faulty collector against the same run with telemetry off: same exit code,
/// same summary (but for its timings), one stderr line, and the extra time bounded by the
/// flush limit (generously: the machine is shared).
fn fault(endpoint: String, flush_ms: u64, slack: Duration) {
    let dir = tempfile::tempdir().unwrap();
    let base = run(dir.path(), &[]);
    let mut env = telemetry_env(&endpoint, "http/protobuf");
    env.push(("AGENT_WATCHDOG_TELEMETRY_FLUSH_MS", flush_ms.to_string()));
    let r = run(dir.path(), &env);
    assert_built_with_telemetry(&r.out);
    assert_eq!(
        r.out.status.code(),
        base.out.status.code(),
        "{}",
        stderr(&r.out)
    );
    for field in [
        "outcome",
        "exit_code",
        "session_id",
        "exit",
        "lines",
        "interrupted",
    ] {
        assert_eq!(r.summary[field], base.summary[field], "{field}");
    }
    assert_eq!(r.summary["kill"]["kind"], base.summary["kill"]["kind"]);
    assert_eq!(r.summary["kill"]["ladder"], base.summary["kill"]["ladder"]);
    let err = stderr(&r.out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("telemetry")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    // The rest of stderr is the same as without telemetry (numbers aside: a loaded machine
    // may round a duration differently, even across a unit: `999ms` in one run, `1s` in the
    // other).
    let digits = |l: &str| numbers_as_n(l);
    let rest: Vec<String> = err
        .lines()
        .filter(|l| !l.contains("telemetry"))
        .map(digits)
        .collect();
    let base_err = stderr(&base.out);
    assert_eq!(rest, base_err.lines().map(digits).collect::<Vec<_>>());
    let extra = r.took.saturating_sub(base.took);
    assert!(
        extra < Duration::from_millis(flush_ms) + slack,
        "telemetry cost {extra:?} (flush bound {flush_ms} ms): {err}"
    );
}

#[test]
fn a_collector_that_is_down_changes_nothing() {
    fault(
        format!("http://127.0.0.1:{}", closed_port()),
        2000,
        Duration::from_secs(5),
    );
}

#[test]
fn a_slow_collector_costs_at_most_the_flush_bound() {
    // The collector answers after 5 s, the bound is 0.5 s: a flush that waited for the answer
    // would cost 4.5 s more than the 3 s of slack allowed here.
    let rx = Receiver::start(Answer::Slow(Duration::from_secs(5)));
    fault(rx.endpoint(), 500, Duration::from_secs(3));
}

#[test]
fn a_collector_answering_500_changes_nothing() {
    let rx = Receiver::start(Answer::Error);
    fault(rx.endpoint(), 2000, Duration::from_secs(5));
}

#[test]
fn a_bad_variable_is_said_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(Answer::Ok);
    let mut env = telemetry_env(&rx.endpoint(), "http/protobuf");
    env.push(("OTEL_METRIC_EXPORT_INTERVAL", "soon".into()));
    env.push(("OTEL_LOGS_EXPORTER", "zipkin".into()));
    let r = run(dir.path(), &env);
    assert_built_with_telemetry(&r.out);
    assert_eq!(r.out.status.code(), Some(124));
    let err = stderr(&r.out);
    assert!(
        err.contains("OTEL_METRIC_EXPORT_INTERVAL=\"soon\""),
        "{err}"
    );
    assert!(err.contains("OTEL_LOGS_EXPORTER=\"zipkin\""), "{err}");
    // Metrics still went out; logs were off.
    let items = rx.items();
    assert!(
        !find(&items, "metrics", "agent_watchdog.kill.count").is_empty(),
        "{}",
        rx.describe()
    );
    assert!(
        items.iter().all(|i| i.signal == "metrics"),
        "{}",
        rx.describe()
    );
}

#[test]
fn a_recovery_decision_and_the_continued_run_are_exported() {
    // A fake `claude` cut off by the output limit on its first run, successful when resumed.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sid = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";
    let init = format!(r#"{{"type":"system","subtype":"init","session_id":"{sid}"}}"#);
    let cut = format!(
        r#"{{"type":"result","subtype":"success","is_error":true,"stop_reason":"max_tokens","terminal_reason":"api_error","api_error":"max_output_tokens","session_id":"{sid}","num_turns":4}}"#
    );
    let ok = format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","terminal_reason":"completed","session_id":"{sid}","num_turns":1}}"#
    );
    let claude = script(
        d,
        "claude",
        &format!(
            "case \" $* \" in\n  *\" --resume \"*)\n{}\n{}\n    exit 0 ;;\nesac\n{}\n{}\nexit 1",
            say(&init),
            say(&ok),
            say(&init),
            say(&cut)
        ),
    );
    let rx = Receiver::start(Answer::Ok);
    let summary = d.join("summary.json");
    let out = clean_watchdog()
        .envs(telemetry_env(&rx.endpoint(), "http/protobuf"))
        .arg("run")
        .arg("--state-dir")
        .arg(d.join("state"))
        .arg("--summary")
        .arg(&summary)
        .arg("--")
        .arg(&claude)
        .args([
            "-p",
            "write it all",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .output()
        .unwrap();
    assert_built_with_telemetry(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["recovery"]["continued_outcome"], "success", "{s}");
    let items = rx.items();
    let what = rx.describe();
    let rec = find(&items, "logs", "agent_watchdog.recovery");
    assert_eq!(rec.len(), 1, "{what}");
    assert_eq!(rec[0].attr("trigger"), Some("output_limit"));
    assert_eq!(rec[0].attr("result"), Some("continued"));
    assert_eq!(rec[0].attr("session.id"), Some(sid));
    let counted = find(&items, "metrics", "agent_watchdog.recovery.count");
    assert_eq!(counted.len(), 1, "{what}");
    assert_eq!(counted[0].attr("result"), Some("continued"));
    // Both runs, each with its own outcome, under the one session id.
    let mut outcomes: Vec<&str> = find(&items, "metrics", "agent_watchdog.session.count")
        .iter()
        .filter(|i| i.attr("session.id") == Some(sid))
        .filter_map(|i| i.attr("outcome"))
        .collect();
    outcomes.sort();
    assert_eq!(outcomes.len(), 2, "{what}");
    assert!(outcomes.contains(&"success"), "{outcomes:?}");
    assert_eq!(
        find(&items, "logs", "agent_watchdog.session_end").len(),
        2,
        "{what}"
    );
}

#[test]
fn the_console_exporter_writes_to_stderr_and_leaves_stdout_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    // Lines of every sort, then silence: an idle kill.
    let child = script(
        dir.path(),
        "talker.sh",
        &format!(
            "{}\n{}\nprintf 'not json \\001 \\377 tail'\nprintf '\\n\\n'\n{}\nexec sleep 60",
            say(INIT),
            say(common::ASSISTANT),
            say(common::PING)
        ),
    );
    let base = run_child(dir.path(), &child, &[]);
    let env = vec![
        ("AGENT_WATCHDOG_TELEMETRY", "1".to_owned()),
        ("OTEL_METRICS_EXPORTER", "console".to_owned()),
        ("OTEL_LOGS_EXPORTER", "console".to_owned()),
    ];
    let r = run_child(dir.path(), &child, &env);
    assert_built_with_telemetry(&r.out);
    assert_eq!(r.out.status.code(), Some(124), "{}", stderr(&r.out));
    assert_eq!(r.out.status.code(), base.out.status.code());
    assert!(base.out.stdout.len() > 100, "{:?}", base.out.stdout);
    assert_eq!(
        r.out.stdout,
        base.out.stdout,
        "stdout changed:\n{}\n---\n{}",
        String::from_utf8_lossy(&r.out.stdout),
        String::from_utf8_lossy(&base.out.stdout)
    );
    let err = stderr(&r.out);
    let kill: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("agent-watchdog: telemetry: event agent_watchdog.kill "))
        .collect();
    assert_eq!(kill.len(), 1, "{err}");
    assert!(kill[0].contains(" session.id=s1"), "{}", kill[0]);
    assert!(kill[0].contains(" kill.kind=idle"), "{}", kill[0]);
    assert!(kill[0].contains(" at=20"), "{}", kill[0]);
    let counted: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("agent-watchdog: telemetry: metric agent_watchdog.kill.count "))
        .collect();
    assert_eq!(counted.len(), 1, "{err}");
    assert!(
        counted[0].contains(" 1 ") && counted[0].contains("session.id=s1"),
        "{}",
        counted[0]
    );
    assert!(!err.contains(SECRET), "{err}");
    // Our other stderr lines are the run's own: the kill is told as without telemetry.
    let told = |e: &str| {
        e.lines()
            .filter(|l| !l.starts_with("agent-watchdog: telemetry: "))
            .filter(|l| l.starts_with("agent-watchdog: killed "))
            .map(|l| l.split(" after ").next().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(told(&err).len(), 1, "{err}");
    assert_eq!(told(&err), told(&stderr(&base.out)), "{err}");
}

/// `line` with each number, and the duration unit right after it (`ms`, `s`, `m`, `h`), as `N`.
fn numbers_as_n(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if !c.is_ascii_digit() {
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let after = &rest[end..];
        let unit = ["ms", "s", "m", "h"]
            .into_iter()
            .find(|u| {
                after.starts_with(u)
                    && !after[u.len()..].starts_with(|c: char| c.is_ascii_alphabetic())
            })
            .map_or(0, str::len);
        out.push('N');
        rest = &after[unit..];
    }
    out
}

#[test]
fn numbers_and_their_units_read_the_same() {
    assert_eq!(
        numbers_as_n("asleep 999ms, 0 CPU."),
        numbers_as_n("asleep 1s, 0 CPU.")
    );
    assert_eq!(
        numbers_as_n("after 2.5s: `sleep 30` (pid 4121)"),
        "after N: `sleep N` (pid N)"
    );
    assert_ne!(numbers_as_n("12 seconds"), numbers_as_n("12 s"));
}

/// A background task that never reports back: the kill event carries the task it waited on,
/// and the kill metrics the kind `task_silent`.
#[test]
fn a_task_silent_kill_exports_the_task_it_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start(Answer::Ok);
    let started = r#"{"type":"system","subtype":"task_started","task_id":"a1","tool_use_id":"toolu_a1","description":"Audit the parser","task_type":"local_agent","is_backgrounded":true,"session_id":"s1"}"#;
    let child = script(
        dir.path(),
        "bg.sh",
        &format!("{}\n{}\nexec sleep 60", say(INIT), say(started)),
    );
    let r = run_child(
        dir.path(),
        &child,
        &telemetry_env(&rx.endpoint(), "http/json"),
    );
    assert_eq!(r.summary["kill"]["kind"], "task_silent", "{}", r.summary);
    let items = rx.items();
    let what = rx.describe();
    let kills = find(&items, "metrics", "agent_watchdog.kill.count");
    assert_eq!(kills.len(), 1, "{what}");
    assert_eq!(kills[0].attr("kill.kind"), Some("task_silent"));
    let events = find(&items, "logs", "agent_watchdog.kill");
    assert_eq!(events.len(), 1, "{what}");
    let k = events[0];
    assert_eq!(k.attr("kill.tasks"), Some("1"), "{k:?}");
    assert_eq!(k.attr("kill.task.id"), Some("a1"), "{k:?}");
    assert_eq!(
        k.attr("kill.task.description"),
        Some("Audit the parser"),
        "{k:?}"
    );
    let silent: u64 = k.attr("kill.task.silent_ms").unwrap().parse().unwrap();
    assert!(silent >= 1000, "{k:?}");
}
