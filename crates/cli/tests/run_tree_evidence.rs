//! `agent-watchdog run` with evidence from the process tree, end to end with scripted claude
//! children: a busy Bash tool held until `--busy-cap` (exit 124, the hold said), a blocked one
//! killed at `--no-progress` and named asleep on stderr, a memory hog killed `memory` (exit
//! 71), a child that leaves a process running (its receipt in the summary), no `/proc` at all
//! (the stream alone decides, and the summary says evidence was unavailable), and `replay
//! --json` of each capture agreeing with the live verdict, receipt included.
#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{say, script, stderr, watchdog, BIN, INIT};
use serde_json::Value;

const TOOL_USE: &str = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"tb","name":"Bash","input":{}}]},"session_id":"s1"}"#;
const HEARTBEAT: &str =
    r#"{"type":"tool_progress","tool_name":"Bash","parent_tool_use_id":"tb","session_id":"s1"}"#;

/// A scripted claude: `init`, a `Bash` call running `tool` in a session of its own (as Claude
/// Code's Bash tool does), then a heartbeat every 0.5 s (`sleep` is the shell's only other
/// child, and it is younger than the call: the rule counts it as the tool's, at 0 CPU).
fn claude(dir: &Path, tool: &str) -> std::path::PathBuf {
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

struct Run {
    out: Output,
    summary: Value,
    capture: std::path::PathBuf,
}

/// The policy of these tests: `--no-progress 3500ms --busy-cap 8500ms`. The tree is sampled
/// every second from the tool's start, which is when the no-progress clock starts too: a
/// deadline on a whole second would fall on a sample, and which of the two came first (live,
/// and to the millisecond in the capture) would be a coin toss that replay cannot repeat.
const POLICY: &[&str] = &["--no-progress", "3500ms", "--busy-cap", "8500ms"];

fn run(dir: &Path, flags: &[&str], child: &Path) -> Run {
    let summary = dir.join("summary.json");
    let capture = dir.join("capture.jsonl");
    let out = watchdog()
        .arg("run")
        .args(["--grace", "1s"])
        .args(flags)
        .arg("--summary")
        .arg(&summary)
        .arg("--record")
        .arg(&capture)
        .arg("--")
        .arg(child)
        .output()
        .unwrap();
    let summary = serde_json::from_slice(&std::fs::read(&summary).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no summary ({e}); stderr: {}", stderr(&out)));
    Run {
        out,
        summary,
        capture,
    }
}

fn replay(capture: &Path, flags: &[&str]) -> Value {
    let out = watchdog()
        .arg("replay")
        .args(flags)
        .arg("--json")
        .arg(capture)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("replay --json: {e}; stderr: {}", stderr(&out)))
}

/// The stderr line that says the kill.
fn kill_line(out: &Output) -> String {
    stderr(out)
        .lines()
        .find(|l| l.contains("agent-watchdog: killed"))
        .unwrap_or_else(|| panic!("no kill line: {}", stderr(out)))
        .to_owned()
}

/// The replay of the capture agrees with the live run: the kill, what the rule read, and
/// the receipt the capture kept.
fn assert_replay_agrees(live: &Run, flags: &[&str]) {
    let r = replay(&live.capture, flags);
    let (lk, rk) = (&live.summary["kill"], &r["kill"]);
    assert_eq!(rk["kind"], lk["kind"], "{r}");
    // The capture's times are the recorder's: an entry that reaches it after a later one
    // (stdin's note, read by another task) is written at the later one's time, so a line's
    // time can move by the few ms between them.
    let at = |k: &Value| k["at_ms"].as_i64().unwrap();
    assert!((at(rk) - at(lk)).abs() < 100, "live {lk}\nreplay {rk}");
    for f in ["busy", "capped", "named"] {
        assert_eq!(rk["evidence"][f], lk["evidence"][f], "evidence.{f}");
    }
    let (lt, rt) = (&lk["evidence"]["tool"], &rk["evidence"]["tool"]);
    assert_eq!(rt["name"], lt["name"]);
    let outstanding = |t: &Value| t["outstanding_ms"].as_i64().unwrap();
    assert!((outstanding(rt) - outstanding(lt)).abs() < 100, "{lt} {rt}");
    assert_eq!(rk["tree"], lk["tree"], "the receipt the capture kept");
    assert_eq!(
        r["tree"]["peak_rss_bytes"],
        live.summary["tree"]["peak_rss_bytes"]
    );
}

/// A Bash tool burning CPU for longer than `--no-progress` is not killed until
/// `--busy-cap`; the summary, the stderr line and the replay say the hold.
#[test]
fn a_busy_tool_runs_until_the_busy_cap() {
    let dir = tempfile::tempdir().unwrap();
    let child = claude(dir.path(), "while :; do :; done");
    let r = run(dir.path(), POLICY, &child);
    assert_eq!(r.out.status.code(), Some(124), "{}", stderr(&r.out));
    let k = &r.summary["kill"];
    assert_eq!(k["kind"], "no_progress");
    assert_eq!(k["evidence"]["capped"], true, "{k}");
    assert!(k["since_progress_ms"].as_u64().unwrap() >= 8000, "{k}");
    let line = kill_line(&r.out);
    assert!(
        line.contains("up to --busy-cap: Bash tool: `while :; do :; done`")
            || line.contains("up to --busy-cap: Bash tool: `sh "),
        "{line}"
    );
    assert!(line.contains(" running "), "{line}");
    // The receipt: the tool's processes marked, each with what it was sent.
    let procs = k["tree"]["processes"].as_array().unwrap();
    let tool: Vec<&Value> = procs.iter().filter(|p| p["tool"] == true).collect();
    assert!(!tool.is_empty(), "{k}");
    assert!(
        tool.iter()
            .any(|p| p["sent"] == serde_json::json!(["SIGKILL"])),
        "{k}"
    );
    assert_eq!(
        procs[0]["sent"],
        serde_json::json!(["SIGTERM"]),
        "the child: {k}"
    );
    assert_eq!(r.summary["tree"]["evidence"], "sampled");
    assert!(r.summary["tree"]["peak_rss_bytes"].as_u64().unwrap() > 0);
    assert_replay_agrees(&r, POLICY);
    // The same capture with `--busy-cap 0`: killed at `--no-progress`, as the stream says.
    let strict = replay(&r.capture, &["--no-progress", "3s", "--busy-cap", "0"]);
    assert_eq!(strict["kill"]["kind"], "no_progress");
    assert_eq!(strict["kill"]["evidence"]["held_ms"], 0);
    let at = strict["kill"]["at_ms"].as_u64().unwrap();
    assert!((3000..4000).contains(&at), "{}", strict["kill"]);
}

/// The same tool blocked in `sleep`: killed at `--no-progress`, the stderr line naming it
/// asleep.
#[test]
fn a_blocked_tool_is_named_asleep() {
    let dir = tempfile::tempdir().unwrap();
    let child = claude(dir.path(), "exec sleep 1000");
    let r = run(dir.path(), POLICY, &child);
    assert_eq!(r.out.status.code(), Some(124), "{}", stderr(&r.out));
    let k = &r.summary["kill"];
    assert_eq!(k["evidence"]["busy"], false);
    assert_eq!(k["evidence"]["held_ms"], 0);
    assert!(k["since_progress_ms"].as_u64().unwrap() < 4000, "{k}");
    let line = kill_line(&r.out);
    assert!(line.contains("; Bash tool: `sleep 1000` (pid "), "{line}");
    assert!(
        line.contains(") asleep ") && line.ends_with(", 0 CPU."),
        "{line}"
    );
    let named = k["tree"]["named_pid"].as_u64().unwrap();
    let p = k["tree"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == named)
        .unwrap();
    assert_eq!(
        (&p["state"], &p["ended"]),
        (&"asleep".into(), &"kill".into()),
        "{p}"
    );
    assert_replay_agrees(&r, POLICY);
}

/// A memory hog past `--max-rss` is killed `memory` (exit 71), the kill naming it.
#[test]
fn a_memory_hog_is_killed_memory() {
    let dir = tempfile::tempdir().unwrap();
    let hog = "exec python3 -c 'import time\na = [bytearray(8 << 20) for _ in range(64)]\ntime.sleep(1000)'";
    let child = claude(dir.path(), hog);
    let flags = ["--no-progress", "60s", "--max-rss", "300M"];
    let r = run(dir.path(), &flags, &child);
    assert_eq!(r.out.status.code(), Some(71), "{}", stderr(&r.out));
    let k = &r.summary["kill"];
    assert_eq!(k["kind"], "memory");
    assert_eq!(k["evidence"]["max_rss_bytes"], 300 << 20);
    assert!(
        k["evidence"]["over_rss_ms"].as_u64().unwrap() >= 5000,
        "{k}"
    );
    let line = kill_line(&r.out);
    assert!(
        line.contains("over --max-rss 300MiB for 5s; largest: `"),
        "{line}"
    );
    assert!(line.contains("bytearray"), "{line}");
    assert_replay_agrees(&r, &["--no-progress", "60s", "--max-rss", "300M"]);
    // Replayed with a guard above what the tree used: no memory kill.
    let loose = replay(&r.capture, &["--no-progress", "60s", "--max-rss", "4G"]);
    assert_ne!(loose["kill"]["kind"], "memory", "{}", loose["kill"]);
}

/// A child that exits leaving a process running: the summary has the receipt of its stop.
#[test]
fn leftovers_have_a_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "{}\nsetsid sleep 1000 </dev/null >/dev/null 2>&1 &\n{}",
            say(INIT),
            say(common::RESULT_OK)
        ),
    );
    let r = run(dir.path(), POLICY, &child);
    assert_eq!(r.out.status.code(), Some(0), "{}", stderr(&r.out));
    assert_eq!(r.summary["leftovers_killed"], 1);
    let t = &r.summary["leftovers_tree"];
    assert_eq!(t["cause"], "leftovers", "{}", r.summary);
    let sleep = t["processes"]
        .as_array()
        .unwrap()
        .iter()
        // Read between `setsid`'s fork and its exec, it is still `setsid sleep 1000`.
        .find(|p| p["command"].as_str().unwrap().ends_with("sleep 1000"))
        .unwrap_or_else(|| panic!("{t}"));
    assert_eq!(sleep["sent"][0], "SIGTERM", "{sleep}");
    assert_eq!(sleep["ended"], "term", "{sleep}");
}

