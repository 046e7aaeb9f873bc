//! `replay` and `audit` on bad files (issue 13, section 8): nothing that is not a capture
//! gets a verdict, odd times are said once and clamped, a recovered run gives both verdicts,
//! an endless line costs bounded memory, special files are refused unless given as `-`, and a
//! closed stdout ends both commands quietly with one code.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agent-watchdog"));
    c.env_clear();
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const INIT: &str = r#"{"t_ms":40,"line":{"type":"system","subtype":"init","session_id":"s1"}}"#;
const RESULT: &str = r#"{"t_ms":900,"line":{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}}"#;
const EXIT: &str = r#"{"t_ms":950,"exit":{"code":0,"signal":null}}"#;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_owned()
}

/// `/dev/null`, an empty file, random bytes: an error in one line, exit 1, no verdict.
#[test]
fn what_holds_no_record_is_an_error_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut random = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        random.push(x as u8);
    }
    let cases = [
        ("/dev/null".to_owned(), "character device"),
        (write(dir.path(), "empty.capture.jsonl", b""), "is empty"),
        (
            write(dir.path(), "blank.capture.jsonl", b"\n \n\r\n"),
            "is empty",
        ),
        (write(dir.path(), "random.bin", &random), "not a capture"),
        (
            write(
                dir.path(),
                "transcript.jsonl",
                b"{\"type\":\"user\"}\n{\"no\":\"time\"}\n",
            ),
            "not a capture",
        ),
    ];
    for (path, why) in &cases {
        for json in [false, true] {
            let mut args = vec!["replay", path.as_str()];
            if json {
                args.push("--json");
            }
            let o = run(&args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{path}: {err}");
            assert!(o.stdout.is_empty(), "{path}: a verdict was printed");
            assert_eq!(err.lines().count(), 1, "{path}: {err}");
            assert!(
                err.contains(why) && err.contains(path.as_str()),
                "{path}: {err}"
            );
        }
    }
}

/// A leading UTF-8 byte order mark is skipped, not fatal to line 1.
#[test]
fn a_leading_bom_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("\u{feff}{INIT}\n{RESULT}\n{EXIT}\n");
    let p = write(dir.path(), "bom.capture.jsonl", text.as_bytes());
    let o = run(&["replay", &p, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["outcome"], "success");
    assert_eq!(v["lines"]["system"], 1);
}

/// Times going backwards, fractional or absurd: one warning with the first line number, the
/// entries taken at the previous time, the timeline in order.
#[test]
fn odd_times_are_said_once_and_clamped_to_the_previous_time() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        INIT.to_owned(),
        r#"{"t_ms":5000,"line":{"type":"user","session_id":"s1"}}"#.to_owned(),
        r#"{"t_ms":100,"line":{"type":"user","session_id":"s1"}}"#.to_owned(),
        r#"{"t_ms":6000.5,"line":{"type":"user","session_id":"s1"}}"#.to_owned(),
        r#"{"t_ms":1e300,"line":{"type":"user","session_id":"s1"}}"#.to_owned(),
        r#"{"t_ms":99999999999999999,"line":{"type":"result","subtype":"success","is_error":false}}"#
            .to_owned(),
        r#"{"t_ms":7000,"exit":{"code":0,"signal":null}}"#.to_owned(),
    ];
    let p = write(dir.path(), "t.capture.jsonl", lines.join("\n").as_bytes());
    let o = run(&["replay", &p, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(":3: t_ms goes backwards")
            && err.contains("5000 ms")
            && err.contains("3 more lines"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["clamped_times"], 4);
    assert_eq!(v["outcome"], "success");
    // The result was taken at 5000 ms: the settled event is there, not at an absurd time.
    let settled = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "settled")
        .unwrap();
    assert_eq!(settled["t_ms"], 5000);
    let ts: Vec<u64> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["t_ms"].as_u64().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
}

