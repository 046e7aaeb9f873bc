//! A reader judged by the bytes it takes, with real processes. `--output-blocked` bounds the
//! time during which our stdout accepted no byte while bytes waited for it, measured where we
//! write: a reader that stops for good is stopped (`output_blocked`, exit 75), also while the
//! child writes too little to ever fill our queue, and after the child ended; readers of every
//! pace that keep taking bytes (steady and slow, bursty, stop-and-go, a few bytes at a time)
//! get every byte and are never blamed; time the watchdog itself was stopped (SIGSTOP, SIGTSTP)
//! does not count. Every other kill (the ceiling, an idle kill) still ends the run within
//! seconds, summary written, though our stdout is blocked.
//!
//! The reader here is the test itself, on the watchdog's stdout pipe. The readers that keep
//! reading never pause for more than half the bound, so the margins hold on a loaded machine;
//! a kill is checked to come no earlier than the bound (load only delays it), and whether the
//! run ends is bounded generously (a hang is for ever); how fast is BENCHMARKS' business.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::{say, script, signal, watchdog, ASSISTANT, INIT, RESULT_OK};

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
    assert!(
        err.contains("our stdout took no byte for 2s while"),
        "{err}"
    );
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

/// A child that prints `n` fat lines as fast as the reader takes them, then its result.
fn flood(dir: &Path, n: usize) -> (std::path::PathBuf, usize) {
    let line = fat_line();
    let child = script(
        dir,
        "flood.sh",
        &format!(
            "{}\nyes '{line}' | head -n {n}\n{}",
            say(INIT),
            say(RESULT_OK)
        ),
    );
    let total = INIT.len() + 1 + n * (line.len() + 1) + RESULT_OK.len() + 1;
    (child, total)
}

/// How a test reader takes the watchdog's stdout: `(bytes, pause)` steps, repeated until the
/// end (a zero-byte step only pauses); the steps taken while `until` bytes were not yet read,
/// then everything at full speed.
struct Pace {
    name: &'static str,
    steps: &'static [(usize, u64)],
    until: usize,
}

/// Read the watchdog's stdout at `pace` to its end; every byte read.
fn read_at(child: &mut Child, pace: &Pace) -> usize {
    let out = child.stdout.as_mut().unwrap();
    let mut total = 0;
    let mut buf = vec![0; 1 << 20];
    'paced: loop {
        for &(bytes, pause) in pace.steps {
            let mut left = bytes;
            while left > 0 {
                let n = out.read(&mut buf[..left]).unwrap();
                if n == 0 {
                    return total;
                }
                total += n;
                left -= n;
            }
            std::thread::sleep(Duration::from_millis(pause));
            if total >= pace.until {
                break 'paced;
            }
        }
    }
    loop {
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            return total;
        }
        total += n;
    }
}

