//! Claude sessions as Temporal activities (issue 42), end to end: a real Temporal dev server, a
//! real worker (workflow + activity around the package's helper), the real Claude Code CLI
//! through the installed drop-in, against the mock Messages API. Each case runs the Python
//! helper (`agent_sdk_watchdog.temporal`) and the TypeScript one
//! (`agent-sdk-watchdog/temporal`) the same way:
//!
//! (a) a healthy session heartbeats while it runs and completes; (b) one that only sends
//! keep-alives is ended by the watchdog, and leaves no process behind; (c) a retried attempt
//! resumes the same session once, and a third never continues it again; (d) a workflow cancel
//! stops the running session's tree; (e) each ending arrives as its typed error with the kill as
//! details. Temporal never times out a session the watchdog lets run, and notices a dead worker
//! fast (issue 50): (f) a busy tool and (g) an announced back-off, each longer than the
//! heartbeat timeout, complete in one attempt; (h) a worker SIGKILLed mid-session is noticed
//! within the heartbeat timeout (the bound without a hold: max(startup, idle × extend,
//! no_progress) + grace + margin) after the kill, and another worker continues the session once.
//!
//! Needs what `scripts/test-fleet` provides: `AGENT_WATCHDOG_TEST_TEMPORAL` (the dev server),
//! `AGENT_WATCHDOG_TEST_TEMPORAL_PYTHON` (a fresh virtual environment with the built wheel,
//! `temporalio` and `claude-agent-sdk`), `AGENT_WATCHDOG_TEST_TEMPORAL_NODE` (a fresh
//! `node_modules` with the built npm packages, `@temporalio/*` and the Agent SDK) and
//! `AGENT_WATCHDOG_TEST_REDIS` (the shared ledger of the retry cases). A missing one fails.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Matcher, Scenario, ScenarioOptions, Turn, FINAL_TEXT};
use serde_json::{json, Value};

static SERIAL: Mutex<()> = Mutex::new(());

fn env(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run scripts/test-fleet (it starts the servers and builds the environments)")
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    Python,
    TypeScript,
}

const LANGS: [Lang; 2] = [Lang::Python, Lang::TypeScript];

/// The driver of `lang`, and the directory it runs from (kept while it runs).
fn driver(lang: Lang) -> (Command, tempfile::TempDir) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/temporal");
    let scratch = tempfile::tempdir().unwrap();
    match lang {
        Lang::Python => {
            let venv = PathBuf::from(env("AGENT_WATCHDOG_TEST_TEMPORAL_PYTHON"));
            let mut c = Command::new(venv.join("bin/python"));
            c.arg(dir.join("driver.py"));
            (c, scratch)
        }
        Lang::TypeScript => {
            // Node (and the worker's workflow bundler) resolve packages from the script's
            // directory up: the scripts go beside a link to the test's node_modules.
            let modules = env("AGENT_WATCHDOG_TEST_TEMPORAL_NODE");
            std::os::unix::fs::symlink(&modules, scratch.path().join("node_modules")).unwrap();
            for f in ["driver.mjs", "workflows.mjs"] {
                std::fs::copy(dir.join(f), scratch.path().join(f)).unwrap();
            }
            let mut c = Command::new("node");
            c.arg(scratch.path().join("driver.mjs"));
            (c, scratch)
        }
    }
}

/// What one driver run said.
struct Run {
    events: Vec<Value>,
    done: Value,
}

impl Run {
    fn heartbeats(&self) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["event"] == "heartbeat")
            .collect()
    }
    fn error_type(&self) -> &str {
        self.done["error"]["type"].as_str().unwrap_or("")
    }
}

fn run_case(
    lang: Lang,
    case: &str,
    server: &BlockingMockServer,
    policy: Value,
    attempts: u32,
    ledger: bool,
) -> Run {
    let claude = find_claude().unwrap_or_else(|e| panic!("\n\n{e}\n"));
    let run = ClaudeRun::new(
        &claude,
        server.base_url(),
        "Write hello.txt, then say hello.",
    )
    .unwrap();
    let cmd = run.command();
    let (mut c, _scratch) = driver(lang);
    c.envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("TEMPORAL_ADDRESS", env("AGENT_WATCHDOG_TEST_TEMPORAL"))
        .env("CASE", case)
        .env("WORK_DIR", &cmd.cwd)
        .env("PROMPT", "Write hello.txt, then say hello.")
        .env("POLICY", policy.to_string())
        .env("MAX_ATTEMPTS", attempts.to_string())
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null());
    if ledger {
        c.env("LEDGER", env("AGENT_WATCHDOG_TEST_REDIS"));
    } else {
        c.env("STATE_DIR", run.dirs().home().join("state"));
    }
    // The driver's own bound: a hang fails the case instead of hanging the suite.
    let out = c.output().expect("run the Temporal driver");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let done = events
        .iter()
        .find(|e| e["event"] == "done")
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "{lang:?} {case}: the driver did not finish ({}): {stdout}\nstderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        });
    Run { events, done }
}