/// A recording of a recovered run: a `boundary`, then the continuation from t = 0. Each run
/// is replayed in turn; both verdicts are reported.
#[test]
fn a_recovered_run_replays_each_run_and_reports_both_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"t_ms":0,"start":{"wall_ms":1796030275077,"argv":["claude","-p","x"],"version":1}}"#,
        INIT,
        r#"{"t_ms":5000,"line":{"type":"result","subtype":"success","is_error":true,"api_error":"max_output_tokens","stop_reason":"max_tokens","session_id":"s1"}}"#,
        r#"{"t_ms":5050,"exit":{"code":1,"signal":null}}"#,
        r#"{"t_ms":5060,"boundary":{"recovery":"max_output_tokens","session_id":"s1","argv":["claude","--resume","s1"]}}"#,
        r#"{"t_ms":0,"start":{"wall_ms":1796030280200,"argv":["claude","--resume","s1"],"version":1}}"#,
        r#"{"t_ms":30,"line":{"type":"system","subtype":"init","session_id":"s1"}}"#,
        r#"{"t_ms":800,"line":{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}}"#,
        r#"{"t_ms":820,"exit":{"code":0,"signal":null}}"#,
    ];
    let p = write(dir.path(), "rec.capture.jsonl", lines.join("\n").as_bytes());
    let o = run(&["replay", &p, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        o.stderr.is_empty(),
        "t_ms restarting after a boundary is no fault: {}",
        stderr(&o)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    assert_eq!(runs[0]["outcome"], "error_result");
    assert_eq!(runs[0]["exit"]["code"], 1);
    assert_eq!(runs[1]["outcome"], "success");
    assert_eq!(runs[1]["exit"]["t_ms"], 820);
    assert_eq!(runs[1]["lines"]["result"], 1);
    // The text report shows both verdicts, in order.
    let o = run(&["replay", &p]);
    let text = String::from_utf8_lossy(&o.stdout);
    let verdicts: Vec<&str> = text.lines().filter(|l| l.starts_with("verdict:")).collect();
    assert_eq!(
        verdicts,
        ["verdict: error_result", "verdict: success"],
        "{text}"
    );
    assert!(text.contains("run 2 of 2"), "{text}");
}

/// A file with no newline: the line is capped at 64 MiB like `run`'s, counted as skipped, and
/// what comes after it still replays. (A sparse file: 80 MiB of zeros cost no disk.)
#[test]
fn a_line_without_end_is_capped_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("zeros.capture.jsonl");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(80 << 20).unwrap();
    drop(f);
    let o = run(&["replay", p.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("longer than 64 MiB"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // A good capture, then the endless line: the verdict stands, the line is skipped.
    let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.write_all(format!("{INIT}\n{RESULT}\n{EXIT}\n").as_bytes())
        .unwrap();
    drop(f);
    let o = run(&["replay", p.to_str().unwrap(), "--json"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(":4: skipped: line of ") && err.contains("64 MiB"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["outcome"], "success");
    assert_eq!(v["skipped_lines"], 1);
}

/// `/dev/zero` and a FIFO are refused by name (they may never end); `-` reads stdin whatever
/// it is.
#[test]
fn devices_and_fifos_are_refused_unless_given_as_stdin() {
    for cmd in ["replay", "audit"] {
        let o = run(&[cmd, "/dev/zero"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("character device") && err.contains("`-`"),
            "{cmd}: {err}"
        );
        assert!(o.stdout.is_empty(), "{cmd}");
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f.capture.jsonl");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success(), "mkfifo failed");
    for cmd in ["replay", "audit"] {
        // Nobody writes to the FIFO: opening it would block forever.
        let o = run(&[cmd, fifo.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains("FIFO"), "{cmd}: {err}");
    }
    // The same capture on stdin is read by both.
    let capture = format!("{INIT}\n{RESULT}\n{EXIT}\n");
    for (cmd, args) in [
        ("replay", vec!["replay", "-", "--json"]),
        ("audit", vec!["audit", "-", "--json", "--quiet"]),
    ] {
        let mut child = bin()
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(capture.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{cmd}: {}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        match cmd {
            "replay" => assert_eq!(v["outcome"], "success"),
            _ => {
                assert_eq!(v["sessions_scanned"], 1, "{v}");
                assert_eq!(v["sessions"][0]["file"], "-", "{v}");
            }
        }
    }
}

/// `audit /nonexistent` says why and exits 1, with no all-zero report.
#[test]
fn audit_of_a_missing_path_says_why() {
    let o = run(&["audit", "/nonexistent/sessions"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/nonexistent/sessions") && err.contains("No such file"),
        "{err}"
    );
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// `replay … | head` and `audit … | head` with the reader already gone: no message, one
/// documented code (141, as a shell reports SIGPIPE) for both.
#[test]
fn a_closed_stdout_ends_both_quietly_with_one_code() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "ok.capture.jsonl",
        format!("{INIT}\n{RESULT}\n{EXIT}\n").as_bytes(),
    );
    for args in [
        vec!["replay", p.as_str()],
        vec!["replay", p.as_str(), "--json"],
        vec!["audit", p.as_str(), "--quiet"],
        vec!["audit", p.as_str(), "--quiet", "--json"],
    ] {
        // The read end is closed before the command starts: its first write fails (EPIPE).
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = bin().args(&args).stdout(writer).output().unwrap();
        assert_eq!(o.status.code(), Some(141), "{args:?}: {}", stderr(&o));
        assert!(o.stderr.is_empty(), "{args:?}: {}", stderr(&o));
    }
}
