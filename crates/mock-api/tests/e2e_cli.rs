//! End-to-end tests: the real Claude Code CLI against the mock.
//!
//! They pin the protocol facts the watchdog depends on (the recordings in
//! `testdata/`, measured on Claude Code 2.1.332), so a CLI upgrade
//! that changes one fails here with a message saying which. A missing CLI is a
//! failure naming `scripts/install-claude`, never a skip. `CLAUDE_BIN=/path/to/claude`
//! runs them against another build.
//!
//! All tests live in this one binary so that libtest runs them concurrently; each
//! is bounded by a budget, and stalls are cut short by terminating the CLI.

mod support;

use std::time::Duration;

use mock_api::harness::{ClaudeRun, PINNED_VERSION};
use mock_api::{
    BlockingMockServer, Scenario, ScenarioOptions, BASH_TOOL_ID, FINAL_TEXT, WRITE_TOOL_ID,
};
use serde_json::Value;
use support::{claude, code, Session};

const S: fn(u64) -> Duration = Duration::from_secs;

/// How long "silent" must last in the stall tests: longer than the CLI's 10 s
/// ping-frame timer, so a synthetic frame would show up.
const SILENCE: Duration = Duration::from_secs(12);

fn named(name: &str) -> Scenario {
    Scenario::named(name).unwrap()
}

fn is(kind: &'static str) -> impl Fn(&Value) -> bool {
    move |v| {
        let t = v["type"].as_str().unwrap_or("");
        match kind.split_once('/') {
            Some((ty, sub)) => {
                t == ty
                    && (v["subtype"] == sub
                        || v.pointer("/event/type").and_then(Value::as_str) == Some(sub))
            }
            None => t == kind,
        }
    }
}

