//! Issue 28 (6): what the host sends on stdin never grows the watchdog's memory without bound.
//! Every byte is passed on to the child; a line is held whole (to record it) up to the 64 MiB
//! line cap, a longer one is passed on in pieces and recorded as a note.
#![cfg(target_os = "linux")]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::{say, script, stderr, watchdog, INIT, RESULT_OK};

/// Far below what holding 200 MB of one line would take (the cap is 64 MiB).
const HWM_LIMIT_KB: u64 = 100 * 1024;

/// Run `cmd` to its end within a generous bound.
fn output_within(mut cmd: Command, limit: Duration) -> std::process::Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("the watchdog did not end within {limit:?}");
        }
    }
}

/// The peak resident memory (`VmHWM`, kB) the child read from `/proc/<watchdog>/status`.
fn hwm_kb(text: &str) -> u64 {
    text.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {text:?}"))
}

/// `run < /dev/zero`: an endless stdin line. Before the fix it grew until abort (rc 134). Now
/// 200 MB of it reach the child, and the watchdog's peak memory stays bounded, whether the
/// child stops reading (`head -c`) or reads to a stop of its own.
#[test]
fn an_endless_stdin_line_reaches_the_child_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let hwm = dir.path().join("hwm");
    let ppid = dir.path().join("ppid");
    let count = dir.path().join("count");
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "head -c 200000000 | wc -c > '{}'\necho $PPID > '{}'\ngrep VmHWM /proc/$PPID/status > '{}'\n{}\n{}",
            count.display(),
            ppid.display(),
            hwm.display(),
            say(INIT),
            say(RESULT_OK)
        ),
    );
    let mut cmd = watchdog();
    cmd.args(["run", "--"])
        .arg(&child)
        .stdin(std::fs::File::open("/dev/zero").unwrap());
    let t = Instant::now();
    let out = output_within(cmd, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&count).unwrap().trim(),
        "200000000",
        "every byte reached the child"
    );
    let kb = hwm_kb(&std::fs::read_to_string(&hwm).unwrap());
    assert!(kb < HWM_LIMIT_KB, "peak {kb} kB after {:?}", t.elapsed());
    // The memory read was the watchdog's: the child's parent.
    assert!(std::fs::read_to_string(&ppid)
        .unwrap()
        .trim()
        .parse::<u32>()
        .is_ok());
}

/// A line over the cap among ordinary ones: every byte passes through in order, the ordinary
/// lines are recorded, the long one is a note with its size, and memory stays bounded.
#[test]
fn an_overlong_stdin_line_passes_through_and_is_recorded_as_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let got = dir.path().join("got");
    let hwm = dir.path().join("hwm");
    let capture = dir.path().join("cap.jsonl");
    let long = 65usize << 20;
    let mut bytes = br#"{"type":"user","n":1}"#.to_vec();
    bytes.push(b'\n');
    bytes.extend(std::iter::repeat_n(b'a', long));
    bytes.extend_from_slice(b"\n{\"type\":\"user\",\"n\":2}\n");
    std::fs::write(&input, &bytes).unwrap();
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "cat > '{}'\ngrep VmHWM /proc/$PPID/status > '{}'\n{}\n{}",
            got.display(),
            hwm.display(),
            say(INIT),
            say(RESULT_OK)
        ),
    );
    let mut cmd = watchdog();
    cmd.args(["run", "--record"])
        .arg(&capture)
        .arg("--")
        .arg(&child)
        .stdin(std::fs::File::open(&input).unwrap());
    let out = output_within(cmd, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        std::fs::read(&got).unwrap() == bytes,
        "the child got every byte, in order"
    );
    let stdin: Vec<Value> = std::fs::read_to_string(&capture)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("stdin").cloned())
        .collect();
    assert_eq!(stdin.len(), 4, "{stdin:?}");
    assert_eq!(stdin[0]["n"], 1);
    assert_eq!(stdin[1]["bytes"], long + 1, "{stdin:?}");
    assert!(stdin[1]["note"].as_str().unwrap().contains("64 MiB cap"));
    assert_eq!(stdin[2]["n"], 2);
    assert_eq!(stdin[3]["note"], "stdin closed");
    let kb = hwm_kb(&std::fs::read_to_string(&hwm).unwrap());
    assert!(kb < HWM_LIMIT_KB, "peak {kb} kB");
}
