//! Background work outstanding at a `result` is working, not waiting, with the real Claude
//! Code CLI against the mock's agent scenario (`Scenario::agents` with `background: true`):
//! a background agent that wedges after the interim result is killed (before: only the linger
//! in `-p` mode, only a ceiling in streaming-input mode), in both modes, `task_silent` and named
//! (an idle kill with a task outstanding); one that keeps working for longer than the linger is
//! left alone. A missing CLI is a failure, never a skip.

use std::process::Command;
use std::time::Duration;

use mock_api::harness::ClaudeRun;
use mock_api::{AgentScript, BlockingMockServer, CutOffs, Scenario};
use serde_json::Value;

#[path = "common/watched.rs"]
mod watched;

use watched::{claude, watch, BIN};

fn background(script: AgentScript) -> (BlockingMockServer, ClaudeRun) {
    let server = BlockingMockServer::start(Scenario::agents(
        "background_agents",
        AgentScript {
            background: true,
            ..script
        },
    ))
    .unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), "Delegate the task.").unwrap();
    (server, run)
}

fn wedged() -> AgentScript {
    AgentScript {
        wedged: true,
        ..AgentScript::default()
    }
}

/// A short linger and a longer idle: a test fails if the linger, not the idle clock, decides.
const LIMITS: [&str; 8] = [
    "--idle",
    "6s",
    "--extend-factor",
    "1",
    "--linger",
    "3s",
    "--no-progress",
    "1h",
];

#[test]
fn a_background_agent_that_wedges_after_the_interim_result_is_killed_in_both_modes() {
    // Measured (2.1.332): `-p` prints no interim result (it waits for the agent), so the idle
    // clock decided there before too; in streaming-input mode the interim `result` comes at
    // once, and the session used to wait for its host with no clock but the ceiling.
    for streaming in [None, Some(usize::MAX)] {
        let (_server, run) = background(wedged());
        let w = watch(&run, &LIMITS, streaming, Duration::from_secs(120));
        let report = w.report();
        assert_eq!(
            w.summary["kill"]["kind"], "task_silent",
            "{streaming:?}\n{report}"
        );
        assert_eq!(
            w.summary["kill"]["outstanding"]["tasks"][0]["description"], "Probe subagent task 1",
            "{report}"
        );
        assert_eq!(w.status.code(), Some(124), "{report}");
        if streaming.is_some() {
            // Killed exactly 6 s (the idle patience) after its last line, which came at or
            // after the interim result: no clock stood still for the host.
            let result = w.first_result_ms().expect("the interim result");
            let k = &w.summary["kill"];
            assert_eq!(k["since_keepalive_ms"], 6000, "{report}");
            let last_line = k["at_ms"].as_u64().unwrap() - 6000;
            assert!(last_line >= result, "{report}");
        }
    }
}

#[test]
fn a_background_agent_that_keeps_working_past_the_linger_is_left_alone() {
    // Each reply of the agent takes a few seconds (one progress line each); it is cut off
    // three times (the CLI continues it itself), then reports; the parent answers on its
    // notification. Far past the 3 s linger after the interim result, never 6 s silent.
    let (server, run) = background(AgentScript {
        cut_offs: CutOffs::Times(3),
        frame_delay: Duration::from_millis(250),
        ..AgentScript::default()
    });
    let w = watch(&run, &LIMITS, Some(2), Duration::from_secs(180));
    let report = w.report();
    assert!(w.summary["kill"].is_null(), "{report}");
    assert_eq!(w.summary["outcome"], "success", "{report}");
    assert_eq!(w.status.code(), Some(0), "{report}");
    let result = w.first_result_ms().expect("the interim result");
    let last_agent_line = w
        .lines()
        .into_iter()
        .filter(|(_, l)| l["parent_tool_use_id"].is_string())
        .map(|(t, _)| t)
        .max()
        .unwrap_or(0);
    assert!(
        last_agent_line > result + 3000,
        "the agent worked past the linger after the interim result: {report}"
    );
    assert!(server.main_request_count() >= 6, "{report}");
}

#[test]
fn replay_of_the_recorded_wedged_run_gives_the_live_kill() {
    // The capture of the streaming-input case above, kept in testdata (live: killed idle at
    // 9141 ms, 6 s after the interim result; the same kill is now named for the agent it
    // waited on, task_silent).
    let capture =
        mock_api::harness::testdata_dir().join("subagents/bg_wedged_streaming.capture.jsonl");
    let out = Command::new(BIN)
        .arg("replay")
        .arg(&capture)
        .args(LIMITS)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kill"]["kind"], "task_silent", "{v}");
    assert_eq!(v["kill"]["at_ms"], 9141, "{v}");
}
