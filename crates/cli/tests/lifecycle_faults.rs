//! `run` and the drop-in around the life of their host: a reader or host that vanishes while
//! the child is silent is noticed at once (not at the next write, not at the idle deadline),
//! and an output that cannot vanish (a file, `/dev/null`) never looks as if it had.
//!
//! Children are small shell scripts; survival is read from `/proc`. The time bounds are
//! generous "it ended at all" bounds, far below the idle deadlines that would otherwise end
//! the runs.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::{alive, read_pids, say, script, signal, wait_gone, watchdog, INIT, RESULT_OK};

const DROP_IN: &str = env!("CARGO_BIN_EXE_claude-watchdog");

fn wait_exit(child: &mut Child, limit: Duration) -> (std::process::ExitStatus, Duration) {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return (s, t.elapsed());
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A silent child (an API stall: its line, then nothing) with a grandchild that left the
/// group with `setsid`; both write their pid to `pids` (child first, then grandchild), and the
/// child ignores SIGTERM as well when `stubborn`.
fn silent(dir: &Path, pids: &Path, stubborn: bool) -> PathBuf {
    let ignore = if stubborn {
        "trap '' HUP INT QUIT TERM"
    } else {
        ":"
    };
    script(
        dir,
        "silent.sh",
        &format!(
            "{ignore}\n\
             echo $$ >> '{p}'\n\
             setsid sh -c \"{ignore}; echo \\$\\$ >> '{p}'; while :; do sleep 1; done\" &\n\
             {init}\n\
             while :; do sleep 1; done",
            p = pids.display(),
            init = say(INIT),
        ),
    )
}

fn summary(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no summary at {path:?}: {e}"))
}

fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// Read `child`'s stderr on a thread: the instant the first line containing `needle` came,
/// and all of it at the end.
fn watch_stderr(
    child: &mut Child,
    needle: &'static str,
) -> std::sync::mpsc::Receiver<(Option<Instant>, String)> {
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = None;
        let mut all = String::new();
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if seen.is_none() && line.contains(needle) {
                seen = Some(Instant::now());
            }
            all.push_str(&line);
            all.push('\n');
        }
        let _ = tx.send((seen, all));
    });
    rx
}

// ---------------------------------------------------------------- a vanished reader

/// `run FLAGS --summary DIR/s.json -- silent` (stubborn or not) whose reader has read the
/// first line: the watchdog, our end of its stdout, and the pids of the child and grandchild.
fn reader_of_one_line(
    dir: &Path,
    stubborn: bool,
    flags: &[&str],
) -> (Child, BufReader<std::process::ChildStdout>, Vec<i32>) {
    let pids_file = dir.join("pids");
    let child = silent(dir, &pids_file, stubborn);
    let mut w = watchdog()
        .arg("run")
        .args(flags)
        .arg("--summary")
        .arg(dir.join("s.json"))
        .arg("--")
        .arg(&child)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(w.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.contains("init"), "{first}");
    let pids = read_pids(&pids_file, 2);
    (w, out, pids)
}

#[test]
fn a_reader_that_read_one_line_and_left_ends_a_silent_run_at_once() {
    // `run -- sh -c 'echo x; sleep 60' | head -1`, with a setsid'd grandchild too.
    let dir = tempfile::tempdir().unwrap();
    let sum = dir.path().join("s.json");
    let (mut w, out, pids) =
        reader_of_one_line(dir.path(), false, &["--grace", "1s", "--idle", "10m"]);
    let said = watch_stderr(&mut w, "the reader went away");
    let gone_at = Instant::now();
    drop(out);
    let (status, took) = wait_exit(&mut w, Duration::from_secs(10));
    let (seen, err) = said.recv().unwrap();
    let noticed = seen.expect("said").saturating_duration_since(gone_at);
    eprintln!(
        "reader gone → noticed: {} ms, watchdog exit (1 s grace): {} ms",
        noticed.as_millis(),
        took.as_millis()
    );
    assert!(
        noticed < Duration::from_secs(2),
        "noticed after {noticed:?}"
    );
    assert_eq!(status.code(), Some(141), "{err}");
    assert!(took < Duration::from_secs(5), "took {took:?}: {err}");
    assert!(err.contains("the reader went away"), "{err}");
    assert_eq!(wait_gone(&pids, Duration::from_secs(3)), Vec::<i32>::new());
    let s = summary(&sum);
    assert_eq!(s["kill"]["kind"], "output", "{s}");
    assert_eq!(s["kill"]["reader_gone"], true, "{s}");
    assert_eq!(s["exit_code"], 141, "{s}");
}

