//! `replay` and `audit` share one replay: on the same capture and flags they find the same
//! kill at the same time, including a line exactly at a deadline (the live rule: the deadline
//! fires first) and the second run of a recovered recording.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"))
        .args(args)
        .arg("--json")
        .env_clear()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Kills as (kind, at_ms).
type Kills = Vec<(String, u64)>;

/// Every kill: replay's, per run, on the file's timeline; audit's.
fn kills(path: &Path, flags: &[&str]) -> (Kills, Kills) {
    let p = path.to_str().unwrap();
    let r = json(&[&["replay", p], flags].concat());
    let mut offset = 0;
    let mut replayed = Vec::new();
    for run in r["runs"].as_array().unwrap() {
        if let Some(k) = run["kill"].as_object() {
            replayed.push((
                k["kind"].as_str().unwrap().to_owned(),
                offset + k["at_ms"].as_u64().unwrap(),
            ));
        }
        offset += run["boundary_ms"].as_u64().unwrap_or(0);
    }
    let a = json(&[&["audit", p, "--quiet"], flags].concat());
    let audited = a["would_kill"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().unwrap().to_owned(),
                k["at_ms"].as_u64().unwrap(),
            )
        })
        .collect();
    (replayed, audited)
}

fn capture(name: &str) -> std::path::PathBuf {
    mock_api::harness::testdata_dir().join(format!("captures/{name}.capture.jsonl"))
}

#[test]
fn the_same_kill_at_the_same_time() {
    let cases: &[(&str, &[&str], (&str, u64))] = &[
        ("s2_tool", &["--idle", "20s"], ("idle", 23_835)),
        (
            "s4_stall_ping",
            &["--no-progress", "30s"],
            ("no_progress", 30_550),
        ),
        // Exactly at the deadline: the ping at 20551 ms comes too late, in both.
        (
            "s4_stall_ping",
            &["--idle", "20001ms", "--extend-factor", "1"],
            ("idle", 20_551),
        ),
    ];
    for (name, flags, (kind, at)) in cases {
        let (r, a) = kills(&capture(name), flags);
        let want = vec![(kind.to_string(), *at)];
        assert_eq!(r, want, "replay of {name} {flags:?}");
        assert_eq!(a, want, "audit of {name} {flags:?}");
    }
}

#[test]
fn the_second_run_of_a_recovered_recording_is_placed_after_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.capture.jsonl");
    let lines = [
        r#"{"t_ms":40,"line":{"type":"system","subtype":"init","session_id":"s1"}}"#,
        r#"{"t_ms":5000,"line":{"type":"result","subtype":"success","is_error":true,"api_error":"max_output_tokens","session_id":"s1"}}"#,
        r#"{"t_ms":5050,"exit":{"code":1,"signal":null}}"#,
        r#"{"t_ms":5060,"boundary":{"recovery":"max_output_tokens","session_id":"s1"}}"#,
        r#"{"t_ms":30,"line":{"type":"system","subtype":"init","session_id":"s1"}}"#,
        r#"{"t_ms":60,"line":{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]},"session_id":"s1"}}"#,
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    // The continuation goes silent after 60 ms: idle 10 s, doubled before a first write.
    let (r, a) = kills(&path, &["--idle", "10s"]);
    assert_eq!(r, [("idle".to_owned(), 5060 + 60 + 20_000)], "replay");
    assert_eq!(a, r, "audit");
}
