//! `replay` on the real-CLI captures in `testdata/captures`, whole and truncated,
//! in virtual time: the verdicts the core's rules predict.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use agent_watchdog::replay::{replay_entries, replay_reader, ReplayRun};
use serde_json::Value;
use watchdog_core::{classify, KillKind, Limits, LineView, Outcome, Signal};
use watchdog_host::capture::{Entry, Record};

fn captures_dir() -> PathBuf {
    mock_api::harness::testdata_dir().join("captures")
}

fn capture(name: &str) -> PathBuf {
    captures_dir().join(format!("{name}.capture.jsonl"))
}

fn all_captures() -> Vec<(String, Vec<Entry>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(captures_dir()).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".capture.jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let entries: Vec<Entry> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| Entry::parse(l.as_bytes()).unwrap().unwrap())
            .collect();
        out.push((name.trim_end_matches(".capture.jsonl").to_owned(), entries));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        out.len() >= 19,
        "expected the 19 shared captures, found {}",
        out.len()
    );
    out
}

/// The one run of a capture without boundaries, replayed from its entries.
fn replay(entries: &[Entry], limits: Limits) -> ReplayRun {
    let r = replay_entries(entries, limits);
    assert_eq!(r.runs.len(), 1);
    r.runs.into_iter().next().unwrap()
}

fn replay_json(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"))
        .arg("replay")
        .args(args)
        .arg("--json")
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What the shared captures end with under the default policy.
fn expected_default(name: &str) -> &'static str {
    match name {
        "s3_429_rejected_fast_gwjwt" | "s5_max_tokens" => "error_result",
        "s4_sigint" | "s4_sigterm_during_bash" => "no_result",
        // Recorded without an `exit` entry: silent forever after the result → linger.
        n if n.starts_with("s6_") => "killed",
        _ => "success",
    }
}

#[test]
fn every_shared_capture_replays_to_its_verdict() {
    let limits = Limits::default();
    for (name, entries) in all_captures() {
        let v = replay(&entries, limits.clone());
        assert_eq!(
            v.outcome().as_str(),
            expected_default(&name),
            "{name}: {:?}",
            v.events.iter().collect::<Vec<_>>()
        );
        assert!(v.session_id().is_some(), "{name}: no session id");
        if name.starts_with("s6_") {
            let k = v.kill().unwrap();
            assert_eq!(k.kind, KillKind::Linger, "{name}");
            let result_t = entries
                .iter()
                .rev()
                .find(|e| matches!(&e.record, Record::Line(l) if l["type"] == "result"))
                .map(|e| e.t_ms)
                .unwrap();
            let at = k.at.duration_since(v.base);
            assert_eq!(
                at,
                Duration::from_millis(result_t) + limits.linger(),
                "{name}"
            );
        }
    }
}