/// Stopped for its output, a stubborn child's idle deadline falls due while the ladder waits
/// out the grace: the run stays stopped for its output (one reason, told once), never also
/// "killed idle".
#[test]
fn a_deadline_due_after_an_output_stop_does_not_become_a_second_reason() {
    let dir = tempfile::tempdir().unwrap();
    let sum = dir.path().join("s.json");
    let (mut w, out, pids) =
        reader_of_one_line(dir.path(), true, &["--grace", "4s", "--idle", "2s"]);
    drop(out);
    let (status, took) = wait_exit(&mut w, Duration::from_secs(20));
    let err = stderr_of(&mut w);
    assert_eq!(status.code(), Some(141), "{err}");
    // The ladder ran to its end: TERM ignored, KILL after the grace (past the idle deadline).
    assert!(took >= Duration::from_secs(3), "took {took:?}: {err}");
    assert_eq!(wait_gone(&pids, Duration::from_secs(3)), Vec::<i32>::new());
    assert!(!err.contains("(idle)"), "a second reason: {err}");
    let s = summary(&sum);
    assert_eq!(s["kill"]["kind"], "output", "{s}");
    assert_eq!(s["kill"]["ladder"], "kill", "{s}");
    assert_ne!(
        s["outcome"], "killed",
        "the deadline is not the reason: {s}"
    );
    assert_eq!(s["outcome"], "no_result", "{s}");
    assert_eq!(s["exit_code"], 141, "{s}");
}

#[test]
fn a_reader_killed_while_the_child_is_silent_stops_even_a_stubborn_tree() {
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let child = silent(dir.path(), &pids_file, true);
    // The reader: another process holding the pipe's read end, killed later.
    let mut reader = Command::new("sh")
        .args(["-c", "exec cat > /dev/null"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = reader.stdin.take().unwrap();
    let mut w = watchdog()
        .args(["run", "--grace", "1s", "--idle", "10m", "--"])
        .arg(&child)
        .stdout(Stdio::from(pipe))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = read_pids(&pids_file, 2);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        w.try_wait().unwrap().is_none(),
        "a silent child with a reader runs on"
    );
    reader.kill().unwrap();
    reader.wait().unwrap();
    let (status, took) = wait_exit(&mut w, Duration::from_secs(15));
    let err = stderr_of(&mut w);
    assert_eq!(status.code(), Some(141), "{err}");
    // Noticed at once, then the ladder: SIGTERM ignored, SIGKILL after the 1 s grace.
    assert!(took < Duration::from_secs(6), "took {took:?}: {err}");
    assert_eq!(wait_gone(&pids, Duration::from_secs(3)), Vec::<i32>::new());
}

#[test]
fn outputs_that_cannot_vanish_never_look_as_if_they_had() {
    let dir = tempfile::tempdir().unwrap();
    // Silent for a while, then its result: ends by itself, 0.
    let child = script(
        dir.path(),
        "quiet.sh",
        &format!("{}\nsleep 1.5\n{}", say(INIT), say(RESULT_OK)),
    );
    let file = dir.path().join("out.txt");
    let outs: Vec<(&str, Stdio)> = vec![
        (
            "a regular file",
            Stdio::from(std::fs::File::create(&file).unwrap()),
        ),
        (
            "/dev/null",
            Stdio::from(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/null")
                    .unwrap(),
            ),
        ),
    ];
    for (what, out) in outs {
        let o = watchdog()
            .args(["run", "--"])
            .arg(&child)
            .stdout(out)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{what}: {err}");
        assert!(!err.contains("went away"), "{what}: {err}");
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"result\""), "{text}");
}

#[test]
fn a_terminal_as_stdout_is_no_false_alarm() {
    // `script` gives the run a pseudo-terminal as stdin, stdout and stderr.
    let dir = tempfile::tempdir().unwrap();
    let child = script(
        dir.path(),
        "quiet.sh",
        &format!("{}\nsleep 1.5\n{}", say(INIT), say(RESULT_OK)),
    );
    let bin = common::BIN;
    let o = Command::new("script")
        .args(["-qec"])
        .arg(format!("{bin} run --no-status -- {}", child.display()))
        .arg("/dev/null")
        .stdin(Stdio::null())
        .output()
        .expect("`script` (util-linux) runs the test on a pseudo-terminal");
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("\"result\""), "{text}");
    assert!(!text.contains("went away"), "{text}");
}

// ---------------------------------------------------------------- a vanished host

