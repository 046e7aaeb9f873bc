//! The recordings of the real Codex 0.169.0 and opencode 1.18.33 runs (`testdata/dialects/`,
//! recorded by the dialect end-to-end tests with `DIALECT_RECORDINGS`) replay to the verdict
//! the live run gave, under the flags it ran with: the dialect (from the `start` record, or
//! from the recorded command line when the record has none), the outcome, the kill, the
//! session id, and for the tools the tree's evidence.

#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::testdata_dir;
use watchdog_core::{Dialect, KillKind, Limits};
use watchdog_host::capture::EntryView;
use watchdog_host::replay::{Replay, RunVerdict};

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// `--idle 90s --no-progress N --busy-cap M`: the tool tests' flags (Codex's 8 s and 20 s,
/// opencode's 15 s and 30 s).
fn tree_limits(no_progress: u64, busy_cap: u64) -> Limits {
    Limits::default()
        .with_idle(s(90))
        .unwrap()
        .with_no_progress(s(no_progress))
        .unwrap()
        .with_busy_cap(s(busy_cap))
        .unwrap()
}

fn replay(name: &str, limits: Limits, strip_dialect: bool) -> RunVerdict {
    let path = testdata_dir()
        .join("dialects")
        .join(format!("{name}.capture.jsonl"));
    let mut text = std::fs::read_to_string(&path).unwrap();
    if strip_dialect {
        // An older capture: no `dialect` in its `start`; the command line says it.
        let dialect = format!(",\"dialect\":\"{}\"", name.split('_').next().unwrap());
        assert!(text.contains(&dialect), "{name}");
        text = text.replacen(&dialect, "", 1);
    }
    let mut r = Replay::new(limits, std::time::Instant::now());
    for (i, line) in text.lines().enumerate() {
        if let Some(entry) = EntryView::parse(line.as_bytes()).unwrap() {
            r.feed(i as u64 + 1, &entry);
            while r.poll_event().is_some() {}
        }
    }
    r.finish()
}

#[test]
fn every_recording_replays_to_its_live_verdict() {
    let nothing = Limits::default;
    let stall = || Limits::default().with_no_progress(s(5)).unwrap();
    let cases: &[(&str, Limits, &str, Option<KillKind>)] = &[
        (
            "codex_healthy",
            Limits::default().with_no_progress(s(6)).unwrap(),
            "success",
            None,
        ),
        ("codex_stall", stall(), "killed", Some(KillKind::NoProgress)),
        (
            "codex_stdin_hang",
            Limits::default().with_startup(s(5)).unwrap(),
            "killed",
            Some(KillKind::Startup),
        ),
        ("codex_api_error", nothing(), "error_result", None),
        ("codex_retries", nothing(), "error_result", None),
        (
            "codex_busy_command",
            tree_limits(8, 20),
            "killed",
            Some(KillKind::NoProgress),
        ),
        (
            "codex_sleeping_command",
            tree_limits(8, 20),
            "killed",
            Some(KillKind::NoProgress),
        ),
        (
            "opencode_healthy",
            Limits::default().with_no_progress(s(20)).unwrap(),
            "success",
            None,
        ),
        (
            "opencode_stall",
            stall(),
            "killed",
            Some(KillKind::NoProgress),
        ),
        (
            "opencode_stdin_hang",
            Limits::default().with_startup(s(20)).unwrap(),
            "killed",
            Some(KillKind::Startup),
        ),
        ("opencode_api_error", nothing(), "error_result", None),
        (
            "opencode_busy_tool",
            tree_limits(15, 30),
            "killed",
            Some(KillKind::NoProgress),
        ),
        (
            "opencode_sleeping_tool",
            tree_limits(15, 30),
            "killed",
            Some(KillKind::NoProgress),
        ),
    ];
    for (name, limits, outcome, kill) in cases {
        let want = if name.starts_with("codex") {
            Dialect::Codex
        } else {
            Dialect::Opencode
        };
        for strip in [false, true] {
            let v = replay(name, limits.clone(), strip);
            let r = &v.record;
            assert_eq!(r.outcome.as_str(), *outcome, "{name} (no dialect: {strip})");
            assert_eq!(r.kill.as_ref().map(|k| k.kind), *kill, "{name}");
            if !name.ends_with("stdin_hang") {
                assert_eq!(r.dialect, want, "{name} (no dialect: {strip})");
                assert!(r.session_id.is_some(), "{name}: the CLI's own session id");
            }
        }
    }
}

/// The busy command and tool are held to the busy cap by the recorded samples; the sleeping
/// ones are not held at all.
#[test]
fn the_recorded_samples_hold_a_busy_tool_and_not_a_sleeping_one() {
    for (name, capped, tool, (no_progress, cap)) in [
        ("codex_busy_command", true, "exec_command", (8, 20)),
        ("codex_sleeping_command", false, "exec_command", (8, 20)),
        ("opencode_busy_tool", true, "opencode", (15, 30)),
        ("opencode_sleeping_tool", false, "opencode", (15, 30)),
    ] {
        let v = replay(name, tree_limits(no_progress, cap), false);
        let kill = v.record.kill.as_ref().unwrap();
        let tree = kill.tree.as_ref().unwrap();
        assert_eq!(tree.capped, capped, "{name}");
        assert_eq!(tree.tool.as_ref().unwrap().name, tool, "{name}");
        if capped {
            assert!(
                kill.since_progress >= s(20),
                "{name}: {:?}",
                kill.since_progress
            );
        } else {
            assert_eq!(tree.held, Duration::ZERO, "{name}");
        }
    }
}