fn policy(extra: Value) -> Value {
    let mut p = json!({"idle": "30s", "no_progress": "60s", "startup": "60s", "ceiling": "120s",
                       "extend_factor": 1.0, "grace": "2s", "margin": "10s"});
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    p
}

#[test]
fn a_healthy_session_heartbeats_while_it_runs_and_completes() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for lang in LANGS {
        let options = ScenarioOptions {
            ping_every: Duration::from_millis(300),
            ..ScenarioOptions::default()
        };
        let scenario = Scenario::named_with("tool_then_answer", &options).unwrap();
        let server = BlockingMockServer::start(scenario).unwrap();
        let r = run_case(lang, "healthy", &server, policy(json!({})), 1, false);
        let ok = &r.done["ok"];
        assert!(
            ok["result"].as_str().unwrap_or("").contains(FINAL_TEXT),
            "{lang:?}: {}",
            r.done
        );
        assert_eq!(ok["continued"], false);
        let sid = ok["session_id"].as_str().unwrap();
        // Heartbeats with each progress the core counts (once the next message shows it was no
        // interruption) and on a timer: each names the session, and its progress only moves on.
        let beats = r.heartbeats();
        assert!(!beats.is_empty(), "{lang:?}: {:#?}", r.events);
        let mut last = 0.0;
        for b in &beats {
            assert_eq!(b["session_id"], sid, "{b}");
            assert_eq!(b["continued"], false);
            let t = b["last_progress"].as_f64().unwrap();
            assert!(t >= last);
            last = t;
        }
        assert_eq!(r.done["left"], json!([]), "{lang:?}");
    }
}

#[test]
fn keep_alives_alone_are_ended_by_the_watchdog_with_its_tree() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for lang in LANGS {
        let options = ScenarioOptions {
            ping_every: Duration::from_millis(300),
            ..ScenarioOptions::default()
        };
        let server =
            BlockingMockServer::start(Scenario::named_with("ping_only_stall", &options).unwrap())
                .unwrap();
        let r = run_case(
            lang,
            "stall",
            &server,
            policy(json!({"no_progress": "3s"})),
            1,
            false,
        );
        assert_eq!(r.error_type(), "WatchdogNoProgress", "{lang:?}: {}", r.done);
        assert_eq!(r.done["error"]["non_retryable"], false);
        assert_eq!(r.done["error"]["details"]["kill"]["kind"], "no_progress");
        assert!(r.done["error"]["details"]["kill"]["reason"]
            .as_str()
            .unwrap()
            .contains("killed"));
        assert_eq!(
            r.done["left"],
            json!([]),
            "{lang:?}: the tree is gone 5 s later"
        );
    }
}

fn continuation_requests(server: &BlockingMockServer) -> Vec<Option<String>> {
    server
        .main_requests()
        .into_iter()
        .filter_map(|r| r.summary)
        .filter(|s| {
            s.last_user_text
                .as_deref()
                .is_some_and(|t| t.contains("stopped making progress"))
        })
        .map(|s| s.session_id)
        .collect()
}