/// A host (python3) that spawns the drop-in with pipes (stdout to `stdout_file` instead,
/// when given), writes one message and then waits; it prints the drop-in's pid.
fn host(claude: &Path, stdout_file: Option<&Path>, extra_env: &[(&str, &str)]) -> (Child, i32) {
    let out = match stdout_file {
        Some(p) => format!("open({:?}, 'wb')", p.display().to_string()),
        None => "subprocess.PIPE".into(),
    };
    let code = format!(
        "import subprocess, sys, time\n\
         p = subprocess.Popen([{drop_in:?}, '-p', '--input-format', 'stream-json', \
         '--output-format', 'stream-json', '--verbose'], stdin=subprocess.PIPE, stdout={out})\n\
         p.stdin.write(b'{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\\n')\n\
         p.stdin.flush()\n\
         print(p.pid, flush=True)\n\
         time.sleep(1000)\n",
        drop_in = DROP_IN,
    );
    let mut c = Command::new("python3");
    c.arg("-c")
        .arg(code)
        .env("AGENT_WATCHDOG_CLAUDE", claude)
        .env_remove("AGENT_WATCHDOG_DROP_IN_PID")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let mut h = c.spawn().expect("python3 runs the host");
    let mut line = String::new();
    BufReader::new(h.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("host said {line:?}"));
    (h, pid)
}

fn host_sigkilled(stdout_to_file: bool) {
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let claude = silent(dir.path(), &pids_file, false);
    let file = dir.path().join("out.jsonl");
    let sum = dir.path().join("s.json");
    let (mut h, drop_in) = host(
        &claude,
        stdout_to_file.then_some(file.as_path()),
        &[
            ("AGENT_WATCHDOG_SUMMARY", sum.to_str().unwrap()),
            ("AGENT_WATCHDOG_GRACE", "1s"),
        ],
    );
    let mut pids = read_pids(&pids_file, 2);
    let said = watch_stderr(&mut h, "stopping");
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(drop_in), "the drop-in runs while its host lives");
    let t = Instant::now();
    h.kill().unwrap();
    h.wait().unwrap();
    pids.push(drop_in);
    let left = wait_gone(&pids, Duration::from_secs(10));
    let took = t.elapsed();
    let (seen, err) = said.recv().unwrap();
    let noticed = seen
        .unwrap_or_else(|| panic!("nothing said: {err}"))
        .saturating_duration_since(t);
    eprintln!(
        "host SIGKILLed (stdout to a {}) → noticed: {} ms, tree gone (1 s grace): {} ms",
        if stdout_to_file { "file" } else { "pipe" },
        noticed.as_millis(),
        took.as_millis()
    );
    assert!(
        noticed < Duration::from_secs(2),
        "noticed after {noticed:?}: {err}"
    );
    assert_eq!(left, Vec::<i32>::new(), "left running after {took:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let s = summary(&sum);
    assert_eq!(s["kill"]["kind"], "output", "{s}");
    assert_eq!(s["exit_code"], 141, "{s}");
}

#[test]
fn a_drop_in_whose_host_is_sigkilled_stops_its_silent_claude_at_once() {
    host_sigkilled(false);
}

#[test]
fn a_drop_in_whose_host_is_sigkilled_is_noticed_with_stdout_to_a_file_too() {
    host_sigkilled(true);
}

#[test]
fn a_host_that_only_ends_its_input_is_not_taken_for_dead() {
    // SDK close(): stdin ends, the host lives on. The silent child is not stopped by us for
    // that (the host's own SIGTERM comes next).
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let claude = silent(dir.path(), &pids_file, false);
    let sum = dir.path().join("s.json");
    let mut d = Command::new(DROP_IN)
        .args(["-p", "--input-format", "stream-json"])
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .env("AGENT_WATCHDOG_SUMMARY", &sum)
        .env("AGENT_WATCHDOG_GRACE", "1s")
        .env_remove("AGENT_WATCHDOG_DROP_IN_PID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = read_pids(&pids_file, 2);
    let stdout = d.stdout.take().unwrap();
    std::thread::spawn(move || std::io::copy(&mut { stdout }, &mut std::io::sink()));
    drop(d.stdin.take());
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        d.try_wait().unwrap().is_none(),
        "stopped on a mere end of input"
    );
    signal(d.id(), 15);
    let (status, _) = wait_exit(&mut d, Duration::from_secs(15));
    assert_eq!(wait_gone(&pids, Duration::from_secs(3)), Vec::<i32>::new());
    let s = summary(&sum);
    assert_eq!(s["interrupted"], "SIGTERM", "{s}");
    assert_ne!(status.code(), Some(141));
}

// ---------------------------------------------------------------- the host's close()

