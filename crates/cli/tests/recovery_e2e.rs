//! Recovery in `agent-watchdog run`, end to end: the real Claude Code CLI against the mock
//! Messages API. A session is continued **exactly once** (the host lives; the marker alone
//! promises at most once, see `watchdog_core::recovery`): the mock counts the requests.
//!
//! A missing CLI is a failure naming `scripts/install-claude`, never a skip
//! (`CLAUDE_BIN=/path/to/claude` picks another build). Each run is bounded by a budget.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Matcher, RateLimitHeaders, Scenario, Turn, FINAL_TEXT};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

fn claude() -> PathBuf {
    find_claude().unwrap_or_else(|e| panic!("{e}"))
}

/// One `agent-watchdog run` of a `claude` command line, and what it left behind.
struct Watched {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    summary: Value,
}

/// Run `agent-watchdog run FLAGS --state-dir STATE --summary … -- claude …` with the claude
/// run's environment and working directory; kill it and fail after `budget`.
fn watch(run: &ClaudeRun, flags: &[&str], state: &Path, budget: Duration) -> Watched {
    let cmd = run.command();
    let out_dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (out_dir.path().join("out"), out_dir.path().join("err"));
    let summary = out_dir.path().join("summary.json");
    let mut child = cmd
        .behind(
            Command::new(BIN)
                .arg("run")
                .args(flags)
                .arg("--no-status")
                .arg("--state-dir")
                .arg(state)
                .arg("--summary")
                .arg(&summary)
                .arg("--"),
        )
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let status = common::wait_within(&mut child, budget, "agent-watchdog run", &err_path);
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let summary = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    Watched {
        status,
        stdout: String::from_utf8_lossy(&std::fs::read(&out_path).unwrap()).into_owned(),
        stderr,
        summary,
    }
}

