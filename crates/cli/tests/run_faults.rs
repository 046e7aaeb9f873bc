//! `agent-watchdog run` under ordinary faults that have nothing to do with claude hanging:
//! signals to the watchdog itself (each kind), the watchdog SIGKILLed, descendants that
//! escape the tree, a slow or vanished reader, Ctrl-Z, a full disk, unwritable or blocking
//! output files, and what is said when a child ends without a result.
//!
//! Children are small shell scripts. Process survival is read from `/proc`; signals are sent
//! at known points (after the child said it is ready). The only time bounds are generous
//! "it ended at all" bounds.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::{
    first_line, read_pids, say, script, signal, spawn_run, stderr, wait_gone, watchdog, ASSISTANT,
    BIN, INIT, RESULT_OK,
};

const DROP_IN: &str = env!("CARGO_BIN_EXE_claude-watchdog");

/// The child's exit status if it ends within `limit`.
fn poll_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("the watchdog did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A child that ignores HUP, INT, QUIT and TERM, with a grandchild that left the group
/// (`setsid`) and ignores them too; both write their pid to `pids`.
fn stubborn(dir: &Path, pids: &Path) -> PathBuf {
    let ignore = "trap '' HUP INT QUIT TERM";
    script(
        dir,
        "stubborn.sh",
        &format!(
            "{ignore}\n\
             setsid sh -c \"{ignore}; echo \\$\\$ >> '{p}'; while :; do sleep 1; done\" &\n\
             echo $$ >> '{p}'\n\
             {init}\n\
             while :; do sleep 1; done",
            p = pids.display(),
            init = say(INIT),
        ),
    )
}

#[test]
fn each_terminating_signal_is_forwarded_then_escalated_to_the_whole_tree() {
    for (sig, code) in [(1, 129), (2, 130), (3, 131), (15, 143)] {
        let dir = tempfile::tempdir().unwrap();
        let pids_file = dir.path().join("pids");
        let child = stubborn(dir.path(), &pids_file);
        let summary = dir.path().join("s.json");
        let summary_arg = summary.to_str().unwrap();
        let mut w = spawn_run(&["--grace", "1s", "--summary", summary_arg], &child);
        let pids = read_pids(&pids_file, 2);
        // The child is running: the first line came.
        first_line(&mut w);
        signal(w.id(), sig);
        let status = wait_exit(&mut w, Duration::from_secs(30));
        let mut err = String::new();
        w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(status.code(), Some(code), "signal {sig}: {err}");
        assert_eq!(wait_gone(&pids, Duration::from_secs(5)), Vec::<i32>::new());
        assert!(
            err.contains("killing its whole process tree"),
            "signal {sig}: {err}"
        );
        let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
        assert_eq!(s["exit_code"], code, "{s}");
        assert!(s["interrupted"].is_string(), "{s}");
        assert!(
            s["kill"].is_null(),
            "a forwarded signal is not a watchdog kill: {s}"
        );
    }
}

#[test]
fn signals_whose_default_would_end_us_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "{}\nwhile [ ! -e '{}' ]; do sleep 0.05; done\n{}",
            say(INIT),
            go.display(),
            say(RESULT_OK)
        ),
    );
    let mut w = spawn_run(&[], &child);
    first_line(&mut w);
    for sig in [10, 12, 14] {
        // SIGUSR1, SIGUSR2, SIGALRM
        signal(w.id(), sig);
    }
    std::fs::write(&go, "").unwrap();
    let status = wait_exit(&mut w, Duration::from_secs(30));
    assert_eq!(
        status.code(),
        Some(0),
        "still supervising, then the child's own 0"
    );
}

#[test]
fn the_child_gets_sigterm_when_the_watchdog_is_sigkilled() {
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "echo $$ >> '{}'\n{}\nexec sleep 1000",
            pids_file.display(),
            say(INIT)
        ),
    );
    let mut w = spawn_run(&[], &child);
    let pids = read_pids(&pids_file, 1);
    first_line(&mut w);
    w.kill().unwrap();
    w.wait().unwrap();
    assert_eq!(
        wait_gone(&pids, Duration::from_secs(10)),
        Vec::<i32>::new(),
        "the child outlived its SIGKILLed watchdog"
    );
}

