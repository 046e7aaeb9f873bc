//! The `claude-watchdog` drop-in under the real Agent SDKs, pinned and installed by
//! `scripts/install-sdk-test-deps`: TypeScript (`@anthropic-ai/claude-agent-sdk`, `query()` with
//! `pathToClaudeCodeExecutable`) and Python (`claude-agent-sdk`, `query()` with `cli_path`),
//! each against a mock that hangs. The message loop must end within the thresholds plus a
//! margin, and its last message must be our synthetic `result`.
//!
//! Needs node, python3, the SDKs in `.tools/sdk` and the real `claude`; a missing prerequisite
//! fails with the command that installs it, never a skip.
//!
//! `scripts/test-packages` reruns these tests against the installed packages:
//! `WATCHDOG_TEST_DROP_IN` replaces the drop-in under test (default: this build's
//! `claude-watchdog`), `WATCHDOG_TEST_PYTHON` the Python that has the SDK, and
//! `WATCHDOG_TEST_SDK_MODULES` the `node_modules` that holds the TypeScript SDK.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario, ScenarioOptions};
use serde_json::Value;

#[path = "common/sdk.rs"]
mod sdk;

use sdk::{drop_in, python, script, sdk_modules, Sdk, SERIAL};

struct SdkRun {
    messages: Vec<Value>,
    done: Value,
    took: Duration,
}

fn sdk_query(sdk: Sdk, scenario: &str, policy: &[(&str, &str)]) -> SdkRun {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let claude = find_claude().unwrap_or_else(|e| panic!("\n\n{e}\n"));
    let options = ScenarioOptions {
        ping_every: Duration::from_secs(1),
        ..ScenarioOptions::default()
    };
    let server =
        BlockingMockServer::start(Scenario::named_with(scenario, &options).unwrap()).unwrap();
    let run = ClaudeRun::new(
        &claude,
        server.base_url(),
        "Write hello.txt, then say hello.",
    )
    .unwrap();
    let cmd = run.command();
    let mut node = match sdk {
        Sdk::TypeScript => {
            let mut c = Command::new("node");
            c.arg(script("query.mjs"))
                .env_clear()
                .env("SDK_NODE_MODULES", sdk_modules());
            c
        }
        Sdk::Python => {
            let mut c = Command::new(python());
            c.arg(script("query.py")).env_clear();
            c
        }
    };
    node.envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("DROP_IN", drop_in())
        .env("WORK_DIR", &cmd.cwd)
        .env("PROMPT", "Write hello.txt, then say hello.")
        .env("AGENT_WATCHDOG_CLAUDE", &claude)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null());
    for (k, v) in policy {
        node.env(format!("AGENT_WATCHDOG_{k}"), v);
    }
    let t = Instant::now();
    let out = node.output().expect("run the SDK script");
    let took = t.elapsed();
    server.shutdown();
    let stdout = String::from_utf8_lossy(&out.stdout);
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
                "{scenario}: the node script did not finish: {stdout}\nstderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let messages = events
        .into_iter()
        .filter(|e| e["event"] == "message")
        .collect();
    SdkRun {
        messages,
        done,
        took,
    }
}

fn assert_ends_with_our_result(sdk: Sdk, r: &SdkRun, kind: &str, budget: Duration) {
    eprintln!(
        "{sdk:?}: {} messages in {:?}, then {}",
        r.messages.len(),
        r.took,
        r.done
    );
    assert!(
        r.took < budget,
        "the query took {:?} (budget {budget:?})",
        r.took
    );
    let last = r
        .messages
        .last()
        .unwrap_or_else(|| panic!("no message at all: {:?}", r.done));
    assert_eq!(last["type"], "result", "last message: {last}");
    assert_eq!(last["subtype"], "error_during_execution", "{last}");
    assert_eq!(
        last["terminal_reason"],
        format!("watchdog_{kind}"),
        "{last}"
    );
    assert_eq!(last["is_error"], true);
    let text = last["result"].as_str().unwrap();
    assert!(text.contains(&format!("({kind})")), "{text}");
    assert!(r
        .messages
        .iter()
        .any(|m| m["type"] == "system" && m["subtype"] == "init"));
    // Exit code 1 after an error result: both SDKs yield the message, then raise an error
    // carrying its text ("Claude Code returned an error result: agent-watchdog killed …").
    let err = r.done["error"].as_str().unwrap_or("");
    assert!(
        err.contains("agent-watchdog killed"),
        "{sdk:?} done: {}",
        r.done
    );
}

fn silent_after_tool_result(sdk: Sdk) {
    let r = sdk_query(
        sdk,
        "silent_after_tool_result",
        &[("IDLE", "4s"), ("EXTEND_FACTOR", "1"), ("GRACE", "3s")],
    );
    // startup (a few s on a busy machine) + idle 4 s + interrupt 2 s + SIGTERM, plus margin.
    assert_ends_with_our_result(sdk, &r, "idle", Duration::from_secs(45));
}

fn ping_only_stall(sdk: Sdk) {
    let r = sdk_query(
        sdk,
        "ping_only_stall",
        &[
            ("IDLE", "25s"),
            ("EXTEND_FACTOR", "1"),
            ("NO_PROGRESS", "12s"),
            ("GRACE", "3s"),
        ],
    );
    assert_ends_with_our_result(sdk, &r, "no_progress", Duration::from_secs(50));
}

#[test]
fn typescript_silent_after_tool_result_ends_the_loop_with_our_result() {
    silent_after_tool_result(Sdk::TypeScript);
}

#[test]
fn typescript_ping_only_stall_ends_the_loop_with_our_result() {
    ping_only_stall(Sdk::TypeScript);
}

#[test]
fn python_silent_after_tool_result_ends_the_loop_with_our_result() {
    silent_after_tool_result(Sdk::Python);
}

#[test]
fn python_ping_only_stall_ends_the_loop_with_our_result() {
    ping_only_stall(Sdk::Python);
}
