//! Continue exactly once across machines (issue 42): many `agent-watchdog run
//! --resume-after-kill --ledger URL` of one session, as if on several machines (each its own
//! home, state directory and working directory), share nothing but a Redis or PostgreSQL
//! ledger; exactly one continues, one marker is written, at most one notice is given. A
//! ledger that goes away fails closed. The plugin's hook races the same way.
//!
//! Needs the servers `scripts/test-fleet` starts (`AGENT_WATCHDOG_TEST_REDIS`,
//! `AGENT_WATCHDOG_TEST_POSTGRES`); the test that stops a server starts its own with
//! `scripts/fleet-servers`. Run by `scripts/test-fleet` (this target has `test = false`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use common::{say, script, stderr, watchdog};

const MACHINES: usize = 5;
const RUNS: usize = 20;

fn test_url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run scripts/test-fleet (it starts Redis and PostgreSQL)")
    })
}

fn backends() -> [(&'static str, String); 2] {
    [
        ("redis", test_url("AGENT_WATCHDOG_TEST_REDIS")),
        ("postgres", test_url("AGENT_WATCHDOG_TEST_POSTGRES")),
    ]
}

/// A session id no earlier run against the same server used.
fn fresh_id() -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (u128::from(std::process::id()) << 40);
    let h = format!("{n:032x}");
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// The fleet's shared directory: the fake `claude` every machine runs, the log of its runs.
struct Fleet {
    dir: tempfile::TempDir,
    sid: String,
}

impl Fleet {
    /// A fake `claude` that waits for `go` (so a test can stop the ledger first), says it
    /// started, prints `system/init` of `sid`, then stalls until it is killed; with `--resume`
    /// it logs a continuation, prints the same init and stalls again (so the continuation is
    /// killed too, and its run gives the notice).
    fn new() -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let sid = fresh_id();
        let d = dir.path();
        let init = format!(r#"{{"type":"system","subtype":"init","session_id":"{sid}"}}"#);
        script(
            d,
            "claude",
            &format!(
                "while [ ! -e '{go}' ]; do sleep 0.05; done\n\
                 case \" $* \" in *\" --resume \"*) echo \"$$ $*\" >> '{cont}';; esac\n\
                 echo $$ >> '{started}'\n{}\nexec sleep 600",
                say(&init),
                go = d.join("go").display(),
                cont = d.join("continued").display(),
                started = d.join("started").display(),
            ),
        );
        Fleet { dir, sid }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn go(&self) {
        std::fs::write(self.path("go"), "").unwrap();
    }

    fn lines(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.path(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Run `i`, on machine `i % MACHINES`: its own home, state directory and working
    /// directory; the ledger from the environment, as a fleet's deployment sets it.
    fn spawn(&self, i: usize, ledger: &str) -> Child {
        let machine = self.path(&format!("machine-{}", i % MACHINES));
        for sub in ["home", "state", "work"] {
            std::fs::create_dir_all(machine.join(sub)).unwrap();
        }
        watchdog()
            .current_dir(machine.join("work"))
            .env("HOME", machine.join("home"))
            .env("XDG_STATE_HOME", machine.join("state"))
            .env("AGENT_WATCHDOG_LEDGER", ledger)
            .args(["run", "--resume-after-kill", "--no-status"])
            .args(["--idle", "1s", "--extend-factor", "1", "--grace", "1s"])
            .arg("--summary")
            .arg(self.path(&format!("summary-{i}.json")))
            .arg("--")
            .arg(self.path("claude"))
            .args(["-p", "do the work", "--output-format", "stream-json"])
            .args(["--verbose"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn summary(&self, i: usize) -> Value {
        let p = self.path(&format!("summary-{i}.json"));
        serde_json::from_slice(&std::fs::read(&p).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }
}

fn wait_all(children: Vec<Child>) -> Vec<Output> {
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

/// How many records the server holds for `sid` (raw, bypassing the ledger).
fn records(backend: &str, url: &str, sid: &str) -> (usize, usize) {
    let count = |kind: &str| -> usize {
        let out = match backend {
            "redis" => Command::new("redis-cli")
                .args(["-u", url, "--scan", "--pattern"])
                .arg(format!("agent-watchdog:{kind}/{sid}*"))
                .output()
                .unwrap(),
            _ => Command::new("psql")
                .args([url, "-qtAc"])
                .arg(format!(
                    "SELECT name FROM agent_watchdog_ledger WHERE name LIKE '{kind}/{sid}%'"
                ))
                .output()
                .unwrap(),
        };
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count()
    };
    (count("continued"), count("noticed"))
}

const LOST: &str = "another run already continued this session";

#[test]
fn twenty_runs_on_five_machines_continue_a_session_exactly_once() {
    for (backend, url) in backends() {
        let fleet = Fleet::new();
        let children: Vec<Child> = (0..RUNS).map(|i| fleet.spawn(i, &url)).collect();
        fleet.go();
        let outs = wait_all(children);
        let texts: Vec<String> = outs.iter().map(stderr).collect();
        let all = texts.join("\n----\n");
        // Exactly one continuation ran, on one machine.
        assert_eq!(fleet.lines("continued").len(), 1, "{backend}: {all}");
        let continuing: Vec<usize> = (0..RUNS)
            .filter(|&i| texts[i].contains("once (claude --resume)"))
            .collect();
        assert_eq!(continuing.len(), 1, "{backend}: {all}");
        let winner = continuing[0];
        // Every other run says why it did not continue, and gives no notice.
        for (i, t) in texts.iter().enumerate() {
            if i != winner {
                assert!(t.contains(LOST), "{backend}: run {i}: {t}");
                assert!(!t.contains("not continuing again"), "{backend} {i}: {t}");
                assert!(fleet.summary(i)["recovery"]["notice"].is_null());
            }
        }
        // The winner's continuation stalled too: the one notice is its.
        let s = fleet.summary(winner);
        assert_eq!(s["recovery"]["trigger"], "after_kill", "{backend}: {s}");
        assert!(!s["recovery"]["notice"].is_null(), "{backend}: {s}");
        let place = s["recovery"]["marker"].as_str().unwrap().to_owned();
        assert!(place.starts_with(&url), "{backend}: {place}");
        assert!(place.contains(&fleet.sid), "{place}");
        let notices: usize = texts.iter().map(|t| t.matches("recovery: ").count()).sum();
        assert!(notices >= 1);
        assert_eq!(
            (0..RUNS)
                .filter(|&i| !fleet.summary(i)["recovery"]["notice"].is_null())
                .count(),
            1,
            "{backend}: one notice"
        );
        // One marker and one notice record on the server; no machine's state directory has one.
        assert_eq!(records(backend, &url, &fleet.sid), (1, 1), "{backend}");
        for m in 0..MACHINES {
            let local = fleet.path(&format!("machine-{m}/state/agent-watchdog/continued"));
            assert!(!local.exists(), "{backend}: {} was used", local.display());
        }
    }
}

/// A server of our own, stopped when dropped (or by the test).
struct OwnServer {
    dir: tempfile::TempDir,
    url: String,
}

fn fleet_servers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fleet-servers")
}

impl OwnServer {
    fn start(kind: &str) -> OwnServer {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(fleet_servers())
            .arg(kind)
            .arg(dir.path())
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "cannot start {kind}: {out:?}");
        let url = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        OwnServer { dir, url }
    }

    fn stop(&self) {
        let out = Command::new(fleet_servers())
            .arg("stop")
            .arg(self.dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn a_ledger_that_goes_away_mid_race_fails_closed() {
    for kind in ["redis", "postgres"] {
        let server = OwnServer::start(kind);
        // With a password in what the runs are given: it must never show (the test servers
        // trust loopback, so PostgreSQL ignores it; Redis gets it in the query instead).
        let url = match kind {
            "postgres" => server
                .url
                .replacen("://postgres@", "://postgres:Pa55-w0rd-x@", 1),
            _ => server.url.clone(),
        };
        // Half the fleet races while the ledger is up; the other half after it went away.
        let early = Fleet::new();
        let children: Vec<Child> = (0..RUNS / 2).map(|i| early.spawn(i, &url)).collect();
        let late = Fleet {
            dir: tempfile::tempdir().unwrap(),
            sid: early.sid.clone(),
        };
        std::fs::copy(early.path("claude"), late.path("claude")).unwrap();
        let body = std::fs::read_to_string(late.path("claude"))
            .unwrap()
            .replace(
                &early.dir.path().display().to_string(),
                &late.dir.path().display().to_string(),
            );
        std::fs::write(late.path("claude"), body).unwrap();
        let late_children: Vec<Child> = (0..RUNS / 2).map(|i| late.spawn(i, &url)).collect();
        early.go();
        let early_outs = wait_all(children);
        let early_codes: Vec<Option<i32>> = early_outs.iter().map(|o| o.status.code()).collect();
        assert_eq!(early.lines("continued").len(), 1, "{kind}");
        server.stop();
        late.go();
        let late_outs = wait_all(late_children);
        // Nothing more was continued: every late run said, in one line, that the ledger is
        // unreachable, with the URL but not its password, and exited as a refused marker does.
        assert!(late.lines("continued").is_empty(), "{kind}");
        let refused_code = (0..RUNS / 2)
            .find(|&i| stderr(&early_outs[i]).contains(LOST))
            .map(|i| early_codes[i])
            .unwrap();
        for (i, o) in late_outs.iter().enumerate() {
            let t = stderr(o);
            let lines: Vec<&str> = t
                .lines()
                .filter(|l| l.contains("recovery: not continuing session"))
                .collect();
            assert_eq!(lines.len(), 1, "{kind} run {i}: {t}");
            assert!(lines[0].contains("unavailable"), "{kind} run {i}: {t}");
            assert!(!t.contains("Pa55-w0rd-x"), "{kind} run {i}: {t}");
            assert_eq!(o.status.code(), refused_code, "{kind} run {i}: {t}");
            let s = late.summary(i);
            assert!(!s.to_string().contains("Pa55-w0rd-x"), "{s}");
            assert!(s["recovery"]["marker"].is_null(), "{s}");
        }
    }
}

fn testdata(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/subagents")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The recorded hook inputs of `event` in `<recording>.hooks.jsonl`.
fn recorded_inputs(recording: &str, event: &str) -> Vec<Value> {
    testdata(&format!("{recording}.hooks.jsonl"))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["ev"] == event && v.get("input").is_some())
        .map(|v| v["input"].clone())
        .collect()
}

/// Remove what an earlier run against the same server left for `name` (a record's name).
fn forget(backend: &str, url: &str, name: &str) {
    let out = match backend {
        "redis" => Command::new("redis-cli")
            .args(["-u", url, "DEL"])
            .arg(format!("agent-watchdog:{name}"))
            .output()
            .unwrap(),
        _ => Command::new("psql")
            .args([url, "-qtAc"])
            .arg(format!(
                "CREATE TABLE IF NOT EXISTS agent_watchdog_ledger (name text PRIMARY KEY, \
                 value text NOT NULL, created_at timestamptz NOT NULL DEFAULT now()); \
                 DELETE FROM agent_watchdog_ledger WHERE name = '{name}'"
            ))
            .output()
            .unwrap(),
    };
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn the_plugins_hook_racing_on_five_machines_continues_a_subagent_once() {
    use std::io::Write;
    // A foreground agent cut off by the output limit (recorded on the real CLI): both its
    // PostToolUseFailure and the parent's Stop see it, on every machine at once.
    let rec = "b2_sub_mt_all_posttooluse";
    let agent = "ad6bbf5c233f389b1";
    let failure = recorded_inputs(rec, "PostToolUseFailure").pop().unwrap();
    let stop = recorded_inputs(rec, "Stop").pop().unwrap();
    let sid = failure["session_id"].as_str().unwrap().to_owned();
    let mut meta: Value = serde_json::from_str(&testdata("fg.meta.json")).unwrap();
    meta["agentType"] = serde_json::json!("general-purpose");
    for (backend, url) in backends() {
        forget(
            backend,
            &url,
            &format!("subagents/continued/{sid}.{agent}.json"),
        );
        let root = tempfile::tempdir().unwrap();
        let mut children = Vec::new();
        for i in 0..RUNS {
            let machine = root.path().join(format!("machine-{}", i % MACHINES));
            let project = machine.join("projects/-work");
            let subagents = project.join(&sid).join("subagents");
            std::fs::create_dir_all(&subagents).unwrap();
            std::fs::write(
                subagents.join(format!("agent-{agent}.jsonl")),
                testdata(&format!("{rec}.subagent-transcript.jsonl")),
            )
            .unwrap();
            std::fs::write(
                subagents.join(format!("agent-{agent}.meta.json")),
                meta.to_string(),
            )
            .unwrap();
            let mut input = if i % 2 == 0 {
                failure.clone()
            } else {
                stop.clone()
            };
            input["transcript_path"] =
                serde_json::json!(project.join(format!("{sid}.jsonl")).display().to_string());
            let mut child = Command::new(common::BIN)
                .arg("hook")
                .env_clear()
                .env("HOME", machine.join("home"))
                .env("XDG_STATE_HOME", machine.join("state"))
                .env("AGENT_WATCHDOG_LEDGER", &url)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            children.push((child.stdin.take().unwrap(), input, child));
        }
        // All started; now every one gets its input at once.
        let children: Vec<Child> = children
            .into_iter()
            .map(|(mut stdin, input, child)| {
                stdin.write_all(input.to_string().as_bytes()).unwrap();
                drop(stdin);
                child
            })
            .collect();
        let outs = wait_all(children);
        let mut decisions = 0;
        for (i, o) in outs.iter().enumerate() {
            assert_eq!(o.status.code(), Some(0), "{backend} hook {i}");
            assert!(o.stderr.is_empty(), "{backend} hook {i}: {}", stderr(o));
            let out = String::from_utf8_lossy(&o.stdout);
            if !out.trim().is_empty() {
                decisions += 1;
                assert!(
                    out.contains(&format!("\\\"to\\\":\\\"{agent}\\\"")),
                    "{out}"
                );
            }
        }
        assert_eq!(
            decisions, 1,
            "{backend}: one machine tells its parent, once"
        );
        let count = match backend {
            "redis" => Command::new("redis-cli")
                .args(["-u", &url, "--scan", "--pattern"])
                .arg(format!("agent-watchdog:subagents/continued/{sid}.*"))
                .output()
                .unwrap(),
            _ => Command::new("psql")
                .args([&url, "-qtAc"])
                .arg(format!(
                    "SELECT name FROM agent_watchdog_ledger WHERE name LIKE 'subagents/continued/{sid}.%'"
                ))
                .output()
                .unwrap(),
        };
        let n = String::from_utf8_lossy(&count.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count();
        assert_eq!(n, 1, "{backend}: one marker");
    }
}

/// Claude Code's project directory name for a working directory.
fn project_slug(cwd: &Path) -> String {
    cwd.display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[test]
fn twenty_real_cli_runs_on_five_machines_continue_a_session_exactly_once() {
    use mock_api::harness::{find_claude, ClaudeRun, SessionDirs};
    use mock_api::{BlockingMockServer, Matcher, Scenario, Turn, FINAL_TEXT};

    let url = test_url("AGENT_WATCHDOG_TEST_REDIS");
    let claude = find_claude().unwrap_or_else(|e| panic!("\n\n{e}\n"));
    // The session: one real run that writes a file and answers. Every later request stalls
    // mid-answer (each resumed run is killed for silence), but the continuation's.
    let scenario = Scenario::new("fleet")
        .when(
            Matcher::LastUserTextContains("stopped making progress".into()),
            Turn::answer(FINAL_TEXT),
        )
        .turn(Turn::new().text("I will write a file.").write(
            "toolu_fleet_write",
            "hello.txt",
            "hello from mock\n",
        ))
        .turn(Turn::answer(FINAL_TEXT))
        .turn(Turn::answer("Working on the next ").stall_forever());
    let server = BlockingMockServer::start(scenario).unwrap();
    let machines: Vec<_> = (0..MACHINES).map(|_| SessionDirs::new().unwrap()).collect();
    let first = ClaudeRun::with_dirs(
        &claude,
        server.base_url(),
        "Write hello.txt.",
        machines[0].clone(),
    );
    let out = first
        .command()
        .to_std()
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let sid = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["session_id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no session id: {stdout}"));
    // Every machine gets the session's transcript, where its claude looks for it.
    let source = machines[0]
        .home()
        .join(".claude/projects")
        .join(project_slug(machines[0].cwd()))
        .join(format!("{sid}.jsonl"));
    assert!(
        source.is_file(),
        "{} (the project directory's name)",
        source.display()
    );
    for m in &machines[1..] {
        let dir = m
            .home()
            .join(".claude/projects")
            .join(project_slug(m.cwd()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&source, dir.join(format!("{sid}.jsonl"))).unwrap();
    }
    let before = server.main_request_count();
    let summaries = tempfile::tempdir().unwrap();
    let children: Vec<Child> = (0..RUNS)
        .map(|i| {
            let m = machines[i % MACHINES].clone();
            let run =
                ClaudeRun::with_dirs(&claude, server.base_url(), "Go on.", m.clone()).resume(&sid);
            let mut wrapper = Command::new(common::BIN);
            wrapper
                .arg("run")
                .args(["--resume-after-kill", "--no-status", "--ledger", &url])
                .args(["--idle", "6s", "--extend-factor", "1", "--grace", "2s"])
                .arg("--summary")
                .arg(summaries.path().join(format!("{i}.json")))
                .env("XDG_STATE_HOME", m.home().join("state"))
                .arg("--");
            run.command()
                .behind(&mut wrapper)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs = wait_all(children);
    let texts: Vec<String> = outs.iter().map(stderr).collect();
    let all = texts.join("\n----\n");
    let continuations: Vec<_> = server
        .main_requests()
        .into_iter()
        .skip(before)
        .filter_map(|r| r.summary)
        .filter(|s| {
            s.last_user_text
                .as_deref()
                .is_some_and(|t| t.contains("stopped making progress"))
        })
        .collect();
    assert_eq!(
        continuations.len(),
        1,
        "one continuation reached the API: {all}"
    );
    assert_eq!(continuations[0].session_id.as_deref(), Some(sid.as_str()));
    let winners: Vec<usize> = (0..RUNS)
        .filter(|&i| texts[i].contains("once (claude --resume)"))
        .collect();
    assert_eq!(winners.len(), 1, "{all}");
    let s: Value = serde_json::from_slice(
        &std::fs::read(summaries.path().join(format!("{}.json", winners[0]))).unwrap(),
    )
    .unwrap();
    assert_eq!(s["recovery"]["continued_outcome"], "success", "{s}");
    for (i, t) in texts.iter().enumerate() {
        if i != winners[0] {
            assert!(t.contains(LOST), "run {i}: {t}");
            assert!(!t.contains("not continuing again"), "run {i}: {t}");
        }
    }
}