#[test]
fn a_duration_too_large_is_a_usage_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(dir.path(), "c.sh", "exit 0");
    for (flag, value) in [
        ("--grace", "9223372036854775807s"),
        ("--grace", "366d"),
        ("--idle", "1e300"),
        ("--ceiling", "400d"),
    ] {
        let out = watchdog()
            .args(["run", flag, value, "--"])
            .arg(&child)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(
            err.starts_with("agent-watchdog: ") && err.contains(flag),
            "{flag} {value}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_huge_grace_still_kills_a_child_that_ignores_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let child = stubborn(dir.path(), &pids_file);
    let mut w = watchdog()
        .args([
            "run",
            "--grace",
            "365d",
            "--idle",
            "1s",
            "--extend-factor",
            "1",
            "--",
        ])
        .arg(&child)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = read_pids(&pids_file, 2);
    // The kill is decided after 1 s; the grace is a year: a second signal escalates. Two
    // signals sent back to back may reach the process as one (a pending signal is not
    // queued twice), so one more is sent each second until it ends: the first alone would
    // leave it waiting out the year.
    std::thread::sleep(Duration::from_secs(2));
    signal(w.id(), 15);
    let t = Instant::now();
    let status = loop {
        signal(w.id(), 15);
        if let Some(s) = poll_exit(&mut w, Duration::from_secs(1)) {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the watchdog did not end"
        );
    };
    assert_eq!(status.code(), Some(124));
    assert_eq!(wait_gone(&pids, Duration::from_secs(5)), Vec::<i32>::new());
}

/// A descendant that clears the marker variable, leaves the group with `setsid`, and is
/// orphaned (its parent exits): re-parented to the watchdog, it is still stopped.
fn escaping(dir: &Path, pids: &Path, then: &str) -> PathBuf {
    script(
        dir,
        "escape.sh",
        &format!(
            "{init}\n\
             ( env -u AGENT_SDK_WATCHDOG_TREE setsid sh -c \"trap '' TERM HUP; echo \\$\\$ >> '{p}'; while :; do sleep 1; done\" & )\n\
             while [ ! -s '{p}' ]; do sleep 0.05; done\n\
             {then}",
            init = say(INIT),
            p = pids.display(),
        ),
    )
}

#[test]
fn an_orphan_that_left_the_tree_is_stopped_when_the_child_exits_or_is_killed() {
    for (name, then, code) in [
        ("exits", say(RESULT_OK), 0),
        ("killed", "sleep 30".to_string(), 124),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let pids_file = dir.path().join("pids");
        let child = escaping(dir.path(), &pids_file, &then);
        let summary = dir.path().join("s.json");
        let mut w = watchdog()
            .args([
                "run",
                "--grace",
                "1s",
                "--idle",
                "2s",
                "--extend-factor",
                "1",
                "--summary",
            ])
            .arg(&summary)
            .arg("--")
            .arg(&child)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pids = read_pids(&pids_file, 1);
        let status = wait_exit(&mut w, Duration::from_secs(30));
        assert_eq!(status.code(), Some(code), "{name}");
        assert_eq!(
            wait_gone(&pids, Duration::from_secs(5)),
            Vec::<i32>::new(),
            "{name}: the orphan survived"
        );
        let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
        if name == "exits" {
            assert!(s["leftovers_killed"].as_u64() >= Some(1), "{s}");
        }
    }
}

#[test]
fn a_slow_reader_does_not_get_a_healthy_child_killed_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // 30 MB as fast as it can, then a result.
    let child = script(
        dir.path(),
        "burst.sh",
        &format!(
            "{}\nhead -c 30000000 /dev/zero | tr '\\0' 'a' | fold -w 1000\necho\n{}",
            say(INIT),
            say(RESULT_OK)
        ),
    );
    let summary = dir.path().join("s.json");
    let mut w = watchdog()
        .args(["run", "--idle", "1s", "--extend-factor", "1", "--summary"])
        .arg(&summary)
        .arg("--")
        .arg(&child)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = w.stdout.take().unwrap();
    // The reader is slow: nothing is read for 4 s (4 idle limits).
    std::thread::sleep(Duration::from_secs(4));
    let mut all = Vec::new();
    out.read_to_end(&mut all).unwrap();
    let status = wait_exit(&mut w, Duration::from_secs(60));
    let mut err = String::new();
    w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    let expected = INIT.len() + 1 + 30_000_000 + 30_000 + RESULT_OK.len() + 1;
    assert_eq!(all.len(), expected, "nothing is dropped");
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["outcome"], "success", "{s}");
    assert!(s["blocked_on_output_ms"].as_u64() > Some(0), "{s}");
}

