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
    assert!(v.is_object());
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