#[test]
fn a_retry_resumes_the_same_session_once_and_a_third_attempt_never_continues_it() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for lang in LANGS {
        // Attempt 1 makes progress (a tool call and its result), then stalls: killed idle.
        // Attempt 2 resumes the same session and completes.
        let scenario = Scenario::named("silent_after_tool_result").unwrap().when(
            Matcher::LastUserTextContains("stopped making progress".into()),
            Turn::answer(FINAL_TEXT),
        );
        let server = BlockingMockServer::start(scenario).unwrap();
        let r = run_case(
            lang,
            "retry",
            &server,
            policy(json!({"idle": "3s"})),
            3,
            true,
        );
        let ok = &r.done["ok"];
        assert_eq!(ok["continued"], true, "{lang:?}: {}", r.done);
        assert_eq!(r.done["attempts"], 2);
        let first: Vec<&Value> = r
            .heartbeats()
            .into_iter()
            .filter(|b| b["attempt"] == 1)
            .collect();
        assert!(!first.is_empty(), "{lang:?}");
        let sid = first[0]["session_id"].as_str().unwrap();
        assert_eq!(ok["session_id"], sid, "the same session");
        assert_eq!(continuation_requests(&server), [Some(sid.to_owned())]);

        // The continuation stalls too (no progress): attempt 3 finds it continued, and stops.
        let scenario = Scenario::named("silent_after_tool_result").unwrap().when(
            Matcher::LastUserTextContains("stopped making progress".into()),
            Turn::answer("Still working on ").stall_forever(),
        );
        let server = BlockingMockServer::start(scenario).unwrap();
        let r = run_case(
            lang,
            "once",
            &server,
            policy(json!({"idle": "3s"})),
            3,
            true,
        );
        assert_eq!(
            r.error_type(),
            "ContinuationRefused",
            "{lang:?}: {}",
            r.done
        );
        assert_eq!(r.done["error"]["non_retryable"], true);
        assert_eq!(r.done["attempts"], 3);
        assert_eq!(
            continuation_requests(&server).len(),
            1,
            "{lang:?}: continued once"
        );
        assert_eq!(r.done["left"], json!([]));
    }
}

#[test]
fn a_workflow_cancel_stops_the_running_sessions_whole_tree() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for lang in LANGS {
        // A session that keeps making progress: tool call after tool call, each a short
        // command (a process of the tree), for far longer than the test.
        let mut scenario = Scenario::new("busy");
        for i in 0..200 {
            scenario = scenario.turn(
                Turn::new()
                    .text("Next step.")
                    .bash(format!("toolu_busy_{i}"), "sleep 0.3; echo step"),
            );
        }
        let server = BlockingMockServer::start(scenario).unwrap();
        let r = run_case(lang, "cancel", &server, policy(json!({})), 1, false);
        assert_eq!(r.done["cancelled"], true, "{lang:?}: {}", r.done);
        let sent = r
            .events
            .iter()
            .find(|e| e["event"] == "cancel_sent")
            .unwrap()["t"]
            .as_f64()
            .unwrap();
        let ended = r
            .events
            .iter()
            .find(|e| e["event"] == "attempt_ended")
            .unwrap()["t"]
            .as_f64()
            .unwrap();
        assert_eq!(r.done["left"], json!([]), "{lang:?}");
        // Delivered with the next heartbeat's answer (the next tool result, under a second),
        // then the drop-in's ladder: the grace (2 s) at most.
        assert!(
            ended - sent < 5.0,
            "{lang:?}: the attempt ended {:.1} s after the cancel",
            ended - sent
        );
    }
}

#[test]
fn each_ending_arrives_as_its_typed_error_with_the_kill_as_details() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for lang in LANGS {
        let options = ScenarioOptions {
            long_tool: Duration::from_secs(60),
            ..ScenarioOptions::default()
        };
        let server =
            BlockingMockServer::start(Scenario::named_with("long_tool", &options).unwrap())
                .unwrap();
        let r = run_case(
            lang,
            "ceiling",
            &server,
            policy(json!({"ceiling": "4s"})),
            3,
            false,
        );
        assert_eq!(r.error_type(), "WatchdogCeiling", "{lang:?}: {}", r.done);
        assert_eq!(r.done["error"]["non_retryable"], true);
        assert_eq!(r.done["attempts"], 1, "never retried");
        assert_eq!(r.done["error"]["details"]["kill"]["kind"], "ceiling");
        assert_eq!(r.done["left"], json!([]));

        let server =
            BlockingMockServer::start(Scenario::named("max_tokens_always").unwrap()).unwrap();
        let r = run_case(lang, "error", &server, policy(json!({})), 3, false);
        assert_eq!(r.error_type(), "ClaudeErrorResult", "{lang:?}: {}", r.done);
        assert_eq!(r.done["error"]["non_retryable"], true);
        assert_eq!(r.done["attempts"], 1);

        let server =
            BlockingMockServer::start(Scenario::named("silent_after_tool_result").unwrap())
                .unwrap();
        let r = run_case(
            lang,
            "idle",
            &server,
            policy(json!({"idle": "3s"})),
            1,
            false,
        );
        assert_eq!(r.error_type(), "WatchdogIdle", "{lang:?}: {}", r.done);
        assert_eq!(r.done["error"]["non_retryable"], false);
        assert_eq!(r.done["error"]["details"]["kill"]["kind"], "idle");
        assert!(r.done["error"]["details"]["session_id"].is_string());
    }
}