#[test]
fn ctrl_z_then_fg_does_not_kill_a_child_that_kept_printing() {
    let dir = tempfile::tempdir().unwrap();
    let done = dir.path().join("done");
    // A line every 100 ms until told to finish, then a result. The idle limit (3 s) is 30
    // lines: only the watchdog's stop, never a slow scheduler, can leave it without one.
    let child = script(
        dir.path(),
        "steady.sh",
        &format!(
            "{}\nwhile [ ! -e '{}' ]; do {}; sleep 0.1; done\n{}",
            say(INIT),
            done.display(),
            say(ASSISTANT),
            say(RESULT_OK)
        ),
    );
    let mut w = spawn_run(&["--idle", "3s", "--extend-factor", "1"], &child);
    let mut out = BufReader::new(w.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    // SIGSTOP, as Ctrl-Z would (SIGTSTP): stopped for longer than the idle limit while the
    // child keeps printing into the pipe.
    signal(w.id(), 19);
    std::thread::sleep(Duration::from_millis(4500));
    signal(w.id(), 18); // SIGCONT
    std::fs::write(&done, "").unwrap();
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).unwrap();
    let status = wait_exit(&mut w, Duration::from_secs(30));
    let mut err = String::new();
    w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(!err.contains("killed"), "{err}");
    assert!(
        String::from_utf8_lossy(&rest).contains(r#""type":"result""#),
        "the result came through"
    );
}

#[test]
fn a_full_disk_stops_the_child_and_exits_74() {
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "echo $$ >> '{}'\nwhile :; do {}; sleep 0.05; done",
            pids_file.display(),
            say(ASSISTANT)
        ),
    );
    let summary = dir.path().join("s.json");
    let out = watchdog()
        .args(["run", "--grace", "1s", "--summary"])
        .arg(&summary)
        .arg("--")
        .arg(&child)
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(74), "{err}");
    assert_eq!(
        err.matches("cannot write stdout").count(),
        1,
        "said once: {err}"
    );
    assert!(err.contains("No space left on device"), "{err}");
    let pids = read_pids(&pids_file, 1);
    assert_eq!(wait_gone(&pids, Duration::from_secs(5)), Vec::<i32>::new());
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["kill"]["kind"], "output", "{s}");
    assert_eq!(s["exit_code"], 74, "{s}");
}

/// A write that fails while the watchdog's kill is under way (the child prints on SIGTERM to a
/// full disk) does not change who stopped the run: the line said live, the exit code and the
/// summary's `outcome` and `kill.kind` all name the watchdog's kill, and the summary keeps the
/// output error beside it.
#[test]
fn a_write_that_fails_after_a_kill_keeps_the_kill() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "trap '{}; exit 0' TERM\nwhile :; do sleep 0.05; done",
            say(ASSISTANT)
        ),
    );
    let summary = dir.path().join("s.json");
    let out = watchdog()
        .args(["run", "--grace", "5s", "--startup", "1s", "--summary"])
        .arg(&summary)
        .arg("--")
        .arg(&child)
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(err.contains("(startup)"), "the kill is said live: {err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert_eq!(out.status.code(), Some(125), "{err}");
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["exit_code"], 125, "{s}");
    assert_eq!(s["outcome"], "killed", "{s}");
    assert_eq!(s["kill"]["kind"], "startup", "{s}");
    assert_eq!(s["output_error"]["kind"], "output", "{s}");
    assert_eq!(s["output_error"]["reader_gone"], false, "{s}");
}

#[test]
fn a_reader_that_went_away_stops_the_child_and_exits_141() {
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "echo $$ >> '{}'\nwhile :; do {}; sleep 0.05; done",
            pids_file.display(),
            say(ASSISTANT)
        ),
    );
    let capture = dir.path().join("c.jsonl");
    let mut w = watchdog()
        .args(["run", "--grace", "1s", "--record"])
        .arg(&capture)
        .arg("--")
        .arg(&child)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: read one line, then go away.
    let mut out = BufReader::new(w.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    drop(out);
    let status = wait_exit(&mut w, Duration::from_secs(30));
    let mut err = String::new();
    w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(141), "{err}");
    assert!(err.contains("the reader went away"), "{err}");
    let pids = read_pids(&pids_file, 1);
    assert_eq!(wait_gone(&pids, Duration::from_secs(5)), Vec::<i32>::new());
    // The capture is complete: it ends with the child's exit.
    let text = std::fs::read_to_string(&capture).unwrap();
    assert!(text.lines().last().unwrap().contains("\"exit\""), "{text}");
}

#[test]
fn the_synthetic_result_is_always_a_line_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(
        dir.path(),
        "half.sh",
        &format!(
            "{}\nprintf '%s' '{{\"type\":\"assistant\",\"text\":\"half a li'\nsleep 30",
            say(INIT)
        ),
    );
    let out = watchdog()
        .args([
            "run",
            "--emit-result",
            "--idle",
            "1s",
            "--extend-factor",
            "1",
            "--grace",
            "1s",
            "--",
        ])
        .arg(&child)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].ends_with("half a li"), "{text}");
    let result: Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(result["type"], "result");
    assert!(text.ends_with('\n'));
}

