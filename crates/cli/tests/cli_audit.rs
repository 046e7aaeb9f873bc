//! `agent-watchdog audit` is wired into the command line: flags, printing, exit codes (the
//! audit itself is tested in the `watchdog-audit` crate).

use std::path::PathBuf;
use std::process::Command;

use agent_watchdog::audit::{run_audit, AuditArgs};
use watchdog_audit::{audit_paths, render_svg};
use watchdog_core::Limits;

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

#[test]
fn run_audit_writes_text_json_and_the_plot() {
    let tmp = tempfile::tempdir().unwrap();
    let plot = tmp.path().join("spells.svg");
    let dir = mock_api::harness::testdata_dir().join("transcripts");
    let args = AuditArgs {
        paths: vec![dir.clone()],
        plot: Some(plot.clone()),
        quiet: true,
        ..Default::default()
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(run_audit(&args, &mut out, &mut err).unwrap(), 0);
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("Recommended: --idle 2m --no-progress 2m"),
        "{text}"
    );
    assert!(text.contains("tool Bash"), "{text}");
    assert!(err.is_empty());
    // The plot is the library's rendering of the same audit (checked well-formed there).
    let same = audit_paths(std::slice::from_ref(&dir), &Limits::default());
    assert_eq!(std::fs::read_to_string(&plot).unwrap(), render_svg(&same));

    let args = AuditArgs {
        paths: vec![dir],
        json: true,
        quiet: true,
        ..Default::default()
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(run_audit(&args, &mut out, &mut err).unwrap(), 0);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["sessions_scanned"], 2);

    // Nothing readable at all: exit 1 and the reason on stderr, no all-zero report (with
    // --json the object is still printed, and the reason is on stderr too).
    let mut args = AuditArgs {
        paths: vec![tmp.path().join("missing")],
        quiet: true,
        ..Default::default()
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(run_audit(&args, &mut out, &mut err).unwrap(), 1);
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.contains("cannot read") && err.contains("missing") && err.contains("No such file"),
        "{err}"
    );
    args.json = true;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(run_audit(&args, &mut out, &mut err).unwrap(), 1);
    assert!(String::from_utf8(err).unwrap().contains("missing"));
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["files_skipped"], 1);
}

/// A transcript whose clock jumps to year 9999 (one bad timestamp) still gets a recommendation
/// that `run` accepts as written: the values are capped at the longest duration `run` takes,
/// and the report says so.
#[test]
fn a_recommendation_is_always_a_value_run_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let real = std::fs::read_to_string(transcripts().join("tool-session.jsonl")).unwrap();
    let lines: Vec<&str> = real.lines().collect();
    let stamped = |i: &usize| lines[*i].contains("\"timestamp\"");
    let last = (0..lines.len()).rev().find(stamped).unwrap();
    let middle = (lines.len() / 2..lines.len()).find(stamped).unwrap();
    let mut capped = 0;
    for (name, at) in [("last", last), ("middle", middle)] {
        let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        let mut v: serde_json::Value = serde_json::from_str(&edited[at]).unwrap();
        v["timestamp"] = "9999-12-31T23:59:59.000Z".into();
        edited[at] = v.to_string();
        let file = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&file, edited.join("\n") + "\n").unwrap();
        let out = Command::new(BIN).arg("audit").arg(&file).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{name}: {text}");
        let rec = text
            .lines()
            .find_map(|l| l.strip_prefix("Recommended: "))
            .unwrap_or_else(|| panic!("{name}: no recommendation in {text}"));
        let flags: Vec<&str> = rec.split_whitespace().collect();
        assert_eq!(flags.len(), 4, "{name}: {rec}");
        let run = Command::new(BIN)
            .arg("run")
            .args(&flags)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(
            run.status.code(),
            Some(0),
            "{name}: run refuses the recommendation {rec}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        if flags.contains(&"8760h") {
            assert!(text.contains("capped at 8760h"), "{name}: {text}");
            capped += 1;
        }
    }
    // A jump to year 9999 is a year-long "silence": the case that needs the cap.
    assert!(capped >= 1, "a year-long jump is capped: {capped}");
}
