//! The host's control requests through the `claude-watchdog` drop-in, sent by the real Agent
//! SDKs (field report N3: an SDK's `request()` resolves only when its `control_response`
//! comes; the TypeScript SDK sets no deadline). Each request is answered by the real CLI
//! within milliseconds; one the CLI never sees (`tests/sdk/lose_requests.py` drops it on its
//! way, as a CLI whose stdin loop lost it) ends at `AGENT_WATCHDOG_CONTROL_TIMEOUT`: the call
//! fails with the kill's sentence naming the request, the query ends with our synthetic
//! `result` (`watchdog_unanswered`), and the drop-in's summary names the request.
//!
//! Needs node, python3, the SDKs in `.tools/sdk` and the real `claude`; a missing prerequisite
//! fails with the command that installs it, never a skip.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario};
use serde_json::Value;

#[path = "common/sdk.rs"]
mod sdk;

use sdk::{drop_in, python, script, sdk_modules, Sdk, SERIAL};

/// What one SDK run reported, and the drop-in's summary.
struct Run {
    messages: Vec<Value>,
    request: Value,
    done: Value,
    summary: Value,
    took: Duration,
    stderr: String,
}

/// The SDK's script sends `request` after the first result; the CLI loses the requests whose
/// subtypes are in `lose`.
fn run(sdk: Sdk, request: &str, lose: &str) -> Run {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let claude = find_claude().unwrap_or_else(|e| panic!("\n\n{e}\n"));
    let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
    let session = ClaudeRun::new(&claude, server.base_url(), "Say hello.").unwrap();
    let cmd = session.command();
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let lossy = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/lose_requests.py");
    let mut c = match sdk {
        Sdk::TypeScript => {
            let mut c = Command::new("node");
            c.arg(script("control_request.mjs"))
                .env_clear()
                .env("SDK_NODE_MODULES", sdk_modules());
            c
        }
        Sdk::Python => {
            let mut c = Command::new(python());
            c.arg(script("control_request.py")).env_clear();
            c
        }
    };
    c.envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("DROP_IN", drop_in())
        .env("WORK_DIR", &cmd.cwd)
        .env("REQUEST", request)
        .env("LOSE", lose)
        .env("REAL_CLAUDE", &claude)
        .env("AGENT_WATCHDOG_CLAUDE", &lossy)
        .env("AGENT_WATCHDOG_CONTROL_TIMEOUT", "3s")
        .env("AGENT_WATCHDOG_SUMMARY", &summary)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null());
    let t = Instant::now();
    let out = c.output().expect("run the SDK script");
    let took = t.elapsed();
    server.shutdown();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let find = |name: &str| {
        events
            .iter()
            .find(|e| e["event"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{sdk:?} {request}: no {name} event: {stdout}\n{stderr}"))
    };
    let (request_event, done) = (find("request"), find("done"));
    let summary = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("{sdk:?} {request}: no summary\n{stderr}"));
    Run {
        messages: events
            .into_iter()
            .filter(|e| e["event"] == "message")
            .collect(),
        request: request_event,
        done,
        summary,
        took,
        stderr,
    }
}

/// The subtype each SDK call sends.
fn subtype(request: &str) -> &'static str {
    match request {
        "getContextUsage" | "get_context_usage" => "get_context_usage",
        "setPermissionMode" | "set_permission_mode" => "set_permission_mode",
        "interrupt" => "interrupt",
        other => panic!("unknown request {other}"),
    }
}

fn a_lost_request_is_answered_for_the_cli_then_the_run_ends(sdk: Sdk, request: &str) {
    let sub = subtype(request);
    let r = run(sdk, request, sub);
    let report = format!(
        "{sdk:?} {request}: request {}, done {}, took {:?}\nsummary {}\nstderr {}",
        r.request, r.done, r.took, r.summary, r.stderr
    );
    assert!(r.stderr.contains("lose_requests: dropped"), "{report}");
    // The call failed, with our sentence naming the request, after the 3 s bound.
    assert_eq!(r.request["ok"], false, "{report}");
    let error = r.request["error"].as_str().unwrap_or("");
    assert!(error.contains("agent-watchdog killed"), "{report}");
    assert!(
        error.contains(&format!("did not answer the host's {sub} request")),
        "{report}"
    );
    let ms = r.request["ms"].as_u64().unwrap();
    assert!((3000..20_000).contains(&ms), "{report}");
    // The query ended with our synthetic result.
    let last = r.messages.last().expect("messages");
    assert_eq!(last["type"], "result", "{report}");
    assert_eq!(last["terminal_reason"], "watchdog_unanswered", "{report}");
    // The drop-in's summary names the request.
    let k = &r.summary["kill"];
    assert_eq!(k["kind"], "unanswered", "{report}");
    assert_eq!(k["outstanding"]["requests"][0]["subtype"], sub, "{report}");
    assert!(r.took < Duration::from_secs(90), "{report}");
}

fn an_answered_request_changes_nothing(sdk: Sdk, request: &str) {
    let r = run(sdk, request, "");
    let report = format!(
        "{sdk:?} {request}: request {}, done {}\nsummary {}\nstderr {}",
        r.request, r.done, r.summary, r.stderr
    );
    assert_eq!(r.request["ok"], true, "{report}");
    assert!(r.request["ms"].as_u64() < Some(3000), "{report}");
    assert!(r.summary["kill"].is_null(), "{report}");
    assert_eq!(
        r.summary["outstanding"]["requests"],
        serde_json::json!([]),
        "{report}"
    );
}

#[test]
fn typescript_lost_requests_end_with_our_answer_and_result() {
    for request in ["getContextUsage", "setPermissionMode", "interrupt"] {
        a_lost_request_is_answered_for_the_cli_then_the_run_ends(Sdk::TypeScript, request);
    }
}

#[test]
fn python_lost_requests_end_with_our_answer_and_result() {
    for request in ["get_context_usage", "set_permission_mode", "interrupt"] {
        a_lost_request_is_answered_for_the_cli_then_the_run_ends(Sdk::Python, request);
    }
}

#[test]
fn answered_requests_change_nothing_in_either_sdk() {
    an_answered_request_changes_nothing(Sdk::TypeScript, "getContextUsage");
    an_answered_request_changes_nothing(Sdk::Python, "set_permission_mode");
}
