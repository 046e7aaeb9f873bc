//! `run --summary` on a long multi-turn child: the event list stays bounded (the first and last
//! events, the rest counted), and the summary says what the watchdog's CPU cost next to the
//! child's.

use std::process::Command;

use serde_json::Value;

#[test]
fn a_long_session_keeps_a_bounded_event_list_and_reports_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    // 500 turns, each a result; then some work the child itself does (CPU of its own).
    let script = r#"
i=0
while [ $i -lt 500 ]; do
  echo '{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]},"session_id":"s1"}'
  echo '{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}'
  i=$((i+1))
done
j=0; while [ $j -lt 300000 ]; do j=$((j+1)); done
"#;
    let out = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"))
        .arg("run")
        .arg("--summary")
        .arg(&summary)
        .args(["--", "sh", "-c", script])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["lines"]["result"], 500);
    let events = s["events"].as_array().unwrap();
    // 500 settled events, 499 unsolicited results (a child without host input asked for one
    // result: its prompt) and the end: 64 first, 64 last, one marker for the 872 between.
    assert_eq!(events.len(), 129, "{events:?}");
    assert_eq!(s["turns"]["unsolicited"], 499);
    let marker = events.iter().find(|e| e["event"] == "left_out").unwrap();
    assert_eq!(marker["count"], 1000 - 128);
    let by = &marker["by_kind"];
    assert_eq!(
        by["settled"].as_u64().unwrap() + by["other"].as_u64().unwrap(),
        1000 - 128,
        "{by}"
    );
    assert_eq!(events.last().unwrap()["event"], "ended");
    assert_eq!(events[0]["event"], "settled");
    // CPU: the child's busy loop is the child's, in 10 ms ticks.
    let cpu = &s["cpu"];
    assert!(cpu["child_ms"].as_u64().unwrap() >= 10, "{cpu}");
    assert!(cpu["watchdog_ms"].as_u64().is_some(), "{cpu}");
    assert_eq!(cpu["resolution_ms"], 10);
    assert!(
        cpu["watchdog_us"].as_u64().is_some_and(|us| us > 0),
        "{cpu}"
    );
}