#[test]
fn the_binary_prints_the_json_verdict() {
    let v = replay_json(&[capture("s1_text").to_str().unwrap()]);
    assert_eq!(v["outcome"], "success");
    assert_eq!(v["kill"], Value::Null);
    assert_eq!(v["session_id"], "0abebf6c-ff8f-40d6-98c9-4d6f528a4451");
    assert!(v["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "settled"));

    let v = replay_json(&[capture("s5_max_tokens").to_str().unwrap()]);
    assert_eq!(v["outcome"], "error_result");
}

#[test]
fn small_thresholds_kill_at_the_exact_deadline() {
    // Write completed at 731 ms, so no pre-write extension: the 27 s gap before the first
    // heartbeat (3835 → 30786) is longer than a 20 s idle limit.
    let v = replay_json(&[capture("s2_tool").to_str().unwrap(), "--idle", "20s"]);
    assert_eq!(v["outcome"], "killed");
    assert_eq!(v["kill"]["kind"], "idle");
    assert_eq!(v["kill"]["at_ms"], 3835 + 20_000);
    assert_eq!(v["kill"]["since_progress_ms"], 20_000);

    // The same run, had no write tool completed: patience doubles and the heartbeats (30 s
    // apart) keep it alive.
    let v = replay_json(&[
        capture("s2_tool").to_str().unwrap(),
        "--idle",
        "20s",
        "--write-tools",
        "NoSuchTool",
    ]);
    assert_eq!(v["outcome"], "success", "{v}");
    assert!(v["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "extended"));

    // Pings only for 90 s: a 30 s no-progress cap kills 30 s after the last delta (550 ms).
    let v = replay_json(&[
        capture("s4_stall_ping").to_str().unwrap(),
        "--no-progress",
        "30s",
    ]);
    assert_eq!(v["kill"]["kind"], "no_progress");
    assert_eq!(v["kill"]["at_ms"], 550 + 30_000);
    assert!(v["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "stalling"));
}

/// One rule at a deadline, the live one: a line that lands exactly on a deadline comes too
/// late (the core fires the deadline first, and kills land exactly at their deadline).
#[test]
fn a_line_exactly_at_the_deadline_comes_too_late_as_live() {
    // Last delta at 550 ms, first ping at 20551 ms: an idle limit of 20001 ms puts the
    // deadline exactly on the ping: killed at 20551 ms, as a live run would be.
    let path = capture("s4_stall_ping");
    let v = replay_json(&[
        path.to_str().unwrap(),
        "--idle",
        "20001ms",
        "--extend-factor",
        "1",
    ]);
    assert_eq!(v["kill"]["kind"], "idle", "{v}");
    assert_eq!(v["kill"]["at_ms"], 20_551);
    // One millisecond more and the ping is in time: the run goes on to its result.
    let v = replay_json(&[
        path.to_str().unwrap(),
        "--idle",
        "20002ms",
        "--extend-factor",
        "1",
    ]);
    assert_eq!(v["outcome"], "success", "{v}");
    // The core fed live, line by line, at the same instants: the same verdict.
    let base = std::time::Instant::now();
    let limits = Limits::default()
        .with_idle(Duration::from_millis(20_001))
        .and_then(|l| l.with_extend_factor(1.0))
        .unwrap();
    let mut reg = watchdog_core::Registry::new(limits);
    let id = reg.register(base, watchdog_core::SessionConfig::default());
    let text = std::fs::read_to_string(&path).unwrap();
    for l in text.lines() {
        let e = Entry::parse(l.as_bytes()).unwrap().unwrap();
        if let Record::Line(v) = &e.record {
            let now = base + Duration::from_millis(e.t_ms);
            reg.observe(now, id, &LineView::from_value(v).unwrap());
        }
        if reg.kill(id).is_some() {
            break;
        }
    }
    let k = reg.kill(id).expect("live: killed");
    assert_eq!(k.at.duration_since(base), Duration::from_millis(20_551));
}

/// The kill the rules predict for a capture cut after `entries` (child silent afterwards),
/// for captures without human waits: (kind, at_ms).
fn predict_silent_tail(entries: &[Entry], l: &Limits) -> (KillKind, u64) {
    let ms = |d: Duration| d.as_millis() as u64;
    let mut any_line = false;
    let (mut last_line, mut last_progress, mut settled_at) = (0u64, 0u64, None::<u64>);
    let mut write_done = false;
    let mut util = 0.0f64;
    let mut open_writes: Vec<String> = Vec::new();
    let mut retry_floor = 0u64; // api_retry at t: no idle kill before t + retry_delay_ms + patience
    for e in entries {
        let Record::Line(v) = &e.record else {
            if let Record::Raw(_) = e.record {
                any_line = true;
                last_line = e.t_ms;
            }
            continue;
        };
        let view = LineView::from_value(v).unwrap();
        let class = classify(&view);
        any_line = true;
        last_line = e.t_ms;
        match class.signal {
            Signal::Progress => {
                last_progress = e.t_ms;
                settled_at = None;
                // Progress after an announced back-off ends the storm.
                if e.t_ms >= retry_floor {
                    retry_floor = 0;
                }
            }
            Signal::Settle => {
                last_progress = e.t_ms;
                settled_at = Some(e.t_ms);
            }
            _ => {}
        }
        for (id, name) in view.tool_uses() {
            if l.is_write_tool(&name) {
                open_writes.push(id.into_owned());
            }
        }
        for (id, is_error) in view.tool_results() {
            if !is_error && open_writes.iter().any(|w| *w == id) {
                write_done = true;
            }
        }
        if let Some(delay) = view.retry_delay_ms() {
            retry_floor = retry_floor.max(e.t_ms + delay as u64);
        }
        if let Some(w) = v["rate_limit_info"]["unifiedWindows"].as_object() {
            util = w
                .values()
                .filter_map(|w| w["utilization"].as_f64())
                .fold(0.0, f64::max);
        }
    }
    if !any_line {
        return (KillKind::Startup, ms(l.startup()));
    }
    if let Some(t) = settled_at {
        return (KillKind::Linger, t + ms(l.linger()));
    }
    let extended = !write_done || util >= l.high_utilization();
    let patience = if extended {
        l.extended_idle()
    } else {
        l.idle()
    };
    let idle = last_line.max(retry_floor) + ms(patience);
    // Neither clock counts an announced back-off: both start at its end.
    let np = last_progress.max(retry_floor) + ms(l.no_progress());
    if idle <= np {
        (KillKind::Idle, idle)
    } else {
        (KillKind::NoProgress, np)
    }
}

#[test]
fn truncated_captures_are_killed_where_the_rules_say() {
    let policies = [
        Limits::default(),
        Limits::default()
            .with_idle(Duration::from_secs(400))
            .unwrap()
            .with_no_progress(Duration::from_secs(500))
            .unwrap(),
    ];
    let mut checked = 0;
    for (name, entries) in all_captures() {
        if name.starts_with("s6_") {
            continue; // human waits: covered by the core's own tests
        }
        let n = entries.len();
        let mut cuts = vec![0, 1, n / 4, n / 2, 3 * n / 4, n - 1];
        cuts.dedup();
        for limits in &policies {
            for &cut in &cuts {
                let part = &entries[..cut];
                if part.iter().any(|e| matches!(e.record, Record::Exit { .. })) {
                    continue;
                }
                let v = replay(part, limits.clone());
                let (kind, at) = predict_silent_tail(part, limits);
                let k = v
                    .kill()
                    .unwrap_or_else(|| panic!("{name} cut at {cut}: no kill, {:?}", v.outcome()));
                // A kill inside the recorded part (a long gap) is also a valid verdict, but
                // the shared captures have none under these policies.
                assert_eq!(
                    (k.kind, k.at.duration_since(v.base).as_millis() as u64),
                    (kind, at),
                    "{name} cut at {cut}/{n}"
                );
                assert_eq!(*v.outcome(), Outcome::Killed { kind });
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "only {checked} truncations checked");
}

#[test]
fn unreadable_capture_lines_are_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.capture.jsonl");
    std::fs::write(
        &path,
        b"{\"t_ms\":0,\"start\":{\"wall_ms\":1,\"argv\":[\"x\"],\"version\":1}}\nnot json\n\n{\"t_ms\":5,\"raw\":\"\xff garbage\"}\n{\"t_ms\":10,\"line\":{\"type\":\"result\",\"subtype\":\"success\"}}\n{\"t_ms\":11,\"exit\":{\"code\":0,\"signal\":null}}\n{\"t_ms\":12,\"li",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"))
        .args(["replay", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "success");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(":2: skipped"), "{err}");
    assert!(err.contains(":7: skipped"), "{err}");
}

#[test]
fn human_output_shows_the_timeline_and_the_verdict() {
    let out = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"))
        .arg("replay")
        .arg(capture("s4_stall_ping"))
        .args(["--no-progress", "30s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("first line (system/init)"), "{text}");
    assert!(text.contains("stalling"), "{text}");
    assert!(text.contains("KILL no_progress"), "{text}");
    assert!(text.contains("verdict: killed (no_progress)"), "{text}");
}

#[test]
fn missing_file_is_an_error_and_bad_flags_are_usage_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"))
        .args(["replay", "/nonexistent/capture.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/capture.jsonl"));
    let out = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"))
        .args(["replay", "x", "--warn-at", "1.5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--warn-at") && err.contains("1.5") && err.contains("(0, 1]"),
        "{err}"
    );
}

#[test]
fn rate_limit_utilization_extends_the_idle_patience() {
    // Cut s3_ratelimit_warning_gwjwt right after its rate_limit_event (5-hour window at 95 %):
    // the silent tail is killed `idle` with the high-utilization extension. No `start` record,
    // so the window never expires during the replay.
    let text = std::fs::read_to_string(capture("s3_ratelimit_warning_gwjwt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines
        .iter()
        .position(|l| l.contains("\"rate_limit_event\""))
        .expect("a rate_limit_event")
        + 1;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.capture.jsonl");
    std::fs::write(&path, lines[..cut].join("\n")).unwrap();
    let p = path.to_str().unwrap();
    let v = replay_json(&[p, "--idle", "10s"]);
    assert_eq!(v["kill"]["kind"], "idle", "{v}");
    assert_eq!(v["kill"]["extension"], "high_utilization", "{v}");
    // Above the threshold: only the pre-write extension holds.
    let v = replay_json(&[p, "--idle", "10s", "--high-utilization", "0.99"]);
    assert_eq!(v["kill"]["extension"], "pre_write", "{v}");
    // A start record whose wall clock is past the window's reset: the window has expired.
    let start = r#"{"t_ms":0,"start":{"wall_ms":4102444800000,"argv":["claude"],"version":1}}"#;
    std::fs::write(&path, format!("{start}\n{}", lines[..cut].join("\n"))).unwrap();
    let v = replay_json(&[p, "--idle", "10s"]);
    assert_eq!(v["kill"]["extension"], "pre_write", "{v}");
}

#[test]
fn hostile_captures_never_panic() {
    let cases: &[&str] = &[
        "",
        "\n\n",
        r#"{"t_ms":18446744073709551615,"line":{"type":"assistant"}}"#,
        "{\"t_ms\":5,\"line\":[1,2,3]}\n{\"t_ms\":6,\"line\":\"text\"}\n{\"t_ms\":7,\"line\":null}",
        "{\"t_ms\":9,\"line\":{\"type\":\"result\"}}\n{\"t_ms\":3,\"line\":{\"type\":\"user\"}}",
        "{\"t_ms\":1,\"stdin\":[1]}\n{\"t_ms\":2,\"stdin\":\"x\"}\n{\"t_ms\":3,\"exit\":{}}\n{\"t_ms\":4,\"exit\":7}",
        "{\"t_ms\":1,\"boundary\":{}}\n{\"t_ms\":1e300,\"raw\":\"x\"}\n{\"t_ms\":-5,\"raw\":\"y\"}",
        "{\"t_ms\":1,\"start\":{\"wall_ms\":-1}}\n{\"t_ms\":2,\"line\":{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"unifiedWindows\":{\"x\":{\"utilization\":1e308,\"resetsAt\":-1}}}}}",
        "\u{0}\u{1}garbage\u{ff}",
        "{\"t_ms\":1,\"boundary\":{}}\n{\"t_ms\":1,\"boundary\":{}}\n{\"t_ms\":1,\"boundary\":{}}",
    ];
    for (i, text) in cases.iter().enumerate() {
        for limits in [
            Limits::default(),
            Limits::default()
                .with_idle(Duration::from_millis(1))
                .unwrap(),
        ] {
            let r = replay_reader(text.as_bytes(), limits).unwrap();
            assert!(!r.runs.is_empty(), "case {i}");
            let _ = r.to_json();
            let mut out = Vec::new();
            agent_watchdog::replay::write_human(&r, "x", &Limits::default(), &mut out).unwrap();
            assert!(!out.is_empty(), "case {i}");
        }
    }
    // And through the binary, from stdin.
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"))
        .args(["replay", "-", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"t_ms\":1,\"line\":{\"type\":\"system\",\"subtype\":\"init\"}}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kill"]["kind"], "idle");
}
