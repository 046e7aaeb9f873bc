//! Kill receipts that never carry a secret, end to end: a scripted claude whose Bash tool runs
//! the whole corpus of secret shapes, each inside a `bash -c` string (and one process with
//! secrets among its own arguments, the one the kill names), is killed `no_progress`. No
//! secret reaches the summary (`kill.tree`, `kill.evidence`, `command`), the capture (its
//! samples, its receipt, its `start`), stderr, the telemetry a collector receives, nor what
//! `replay` shows of the capture; the receipt still says what ran around each secret. With
//! `--no-command-lines` none of the commands is recorded at all, only the programs.
#![cfg(target_os = "linux")]

#[path = "common/otlp.rs"]
mod otlp;
#[path = "../../host/tests/secret_corpus/mod.rs"]
mod secret_corpus;

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{say, script, stderr, watchdog, INIT};
use otlp::{Answer, Receiver};
use secret_corpus::secret_scripts;
use serde_json::Value;

const TOOL_USE: &str = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"tb","name":"Bash","input":{}}]},"session_id":"s1"}"#;
const HEARTBEAT: &str =
    r#"{"type":"tool_progress","tool_name":"Bash","parent_tool_use_id":"tb","session_id":"s1"}"#;

/// The secrets the named process carries among its own arguments.
const NAMED_TOKEN: &str = concat!("gh", "p_", "NamedProcessT0kenW1thThirtySixChars00");
const NAMED_BEARER: &str = "named-bearer-credential-0042";

/// A scripted claude whose Bash tool starts, in a session of its own: first a process with
/// secrets among its arguments (the oldest that is no shell: the one a kill names), then one
/// `bash -c 'sleep 1000; exit; <script>'` per script of the corpus (the script is never run:
/// `exit` comes first), then waits. Heartbeats keep the stream alive: `no_progress` kills it.
fn claude(dir: &Path) -> PathBuf {
    let mut tool = format!(
        "python3 -c 'import time; time.sleep(1000)' --token {NAMED_TOKEN} \
         'Authorization: Bearer {NAMED_BEARER}' &\nsleep 0.3\n"
    );
    for (i, (s, _)) in secret_scripts().iter().enumerate() {
        let file = dir.join(format!("script-{i}.txt"));
        std::fs::write(&file, format!("sleep 1000; exit; {s}")).unwrap();
        tool.push_str(&format!("bash -c \"$(cat '{}')\" &\n", file.display()));
    }
    tool.push_str("wait\n");
    std::fs::write(dir.join("tool.sh"), tool).unwrap();
    script(
        dir,
        "claude.sh",
        &format!(
            "{}\n{}\nsetsid sh {}/tool.sh </dev/null >/dev/null 2>&1 &\nwhile :; do sleep 0.5; {}; done",
            say(INIT),
            say(TOOL_USE),
            dir.display(),
            say(HEARTBEAT)
        ),
    )
}

/// The policy of these runs, and of their replays.
const POLICY: &[&str] = &["--no-progress", "3500ms", "--busy-cap", "0"];

struct Run {
    out: Output,
    summary: String,
    capture: String,
    replay_json: String,
    replay_text: String,
    telemetry: String,
}

fn run(dir: &Path, flags: &[&str]) -> Run {
    let child = claude(dir);
    let summary = dir.join("summary.json");
    let capture = dir.join("capture.jsonl");
    let rx = Receiver::start(Answer::Ok);
    let out = watchdog()
        .env("AGENT_WATCHDOG_TELEMETRY", "1")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .arg("run")
        .args(POLICY)
        .args(["--grace", "1s"])
        .args(flags)
        .arg("--summary")
        .arg(&summary)
        .arg("--record")
        .arg(&capture)
        .arg("--")
        .arg(&child)
        // The command's own arguments carry secrets too.
        .args(["--api-key", "own-argument-secret-77", "--max-tokens", "100"])
        .output()
        .unwrap();
    let replay = |extra: &[&str]| {
        let o = watchdog()
            .arg("replay")
            .args(POLICY)
            .args(extra)
            .arg(&capture)
            .output()
            .unwrap();
        format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o))
    };
    let telemetry = rx
        .items()
        .iter()
        .map(|i| format!("{} {:?}", i.name, i.attrs))
        .collect::<Vec<_>>()
        .join("\n");
    Run {
        summary: std::fs::read_to_string(&summary)
            .unwrap_or_else(|e| panic!("no summary ({e}): {}", stderr(&out))),
        capture: std::fs::read_to_string(&capture).unwrap(),
        replay_json: replay(&["--json"]),
        replay_text: replay(&[]),
        telemetry,
        out,
    }
}

/// Every secret of the corpus, the named process's and the command's own.
fn all_secrets() -> Vec<String> {
    let mut all: Vec<String> = secret_scripts()
        .into_iter()
        .flat_map(|(_, s)| s)
        .map(str::to_owned)
        .collect();
    all.extend([NAMED_TOKEN, NAMED_BEARER, "own-argument-secret-77"].map(str::to_owned));
    all
}

fn assert_no_secret(r: &Run) {
    let places = [
        ("summary", &r.summary),
        ("capture", &r.capture),
        ("stderr", &stderr(&r.out)),
        ("replay --json", &r.replay_json),
        ("replay", &r.replay_text),
        ("telemetry", &r.telemetry),
    ];
    for secret in all_secrets() {
        for (place, text) in places {
            // JSON escapes a newline and a quote; a secret has neither.
            assert!(!text.contains(&secret), "{secret} in the {place}");
        }
    }
}

