//! A host that never reads again, with real processes: a reader that stops after some bytes
//! and never reads again is bounded by `--output-blocked` (kill `output_blocked`, exit 75), and
//! every other kill (the ceiling, an idle kill) still ends the run within seconds, summary
//! written, though our stdout is blocked. A reader that does read gets every byte: one that
//! resumes before the bound, one that reads slowly through a kill.
//!
//! The reader here is the test itself, on the watchdog's stdout pipe: it reads what it is told
//! to, then holds the pipe open without reading. Whether the run ends is bounded generously
//! (a hang is for ever); how fast is BENCHMARKS' business.

use std::io::Read;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::{say, script, watchdog, ASSISTANT, INIT, RESULT_OK};

/// A line of about 1 KB.
fn fat_line() -> String {
    format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"{}"}}]}},"session_id":"s1"}}"#,
        "x".repeat(1000)
    )
}

/// `agent-watchdog run ARGS --summary S -- CHILD`, stdout piped to the test, stderr piped.
fn start(args: &[&str], child: &Path, summary: &Path) -> Child {
    watchdog()
        .arg("run")
        .args(args)
        .arg("--no-status")
        .arg("--summary")
        .arg(summary)
        .arg("--")
        .arg(child)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Read exactly `n` bytes of the watchdog's stdout.
fn read_n(child: &mut Child, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    child.stdout.as_mut().unwrap().read_exact(&mut buf).unwrap();
    buf
}

/// Wait for the watchdog's end, at most `limit` (a hang fails the test, and the watchdog is
/// killed); its status and stderr.
fn ended(child: &mut Child, limit: Duration) -> (ExitStatus, String) {
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("the watchdog did not end within {limit:?} while its stdout was blocked");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status, err)
}

fn summary(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A child that prints fat lines without end (`yes`), after its init.
fn endless(dir: &Path) -> std::path::PathBuf {
    script(
        dir,
        "endless.sh",
        &format!("{}\nexec yes '{}'", say(INIT), fat_line()),
    )
}

#[test]
fn a_reader_that_stops_for_good_is_bounded_by_output_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let mut w = start(
        &["--output-blocked", "2s", "--grace", "1s"],
        &endless(dir.path()),
        &s,
    );
    read_n(&mut w, 64 * 1024);
    // Never read again; the pipe stays open.
    let (status, err) = ended(&mut w, Duration::from_secs(60));
    assert_eq!(status.code(), Some(75), "{err}");
    let s = summary(&s);
    assert_eq!(s["kill"]["kind"], "output_blocked", "{s}");
    assert!(s["kill"]["output_blocked_ms"].as_u64() >= Some(2000), "{s}");
    assert!(s["output_dropped_bytes"].as_u64() > Some(0), "{s}");
    assert!(err.contains("killed endless.sh (output_blocked)"), "{err}");
    assert!(err.contains("our stdout took nothing for 2s"), "{err}");
}

#[test]
fn a_ceiling_kill_ends_the_run_though_stdout_is_blocked() {
    // Before: killed at 4 s, then the watchdog blocked in its stdout write for ever, no
    // summary. The output-blocked bound is out of the way here.
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let mut w = start(
        &["--ceiling", "3s", "--output-blocked", "1h", "--grace", "1s"],
        &endless(dir.path()),
        &s,
    );
    read_n(&mut w, 64 * 1024);
    let (status, err) = ended(&mut w, Duration::from_secs(60));
    assert_eq!(status.code(), Some(137), "{err}");
    let s = summary(&s);
    assert_eq!(s["kill"]["kind"], "ceiling", "{s}");
    assert!(s["kill"]["output_blocked_ms"].as_u64() > Some(0), "{s}");
    assert!(err.contains("while endless.sh was being stopped"), "{err}");
}