/// A claude that ignores HUP, INT, QUIT and TERM, with a `setsid` grandchild that ignores them
/// too (a Bash tool's daemon); or, with `exits`, one that ends on SIGTERM and leaves the
/// stubborn grandchild behind. Both write their pid to `pids`.
fn stubborn(dir: &Path, pids: &Path, exits: bool) -> PathBuf {
    let ignore = "trap '' HUP INT QUIT TERM";
    let own = if exits { ":" } else { ignore };
    script(
        dir,
        "stubborn.sh",
        &format!(
            "{own}\n\
             echo $$ >> '{p}'\n\
             setsid sh -c \"{ignore}; echo \\$\\$ >> '{p}'; while :; do sleep 1; done\" &\n\
             {init}\n\
             while :; do sleep 1; done",
            p = pids.display(),
            init = say(INIT),
        ),
    )
}

/// The drop-in as an SDK runs it, with `claude`, the default grace, a summary.
fn spawn_drop_in(claude: &Path, sum: &Path) -> Child {
    Command::new(DROP_IN)
        .args([
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ])
        .env("AGENT_WATCHDOG_CLAUDE", claude)
        .env("AGENT_WATCHDOG_SUMMARY", sum)
        .env_remove("AGENT_WATCHDOG_GRACE")
        .env_remove("AGENT_WATCHDOG_DROP_IN_PID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What an SDK's `close()` does after ending stdin: SIGTERM, then SIGKILL 5 s later if the
/// process is still there. Returns how long the drop-in took, and whether the SIGKILL came.
fn sdk_close(d: &mut Child) -> (Duration, bool) {
    drop(d.stdin.take());
    let t = Instant::now();
    signal(d.id(), 15);
    loop {
        if d.try_wait().unwrap().is_some() {
            return (t.elapsed(), false);
        }
        if t.elapsed() >= Duration::from_secs(5) {
            let _ = d.kill();
            d.wait().unwrap();
            return (t.elapsed(), true);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn close_inside_the_host_s_time(exits: bool) {
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let claude = stubborn(dir.path(), &pids_file, exits);
    let sum = dir.path().join("s.json");
    let mut d = spawn_drop_in(&claude, &sum);
    let stdout = d.stdout.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let pids = read_pids(&pids_file, 2);
    let (took, sigkilled) = sdk_close(&mut d);
    let err = stderr_of(&mut d);
    eprintln!("SIGTERM → drop-in exit: {} ms", took.as_millis());
    assert!(
        !sigkilled,
        "the host's SIGKILL came first ({took:?}): {err}"
    );
    assert!(took < Duration::from_secs(4), "took {took:?}: {err}");
    assert_eq!(
        wait_gone(&pids, Duration::from_secs(2)),
        Vec::<i32>::new(),
        "{err}"
    );
    let s = summary(&sum);
    assert_eq!(s["interrupted"], "SIGTERM", "{s}");
    drop(out.join().unwrap());
}

#[test]
fn an_sdk_close_of_a_tree_that_ignores_sigterm_ends_before_the_host_s_sigkill() {
    close_inside_the_host_s_time(false);
}

#[test]
fn an_sdk_close_of_a_claude_that_leaves_a_stubborn_daemon_ends_before_the_host_s_sigkill() {
    close_inside_the_host_s_time(true);
}

#[test]
fn a_sigkilled_drop_in_leaves_nothing_of_its_tree_running() {
    for exits in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let pids_file = dir.path().join("pids");
        let claude = stubborn(dir.path(), &pids_file, exits);
        let sum = dir.path().join("s.json");
        let mut d = spawn_drop_in(&claude, &sum);
        let stdout = d.stdout.take().unwrap();
        std::thread::spawn(move || std::io::copy(&mut { stdout }, &mut std::io::sink()));
        let pids = read_pids(&pids_file, 2);
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        d.kill().unwrap();
        d.wait().unwrap();
        let left = wait_gone(&pids, Duration::from_secs(5));
        eprintln!(
            "drop-in SIGKILLed → tree gone: {} ms",
            t.elapsed().as_millis()
        );
        assert_eq!(left, Vec::<i32>::new(), "exits on SIGTERM: {exits}");
    }
}

#[test]
fn a_clean_end_leaves_no_guardian_behind() {
    let dir = tempfile::tempdir().unwrap();
    let claude = script(
        dir.path(),
        "ok.sh",
        &format!("{}\n{}", say(INIT), say(RESULT_OK)),
    );
    let mut d = Command::new(DROP_IN)
        .args(["-p", "hi", "--output-format", "stream-json"])
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .env_remove("AGENT_WATCHDOG_DROP_IN_PID")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = d.id();
    assert_eq!(d.wait().unwrap().code(), Some(0));
    // Its guardian (the drop-in's pid as its argument) was told, and is gone.
    let mine = format!("--agent-watchdog-guardian-of {pid} ");
    let t = Instant::now();
    loop {
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(&mine))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(3), "{left:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