#[test]
fn an_output_limit_stop_is_continued_once_then_noticed_once_and_never_again() {
    let claude = claude();
    let server = BlockingMockServer::start(Scenario::named("max_tokens_always").unwrap()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let run = ClaudeRun::new(&claude, server.base_url(), "Write a very long essay.").unwrap();
    let w = watch(&run, &[], state.path(), Duration::from_secs(90));
    let s = &w.summary;
    let sid = s["session_id"].as_str().unwrap_or_default().to_owned();
    assert!(!sid.is_empty(), "{s}");

    // The first run: 1 request + the CLI's own 3 continuations; then exactly one resumed
    // run of the same session (again 4 requests), and no more.
    let reqs = server.main_requests();
    assert_eq!(reqs.len(), 8, "stderr:\n{}", w.stderr);
    let resume = reqs[4].summary.clone().unwrap();
    assert_eq!(resume.session_id.as_deref(), Some(sid.as_str()));
    assert!(
        resume.roles.iter().filter(|r| *r == "assistant").count() >= 4,
        "the resume request carries the earlier conversation: {:?}",
        resume.roles
    );
    assert!(resume
        .last_user_text
        .as_deref()
        .is_some_and(|t| t.contains("output token limit")));

    assert_eq!(
        w.stderr.matches("continuing session").count(),
        1,
        "{}",
        w.stderr
    );
    assert_eq!(
        w.stderr.matches("not continuing again").count(),
        1,
        "{}",
        w.stderr
    );
    assert!(w
        .stderr
        .lines()
        .filter(|l| l.contains("recovery"))
        .all(|l| l.starts_with("agent-watchdog: ")));
    let r = &s["recovery"];
    assert_eq!(r["trigger"], "output_limit", "{s}");
    assert_eq!(r["continued_outcome"], "error_result", "{s}");
    assert_eq!(r["notice"]["session_id"], sid.as_str(), "{s}");
    assert!(Path::new(r["marker"].as_str().unwrap()).is_file(), "{s}");
    // The final run's code: an error result.
    assert_eq!(w.status.code(), Some(1));

    // The user resumes the session by hand under the watchdog: it is cut off again, and
    // nothing is continued (the marker exists; the notice was given).
    let again =
        ClaudeRun::with_dirs(&claude, server.base_url(), "go on", run.dirs().clone()).resume(&sid);
    let w2 = watch(&again, &[], state.path(), Duration::from_secs(60));
    assert_eq!(server.main_request_count(), 12, "stderr:\n{}", w2.stderr);
    assert!(!w2.stderr.contains("continuing session"), "{}", w2.stderr);
    assert!(!w2.stderr.contains("not continuing again"), "{}", w2.stderr);
    assert!(w2.summary["recovery"]["notice"].is_null());
    assert_eq!(w2.summary["session_id"], sid.as_str());
    assert_eq!(w2.status.code(), Some(1));
}

#[test]
fn a_session_killed_for_silence_is_resumed_once_and_completes() {
    let claude = claude();
    let scenario = Scenario::new("silent_then_answers_the_resume")
        .when(
            Matcher::LastUserTextContains("stopped making progress".into()),
            Turn::answer(FINAL_TEXT),
        )
        .turn(Turn::new().text("I will write a file.").write(
            "toolu_mock_write_1",
            "hello.txt",
            "hello from mock\n",
        ))
        .turn(Turn::answer("Working on the next ").stall_forever());
    let server = BlockingMockServer::start(scenario).unwrap();
    let state = tempfile::tempdir().unwrap();
    let run = ClaudeRun::new(&claude, server.base_url(), "Write hello.txt, then more.").unwrap();
    let w = watch(
        &run,
        &[
            "--resume-after-kill",
            // Long enough that a loaded machine's slow claude (silent for seconds between a
            // tool result and its next request) is not taken for the stall this test scripts:
            // at 2 s, one run of twenty under load was killed before its second request.
            "--idle",
            "6s",
            "--extend-factor",
            "1",
            "--grace",
            "2s",
        ],
        state.path(),
        Duration::from_secs(90),
    );
    let s = &w.summary;
    assert_eq!(s["outcome"], "killed", "{s}\n{}", w.stderr);
    assert_eq!(s["kill"]["kind"], "idle", "{s}");
    assert_eq!(s["recovery"]["trigger"], "after_kill", "{s}");
    assert_eq!(s["recovery"]["continued_outcome"], "success", "{s}");
    assert_eq!(w.status.code(), Some(0), "{}", w.stderr);
    assert!(w.stdout.contains(FINAL_TEXT));
    assert_eq!(
        w.stderr.matches("continuing session").count(),
        1,
        "{}",
        w.stderr
    );

    let reqs = server.main_requests();
    assert_eq!(reqs.len(), 3, "{}", w.stderr);
    let resume = reqs[2].summary.clone().unwrap();
    assert_eq!(resume.session_id.as_deref(), s["session_id"].as_str());
    assert!(run.dirs().cwd().join("hello.txt").is_file());
}

#[test]
fn a_rejected_rate_limit_is_waited_out_then_resumed_once() {
    let claude = claude();
    let reset_in = Duration::from_secs(4);
    let scenario = Scenario::new("rejected_then_answers_the_resume")
        .when(
            Matcher::LastUserTextContains("rate limit has reset".into()),
            Turn::answer(FINAL_TEXT),
        )
        .turn(
            Turn::error(429, "rate_limit_error", "mock: usage limit reached")
                .retry_after(reset_in)
                .rate_limit(RateLimitHeaders::rejected(reset_in)),
        );
    let server = BlockingMockServer::start(scenario).unwrap();
    let state = tempfile::tempdir().unwrap();
    let run = ClaudeRun::new(&claude, server.base_url(), "Summarise the repo.")
        .unwrap()
        .gateway_auth()
        .env("CLAUDE_CODE_MAX_RETRIES", "0");
    let w = watch(
        &run,
        &["--wait-for-reset", "--reset-margin", "0s"],
        state.path(),
        Duration::from_secs(90),
    );
    let s = &w.summary;
    assert_eq!(
        s["recovery"]["trigger"], "rate_limit_wait",
        "{s}\n{}",
        w.stderr
    );
    assert_eq!(s["recovery"]["continued_outcome"], "success", "{s}");
    assert!(s["recovery"]["waited_until_ms"].is_u64(), "{s}");
    assert!(w.stderr.contains("rate limited; waiting"), "{}", w.stderr);
    assert_eq!(w.status.code(), Some(0), "{}", w.stderr);
    assert!(w.stdout.contains(FINAL_TEXT));

    let reqs = server.main_requests();
    assert_eq!(reqs.len(), 2, "{}", w.stderr);
    // The resume went out after the reset, not before (whole-second resets: generous bound).
    assert!(
        reqs[1].at_ms >= reqs[0].at_ms + 2_000,
        "resumed {} ms after the rejection",
        reqs[1].at_ms - reqs[0].at_ms
    );
    assert_eq!(
        reqs[1].summary.as_ref().unwrap().session_id.as_deref(),
        s["session_id"].as_str()
    );
}