#[test]
fn readers_of_every_pace_that_keep_taking_bytes_are_never_blocked() {
    // Bound 4 s; no reader pauses longer than 1.5 s. Before, the slow readers of a flood were
    // stopped once our queue had been full for the bound, though they kept reading.
    const PACES: [Pace; 4] = [
        // 16 KiB every 40 ms: about 400 KiB/s, far slower than the child.
        Pace {
            name: "steady and slow",
            steps: &[(16 * 1024, 40)],
            until: usize::MAX,
        },
        // 256 KiB at once, then a second's pause.
        Pace {
            name: "bursty",
            steps: &[(256 * 1024, 1000)],
            until: usize::MAX,
        },
        // Reading for half a second, then stopped for 1.5 s.
        Pace {
            name: "stop-and-go",
            steps: &[
                (64 * 1024, 50),
                (64 * 1024, 50),
                (64 * 1024, 50),
                (64 * 1024, 50),
                (64 * 1024, 50),
                (64 * 1024, 50),
                (64 * 1024, 50),
                (64 * 1024, 50),
                (64 * 1024, 50),
                (64 * 1024, 1500),
            ],
            until: usize::MAX,
        },
        // 64 bytes every 100 ms for 4 s: less than a pipe page in all, so only the pipe's
        // unread count shows that it reads; then the rest at full speed.
        Pace {
            name: "a few bytes at a time",
            steps: &[(64, 100)],
            until: 40 * 64,
        },
    ];
    let runs: Vec<_> = PACES
        .iter()
        .map(|pace| {
            std::thread::spawn(move || {
                let dir = tempfile::tempdir().unwrap();
                let s = dir.path().join("s.json");
                // About 2 MB (the few-bytes reader gets 200 KB: more than our pipe holds).
                let lines = if pace.until == usize::MAX { 2000 } else { 200 };
                let (child, expected) = flood(dir.path(), lines);
                let mut w = start(&["--output-blocked", "4s"], &child, &s);
                let got = read_at(&mut w, pace);
                let (status, err) = ended(&mut w, Duration::from_secs(120));
                (pace.name, status, err, got, expected, summary(&s))
            })
        })
        .collect();
    for run in runs {
        let (name, status, err, got, expected, s) = run.join().unwrap();
        assert_eq!(status.code(), Some(0), "{name}: {err}");
        assert_eq!(got, expected, "{name}: every byte");
        assert_eq!(s["kill"], Value::Null, "{name}: {s}");
        assert_eq!(s["output_dropped_bytes"], 0, "{name}: {s}");
    }
}

#[test]
fn a_reader_that_takes_nothing_is_stopped_while_the_child_still_writes_a_little() {
    // 2 KB every 100 ms for 25 s: never enough to fill our queue, so before the reader was
    // never judged while the child ran. Our pipe is full after about 3 s; 2 s later the child
    // is stopped, long before it would have ended.
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let line = format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"{}"}}]}},"session_id":"s1"}}"#,
        "y".repeat(1950)
    );
    let child = script(
        dir.path(),
        "trickle.sh",
        &format!(
            "{}\ni=0\nwhile [ $i -lt 250 ]; do printf '%s\\n' '{line}'; sleep 0.1; i=$((i+1)); done\n{}",
            say(INIT),
            say(RESULT_OK)
        ),
    );
    let t = Instant::now();
    let mut w = start(&["--output-blocked", "2s", "--grace", "1s"], &child, &s);
    // Never read; the pipe stays open.
    let (status, err) = ended(&mut w, Duration::from_secs(60));
    let took = t.elapsed();
    assert_eq!(status.code(), Some(75), "{err}");
    let s = summary(&s);
    assert_eq!(s["kill"]["kind"], "output_blocked", "{s}");
    assert!(s["kill"]["output_blocked_ms"].as_u64() >= Some(2000), "{s}");
    assert!(err.contains("killed trickle.sh (output_blocked)"), "{err}");
    // Stopped while it ran: its own end was 25 s away (and the bound never came early: the
    // pipe alone holds some 3 s of its output).
    assert!(took < Duration::from_secs(20), "{took:?}: {err}");
    assert!(took >= Duration::from_secs(2), "{took:?}");
    assert_ne!(s["outcome"], "success", "{s}");
}

/// Stop the watchdog `pid` with `sig` (SIGSTOP or SIGTSTP) for `stopped`, then continue it.
fn stop_for(pid: u32, sig: i32, stopped: Duration) {
    signal(pid, sig);
    std::thread::sleep(stopped);
    signal(pid, 18); // SIGCONT
}