/// Without `/proc` (an empty tmpfs over it, in a mount namespace of its own) a busy tool is
/// killed at `--no-progress`: the stream alone decides, and the summary says the evidence
/// was unavailable.
#[test]
fn without_proc_the_stream_alone_decides() {
    let dir = tempfile::tempdir().unwrap();
    // Without /proc the tool's own session is out of reach of the kill (only the child's
    // process group is signalled): it ends by itself.
    let child = claude(dir.path(), "exec timeout 20 sh -c 'while :; do :; done'");
    let sum = dir.path().join("summary.json");
    let out = Command::new("unshare")
        .args(["--mount", "--fork", "sh", "-c"])
        .arg("mount -t tmpfs none /proc && exec \"$@\"")
        .args(["sh", BIN, "run", "--grace", "1s", "--no-progress", "3s"])
        .args(["--busy-cap", "8s", "--summary", sum.to_str().unwrap(), "--"])
        .arg(&child)
        .stdin(Stdio::null())
        .output()
        .expect("unshare runs here (util-linux, root)");
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    let s: Value = serde_json::from_slice(&std::fs::read(&sum).unwrap()).unwrap();
    assert_eq!(s["tree"]["evidence"], "unavailable", "{}", s["tree"]);
    assert!(
        s["tree"]["fault"].as_str().unwrap().contains("/proc"),
        "{}",
        s["tree"]
    );
    let k = &s["kill"];
    assert!(
        k["since_progress_ms"].as_u64().unwrap() < 4000,
        "not held: {k}"
    );
    assert!(k["evidence"]["unavailable"].is_string(), "{k}");
    assert!(
        kill_line(&out).contains("process evidence unavailable"),
        "{}",
        stderr(&out)
    );
}