fn content_of(v: &Value) -> Vec<Value> {
    v.pointer("/message/content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Common checks of a run that ended by itself with a `result`.
#[track_caller]
fn check_result(s: &Session, subtype: &str, is_error: bool) -> Value {
    let sid = s.session_id();
    let results = s.of_kind(&format!("result/{subtype}"));
    let [result] = results.as_slice() else {
        s.fail(&format!(
            "expected exactly one result/{subtype}, got {}",
            results.len()
        ));
    };
    let r = result.json.clone();
    if r["is_error"] != is_error {
        s.fail(&format!("result.is_error should be {is_error}"));
    }
    if r["session_id"] != sid.as_str() {
        s.fail("result.session_id differs from system/init.session_id");
    }
    if s.lines.last().map(|l| l.kind()) != Some(format!("result/{subtype}")) {
        s.fail("the result is not the last stdout line");
    }
    r
}

#[test]
fn cli_is_installed_at_the_pinned_version() {
    let bin = claude();
    let version = mock_api::harness::claude_version(&bin).unwrap();
    if std::env::var_os("CLAUDE_BIN").is_none() {
        assert_eq!(
            version,
            PINNED_VERSION,
            "{} is not the pinned version; run scripts/install-claude",
            bin.display()
        );
    }
}

#[test]
fn healthy() {
    let mut s = Session::start(named("healthy"), S(60), |r| r);
    let st = s.finish(S(30));
    let sid = s.session_id();
    let r = check_result(&s, "success", false);
    s.expect_eq("result.result", r["result"].as_str(), Some(FINAL_TEXT));
    s.expect_eq(
        "result.terminal_reason",
        r["terminal_reason"].as_str(),
        Some("completed"),
    );
    if code(&st) != Some(0) {
        s.fail("exit code should be 0");
    }
    // init → status requesting → stream events → assistant → result.
    let kinds: Vec<String> = s.lines.iter().map(|l| l.kind()).collect();
    s.expect_eq(
        "the first line",
        kinds.first().map(String::as_str),
        Some("system/init"),
    );
    s.expect(
        kinds.iter().any(|k| k == "system/status"),
        "expected a system/status line",
    );
    s.expect(
        !s.of_kind("assistant").is_empty(),
        "expected assistant lines",
    );
    s.expect(
        !s.of_kind("stream_event/content_block_delta").is_empty(),
        "expected partial stream_event lines",
    );
    // Exactly one main request, and nothing else on the wire with the privacy variables.
    let reqs = s.server.requests();
    s.expect_eq("requests on the wire", reqs.len(), 1);
    s.expect_eq("the request's path", reqs[0].path.as_str(), "/v1/messages");
    s.expect_eq(
        "the request's query",
        reqs[0].query.as_deref(),
        Some("beta=true"),
    );
    let sum = reqs[0].summary.clone().unwrap();
    s.expect_eq(
        "x-claude-code-session-id (the init session id)",
        sum.session_id.as_deref(),
        Some(sid.as_str()),
    );
    s.expect_eq(
        "metadata.user_id.session_id (the init session id)",
        sum.metadata_session_id.as_deref(),
        Some(sid.as_str()),
    );
    s.expect(sum.stream, "expected a streaming request");
    s.expect(
        sum.roles.iter().any(|r| r == "system"),
        &format!(
            "expected a role:system entry in the messages, roles={:?}",
            sum.roles
        ),
    );
}

#[test]
fn tool_then_answer() {
    let mut s = Session::start(named("tool_then_answer"), S(60), |r| r);
    let st = s.finish(S(30));
    let idx = |pred: &dyn Fn(&Value) -> bool| s.lines.iter().position(|l| pred(&l.json));
    let tool_use = idx(&|v| {
        v["type"] == "assistant"
            && content_of(v).iter().any(|c| {
                c["type"] == "tool_use" && c["id"] == WRITE_TOOL_ID && c["name"] == "Write"
            })
    });
    let tool_result = idx(&|v| {
        v["type"] == "user"
            && content_of(v)
                .iter()
                .any(|c| c["type"] == "tool_result" && c["tool_use_id"] == WRITE_TOOL_ID)
    });
    match (tool_use, tool_result) {
        (Some(a), Some(b)) if a < b => {}
        _ => s.fail("expected assistant[tool_use Write] then user[tool_result] for the same id"),
    }
    let tr = &s.lines[tool_result.unwrap()].json;
    if content_of(tr).iter().any(|c| c["is_error"] == true) {
        s.fail("the Write tool_result is an error");
    }
    check_result(&s, "success", false);
    if code(&st) != Some(0) {
        s.fail("exit code should be 0");
    }
    if std::fs::read_to_string(s.dirs.cwd().join("hello.txt"))
        .ok()
        .as_deref()
        != Some("hello from mock\n")
    {
        s.fail("the Write tool did not create hello.txt in the working directory");
    }
    let reqs = s.main_requests();
    s.expect_eq("main requests", reqs.len(), 2);
    s.expect_eq(
        "tool_result ids of the second request",
        &reqs[1].summary.as_ref().unwrap().tool_result_ids,
        &[WRITE_TOOL_ID],
    );
}

#[test]
fn long_tool_heartbeats() {
    let mut s = Session::start(named("long_tool"), S(120), |r| r);
    let tool_use = s.wait_for("assistant[tool_use Bash]", S(30), |v| {
        v["type"] == "assistant"
            && content_of(v)
                .iter()
                .any(|c| c["type"] == "tool_use" && c["id"] == BASH_TOOL_ID)
    });
    let hb = s.wait_for("tool_progress heartbeat", S(60), is("tool_progress"));
    s.expect_eq(
        "tool_progress.heartbeat",
        hb.json["heartbeat"].clone(),
        true,
    );
    s.expect_eq(
        "tool_progress.parent_tool_use_id (the Bash id)",
        hb.json["parent_tool_use_id"].as_str(),
        Some(BASH_TOOL_ID),
    );
    s.expect_eq(
        "tool_progress.tool_name",
        hb.json["tool_name"].as_str(),
        Some("Bash"),
    );
    s.expect_eq(
        "tool_progress.elapsed_time_seconds",
        hb.json["elapsed_time_seconds"].clone(),
        30,
    );
    s.expect(
        hb.json["session_id"].is_string(),
        "tool_progress.session_id should be a string",
    );
    let after = hb.at.saturating_sub(tool_use.at);
    if after < S(28) || after > S(45) {
        s.fail(&format!(
            "the first heartbeat came {after:?} after the tool call, expected ~30 s"
        ));
    }
    let st = s.finish(S(40));
    if code(&st) != Some(0) {
        s.fail("exit code should be 0");
    }
    check_result(&s, "success", false);
    let output = s
        .lines
        .iter()
        .find(|l| {
            l.json["type"] == "user"
                && content_of(&l.json)
                    .iter()
                    .any(|c| c["tool_use_id"] == BASH_TOOL_ID)
        })
        .map(|l| l.json.to_string())
        .unwrap_or_default();
    if !output.contains("start\\nend") {
        s.fail("the Bash tool_result should contain its output start\\nend");
    }
}

#[test]
fn rate_limit_warning_event_under_gateway_token() {
    let mut s = Session::start(named("rate_limit_warning"), S(60), |r| r.gateway_auth());
    let st = s.finish(S(30));
    let events = s.of_kind("rate_limit_event");
    let Some(ev) = events.first() else {
        s.fail("no rate_limit_event under the gateway JWT (the CLI no longer reads unified headers this way?)");
    };
    let info = &ev.json["rate_limit_info"];
    s.expect_eq(
        "rate_limit_info.status",
        info["status"].as_str(),
        Some("allowed_warning"),
    );
    s.expect_eq(
        "rate_limit_info.utilization",
        info["utilization"].as_f64(),
        Some(0.95),
    );
    s.expect_eq(
        "rate_limit_info.rateLimitType",
        info["rateLimitType"].as_str(),
        Some("five_hour"),
    );
    s.expect(
        info["resetsAt"].is_u64(),
        &format!(
            "rate_limit_info.resetsAt should be a u64, got {}",
            info["resetsAt"]
        ),
    );
    s.expect_eq(
        "rate_limit_info.unifiedWindows.five_hour.utilization",
        info.pointer("/unifiedWindows/five_hour/utilization")
            .and_then(Value::as_f64),
        Some(0.95),
    );
    s.expect_eq(
        "rate_limit_info.unifiedWindows.five_hour.status",
        info.pointer("/unifiedWindows/five_hour/status"),
        Some(&Value::from("allowed_warning")),
    );
    s.expect_eq(
        "rate_limit_info.unifiedWindows.seven_day.utilization",
        info.pointer("/unifiedWindows/seven_day/utilization")
            .and_then(Value::as_f64),
        Some(0.42),
    );
    s.expect_eq(
        "rate_limit_info.overageStatus",
        info["overageStatus"].as_str(),
        Some("rejected"),
    );
    if events.len() != 1 {
        s.fail("expected one rate_limit_event for one response");
    }
    check_result(&s, "success", false);
    if code(&st) != Some(0) {
        s.fail("exit code should be 0");
    }
    let req = &s.main_requests()[0];
    s.expect_eq(
        "the x-api-key header under gateway auth",
        req.header("x-api-key"),
        None,
    );
    s.expect(
        req.header("authorization")
            .is_some_and(|a| a.starts_with("Bearer ey")),
        &format!(
            "gateway auth should send the JWT as a bearer token, authorization: {:?}",
            req.header("authorization")
        ),
    );
}

#[test]
fn thinking_block_gives_thinking_tokens_and_stream_events() {
    let scenario = Scenario::new("thinking").turn(
        mock_api::Turn::new()
            .thinking("Let me think. Step one. Step two.")
            .text(FINAL_TEXT),
    );
    let mut s = Session::start(scenario, S(60), |r| r);
    let st = s.finish(S(30));
    let r = check_result(&s, "success", false);
    s.expect_eq("exit code", code(&st), Some(0));
    s.expect_eq(
        "result.result (the text block)",
        r["result"].as_str(),
        Some(FINAL_TEXT),
    );
    if s.of_kind("system/thinking_tokens").is_empty() {
        s.fail("thinking deltas should produce system/thinking_tokens lines");
    }
    let thinking_delta = s.lines.iter().any(|l| {
        l.json.pointer("/event/delta/type").and_then(Value::as_str) == Some("thinking_delta")
    });
    if !thinking_delta {
        s.fail("thinking deltas should be forwarded as stream_event content_block_delta");
    }
}

#[test]
fn max_tokens_always_gives_max_output_tokens_result() {
    let mut s = Session::start(named("max_tokens_always"), S(60), |r| r);
    let st = s.finish(S(30));
    let r = check_result(&s, "success", true);
    s.expect_eq(
        "result.terminal_reason",
        r["terminal_reason"].as_str(),
        Some("api_error"),
    );
    s.expect_eq(
        "result.api_error",
        r["api_error"].as_str(),
        Some("max_output_tokens"),
    );
    if code(&st) != Some(1) {
        s.fail("exit code should be 1");
    }
    let n = s.server.main_request_count();
    if n != 4 {
        s.fail(&format!(
            "expected 4 main requests (1 + 3 automatic continuations), the mock saw {n}"
        ));
    }
    let nudges = s
        .lines
        .iter()
        .filter(|l| l.json["type"] == "user" && l.json["isSynthetic"] == true)
        .count();
    if nudges != 3 {
        s.fail(&format!(
            "expected 3 synthetic 'Output token limit hit' user messages, got {nudges}"
        ));
    }
}

#[test]
fn max_tokens_once_is_recovered_by_the_cli() {
    let mut s = Session::start(named("max_tokens_once"), S(60), |r| r);
    let st = s.finish(S(30));
    check_result(&s, "success", false);
    s.expect_eq("exit code", code(&st), Some(0));
    s.expect_eq("main requests", s.server.main_request_count(), 2);
}

#[test]
fn resume_after_max_tokens_keeps_the_session() {
    let mut first = Session::start(named("max_tokens_always"), S(60), |r| r);
    first.finish(S(30));
    let sid = first.session_id();
    let dirs = first.dirs.clone();
    drop(first);

    let server = BlockingMockServer::start(named("healthy")).unwrap();
    let run = ClaudeRun::with_dirs(claude(), server.base_url(), "continue", dirs).resume(&sid);
    let mut s = Session::spawn(server, run, S(60));
    let st = s.finish(S(30));
    if s.session_id() != sid {
        s.fail(&format!("resumed system/init.session_id should be {sid}"));
    }
    check_result(&s, "success", false);
    if code(&st) != Some(0) {
        s.fail("exit code should be 0");
    }
    let reqs = s.main_requests();
    let Some(sum) = reqs.first().and_then(|r| r.summary.clone()) else {
        s.fail("the resumed run sent no main request");
    };
    let body = reqs[0].body.as_ref().unwrap().to_string();
    let assistants = sum.roles.iter().filter(|r| *r == "assistant").count();
    s.expect_eq(
        "the resume request's session id header",
        sum.session_id.as_deref(),
        Some(sid.as_str()),
    );
    s.expect_eq(
        "the resume request's metadata session id",
        sum.metadata_session_id.as_deref(),
        Some(sid.as_str()),
    );
    s.expect_eq(
        "the resume request's first role",
        sum.roles.first().map(String::as_str),
        Some("user"),
    );
    s.expect(
        assistants >= 4,
        &format!(
            "the resume request should carry the 4 cut-off assistant turns, roles={:?}",
            sum.roles
        ),
    );
    s.expect(
        body.contains("cut off in the mid"),
        "the resume request should carry the cut-off text",
    );
    s.expect(
        sum.last_user_text
            .as_deref()
            .is_some_and(|t| t.contains("continue")),
        &format!(
            "the resume request should end with the continue prompt, got {:?}",
            sum.last_user_text
        ),
    );
}

#[test]
fn ping_only_stall_gives_ping_frames() {
    let opts = ScenarioOptions {
        ping_every: S(2),
        ..Default::default()
    };
    let mut s = Session::start(
        Scenario::named_with("ping_only_stall", &opts).unwrap(),
        S(90),
        |r| r,
    );
    let last_delta = s.wait_for(
        "the partial text delta",
        S(30),
        is("stream_event/content_block_delta"),
    );
    let p1 = s.wait_for(
        "a first stream_event ping frame",
        S(30),
        is("stream_event/ping"),
    );
    let p2 = s.wait_for("a second stream_event ping frame", S(30), |v| {
        is("stream_event/ping")(v) && v["uuid"] != p1.json["uuid"]
    });
    let first_gap = p1.at.saturating_sub(last_delta.at);
    let gap = p2.at.saturating_sub(p1.at);
    s.expect(
        first_gap >= S(8),
        &format!(
            "the first ping frame should come on the CLI's ~10 s timer, came after {first_gap:?}"
        ),
    );
    s.expect(
        (S(8)..=S(25)).contains(&gap),
        &format!("ping frames should come on the CLI's ~10 s timer, the second came {gap:?} after the first"),
    );
    s.expect_eq(
        "a ping frame's api_message_id",
        p1.json.get("api_message_id"),
        None,
    );
    s.expect(
        p1.json["session_id"].is_string(),
        &format!(
            "a ping frame carries a session_id, got {}",
            p1.json["session_id"]
        ),
    );
    s.expect_eq(
        "result lines after the partial text",
        s.of_kind("result").len(),
        0,
    );
    s.expect_eq(
        "content_block_stop lines after the partial text",
        s.of_kind("stream_event/content_block_stop").len(),
        0,
    );
    let (st, took) = s.terminate(S(5));
    s.expect_eq(
        "exit code after SIGTERM during a stall",
        code(&st),
        Some(143),
    );
    s.expect(
        took <= S(5),
        &format!("SIGTERM during a stall should end the CLI promptly, took {took:?}"),
    );
    s.drain();
    if !s.of_kind("result").is_empty() {
        s.fail("no result line is printed after SIGTERM");
    }
    s.assert_no_leftovers();
}

#[test]
fn silent_after_tool_result() {
    let mut s = Session::start(named("silent_after_tool_result"), S(90), |r| r);
    s.wait_for("user[tool_result]", S(30), |v| {
        v["type"] == "user"
            && content_of(v)
                .iter()
                .any(|c| c["tool_use_id"] == WRITE_TOOL_ID)
    });
    // The next request streams message_start and a partial text block, then stalls.
    s.wait_for("the stalled message's partial text delta", S(20), |v| {
        is("stream_event/content_block_delta")(v)
            && v.pointer("/event/delta/text").and_then(Value::as_str) == Some("Working on the ")
    });
    while let Some(l) = s.next_line(Duration::from_millis(500)) {
        if !l.kind().starts_with("stream_event/content_block_delta") {
            s.fail(&format!("unexpected {} while the stream stalls", l.kind()));
        }
    }
    s.expect_silence(SILENCE, "during a mid-stream stall without server pings");
    if s.server.main_request_count() != 2 {
        s.fail("expected exactly 2 main requests (no retry during the stall)");
    }
    let (st, _) = s.terminate(S(5));
    if code(&st) != Some(143) {
        s.fail(&format!(
            "SIGTERM during a stall should exit with code 143, got {st:?}"
        ));
    }
    s.drain();
    s.assert_no_leftovers();
}

#[test]
fn headers_only_stall_is_silent() {
    let mut s = Session::start(named("headers_only_stall"), S(90), |r| r);
    s.wait_for("system/status requesting", S(30), is("system/status"));
    s.expect_silence(SILENCE, "while the server sent only the response headers");
    let kinds: Vec<String> = s.lines.iter().map(|l| l.kind()).collect();
    if kinds != ["system/init", "system/status"] {
        s.fail("expected only system/init and system/status before the silence");
    }
    let (st, _) = s.terminate(S(5));
    if code(&st) != Some(143) {
        s.fail(&format!(
            "SIGTERM during a stall should exit with code 143, got {st:?}"
        ));
    }
    s.drain();
    s.assert_no_leftovers();
}

#[test]
fn rate_limited_then_ok_retries() {
    let mut s = Session::start(named("rate_limited_then_ok"), S(60), |r| r);
    let st = s.finish(S(40));
    let retries = s.of_kind("system/api_retry");
    let Some(retry) = retries.first() else {
        s.fail("no system/api_retry after a 429");
    };
    let r = &retry.json;
    let delay = r["retry_delay_ms"].as_u64().unwrap_or(0);
    s.expect_eq("api_retry.attempt", r["attempt"].clone(), 1);
    s.expect_eq("api_retry.error_status", r["error_status"].clone(), 429);
    s.expect_eq("api_retry.error", r["error"].as_str(), Some("rate_limit"));
    s.expect(
        r["max_retries"].is_u64(),
        &format!(
            "api_retry.max_retries should be a u64, got {}",
            r["max_retries"]
        ),
    );
    if !(1_500..=10_000).contains(&delay) {
        s.fail(&format!(
            "retry_delay_ms {delay} should follow retry-after: 2 (about 2 s)"
        ));
    }
    check_result(&s, "success", false);
    s.expect_eq("exit code", code(&st), Some(0));
    s.expect_eq("main requests", s.server.main_request_count(), 2);
}

#[test]
fn rejected_gives_rejected_rate_limit_event() {
    let mut s = Session::start(named("rejected"), S(60), |r| {
        r.gateway_auth().env("CLAUDE_CODE_MAX_RETRIES", "0")
    });
    let st = s.finish(S(40));
    let events = s.of_kind("rate_limit_event");
    let Some(ev) = events.first() else {
        s.fail("no rate_limit_event after a 429 with anthropic-ratelimit-unified-status: rejected");
    };
    let info = &ev.json["rate_limit_info"];
    s.expect_eq(
        "rate_limit_info.status",
        info["status"].as_str(),
        Some("rejected"),
    );
    s.expect_eq(
        "rate_limit_info.rateLimitType",
        info["rateLimitType"].as_str(),
        Some("five_hour"),
    );
    s.expect(
        info["resetsAt"].is_u64(),
        &format!(
            "rate_limit_info.resetsAt should be a u64, got {}",
            info["resetsAt"]
        ),
    );
    let r = check_result(&s, "success", true);
    s.expect_eq(
        "result.api_error_status",
        r["api_error_status"].clone(),
        429,
    );
    s.expect_eq(
        "result.terminal_reason",
        r["terminal_reason"].as_str(),
        Some("api_error"),
    );
    if code(&st) != Some(1) {
        s.fail("exit code should be 1");
    }
}

/// Starts `long_tool` and waits until its Bash command (`sleep 35`) is running.
fn session_with_running_bash() -> Session {
    let mut s = Session::start(named("long_tool"), S(60), |r| r);
    s.wait_for("assistant[tool_use Bash]", S(30), |v| {
        v["type"] == "assistant"
            && content_of(v)
                .iter()
                .any(|c| c["type"] == "tool_use" && c["id"] == BASH_TOOL_ID)
    });
    let until = std::time::Instant::now() + S(15);
    while !mock_api::harness::session_processes(s.dirs.root())
        .iter()
        .any(|(_, cmd)| cmd.starts_with("sleep 35"))
    {
        if std::time::Instant::now() >= until {
            s.fail("the Bash tool's `sleep 35` never showed up in /proc");
        }
        s.next_line(Duration::from_millis(100));
    }
    s
}

#[test]
fn sigterm_during_bash_stops_the_tool_children_too() {
    let mut s = session_with_running_bash();
    let (st, took) = s.terminate(S(10));
    if code(&st) != Some(143) {
        s.fail(&format!(
            "SIGTERM during a Bash tool should exit with code 143, got {st:?} after {took:?}"
        ));
    }
    s.drain();
    if !s.of_kind("result").is_empty() {
        s.fail("no result line is printed after SIGTERM");
    }
    s.assert_no_leftovers();
}

#[test]
fn sigkill_during_bash_orphans_the_tool() {
    let mut s = session_with_running_bash();
    let (st, _) = s.terminate(Duration::ZERO); // straight to SIGKILL of the CLI's process group
    if st.code().is_some() {
        s.fail(&format!("expected death by signal, got {st:?}"));
    }
    // The tool runs in its own session, so killing the CLI's group does not reach it.
    let left = mock_api::harness::session_processes(s.dirs.root());
    if !left.iter().any(|(_, cmd)| cmd.contains("sleep 35")) {
        s.fail(&format!(
            "SIGKILL of the CLI's process group used to orphan the Bash tool (own process group); now nothing is left: {left:?}. \
             The watchdog's tool clean-up assumptions may be outdated."
        ));
    }
    // The session's Drop kills the orphans by PID; check that it worked.
    let dirs = s.dirs.clone();
    drop(s);
    let until = std::time::Instant::now() + S(5);
    loop {
        let left = mock_api::harness::session_processes(dirs.root());
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "orphans survived the clean-up: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
