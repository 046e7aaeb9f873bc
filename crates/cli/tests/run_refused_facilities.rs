//! Issue 36 (3), issue 41 (6): `run` on a host that refuses a kernel facility, and as PID 1.
//!
//! - The subreaper and the parent-death signal refused by the kernel (a seccomp filter:
//!   `testdata/refuse-prctl.py`, as qemu-user and some sandboxes refuse them): the run is
//!   supervised all the same, a kill still reaches a descendant that left the process group
//!   and ignores SIGTERM, the summary lists what was refused, stderr warns once.
//! - No `/proc` (an empty tmpfs over it, in a private mount namespace): the process group is
//!   stopped (SIGTERM, the grace, SIGKILL) and the summary says `proc` was unavailable.
//! - As PID 1 of a PID namespace (a container's entrypoint): 500 orphans from one tool call
//!   are reaped as they end, not at the end of the run.
//!
//! These need root (namespaces, mounts) and `unshare`, as CI has: a missing one fails.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::{read_pids, say, script, stderr, wait_gone, BIN, INIT, RESULT_OK};

fn refuse_prctl() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/refuse-prctl.py")
}

/// `program args…` with no `AGENT_WATCHDOG_*` variable of ours, stdin `/dev/null`, to its end
/// within `limit` (a hang fails instead of hanging the suite).
fn run_within(program: &str, args: &[&str], limit: Duration) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AGENT_WATCHDOG_") {
            cmd.env_remove(k);
        }
    }
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{program} {args:?} did not end within {limit:?}");
        }
    }
}