#[test]
fn an_idle_kill_ends_the_run_though_stdout_is_blocked() {
    // A burst too small to hold the child back (its clocks run), then silence: the idle kill.
    // Our stdout took 64 KB and nothing more.
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let line = fat_line();
    let child = script(
        dir.path(),
        "burst_then_silent.sh",
        &format!(
            "{}\ni=0\nwhile [ $i -lt 300 ]; do printf '%s\\n' '{line}'; i=$((i+1)); done\nexec sleep 1000",
            say(INIT)
        ),
    );
    let mut w = start(
        &[
            "--idle",
            "2s",
            "--extend-factor",
            "1",
            "--output-blocked",
            "1h",
            "--grace",
            "1s",
        ],
        &child,
        &s,
    );
    read_n(&mut w, 64 * 1024);
    let (status, err) = ended(&mut w, Duration::from_secs(60));
    assert_eq!(status.code(), Some(124), "{err}");
    let s = summary(&s);
    assert_eq!(s["kill"]["kind"], "idle", "{s}");
    assert!(s["output_dropped_bytes"].as_u64() > Some(0), "{s}");
}

#[test]
fn a_reader_that_resumes_before_the_bound_is_not_killed_and_gets_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let line = fat_line();
    // 8 MB: far more than the pipes and buffers between the child and the reader hold.
    let child = script(
        dir.path(),
        "big.sh",
        &format!(
            "{}\nyes '{line}' | head -n 8000\n{}",
            say(INIT),
            say(RESULT_OK)
        ),
    );
    let mut w = start(&["--output-blocked", "8s"], &child, &s);
    let mut all = read_n(&mut w, 64 * 1024);
    // The reader pauses well inside the bound, then reads everything.
    std::thread::sleep(Duration::from_secs(3));
    w.stdout.as_mut().unwrap().read_to_end(&mut all).unwrap();
    let (status, err) = ended(&mut w, Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{err}");
    let expected = INIT.len() + 1 + 8000 * (line.len() + 1) + RESULT_OK.len() + 1;
    assert_eq!(all.len(), expected, "every byte delivered");
    let s = summary(&s);
    assert_eq!(s["outcome"], "success", "{s}");
    assert_eq!(s["output_dropped_bytes"], 0, "{s}");
    assert!(s["blocked_on_output_ms"].as_u64() > Some(0), "{s}");
}

#[test]
fn a_slow_reader_that_keeps_reading_through_a_kill_gets_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let line = fat_line();
    // 3 MB, then a wedge: the ceiling kills it while most of it still waits for the reader.
    let child = script(
        dir.path(),
        "wedge.sh",
        &format!(
            "{}\nyes '{line}' | head -n 3000\nexec sleep 1000",
            say(INIT)
        ),
    );
    let mut w = start(&["--ceiling", "2s", "--grace", "1s"], &child, &s);
    let mut all = Vec::new();
    let mut chunk = vec![0; 64 * 1024];
    let out = w.stdout.as_mut().unwrap();
    loop {
        // 64 KB at a time, a breath between: slow, but reading.
        let n = out.read(&mut chunk).unwrap();
        if n == 0 {
            break;
        }
        all.extend_from_slice(&chunk[..n]);
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, err) = ended(&mut w, Duration::from_secs(60));
    assert_eq!(status.code(), Some(137), "{err}");
    let expected = INIT.len() + 1 + 3000 * (line.len() + 1);
    assert_eq!(all.len(), expected, "every byte the child printed: {err}");
    assert_eq!(summary(&s)["output_dropped_bytes"], 0);
}

#[test]
fn after_the_child_ended_a_reader_that_never_reads_is_bounded_too() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let line = fat_line();
    let child = script(
        dir.path(),
        "done.sh",
        &format!(
            "{}\nyes '{line}' | head -n 300\n{}\n{}",
            say(INIT),
            say(ASSISTANT),
            say(RESULT_OK)
        ),
    );
    let mut w = start(&["--output-blocked", "2s"], &child, &s);
    read_n(&mut w, 64 * 1024);
    let (status, err) = ended(&mut w, Duration::from_secs(60));
    assert_eq!(status.code(), Some(75), "{err}");
    let s = summary(&s);
    assert_eq!(s["outcome"], "success", "the child's own ending: {s}");
    assert_eq!(s["kill"]["kind"], "output_blocked", "{s}");
    assert!(s["output_dropped_bytes"].as_u64() > Some(0), "{s}");
    assert!(err.contains("after done.sh ended"), "{err}");
}
