//! `agent-watchdog hook`, JSON in and JSON out, against the hook inputs and subagent transcripts
//! the real CLI recorded (testdata/subagents). Each case lays out a session directory the way
//! Claude Code 2.1.332 does (`<project>/<session>.jsonl`, `<project>/<session>/subagents/
//! agent-<id>.jsonl` + `.meta.json`), points the recorded input's `transcript_path` at it, and runs
//! the binary. Whatever happens, the hook exits 0; errors are one stderr line and no decision.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/subagents")
        .join(name)
}

fn read(name: &str) -> String {
    let p = testdata(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The recorded inputs of `event` in `<recording>.hooks.jsonl`, in order.
fn recorded_inputs(recording: &str, event: &str) -> Vec<Value> {
    read(&format!("{recording}.hooks.jsonl"))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["ev"] == event && v.get("input").is_some())
        .map(|v| v["input"].clone())
        .collect()
}

/// A project directory holding one session's subagent files, and a state directory.
struct World {
    _root: tempfile::TempDir,
    project: PathBuf,
    state: PathBuf,
}

impl World {
    fn new() -> World {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("projects/-home-user-project");
        std::fs::create_dir_all(&project).unwrap();
        let state = root.path().join("state");
        World {
            project,
            state,
            _root: root,
        }
    }

    fn subagents(&self, session: &str) -> PathBuf {
        let d = self.project.join(session).join("subagents");
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Put an agent's transcript (text) and meta (`agentType`, `toolUseId`) in place.
    fn agent(&self, session: &str, agent: &str, transcript: &str, agent_type: &str) {
        let d = self.subagents(session);
        std::fs::write(d.join(format!("agent-{agent}.jsonl")), transcript).unwrap();
        let mut meta: Value = serde_json::from_str(&read("fg.meta.json")).unwrap();
        meta["agentType"] = json!(agent_type);
        std::fs::write(d.join(format!("agent-{agent}.meta.json")), meta.to_string()).unwrap();
    }

    /// `input` with its `transcript_path` moved into this world.
    fn localise(&self, mut input: Value) -> Value {
        let sid = input["session_id"].as_str().unwrap().to_owned();
        input["transcript_path"] = json!(self
            .project
            .join(format!("{sid}.jsonl"))
            .display()
            .to_string());
        input
    }

    fn hook(&self, input: &Value) -> Out {
        self.hook_raw(input.to_string().as_bytes(), &[])
    }

    fn hook_raw(&self, stdin: &[u8], env: &[(&str, &str)]) -> Out {
        let mut child = Command::new(BIN)
            .arg("hook")
            .env_clear()
            .env("AGENT_WATCHDOG_STATE_DIR", &self.state)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "the hook always exits 0");
        let stdout = String::from_utf8(out.stdout).unwrap();
        Out {
            json: (!stdout.trim().is_empty())
                .then(|| serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    fn markers(&self, kind: &str) -> Vec<String> {
        let dir = self.state.join("subagents").join(kind);
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

struct Out {
    json: Option<Value>,
    stderr: String,
}

impl Out {
    fn silent(&self) -> bool {
        self.json.is_none() && self.stderr.is_empty()
    }
    fn failed_closed(&self) -> bool {
        self.json.is_none() && self.stderr.lines().count() == 1
    }
}

fn setup_b2(w: &World) -> (Value, String, String) {
    let input = recorded_inputs("b2_sub_mt_all_posttooluse", "PostToolUseFailure")
        .pop()
        .unwrap();
    let sid = input["session_id"].as_str().unwrap().to_owned();
    let agent = "ad6bbf5c233f389b1".to_owned();
    w.agent(
        &sid,
        &agent,
        &read("b2_sub_mt_all_posttooluse.subagent-transcript.jsonl"),
        "general-purpose",
    );
    (w.localise(input), sid, agent)
}

#[test]
fn post_tool_use_failure_of_a_cut_off_agent_asks_the_parent_once_to_send_message() {
    let w = World::new();
    let (input, sid, agent) = setup_b2(&w);
    let out = w.hook(&input);
    let v = out.json.expect("a decision");
    assert_eq!(
        v["hookSpecificOutput"]["hookEventName"],
        "PostToolUseFailure"
    );
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.contains(&format!("\"to\":\"{agent}\"")), "{ctx}");
    assert!(ctx.contains("SendMessage") && ctx.contains("select:SendMessage"));
    assert!(v.get("decision").is_none(), "never a block here");
    assert_eq!(w.markers("continued"), [format!("{sid}.{agent}.json")]);
    // The same event again (a duplicate), then the Stop hook that follows: nothing more.
    assert!(w.hook(&input).silent());
    let stop = w.localise(
        recorded_inputs("b2_sub_mt_all_posttooluse", "Stop")
            .pop()
            .unwrap(),
    );
    assert!(w.hook(&stop).silent());
    assert_eq!(w.markers("continued").len(), 1);
}

#[test]
fn post_tool_use_failure_acts_before_the_transcript_is_written_and_stop_agrees() {
    // Measured: when PostToolUseFailure runs, the agent's transcript often still ends in its
    // prompt; the synthetic entry comes later. The reported error decides then, and the Stop
    // that sees the finished transcript takes it for the same failure.
    let w = World::new();
    let (input, sid, agent) = setup_b2(&w);
    let full = read("b2_sub_mt_all_posttooluse.subagent-transcript.jsonl");
    let prompt_only = full.lines().next().unwrap().to_owned() + "\n";
    w.agent(&sid, &agent, &prompt_only, "general-purpose");
    let v = w
        .hook(&input)
        .json
        .expect("continued from the reported error");
    assert!(v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .contains(&agent));
    w.agent(&sid, &agent, &full, "general-purpose");
    let stop = w.localise(
        recorded_inputs("b2_sub_mt_all_posttooluse", "Stop")
            .pop()
            .unwrap(),
    );
    assert!(
        w.hook(&stop).silent(),
        "the same failure, no second instruction"
    );
    assert_eq!(w.markers("continued").len(), 1);
    assert!(w.markers("noticed").is_empty());
}

#[test]
fn stop_catches_a_cut_off_agent_foreground_or_background_once() {
    for (rec, agent) in [
        ("a2_sub_mt_all_fg", "a02f401cf8728967a"),
        ("a8_sub_mt_all_bg", "aa9ccd76cae7473a6"),
    ] {
        let w = World::new();
        let stops = recorded_inputs(rec, "Stop");
        let stop = w.localise(stops.last().unwrap().clone());
        let sid = stop["session_id"].as_str().unwrap().to_owned();
        w.agent(
            &sid,
            agent,
            &read(&format!("{rec}.subagent-transcript.jsonl")),
            "general-purpose",
        );
        let v = w.hook(&stop).json.expect("a block");
        assert_eq!(v["decision"], "block", "{rec}");
        let reason = v["reason"].as_str().unwrap();
        assert!(reason.contains(&format!("\"to\":\"{agent}\"")), "{reason}");
        assert_eq!(w.markers("continued"), [format!("{sid}.{agent}.json")]);
        // The next Stop (stop_hook_active or not) sees the same failure: no second block.
        let mut again = stop.clone();
        again["stop_hook_active"] = json!(true);
        assert!(w.hook(&again).silent(), "{rec}");
        assert!(w.hook(&stop).silent(), "{rec}");
    }
}

#[test]
fn healthy_and_continued_agents_are_never_blocked_and_the_state_dir_is_not_touched() {
    for (rec, agent) in [
        ("a1_healthy_fg", "a467cc3591c867291"),
        ("c2_recipe_fg", "ace5c7e0659c4f481"),
        ("b1_sub_mt4_sendmessage", "a8e6baa17f0f3def4"),
    ] {
        let w = World::new();
        let transcript = read(&format!("{rec}.subagent-transcript.jsonl"));
        let sid = transcript
            .lines()
            .next()
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .unwrap()["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        w.agent(&sid, agent, &transcript, "general-purpose");
        let stop = w.localise(json!({
            "session_id": sid, "transcript_path": "", "hook_event_name": "Stop",
            "stop_hook_active": false, "last_assistant_message": "PARENT-FINAL", "background_tasks": []
        }));
        assert!(w.hook(&stop).silent(), "{rec}");
        assert!(!w.state.exists(), "{rec}: the ledger was opened");
    }
}

#[test]
fn a_second_failure_after_the_continuation_gets_one_notice() {
    let w = World::new();
    let (input, sid, agent) = setup_b2(&w);
    assert!(w.hook(&input).json.is_some(), "continued once");
    // The continued agent fails again: a second synthetic entry with its own uuid.
    let first = read("b2_sub_mt_all_posttooluse.subagent-transcript.jsonl");
    let synthetic = first
        .lines()
        .rev()
        .find(|l| l.contains("\"isApiErrorMessage\":true"))
        .unwrap()
        .to_owned();
    let mut second: Value = serde_json::from_str(&synthetic).unwrap();
    second["uuid"] = json!("11111111-2222-4333-8444-555555555555");
    let transcript = format!(
        "{first}{}\n{second}\n",
        json!({"type":"user","uuid":"u-msg","message":{"role":"user","content":"MOCK-CONTINUE: continue"}})
    );
    w.agent(&sid, &agent, &transcript, "general-purpose");
    let stop = w.localise(
        recorded_inputs("b2_sub_mt_all_posttooluse", "Stop")
            .pop()
            .unwrap(),
    );
    let v = w.hook(&stop).json.expect("the notice");
    assert_eq!(v["decision"], "block");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.starts_with("agent-watchdog notice"), "{reason}");
    assert!(
        reason.contains(&agent) && reason.contains("TaskStop"),
        "{reason}"
    );
    assert!(
        !reason.contains("\"to\""),
        "no second continuation: {reason}"
    );
    assert_eq!(w.markers("noticed"), [format!("{sid}.{agent}.json")]);
    assert!(w.hook(&stop).silent(), "the notice is given once");
}

#[test]
fn one_shot_agents_and_other_tools_are_left_alone() {
    let w = World::new();
    let (input, sid, agent) = setup_b2(&w);
    w.agent(
        &sid,
        &agent,
        &read("b2_sub_mt_all_posttooluse.subagent-transcript.jsonl"),
        "Explore",
    );
    assert!(w.hook(&input).silent());
    let mut bash = input.clone();
    bash["tool_name"] = json!("Bash");
    assert!(w.hook(&bash).silent());
    let mut unknown = input.clone();
    unknown["tool_use_id"] = json!("toolu_other");
    assert!(w.hook(&unknown).silent());
    assert!(w.markers("continued").is_empty());
}

#[test]
fn the_output_limit_switch_turns_the_hook_off() {
    let w = World::new();
    let (input, _, _) = setup_b2(&w);
    let out = w.hook_raw(
        input.to_string().as_bytes(),
        &[("AGENT_WATCHDOG_NO_RECOVER_OUTPUT_LIMIT", "1")],
    );
    assert!(out.silent());
    assert!(!w.state.exists());
}

#[test]
fn errors_fail_closed_exit_0_no_decision_one_stderr_line() {
    let w = World::new();
    for bad in [
        &b""[..],
        b"not json",
        b"[1,2]",
        b"{\"hook_event_name\":\"Stop\"}",
        b"\xff\xfe",
    ] {
        let out = w.hook_raw(bad, &[]);
        assert!(out.failed_closed(), "{bad:?}: {}", out.stderr);
    }
    // An unwritable state directory: a file where the directory should be.
    let (input, _, _) = setup_b2(&w);
    std::fs::write(&w.state, "not a directory").unwrap();
    let out = w.hook(&input);
    assert!(out.failed_closed(), "{}", out.stderr);
    assert!(
        out.stderr.starts_with("agent-watchdog hook:"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_unreadable_transcript_fails_closed_for_that_agent_only() {
    let w = World::new();
    let (_input, sid, agent) = setup_b2(&w);
    // A second agent whose transcript is a directory: unreadable.
    let d = w.subagents(&sid);
    std::fs::create_dir(d.join("agent-a0000000000000bad.jsonl")).unwrap();
    let stop = w.localise(json!({
        "session_id": sid, "transcript_path": "", "hook_event_name": "Stop", "stop_hook_active": false
    }));
    let out = w.hook(&stop);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("a0000000000000bad"), "{}", out.stderr);
    let v = out.json.expect("the readable agent is still continued");
    assert!(v["reason"].as_str().unwrap().contains(&agent));
    assert_eq!(w.markers("continued"), [format!("{sid}.{agent}.json")]);
}

#[test]
fn a_huge_or_binary_transcript_is_never_a_trigger() {
    let w = World::new();
    let sid = "8b2b28c0-67e9-4797-aba8-198a83a7fad4";
    let d = w.subagents(sid);
    let mut junk = vec![0xffu8; 9 << 20];
    junk.extend_from_slice(b"\n{\"type\":\"assistant\"");
    std::fs::write(d.join("agent-a1.jsonl"), &junk).unwrap();
    let stop = w.localise(json!({
        "session_id": sid, "transcript_path": "", "hook_event_name": "Stop", "stop_hook_active": false
    }));
    assert!(w.hook(&stop).silent());
}