fn summary(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no summary: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn unavailable(summary: &Value) -> Vec<&str> {
    summary["unavailable"]
        .as_array()
        .unwrap_or_else(|| panic!("no unavailable list: {summary}"))
        .iter()
        .map(|f| {
            assert!(
                f["lost"].as_str().is_some_and(|l| !l.is_empty()),
                "each says what is lost: {f}"
            );
            f["facility"].as_str().unwrap()
        })
        .collect()
}

/// A detached descendant that ignores SIGTERM: it left the process group (`setsid`) and its
/// parent exits at once, so only the tree's marker finds it. Its pid goes to `pids`.
fn detached_sleeper(pids: &Path) -> String {
    format!(
        "sh -c 'setsid sh -c \"trap \\\"\\\" TERM; echo \\$\\$ >> {}; exec sleep 1000\" &'",
        pids.display()
    )
}

#[test]
fn with_the_subreaper_and_the_death_signal_refused_a_kill_still_reaches_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "{}\n{}\nexec sleep 1000",
            say(INIT),
            detached_sleeper(&pids)
        ),
    );
    let sum = dir.path().join("summary.json");
    let t = Instant::now();
    let out = run_within(
        "python3",
        &[
            refuse_prctl().to_str().unwrap(),
            "subreaper,pdeathsig",
            "--",
            BIN,
            "run",
            "--idle",
            "2s",
            "--grace",
            "1s",
            "--summary",
            sum.to_str().unwrap(),
            "--",
            child.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert!(
        !err.contains("refuse-prctl:"),
        "the filter could not be installed: {err}"
    );
    let s = summary(&sum);
    assert_eq!(s["kill"]["kind"], "idle", "the idle kill still lands: {s}");
    assert_eq!(out.status.code(), s["exit_code"].as_i64().map(|c| c as i32));
    assert_eq!(unavailable(&s), ["subreaper", "parent_death_signal"], "{s}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("this host refused"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning: {err}");
    assert!(
        warnings[0].contains("subreaper") && warnings[0].contains("parent_death_signal"),
        "{err}"
    );
    let sleeper = read_pids(&pids, 1);
    assert_eq!(
        wait_gone(&sleeper, Duration::from_secs(5)),
        Vec::<i32>::new(),
        "the detached descendant that ignores SIGTERM was killed"
    );
    assert!(t.elapsed() < Duration::from_secs(30));
}

#[test]
fn without_proc_the_process_group_is_stopped_and_the_summary_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // A member of the child's group that ignores SIGTERM and outlives it. It writes its pid
    // once SIGTERM is ignored, and the child ends only then: a member still starting when the
    // group is signalled would die of SIGTERM and need no grace.
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "{}\nsh -c 'trap \"\" TERM; echo $$ > {p}.tmp; mv {p}.tmp {p}; exec sleep 1000' &\n\
             while [ ! -s {p} ]; do sleep 0.01; done\n{}\nexit 0",
            say(INIT),
            say(RESULT_OK),
            p = pids.display(),
        ),
    );
    let sum = dir.path().join("summary.json");
    let t = Instant::now();
    let out = run_within(
        "unshare",
        &[
            "--mount",
            "--fork",
            "sh",
            "-c",
            "mount -t tmpfs none /proc && exec \"$@\"",
            "sh",
            BIN,
            "run",
            "--grace",
            "1s",
            "--summary",
            sum.to_str().unwrap(),
            "--",
            child.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let took = t.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = summary(&sum);
    assert_eq!(unavailable(&s), ["proc"], "{s}");
    assert_eq!(
        stderr(&out)
            .lines()
            .filter(|l| l.contains("this host refused proc"))
            .count(),
        1,
        "{}",
        stderr(&out)
    );
    let member = read_pids(&pids, 1);
    assert_eq!(
        wait_gone(&member, Duration::from_secs(5)),
        Vec::<i32>::new(),
        "the group member that ignores SIGTERM was killed after the grace"
    );
    assert!(
        took >= Duration::from_secs(1),
        "it had its grace first: {took:?}"
    );
}

/// 500 orphans in one burst, as a Bash tool that starts short-lived background processes
/// leaves them: as PID 1 they re-parent to the watchdog, which reaps them as they end.
#[test]
fn as_pid_one_orphans_are_reaped_as_they_end() {
    let dir = tempfile::tempdir().unwrap();
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            r#"{init}
i=0
while [ $i -lt 500 ]; do (sleep 0 &); i=$((i+1)); done
made=$?
sleep 1
z=0
for f in /proc/[0-9]*/stat; do
  read -r l < "$f" 2>/dev/null || continue
  case "${{l##*) }}" in Z*) z=$((z+1));; esac
done
echo "zombies=$z"
{result}
exit $made"#,
            init = say(INIT),
            result = say(RESULT_OK)
        ),
    );
    let out = run_within(
        "unshare",
        &[
            "--pid",
            "--fork",
            "--mount-proc",
            BIN,
            "run",
            "--",
            child.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let zombies: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("zombies="))
        .unwrap_or_else(|| panic!("no count: {text}"))
        .parse()
        .unwrap();
    assert!(
        zombies <= 5,
        "{zombies} zombies 1 s after 500 orphans ended (at most a handful)"
    );
}

/// As PID 1 (a container's entrypoint) SIGTERM from the runtime reaches the child: PID 1
/// gets only the signals it handles, and the watchdog handles and forwards it.
#[test]
fn as_pid_one_sigterm_from_the_container_runtime_is_forwarded() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let sum = dir.path().join("summary.json");
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "trap 'echo got-term; exit 0' TERM\n{}\nwhile :; do sleep 0.05; done",
            say(INIT)
        ),
    );
    let mut unshare = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", BIN, "run", "--summary"])
        .arg(&sum)
        .arg("--")
        .arg(&child)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run unshare");
    let mut out = std::io::BufReader::new(unshare.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("init"), "{line}");
    // The watchdog, PID 1 inside: unshare's only child.
    let kids =
        std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", unshare.id())).unwrap();
    let pid1: u32 = kids.split_whitespace().next().unwrap().parse().unwrap();
    common::signal(pid1, 15);
    let t = Instant::now();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = unshare.wait().unwrap();
    assert!(rest.contains("got-term"), "the child got SIGTERM: {rest}");
    assert!(t.elapsed() < Duration::from_secs(20));
    let s = summary(&sum);
    assert_eq!(s["interrupted"], "SIGTERM", "{s}");
    assert_eq!(status.code(), s["exit_code"].as_i64().map(|c| c as i32));
}