#[test]
fn the_readmes_example_runs_with_one_command() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = BlockingMockServer::start(Scenario::named("tool_then_answer").unwrap()).unwrap();
    let claude = find_claude().unwrap_or_else(|e| panic!("\n\n{e}\n"));
    let run = ClaudeRun::new(
        &claude,
        server.base_url(),
        "Write hello.txt, then say hello.",
    )
    .unwrap();
    let cmd = run.command();
    let venv = PathBuf::from(env("AGENT_WATCHDOG_TEST_TEMPORAL_PYTHON"));
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/temporal/run.py");
    let out = Command::new(venv.join("bin/python"))
        .arg(example)
        .arg("Write hello.txt, then say hello.")
        .arg("--cwd")
        .arg(&cmd.cwd)
        .args(["--permission-mode", "bypassPermissions"])
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("TEMPORAL_ADDRESS", env("AGENT_WATCHDOG_TEST_TEMPORAL"))
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(v["result"].as_str().unwrap().contains(FINAL_TEXT), "{v}");
    assert!(cmd.cwd.join("hello.txt").is_file());
}

/// The attempts' start times, by attempt.
fn starts(r: &Run) -> Vec<(u64, f64)> {
    r.events
        .iter()
        .filter(|e| e["event"] == "attempt_started")
        .map(|e| (e["attempt"].as_u64().unwrap(), e["t"].as_f64().unwrap()))
        .collect()
}

/// The run had one attempt, and it lasted longer than the heartbeat timeout `hb`: its start.
fn one_attempt_longer_than(r: &Run, hb: f64, lang: Lang) -> f64 {
    let starts = starts(r);
    assert_eq!(
        starts.len(),
        1,
        "{lang:?}: one attempt: {starts:?}\n{:#?}",
        r.events
    );
    let ended = r
        .events
        .iter()
        .find(|e| e["event"] == "attempt_ended")
        .unwrap()["t"]
        .as_f64()
        .unwrap();
    let t0 = starts[0].1;
    assert!(
        ended - t0 > hb,
        "{lang:?}: the attempt ran {:.1} s",
        ended - t0
    );
    t0
}

/// The heartbeats of attempt 1 during the span `[from, to]` (epoch seconds).
fn beats_between(r: &Run, from: f64, to: f64) -> usize {
    r.heartbeats()
        .into_iter()
        .filter(|b| b["attempt"] == 1)
        .filter(|b| b["t"].as_f64().is_some_and(|t| t >= from && t <= to))
        .count()
}

#[test]
fn a_busy_tool_longer_than_the_heartbeat_timeout_completes_in_one_attempt() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for lang in LANGS {
        // The tool burns CPU for 45 s (busy: the drop-in holds the no-progress kill up to
        // busy_cap) and prints nothing; Claude Code's own keep-alive (tool_progress, every 30 s)
        // keeps the idle clock. The heartbeat timeout, 35 + 2 + 1 s, is shorter than the tool.
        let scenario = Scenario::new("busy_tool")
            .turn(Turn::new().text("Running a long computation.").bash(
                "toolu_busy_1",
                "end=$((SECONDS+45)); while [ $SECONDS -lt $end ]; do :; done; echo done",
            ))
            .turn(Turn::answer(FINAL_TEXT));
        let server = BlockingMockServer::start(scenario).unwrap();
        let policy = json!({"idle": "35s", "extend_factor": 1.0, "no_progress": "5s",
                            "startup": "20s", "busy_cap": "2m", "ceiling": "5m",
                            "grace": "2s", "margin": "1s"});
        let r = run_case(lang, "busy", &server, policy, 3, false);
        let hb = r.done["heartbeat_timeout"].as_f64().unwrap();
        assert_eq!(hb, 38.0, "{lang:?}: {}", r.done);
        assert!(
            r.done["ok"]["result"]
                .as_str()
                .unwrap_or("")
                .contains(FINAL_TEXT),
            "{lang:?}: {}\n{:#?}",
            r.done,
            r.heartbeats()
        );
        let t0 = one_attempt_longer_than(&r, hb, lang);
        // Heartbeats kept coming through the tool, at least one per heartbeat timeout.
        assert!(
            beats_between(&r, t0 + 5.0, t0 + 5.0 + hb) >= 1,
            "{lang:?}: {:#?}",
            r.heartbeats()
        );
        assert_eq!(r.done["left"], json!([]));
    }
}

