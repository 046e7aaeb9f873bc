//! `agent-watchdog audit` is wired into the command line (the audit itself is tested in
//! `audit_*.rs`).

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

fn transcripts() -> PathBuf {
    mock_api::harness::testdata_dir().join("transcripts")
}

#[test]
fn audit_runs_from_the_command_line() {
    let out = Command::new(BIN)
        .args(["audit", "--json"])
        .arg(transcripts())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The two recorded sessions, both ending with a result, neither killed under the default
    // policy, which the report states.
    assert_eq!(v["sessions_scanned"], 2, "{v}");
    assert_eq!(v["outcomes"]["result"], 2, "{v}");
    assert_eq!(v["would_kill"], serde_json::json!([]), "{v}");
    let endings: Vec<&str> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ending"].as_str().unwrap())
        .collect();
    assert_eq!(endings, ["result", "result"]);
    let limits = watchdog_core::Limits::default();
    let ms = |d: std::time::Duration| d.as_millis() as u64;
    assert_eq!(v["settings"]["idle_ms"], ms(limits.idle()));
    assert_eq!(v["settings"]["startup_ms"], ms(limits.startup()));
    assert_eq!(v["settings"]["no_progress_ms"], ms(limits.no_progress()));
    assert_eq!(v["settings"]["linger_ms"], ms(limits.linger()));
    assert_eq!(v["settings"]["ceiling_ms"], serde_json::Value::Null);
    // The recommendation covers the longest productive silence (a 75 s Bash call).
    assert_eq!(v["recommended"]["longest_spell_ms"], 75_087);
    assert!(
        v["recommended"]["idle_ms"].as_u64().unwrap() >= 75_087,
        "{v}"
    );
}

#[test]
fn audit_bad_flags_are_usage_errors() {
    let out = Command::new(BIN)
        .args(["audit", "--no-progress", "0s"])
        .arg(transcripts())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-progress"));
}
