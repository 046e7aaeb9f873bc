//! Issue 28 (5): paths that are not plain files. `--summary` and `--record` write through
//! symbolic links to their targets and treat a process's open file (`/dev/stdout`,
//! `/dev/fd/N`) as a stream; an `--mcp-config` that is a pipe or a FIFO is left for claude to
//! read (never drained, never waited on before the spawn); a recovery marker that is a FIFO is
//! refused at once and nothing is continued.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, MCP_FINAL_TEXT};
use serde_json::{json, Value};

mod common;

use common::{say, script, stderr, watchdog, INIT, RESULT_OK};

const SID: &str = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";

/// Run `cmd` to its end within a generous bound (a hang fails instead of hanging the suite).
fn output_within(mut cmd: Command, limit: Duration) -> std::process::Output {
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("the run did not end within {limit:?}");
        }
    }
}

fn ok_child(dir: &Path) -> PathBuf {
    script(
        dir,
        "c.sh",
        &format!("{}\n{}\nexit 0", say(INIT), say(RESULT_OK)),
    )
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `--summary /dev/stdout` (as root this used to replace the machine's `/dev/stdout` link with
/// a regular file): the summary follows what the run printed, whether stdout is a file (never
/// truncated: the stream stays before it) or a pipe; `/dev/fd/1` the same.
#[test]
fn a_summary_to_dev_stdout_follows_the_stream_and_replaces_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let child = ok_child(dir.path());
    for target in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        let out_file = dir.path().join("out");
        let mut cmd = watchdog();
        cmd.args(["run", "--summary", target, "--"])
            .arg(&child)
            .stdout(std::fs::File::create(&out_file).unwrap())
            .stderr(Stdio::piped());
        let out = output_within(cmd, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(0), "{target}: {}", stderr(&out));
        let lines = json_lines(&std::fs::read_to_string(&out_file).unwrap());
        assert_eq!(lines.len(), 3, "{target}: {lines:?}");
        assert_eq!(lines[0]["type"], "system", "{target}: the stream first");
        assert_eq!(lines[1]["type"], "result");
        assert_eq!(lines[2]["outcome"], "success", "{target}: then the summary");

        let mut cmd = watchdog();
        cmd.args(["run", "--summary", target, "--"])
            .arg(&child)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = output_within(cmd, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(0), "{target}: {}", stderr(&out));
        let lines = json_lines(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(lines.len(), 3, "{target} on a pipe: {lines:?}");
        assert_eq!(lines[2]["outcome"], "success");
    }
    assert!(std::fs::symlink_metadata("/dev/stdout")
        .unwrap()
        .file_type()
        .is_symlink());
}

/// `--summary` and `--record` through a symbolic link write its target; the link stays.
#[test]
fn summary_and_record_through_a_link_write_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let child = ok_child(dir.path());
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("s.json"), "old").unwrap();
    let s_link = dir.path().join("s.json");
    std::os::unix::fs::symlink(real.join("s.json"), &s_link).unwrap();
    let r_link = dir.path().join("r.jsonl");
    std::os::unix::fs::symlink("real/r.jsonl", &r_link).unwrap();
    let mut cmd = watchdog();
    cmd.arg("run")
        .arg("--summary")
        .arg(&s_link)
        .arg("--record")
        .arg(&r_link)
        .arg("--")
        .arg(&child)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = output_within(cmd, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for link in [&s_link, &r_link] {
        assert!(
            std::fs::symlink_metadata(link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{link:?} is still a link"
        );
    }
    let s: Value = serde_json::from_slice(&std::fs::read(real.join("s.json")).unwrap()).unwrap();
    assert_eq!(s["outcome"], "success");
    let capture = std::fs::read_to_string(real.join("r.jsonl")).unwrap();
    assert!(
        capture.lines().next().unwrap().contains("\"start\""),
        "{capture}"
    );
    // No temporary file left beside the link or the target.
    for d in [dir.path(), real.as_path()] {
        let tmp = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .count();
        assert_eq!(tmp, 0, "{d:?}");
    }
}

/// An `--mcp-config` that is a FIFO with no writer, or `/dev/zero`, is neither opened nor
/// waited on: the child starts at once and gets the path; one warning says why its servers get
/// the default limits.
#[test]
fn an_mcp_config_that_is_a_fifo_or_a_device_never_blocks_the_spawn() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args");
    let child = script(
        dir.path(),
        "c.sh",
        &format!(
            "echo \"$@\" > '{}'\n{}\n{}\nexit 0",
            args.display(),
            say(INIT),
            say(RESULT_OK)
        ),
    );
    let fifo = dir.path().join("mcp.fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    for (config, what) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a character device"),
    ] {
        let mut cmd = watchdog();
        cmd.args(["run", "--"])
            .arg(&child)
            .arg("--mcp-config")
            .arg(config)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = output_within(cmd, Duration::from_secs(30));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{what}: {err}");
        assert!(
            std::fs::read_to_string(&args)
                .unwrap()
                .contains(&config.display().to_string()),
            "{what}: the child got the path"
        );
        assert_eq!(err.matches(what).count(), 1, "{what}: {err}");
        assert!(err.contains("left for claude alone"), "{what}: {err}");
    }
}

