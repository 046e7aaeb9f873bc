//! The recorded field hangs (`testdata/fieldhangs`, real CLI 2.1.332 runs) replayed with the
//! flags of their live runs give the live verdicts: the kill (kind, instant, what it named),
//! the outcome, what was outstanding at the end, the turns. And one derived case: the
//! streaming-input cron run with its job's turn cut off, so the job never fires.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

fn capture(name: &str) -> PathBuf {
    mock_api::harness::testdata_dir()
        .join("fieldhangs")
        .join(format!("{name}.capture.jsonl"))
}

fn replay(path: &Path, flags: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("replay")
        .arg(path)
        .args(flags)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const FAN_OUT: [&str; 8] = [
    "--idle",
    "8s",
    "--extend-factor",
    "1",
    "--linger",
    "3s",
    "--no-progress",
    "1h",
];
const WAITS: [&str; 8] = [
    "--idle",
    "6s",
    "--extend-factor",
    "1",
    "--linger",
    "3s",
    "--no-progress",
    "1h",
];

fn turns(v: &Value) -> (u64, u64, u64) {
    let t = &v["turns"];
    (
        t["messages"].as_u64().unwrap(),
        t["results"].as_u64().unwrap(),
        t["unsolicited"].as_u64().unwrap(),
    )
}

#[test]
fn the_fan_out_with_a_wedged_agent_replays_to_its_live_kill_in_both_modes() {
    for (name, at) in [
        ("fan_out_wedged_p", 30508),
        ("fan_out_wedged_streaming", 31008),
    ] {
        let v = replay(&capture(name), &FAN_OUT);
        let k = &v["kill"];
        assert_eq!(k["kind"], "task_silent", "{name}: {v}");
        assert_eq!(k["at_ms"], at, "{name}: {v}");
        let tasks = k["outstanding"]["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), 1, "{name}: {v}");
        assert_eq!(tasks[0]["description"], "Probe subagent task 2", "{name}");
        // (Replay reads no line printed after the kill: the results the CLI printed while it
        // was stopped are the live summary's only.)
        assert_eq!(v["tasks"]["started"], 3, "{name}");
    }
}

#[test]
fn the_declared_waits_replay_to_their_live_endings() {
    // -p CronCreate: a success with the job pending (claude exited at once).
    let v = replay(&capture("cron_create_p"), &WAITS);
    assert!(v["kill"].is_null(), "{v}");
    assert_eq!(v["outcome"], "success", "{v}");
    let w = v["outstanding"]["wakeups"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{v}");
    assert_eq!(w[0]["tool"], "CronCreate");
    // Streaming input: the job fired; a ScheduleWakeup in -p fired; a quiet Monitor ran.
    for (name, flags, want) in [
        ("cron_create_streaming", &WAITS[..], (1, 2, 1)),
        (
            "schedule_wakeup_p",
            &["--idle", "30s", "--extend-factor", "1", "--linger", "3s"][..],
            (1, 2, 1),
        ),
        ("monitor_quiet_p", &WAITS[..], (1, 4, 3)),
    ] {
        let v = replay(&capture(name), flags);
        assert!(v["kill"].is_null(), "{name}: {v}");
        assert_eq!(v["outcome"], "success", "{name}: {v}");
        assert_eq!(v["outstanding"]["wakeups"], serde_json::json!([]), "{name}");
        assert_eq!(turns(&v), want, "{name}");
    }
}

#[test]
fn a_job_that_never_fires_is_killed_at_its_due_time_plus_the_patience() {
    // The streaming-input cron run, cut after its first result (the job's turn and the end of
    // input removed) and left running until 200 s: waiting for its host, with the job due at
    // its minute. Killed wakeup_missed at due + 6 s (before this rule: no clock at all).
    let text = std::fs::read_to_string(capture("cron_create_streaming")).unwrap();
    let mut kept = Vec::new();
    let (mut due_at, mut stamp_ms, mut result_seen) = (None, None, false);
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(at) = v["line"]["tool_use_result"]["nextFireAt"].as_u64() {
            let stamp = v["line"]["timestamp"].as_str().unwrap();
            stamp_ms = Some(watchdog_core::parse_iso_ms(stamp).unwrap() as u64);
            due_at = Some((v["t_ms"].as_u64().unwrap(), at));
        }
        kept.push(line.to_owned());
        if v["line"]["type"] == "result" {
            result_seen = true;
            break;
        }
    }
    assert!(result_seen);
    kept.push(r#"{"exit":{"code":0,"signal":null},"t_ms":200000}"#.to_owned());
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("never_fired.capture.jsonl");
    std::fs::write(&cut, kept.join("\n") + "\n").unwrap();
    let v = replay(&cut, &WAITS);
    let (t, at) = due_at.unwrap();
    let due = t + (at - stamp_ms.unwrap());
    let k = &v["kill"];
    assert_eq!(k["kind"], "wakeup_missed", "{v}");
    assert_eq!(k["at_ms"].as_u64().unwrap(), due + 6000, "{v}");
    assert_eq!(k["outstanding"]["wakeups"][0]["tool"], "CronCreate", "{v}");
    assert_eq!(k["outstanding"]["wakeups"][0]["overdue_ms"], 6000, "{v}");
}

#[test]
fn the_drop_ins_unanswered_interrupt_replays_to_its_live_kill() {
    // The TypeScript SDK's interrupt, lost on its way to claude (AGENT_WATCHDOG_CONTROL_TIMEOUT
    // 3s): the capture holds the host's stdin, so replay sees the request and its bound.
    let v = replay(
        &capture("unanswered_drop_in_ts"),
        &["--control-timeout", "3s"],
    );
    let k = &v["kill"];
    assert_eq!(k["kind"], "unanswered", "{v}");
    assert_eq!(k["at_ms"], 2314 + 3000, "{v}");
    assert_eq!(
        k["outstanding"]["requests"][0]["subtype"], "interrupt",
        "{v}"
    );
    // The initialize request, answered, is not among them.
    assert_eq!(k["outstanding"]["requests"].as_array().unwrap().len(), 1);
}