#[test]
fn a_watchdog_stopped_while_its_reader_drains_is_not_the_readers_fault() {
    // The issue's case: a 20 MB flood read at about 1 MiB/s, bound 3 s; 2 s in, the watchdog
    // is stopped for 5 s (SIGSTOP, and Ctrl-Z's SIGTSTP) while its reader keeps reading and
    // empties our pipe. Before, the run was stopped `output_blocked` when it went on, dated
    // inside the stop.
    let runs: Vec<_> = [(19, "SIGSTOP"), (20, "SIGTSTP")]
        .into_iter()
        .map(|(sig, name)| {
            std::thread::spawn(move || {
                let dir = tempfile::tempdir().unwrap();
                let s = dir.path().join("s.json");
                let (child, expected) = flood(dir.path(), 20_000);
                let mut w = start(&["--output-blocked", "3s"], &child, &s);
                let pid = w.id();
                let mut out = w.stdout.take().unwrap();
                let reader = std::thread::spawn(move || {
                    // 64 KiB every 60 ms to the end.
                    let mut buf = vec![0; 64 * 1024];
                    let mut total = 0;
                    loop {
                        let n = out.read(&mut buf).unwrap();
                        if n == 0 {
                            return total;
                        }
                        total += n;
                        std::thread::sleep(Duration::from_millis(60));
                    }
                });
                std::thread::sleep(Duration::from_secs(2));
                stop_for(pid, sig, Duration::from_secs(5));
                let got = reader.join().unwrap();
                let (status, err) = ended(&mut w, Duration::from_secs(120));
                (name, status, err, got, expected, summary(&s))
            })
        })
        .collect();
    for run in runs {
        let (name, status, err, got, expected, s) = run.join().unwrap();
        assert_eq!(status.code(), Some(0), "{name}: {err}");
        assert_eq!(got, expected, "{name}: every byte");
        assert_eq!(s["kill"], Value::Null, "{name}: {s}");
    }
}

#[test]
fn time_the_watchdog_was_stopped_does_not_count_toward_the_bound() {
    // Bound 3 s. The reader takes 64 KiB and nothing more; 1 s later the watchdog is stopped
    // for 5 s. Only the time it ran counts: it is still running well after it goes on, then
    // stops the child once 3 s of its own time have passed.
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let mut w = start(
        &["--output-blocked", "3s", "--grace", "1s"],
        &endless(dir.path()),
        &s,
    );
    read_n(&mut w, 64 * 1024);
    std::thread::sleep(Duration::from_secs(1));
    stop_for(w.id(), 19, Duration::from_secs(5));
    let went_on = Instant::now();
    // At most ~1.2 s of the bound was used before the stop (the second, a look's worth of
    // the stop, the reader's last read): some 1.8 s are left.
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        w.try_wait().unwrap().is_none(),
        "stopped within 1 s of going on: the stop was counted"
    );
    let (status, err) = ended(&mut w, Duration::from_secs(60));
    assert_eq!(status.code(), Some(75), "{err}");
    assert!(went_on.elapsed() >= Duration::from_millis(1500), "{err}");
    let s = summary(&s);
    assert_eq!(s["kill"]["kind"], "output_blocked", "{s}");
    assert!(s["kill"]["output_blocked_ms"].as_u64() >= Some(3000), "{s}");
}

#[test]
fn the_drop_in_stops_a_host_that_takes_nothing() {
    // `claude-watchdog` under an SDK host that stopped reading its stdout: the same bound, the
    // same stop (exit 75; no synthetic result, which nobody would read).
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.json");
    let claude = script(
        dir.path(),
        "claude",
        &format!("{}\nexec yes '{}'", say(INIT), fat_line()),
    );
    let mut w = Command::new(env!("CARGO_BIN_EXE_claude-watchdog"))
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .env("AGENT_WATCHDOG_OUTPUT_BLOCKED", "2s")
        .env("AGENT_WATCHDOG_SUMMARY", &s)
        .env_remove("AGENT_WATCHDOG_IDLE")
        .args(["-p", "hi", "--output-format", "stream-json", "--verbose"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    read_n(&mut w, 64 * 1024);
    let (status, err) = ended(&mut w, Duration::from_secs(60));
    assert_eq!(status.code(), Some(75), "{err}");
    let s = summary(&s);
    assert_eq!(s["kill"]["kind"], "output_blocked", "{s}");
    assert!(s["kill"]["output_blocked_ms"].as_u64() >= Some(2000), "{s}");
}