#[test]
fn output_files_are_checked_before_the_child_starts() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let child = script(dir.path(), "c.sh", &format!("touch '{}'", ran.display()));
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let missing = dir.path().join("no/such/dir/file.json");
    for flag in ["--summary", "--record"] {
        for target in [&missing, &fifo, &dir.path().to_path_buf()] {
            let t = Instant::now();
            let out = watchdog()
                .args(["run", flag])
                .arg(target)
                .arg("--")
                .arg(&child)
                .output()
                .unwrap();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{flag} {target:?}: {err}");
            assert!(err.starts_with("agent-watchdog: error: cannot"), "{err}");
            assert!(!ran.exists(), "{flag} {target:?}: the child ran");
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "a FIFO must not block"
            );
        }
    }
}

#[test]
fn the_summary_replaces_its_file_at_the_end_and_keeps_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(
        dir.path(),
        "c.sh",
        &format!("{}\n{}\nexit 0", say(INIT), say(RESULT_OK)),
    );
    let summary = dir.path().join("s.json");
    std::fs::write(&summary, "old").unwrap();
    let out = watchdog()
        .env("AGENT_WATCHDOG_SUMMARY", &summary)
        .args(["run", "--"])
        .arg(&child)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["outcome"], "success");
    let others: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(others.is_empty(), "no temporary file left");
}

#[test]
fn run_reads_record_summary_and_emit_result_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(dir.path(), "c.sh", &format!("{}\nsleep 30", say(INIT)));
    let summary = dir.path().join("s.json");
    let capture = dir.path().join("c.jsonl");
    let out = watchdog()
        .env("AGENT_WATCHDOG_SUMMARY", &summary)
        .env("AGENT_WATCHDOG_RECORD", &capture)
        .env("AGENT_WATCHDOG_EMIT_RESULT", "1")
        .env("AGENT_WATCHDOG_IDLE", "1s")
        .env("AGENT_WATCHDOG_EXTEND_FACTOR", "1")
        .env("AGENT_WATCHDOG_GRACE", "1s")
        .args(["run", "--"])
        .arg(&child)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "emit-result: {}", stderr(&out));
    let last = String::from_utf8(out.stdout).unwrap();
    assert!(last.lines().last().unwrap().contains("\"type\":\"result\""));
    assert!(summary.exists() && capture.exists());
}

#[test]
fn an_ending_without_a_result_is_said_in_one_line_naming_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "usage",
            "echo 'error: unknown option --bogus' >&2\nexit 1".to_string(),
            1,
            "c.sh exited with code 1 before any result (no_result; it printed no stdout line)",
        ),
        (
            "midway",
            format!("{}\n{}\nexit 0", say(INIT), say(ASSISTANT)),
            3,
            "c.sh exited with code 0 before any result (no_result); exiting 3",
        ),
    ];
    for (name, body, code, message) in cases {
        let child = script(dir.path(), "c.sh", &body);
        let out = watchdog().args(["run", "--"]).arg(&child).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{name}: {err}");
        let ours: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("agent-watchdog: "))
            .collect();
        assert_eq!(
            ours,
            [format!("agent-watchdog: {message}")],
            "{name}: {err}"
        );
    }
}

#[test]
fn a_drop_in_started_by_itself_refuses_instead_of_nesting() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // A wrapper named `claude` that runs claude-watchdog (with and without exec).
    for (name, body) in [
        ("exec", format!("exec '{DROP_IN}' \"$@\"")),
        ("child", format!("'{DROP_IN}' \"$@\"")),
    ] {
        script(&bin, "claude", &body);
        let path = format!("{}:/usr/bin:/bin", bin.display());
        let t = Instant::now();
        let out = Command::new(DROP_IN)
            .env("PATH", &path)
            .env_remove("AGENT_WATCHDOG_CLAUDE")
            .env_remove("AGENT_WATCHDOG_DROP_IN_PID")
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert_eq!(
            err.matches("runs claude-watchdog again").count(),
            1,
            "{name}: {err}"
        );
        assert!(t.elapsed() < Duration::from_secs(20), "{name}");
    }
}

#[test]
fn on_a_terminal_the_child_gets_dev_null_as_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("stdin");
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "readlink /proc/self/fd/0 > '{}'\n{}\n{}",
            seen.display(),
            say(INIT),
            say(RESULT_OK)
        ),
    );
    // python3's pty module gives the watchdog a terminal as stdin, stdout and stderr.
    let status = Command::new("python3")
        .args([
            "-c",
            "import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)",
        ])
        .arg(BIN)
        .args(["run", "--no-status", "--"])
        .arg(&child)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&seen).unwrap().trim(), "/dev/null");
}