/// A fake `claude` in `dir` that counts its runs and ends cut off by the output limit.
fn cut_off_claude(dir: &Path) -> PathBuf {
    let init = format!(r#"{{"type":"system","subtype":"init","session_id":"{SID}"}}"#);
    let cut = format!(
        r#"{{"type":"result","subtype":"success","is_error":true,"stop_reason":"max_tokens","terminal_reason":"api_error","api_error":"max_output_tokens","session_id":"{SID}","num_turns":4}}"#
    );
    script(
        dir,
        "claude",
        &format!(
            "echo run >> '{}'\n{}\n{}\nexit 1",
            dir.join("runs").display(),
            say(&init),
            say(&cut)
        ),
    )
}

/// A recovery marker that is a FIFO (or a link to `/dev/zero`) used to hang `run` for good,
/// deaf to SIGTERM. Now it is refused at once with an error that says what it is, and the
/// session is not continued (fail closed).
#[test]
fn a_recovery_marker_that_is_not_a_file_is_refused_and_nothing_is_continued() {
    type Make = fn(&Path);
    let cases: [(&str, Make); 2] = [
        ("a FIFO", |p| {
            rustix::fs::mkfifoat(rustix::fs::CWD, p, rustix::fs::Mode::from_raw_mode(0o600))
                .unwrap()
        }),
        ("a symbolic link", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
    ];
    for (what, make) in cases {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let claude = cut_off_claude(d);
        let state = d.join("state");
        std::fs::create_dir_all(state.join("continued")).unwrap();
        make(&state.join("continued").join(format!("{SID}.json")));
        let mut cmd = watchdog();
        cmd.arg("run")
            .arg("--state-dir")
            .arg(&state)
            .arg("--")
            .arg(&claude)
            .args(["-p", "x", "--output-format", "stream-json", "--verbose"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let t = Instant::now();
        let out = output_within(cmd, Duration::from_secs(30));
        let err = stderr(&out);
        let runs = std::fs::read_to_string(d.join("runs")).unwrap();
        assert_eq!(runs.lines().count(), 1, "{what}: not continued\n{err}");
        assert!(
            err.contains(what),
            "{what}: the error says what it is\n{err}"
        );
        assert!(err.contains("not continuing session"), "{what}: {err}");
        assert!(!err.contains(": continuing session"), "{what}: {err}");
        assert!(t.elapsed() < Duration::from_secs(30));
    }
}

/// A state directory that is not one (a FIFO, a character device): no open blocks, the error
/// names it, and nothing is continued.
#[test]
fn a_state_dir_that_is_not_a_directory_is_refused_and_nothing_is_continued() {
    for special in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let claude = cut_off_claude(d);
        let state = if special {
            let fifo = d.join("state");
            rustix::fs::mkfifoat(
                rustix::fs::CWD,
                &fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
            )
            .unwrap();
            fifo
        } else {
            PathBuf::from("/dev/null")
        };
        let mut cmd = watchdog();
        cmd.arg("run")
            .arg("--state-dir")
            .arg(&state)
            .arg("--")
            .arg(&claude)
            .args(["-p", "x", "--output-format", "stream-json", "--verbose"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = output_within(cmd, Duration::from_secs(30));
        let err = stderr(&out);
        let runs = std::fs::read_to_string(d.join("runs")).unwrap();
        assert_eq!(runs.lines().count(), 1, "{state:?}: not continued\n{err}");
        assert!(err.contains("not continuing"), "{state:?}: {err}");
        assert!(
            err.contains(&state.display().to_string()),
            "{state:?}: {err}"
        );
    }
}

/// End to end with the real CLI: `run -- claude … --mcp-config <(echo '{…}')` (bash process
/// substitution). The watchdog used to drain the pipe, so claude got an empty config and
/// failed. Now claude reads it: the MCP server starts, the model calls its tool, and the session
/// ends with the tool's answer.
#[test]
fn an_mcp_config_from_process_substitution_reaches_claude() {
    let python_ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        python_ok,
        "this test needs python3 on PATH (testdata/mcp/mcp_probe.py)"
    );
    let claude = find_claude().unwrap_or_else(|e| panic!("{e}"));
    let server =
        BlockingMockServer::start(Scenario::mcp_tool_call("mcp__probe__wait")).expect("mock");
    let run = ClaudeRun::new(claude, server.base_url(), "Call the MCP wait tool.").unwrap();
    let root = run.dirs().root().to_path_buf();
    let pidfile = root.join("mcp_probe.pid");
    let probe = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/mcp/mcp_probe.py");
    assert!(probe.is_file(), "missing {}", probe.display());
    let cfg = json!({"mcpServers": {"probe": {
        "command": "python3",
        "args": [probe, "answer", "--pidfile", pidfile, "--tag", root],
    }}});
    let cmd = run.command();
    let summary = root.join("summary.json");
    let mut bash = Command::new("bash");
    bash.arg("-c")
        .arg(r#"exec "$WD_BIN" run --no-recover-output-limit --summary "$WD_SUMMARY" -- "$@" --mcp-config <(printf '%s' "$WD_CFG")"#)
        .arg("bash")
        .arg(&cmd.program)
        .args(&cmd.args)
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("WD_BIN", common::BIN)
        .env("WD_SUMMARY", &summary)
        .env("WD_CFG", cfg.to_string())
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = output_within(bash, Duration::from_secs(180));
    let err = stderr(&out);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // Whatever happened, the MCP server this test started must not outlive it.
    if let Some(pid) = std::fs::read_to_string(&pidfile)
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
    {
        let _ = Command::new("kill")
            .args(["-9", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
    assert_eq!(out.status.code(), Some(0), "{err}\n{stdout}");
    let lines = json_lines(&stdout);
    let init = lines
        .iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "init")
        .unwrap_or_else(|| panic!("no init\n{stdout}"));
    assert!(
        init["mcp_servers"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["name"] == "probe")),
        "claude got the config: {init}"
    );
    let result = lines
        .iter()
        .rfind(|l| l["type"] == "result")
        .expect("a result");
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result["result"]
            .as_str()
            .unwrap_or("")
            .contains(MCP_FINAL_TEXT),
        "{result}"
    );
    assert!(pidfile.exists(), "the MCP server was started");
    assert!(err.contains("left for claude alone"), "{err}");
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["outcome"], "success", "{s}");
    server.shutdown();
}