#[test]
fn an_announced_back_off_longer_than_the_heartbeat_timeout_completes_in_one_attempt() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for lang in LANGS {
        // A 429 with retry-after 20 s: Claude Code announces the wait (system/api_retry) and
        // prints nothing until it retries. The heartbeat timeout is 10 + 2 + 1 s.
        let options = ScenarioOptions {
            reset_in: Duration::from_secs(20),
            ..ScenarioOptions::default()
        };
        let server = BlockingMockServer::start(
            Scenario::named_with("rate_limited_then_ok", &options).unwrap(),
        )
        .unwrap();
        let policy = json!({"idle": "5s", "extend_factor": 1.0, "no_progress": "5s",
                            "startup": "10s", "ceiling": "3m", "grace": "2s", "margin": "1s"});
        let r = run_case(lang, "backoff", &server, policy, 3, false);
        let hb = r.done["heartbeat_timeout"].as_f64().unwrap();
        assert_eq!(hb, 13.0, "{lang:?}: {}", r.done);
        assert!(
            r.done["ok"]["result"]
                .as_str()
                .unwrap_or("")
                .contains(FINAL_TEXT),
            "{lang:?}: {}\n{:#?}",
            r.done,
            r.events
        );
        one_attempt_longer_than(&r, hb, lang);
        assert_eq!(server.main_request_count(), 2, "one 429, one answer");
        let retry = r
            .events
            .iter()
            .any(|e| e["event"] == "message" && e["subtype"] == "api_retry");
        assert!(
            retry,
            "{lang:?}: the back-off was announced: {:#?}",
            r.events
        );
        assert_eq!(r.done["left"], json!([]));
    }
}

#[test]
fn a_worker_killed_mid_session_is_noticed_within_the_heartbeat_timeout_and_continued_once() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for lang in LANGS {
        // Tool call after tool call (progress all along) until the continuation prompt.
        let mut scenario = Scenario::new("busy").when(
            Matcher::LastUserTextContains("stopped making progress".into()),
            Turn::answer(FINAL_TEXT),
        );
        for i in 0..200 {
            scenario = scenario.turn(
                Turn::new()
                    .text("Next step.")
                    .bash(format!("toolu_step_{i}"), "sleep 0.3; echo step"),
            );
        }
        let server = BlockingMockServer::start(scenario).unwrap();
        let policy = json!({"idle": "5s", "extend_factor": 1.0, "no_progress": "5s",
                            "startup": "10s", "ceiling": "3m", "grace": "2s", "margin": "1s"});
        let r = run_case(lang, "kill", &server, policy, 3, true);
        let hb = r.done["heartbeat_timeout"].as_f64().unwrap();
        assert_eq!(hb, 13.0, "{lang:?}: {}", r.done);
        let ok = &r.done["ok"];
        assert_eq!(
            ok["continued"], true,
            "{lang:?}: {}\n{:#?}",
            r.done, r.events
        );
        let killed = r
            .events
            .iter()
            .find(|e| e["event"] == "worker_killed")
            .unwrap()["t"]
            .as_f64()
            .unwrap();
        let second = r
            .events
            .iter()
            .find(|e| e["event"] == "attempt_started" && e["attempt"] == 2)
            .unwrap_or_else(|| panic!("{lang:?}: no second attempt: {:#?}", r.events));
        // The server scheduled the retry when it noticed the timeout, plus the retry's 200 ms.
        let noticed = second["scheduled"].as_f64().unwrap() - 0.2 - killed;
        let began = second["t"].as_f64().unwrap() - killed;
        eprintln!(
            "{lang:?}: the dead worker was noticed {noticed:.1} s after the SIGKILL (heartbeat \
             timeout {hb} s), the second attempt began after {began:.1} s"
        );
        // The heartbeat timeout runs from the last heartbeat (the throttle's 0.5 s before the
        // kill at most); the server checks its timers about once a second.
        assert!(
            noticed <= hb + 1.0,
            "{lang:?}: noticed {noticed:.1} s after the kill"
        );
        assert!(
            began <= hb + 3.0,
            "{lang:?}: the retry began {began:.1} s after the kill"
        );
        let first: Vec<&Value> = r
            .heartbeats()
            .into_iter()
            .filter(|b| b["attempt"] == 1)
            .collect();
        let sid = first.last().unwrap()["session_id"].as_str().unwrap();
        assert_eq!(ok["session_id"], sid, "the same session");
        assert_eq!(
            continuation_requests(&server),
            [Some(sid.to_owned())],
            "continued once"
        );
        assert_eq!(r.done["left"], json!([]));
    }
}