#[test]
fn no_secret_reaches_any_record_and_the_receipt_still_says_what_ran() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), &[]);
    assert_eq!(r.out.status.code(), Some(124), "{}", stderr(&r.out));
    assert_no_secret(&r);
    let s: Value = serde_json::from_str(&r.summary).unwrap();
    let k = &s["kill"];
    assert_eq!(k["kind"], "no_progress", "{k}");
    // The receipt lists every process, each command redacted where it had to be and kept
    // around it.
    let commands: Vec<&str> = k["tree"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["command"].as_str())
        .collect();
    let has = |want: &str| commands.iter().any(|c| c.contains(want));
    for want in [
        "export GITHUB_TOKEN=*** && gh pr create --fill",
        "curl -s https://api.openai.com/v1/models -H \"Authorization: Bearer ***\"",
        "psql postgresql://***@db.internal:5432/app",
        "mysql -u root --password=*** db",
        "aws configure set aws_access_key_id *** && aws configure set aws_secret_access_key ***",
    ] {
        assert!(has(want), "{want} not in {commands:#?}");
    }
    // The process the kill names: in the summary, on stderr and in the telemetry, redacted.
    let named = k["evidence"]["named"]["command"].as_str().unwrap();
    // (`python3` may be a shim that runs the interpreter by its path.)
    let named_line =
        "python3 -c import time; time.sleep(1000) --token *** Authorization: Bearer ***";
    assert!(named.contains(named_line), "{named}");
    assert!(stderr(&r.out).contains("--token ***"), "{}", stderr(&r.out));
    assert!(
        r.telemetry.contains("kill.named.command") && r.telemetry.contains(named_line),
        "{}",
        r.telemetry
    );
    // The command the run ran: redacted, its ordinary flags kept.
    assert_eq!(s["command"][1], "--api-key");
    assert_eq!(s["command"][2], "***");
    assert_eq!(s["command"][4], "100");
    // Every recorded command line is bounded.
    assert!(commands.iter().all(|c| c.len() <= 200 + '…'.len_utf8()));

    // A capture written before the rule (its command lines as they ran): `replay` shows it
    // redacted all the same.
    let (_, gh) = &secret_scripts()[0];
    let old = dir.path().join("old.jsonl");
    let raw = r
        .capture
        .replace("GITHUB_TOKEN=***", &format!("GITHUB_TOKEN={}", gh[0]));
    assert!(raw.contains(gh[0]), "the old capture carries the token");
    std::fs::write(&old, raw).unwrap();
    for flags in [&["--json"][..], &[]] {
        let o = watchdog()
            .arg("replay")
            .args(POLICY)
            .args(flags)
            .arg(&old)
            .output()
            .unwrap();
        let shown = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert!(shown.contains("no_progress"), "{shown}");
        if flags == ["--json"] {
            assert!(
                shown.contains("gh pr create"),
                "the receipt is shown: {shown}"
            );
        }
        assert!(
            !shown.contains(gh[0]),
            "replay {flags:?} shows the token: {shown}"
        );
    }
}

#[test]
fn with_no_command_lines_only_the_programs_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), &["--no-command-lines"]);
    assert_eq!(r.out.status.code(), Some(124), "{}", stderr(&r.out));
    assert_no_secret(&r);
    let s: Value = serde_json::from_str(&r.summary).unwrap();
    let procs = s["kill"]["tree"]["processes"].as_array().unwrap();
    let programs: std::collections::BTreeSet<&str> =
        procs.iter().filter_map(|p| p["command"].as_str()).collect();
    assert!(
        programs.contains("bash") && programs.contains("sleep") && programs.contains("python3"),
        "{programs:?}"
    );
    assert!(programs.iter().all(|p| !p.contains(' ')), "{programs:?}");
    assert_eq!(s["kill"]["evidence"]["named"]["command"], "python3");
    assert_eq!(s["command"], serde_json::json!(["claude.sh"]));
    // No command's words anywhere: not the corpus's, not the named process's.
    let words = ["gh pr create", "time.sleep", "pg_dump", "--max-tokens"];
    for (place, text) in [
        ("summary", &r.summary),
        ("stderr", &stderr(&r.out)),
        ("telemetry", &r.telemetry),
    ] {
        for w in words {
            assert!(!text.contains(w), "{w} in the {place}");
        }
    }
    // The capture's samples and receipt too (its `start` keeps the command run, redacted:
    // replay reads its flags).
    for line in r.capture.lines().filter(|l| !l.contains("\"start\"")) {
        for w in words {
            assert!(!line.contains(w), "{w} in the capture: {line}");
        }
    }
}

#[test]
fn the_drop_in_records_no_secret_either() {
    // `claude-watchdog` under an SDK host: the same records, from the variables.
    let dir = tempfile::tempdir().unwrap();
    let child = claude(dir.path());
    let summary = dir.path().join("summary.json");
    let capture = dir.path().join("capture.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_claude-watchdog"))
        .env("AGENT_WATCHDOG_CLAUDE", &child)
        .env("AGENT_WATCHDOG_NO_PROGRESS", "3500ms")
        .env("AGENT_WATCHDOG_BUSY_CAP", "0")
        .env("AGENT_WATCHDOG_SUMMARY", &summary)
        .env("AGENT_WATCHDOG_RECORD", &capture)
        .env_remove("AGENT_WATCHDOG_NO_COMMAND_LINES")
        .args(["-p", "hi", "--api-key", "own-argument-secret-77"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // A kill: the synthetic result, exit 1.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let summary = std::fs::read_to_string(&summary).unwrap();
    let capture = std::fs::read_to_string(&capture).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(summary.contains("gh pr create"), "the receipt is there");
    for secret in all_secrets() {
        for (place, text) in [
            ("summary", &summary),
            ("capture", &capture),
            ("stderr", &stderr(&out)),
            ("the synthetic result", &stdout),
        ] {
            assert!(!text.contains(&secret), "{secret} in the drop-in's {place}");
        }
    }
}
