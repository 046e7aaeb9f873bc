//! The exit-code table of `docs/cli.md` is the contract: every row is produced here, and the
//! table lists exactly these rows. Plus the real CLI in each output mode: no successful run of
//! any of them exits non-zero under the watchdog, and a failing one keeps claude's own code.
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{
    first_line, say, script, signal, spawn_run, stderr, watchdog, ASSISTANT, INIT, RESULT_OK,
};
use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario};
use serde_json::Value;

#[path = "common/docs.rs"]
mod docs;

/// The first column of the exit-code table of `docs/cli.md`.
fn table_rows() -> Vec<String> {
    let text = docs::read(docs::CLI);
    docs::section(docs::CLI, &text, "## Exit codes")
        .lines()
        .skip_while(|l| !l.starts_with("| code"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').nth(1).unwrap_or("").trim().to_string())
        .collect()
}

/// The README's exit codes in brief name every code of the table (the child's own in words).
#[test]
fn the_readme_names_every_code_of_the_table() {
    let readme = docs::read(docs::README);
    let brief = docs::section(docs::README, &readme, "## Exit codes");
    let named: Vec<&str> = brief
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .collect();
    assert!(brief.contains("the child's own code"), "{brief}");
    for row in table_rows().iter().filter(|r| *r != "the child's own") {
        for code in row.split(" / ") {
            assert!(
                named.contains(&code),
                "README.md's exit codes do not name {code}"
            );
        }
    }
    assert!(
        brief.contains("docs/cli.md#exit-codes"),
        "the brief links the table"
    );
}

fn run(dir: &Path, flags: &[&str], body: &str) -> (Output, Value) {
    let child = script(dir, "child.sh", body);
    let summary = dir.join("summary.json");
    let out = watchdog()
        .arg("run")
        .args(["--grace", "1s", "--summary"])
        .arg(&summary)
        .args(flags)
        .arg("--")
        .arg(&child)
        .output()
        .unwrap();
    let s = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (out, s)
}

/// Run a child that ignores the signal, send `sig` to the watchdog once it started.
fn signalled(dir: &Path, sig: i32) -> Output {
    let child = script(
        dir,
        "stubborn.sh",
        &format!(
            "trap '' HUP INT QUIT TERM\n{}\nwhile :; do sleep 1; done",
            say(INIT)
        ),
    );
    let mut w = spawn_run(&["--grace", "1s"], &child);
    first_line(&mut w);
    signal(w.id(), sig);
    w.wait_with_output().unwrap()
}

#[test]
fn every_row_of_the_table_is_what_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows = table_rows();
    assert_eq!(
        rows,
        [
            "the child's own",
            "3",
            "124",
            "125",
            "137",
            "75",
            "71",
            "141",
            "74",
            "129 / 130 / 131 / 143",
            "2",
            "1"
        ],
        "the table of docs/cli.md changed: update this test with it"
    );

    // The child's own: with a result, without one, and a signal that ended it; kill and
    // interrupted are null, so a script can tell the code is the child's.
    for (body, code) in [
        (format!("{}\n{}\nexit 5", say(INIT), say(RESULT_OK)), 5),
        ("exit 7".to_string(), 7),
        ("echo text mode; exit 0".to_string(), 0),
        (format!("{}\nexit 124", say(INIT)), 124),
        (format!("{}\nkill -9 $$", say(INIT)), 137),
    ] {
        let (out, s) = run(d, &[], &body);
        assert_eq!(out.status.code(), Some(code), "{body}: {}", stderr(&out));
        assert!(s["kill"].is_null() && s["interrupted"].is_null(), "{s}");
        assert_eq!(s["exit_code"], code);
    }
    // 3: a stream-json child that exits 0 without a result; any ending without one with --strict.
    let (out, _) = run(
        d,
        &[],
        &format!("{}\n{}\nexit 0", say(INIT), say(ASSISTANT)),
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let (out, _) = run(d, &["--strict"], "exit 1");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // 124 / 125 / 137 / 71: kills.
    let quick = ["--extend-factor", "1"];
    for (flags, body, code, kind) in [
        (
            vec!["--idle", "1s"],
            format!("{}\nsleep 30", say(INIT)),
            124,
            "idle",
        ),
        (
            vec!["--startup", "1s"],
            "sleep 30".to_string(),
            125,
            "startup",
        ),
        (
            vec!["--ceiling", "1s"],
            format!("while :; do {}; sleep 0.1; done", say(ASSISTANT)),
            137,
            "ceiling",
        ),
        (
            // The shell alone holds more than 1 MiB: over the guard from the first sample.
            vec!["--max-rss", "1M"],
            format!("{}\nsleep 30", say(INIT)),
            71,
            "memory",
        ),
    ] {
        let flags: Vec<&str> = flags.iter().chain(&quick).copied().collect();
        let (out, s) = run(d, &flags, &body);
        assert_eq!(out.status.code(), Some(code), "{kind}: {}", stderr(&out));
        assert_eq!(s["kill"]["kind"], kind, "{s}");
    }
    // 75: our stdout took 64 KB, then nothing for the output-blocked bound.
    let endless = script(
        d,
        "endless.sh",
        &format!(
            "{}
exec yes '{}'",
            say(INIT),
            ASSISTANT
        ),
    );
    let mut w = watchdog()
        .args(["run", "--output-blocked", "1s", "--grace", "1s", "--"])
        .arg(&endless)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut taken = vec![0; 64 * 1024];
    std::io::Read::read_exact(w.stdout.as_mut().unwrap(), &mut taken).unwrap();
    assert_eq!(w.wait().unwrap().code(), Some(75));
    // 141 / 74: output errors.
    let chatty = script(
        d,
        "chatty.sh",
        &format!("while :; do {}; sleep 0.05; done", say(ASSISTANT)),
    );
    let out = watchdog()
        .args(["run", "--grace", "1s", "--"])
        .arg(&chatty)
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(74), "{}", stderr(&out));
    let mut w = watchdog()
        .args(["run", "--grace", "1s", "--"])
        .arg(&chatty)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut reader = BufReader::new(w.stdout.take().unwrap());
    reader.read_line(&mut first).unwrap();
    drop(reader);
    assert_eq!(w.wait().unwrap().code(), Some(141));
    // 129 / 130 / 131 / 143: forwarded signals.
    for (sig, code) in [(1, 129), (2, 130), (3, 131), (15, 143)] {
        let out = signalled(d, sig);
        assert_eq!(
            out.status.code(),
            Some(code),
            "signal {sig}: {}",
            stderr(&out)
        );
    }
    // 2: usage error, one line first that says what is wrong.
    let out = watchdog()
        .args(["run", "--idle", "0s", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.lines().next().unwrap().starts_with("agent-watchdog: ") && err.contains("--idle"),
        "{err}"
    );
    // 1: internal error (here: the command cannot start).
    let out = watchdog()
        .args(["run", "--", "/nonexistent/command"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

fn claude() -> std::path::PathBuf {
    find_claude()
        .unwrap_or_else(|e| panic!("\n\nThis test needs the real Claude Code CLI.\n{e}\n\n"))
}

/// Run the real CLI on the `healthy` mock scenario under `agent-watchdog run`, with the
/// harness's command line rewritten by `edit`.
fn real_claude(edit: impl Fn(Vec<String>) -> Vec<String>) -> Output {
    let server = BlockingMockServer::start(Scenario::named("healthy").expect("scenario"))
        .expect("start the mock");
    let run = ClaudeRun::new(claude(), server.base_url(), "Say hello.").expect("dirs");
    let mut cmd = run.command();
    let args: Vec<String> = cmd
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    cmd.args = edit(args).into_iter().map(Into::into).collect();
    let out = cmd
        .behind(Command::new(common::BIN).args(["run", "--idle", "60s", "--"]))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    server.shutdown();
    out
}

fn without(args: Vec<String>, drop: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == "--output-format" {
            let v = it.next().unwrap_or_default();
            if !drop.contains(&"--output-format") {
                out.extend([a, v]);
            }
        } else if !drop.contains(&a.as_str()) {
            out.push(a);
        }
    }
    out
}

#[test]
fn the_real_cli_keeps_its_own_code_in_every_output_mode() {
    // Plain text: success is 0, the text passes through, the hint stays.
    let out = real_claude(|a| {
        without(
            a,
            &["--output-format", "--verbose", "--include-partial-messages"],
        )
    });
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "text mode: {err}");
    assert!(!out.stdout.is_empty(), "the text passes through");
    assert!(
        err.contains("--output-format stream-json"),
        "the hint: {err}"
    );

    // --output-format json: one result object, 0.
    let out = real_claude(|a| {
        let mut a = without(
            a,
            &["--output-format", "--verbose", "--include-partial-messages"],
        );
        a.extend(["--output-format".into(), "json".into()]);
        a
    });
    assert_eq!(out.status.code(), Some(0), "json mode: {}", stderr(&out));

    // stream-json without --verbose: claude refuses with its own 1; we say so in one line.
    let out = real_claude(|a| without(a, &["--verbose", "--include-partial-messages"]));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let ours: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("agent-watchdog: ") && l.contains("exited with code 1"))
        .collect();
    assert_eq!(ours.len(), 1, "{err}");
}
