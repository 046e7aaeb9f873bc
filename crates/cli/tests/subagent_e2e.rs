//! The subagent plugin end to end: the real Claude Code CLI with `--plugin-dir plugin/` (the
//! hooks run this build's `agent-watchdog hook`) against the mock's agent scenario. A subagent
//! cut off by the output limit is continued **exactly once** (the session lives; the marker alone
//! promises at most once, see `watchdog_core::recovery`): the mock sees the parent's
//! `SendMessage` calls and the subagent's requests, the state directory holds the markers.
//!
//! A missing CLI is a failure naming `scripts/install-claude`, never a skip. Each run is bounded
//! by a budget. Debugging: `SUBAGENT_E2E_HOOK_BIN=/path/to/wrapper` runs the hooks through a
//! wrapper of your own (e.g. one that logs stdin and stdout), `SUBAGENT_E2E_KEEP=1` keeps the
//! session directories.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mock_api::agents::{PARENT_FINAL, SUB_REPORT};
use mock_api::harness::{find_claude, ClaudeRun, SessionDirs};
use mock_api::{AgentScript, BlockingMockServer, CutOffs, RecordedRequest, Scenario};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-watchdog");
const BUDGET: Duration = Duration::from_secs(150);

fn claude() -> PathBuf {
    find_claude().unwrap_or_else(|e| panic!("{e}"))
}

fn plugin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../plugin")
}

/// One `claude -p` run with the plugin, and what it left behind.
struct Session {
    status: ExitStatus,
    lines: Vec<Value>,
    stderr: String,
    requests: Vec<RecordedRequest>,
    dirs: Arc<SessionDirs>,
}

impl Session {
    fn session_id(&self) -> String {
        self.lines
            .iter()
            .find_map(|l| l["session_id"].as_str().map(str::to_owned))
            .expect("a session id")
    }

    /// `SendMessage` calls of the parent, as the mock answered them: the `to` of each.
    fn send_messages(&self) -> Vec<String> {
        let mut out = Vec::new();
        for l in &self.lines {
            if l["type"] != "assistant" || !l["parent_tool_use_id"].is_null() {
                continue;
            }
            for b in l["message"]["content"].as_array().into_iter().flatten() {
                if b["type"] == "tool_use" && b["name"] == "SendMessage" {
                    out.push(b["input"]["to"].as_str().unwrap_or("").to_owned());
                }
            }
        }
        out
    }

    /// The agent ids of the subagents that ran (from the request headers).
    fn agents(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .requests
            .iter()
            .filter_map(|r| r.summary.as_ref()?.agent_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    fn results(&self) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|l| l["type"] == "result")
            .collect()
    }

    fn report(&self) -> String {
        let mut s = format!("status {:?}\nstderr: {}\n", self.status, self.stderr);
        for l in &self.lines {
            if l["type"] == "stream_event" {
                continue;
            }
            let t = l.to_string();
            s.push_str(&t[..t.len().min(400)]);
            s.push('\n');
        }
        s
    }
}

fn markers(state: &Path, kind: &str) -> Vec<String> {
    let dir = state.join("subagents").join(kind);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn run_claude(run: ClaudeRun, state: &Path) -> Session {
    run_claude_env(run, state, &[])
}

/// [`run_claude`], with `env` set last (over the hook's binary and state directory).
fn run_claude_env(run: ClaudeRun, state: &Path, env: &[(&str, std::ffi::OsString)]) -> Session {
    let mut run = run
        .arg("--plugin-dir")
        .arg(plugin_dir())
        .env(
            "AGENT_WATCHDOG_BIN",
            std::env::var_os("SUBAGENT_E2E_HOOK_BIN").unwrap_or_else(|| BIN.into()),
        )
        .env("AGENT_WATCHDOG_STATE_DIR", state);
    for (k, v) in env {
        run = run.env(*k, v.clone());
    }
    let cmd = run.command();
    let out_dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (out_dir.path().join("out"), out_dir.path().join("err"));
    let mut child = cmd
        .to_std()
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let status = common::wait_within(&mut child, BUDGET, "claude", &out_path);
    let stdout = std::fs::read_to_string(&out_path).unwrap();
    Session {
        status,
        lines: stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        stderr: std::fs::read_to_string(&err_path).unwrap(),
        requests: Vec::new(),
        dirs: run.dirs().clone(),
    }
}

fn session(script: AgentScript, state: &Path) -> Session {
    let server = BlockingMockServer::start(Scenario::agents("agents", script)).unwrap();
    session_on(&server, state, None)
}

/// A session against `server`; with `resume`, `--resume` that session in its directories.
fn session_on(
    server: &BlockingMockServer,
    state: &Path,
    resume: Option<(&Session, &str)>,
) -> Session {
    let before = server.requests().len();
    let run = match resume {
        None => ClaudeRun::new(claude(), server.base_url(), "Delegate the widget report.").unwrap(),
        Some((earlier, prompt)) => {
            ClaudeRun::with_dirs(claude(), server.base_url(), prompt, earlier.dirs.clone())
                .resume(earlier.session_id())
        }
    };
    let mut s = run_claude(run, state);
    s.requests = server.requests().split_off(before);
    s
}

/// Stdout user lines that carry `needle` (hook feedback the parent got).
fn feedback(s: &Session, needle: &str) -> usize {
    s.lines
        .iter()
        .filter(|l| l["type"] == "user" && l.to_string().contains(needle))
        .count()
}

/// What the user is promised about the hooks that continued `agents` cut-off agents, whichever
/// hook it was (`PostToolUseFailure`, or `Stop` as the safety net when the first cannot see the
/// failure yet, which depends on when Claude Code writes the agent's files): no notice, and at
/// most one `Stop` block per agent, each the continuation instruction. Exactly one
/// continuation per agent is asserted by the callers (one `SendMessage` each, one marker each).
fn assert_safety_net_only(s: &Session, agents: usize, report: &str) {
    assert_eq!(
        feedback(s, "agent-watchdog notice"),
        0,
        "no notice\n{report}"
    );
    let blocks = feedback(s, "agent-watchdog");
    assert_eq!(
        blocks,
        feedback(s, "agent-watchdog: subagent"),
        "every Stop block is a continuation instruction\n{report}"
    );
    assert!(
        blocks <= agents,
        "{blocks} Stop blocks for {agents} agents\n{report}"
    );
}

/// Requests of the subagents (by header).
fn subagent_requests(s: &Session) -> usize {
    s.requests
        .iter()
        .filter(|r| r.summary.as_ref().is_some_and(|x| x.agent_id.is_some()))
        .count()
}

fn final_answer(s: &Session) -> String {
    let last = s.results().last().copied().cloned().expect("a result");
    assert_eq!(last["is_error"], false, "{}", s.report());
    last["result"].as_str().unwrap_or("").to_owned()
}

fn script(cut_offs: CutOffs, after: CutOffs) -> AgentScript {
    AgentScript {
        cut_offs,
        cut_offs_after_continue: after,
        ..AgentScript::default()
    }
}

/// (a): the foreground agent is always cut off; the hook has the parent continue it once.
#[test]
fn a_foreground_agent_cut_off_is_continued_exactly_once() {
    let state = tempfile::tempdir().unwrap();
    let s = session(script(CutOffs::Always, CutOffs::Times(0)), state.path());
    let report = s.report();
    assert!(s.status.success(), "{report}");
    let agents = s.agents();
    assert_eq!(agents.len(), 1, "{report}");
    assert_eq!(
        s.send_messages(),
        agents,
        "one SendMessage to that agent\n{report}"
    );
    // Foreground: PostToolUseFailure tells the parent (additionalContext); when that hook
    // cannot see the failure yet, the Stop safety net does. Which one is timing, not a promise.
    assert_safety_net_only(&s, agents.len(), &report);
    // The continued agent answered (the mock's report reached its transcript and stdout).
    let sid = s.session_id();
    assert!(
        s.lines.iter().any(|l| l.to_string().contains(SUB_REPORT)),
        "{report}"
    );
    assert!(final_answer(&s).starts_with(PARENT_FINAL), "{report}");
    // Four cut-off requests, then the continued one that answered.
    assert_eq!(subagent_requests(&s), 5, "{report}");
    assert_eq!(
        markers(state.path(), "continued"),
        [format!("{sid}.{}.json", agents[0])]
    );
    assert!(markers(state.path(), "noticed").is_empty());
    keep(s.dirs);
}

/// `SUBAGENT_E2E_KEEP=1` keeps the session directories for a look after a run.
fn keep(dirs: Arc<SessionDirs>) {
    if std::env::var_os("SUBAGENT_E2E_KEEP").is_some() {
        eprintln!("kept {}", dirs.root().display());
        std::mem::forget(dirs);
    }
}

/// (b): the continued agent is cut off again: one notice reaches the parent, no second
/// continuation.
#[test]
fn b_a_continued_agent_cut_off_again_gets_one_notice_and_no_second_continuation() {
    let state = tempfile::tempdir().unwrap();
    let s = session(script(CutOffs::Always, CutOffs::Always), state.path());
    let report = s.report();
    assert!(s.status.success(), "{report}");
    let agents = s.agents();
    assert_eq!(agents.len(), 1, "{report}");
    assert_eq!(
        s.send_messages(),
        agents,
        "exactly one SendMessage\n{report}"
    );
    // The notice is given exactly once, and it is the only Stop block. (Under load, the
    // continued agent often fails only after the parent's turn ended: the Stop of the turn its
    // task notification starts gives the notice. Once, that was missed: the hook read the
    // transcript's end and its failure count apart, see `SubagentFiles::end`.)
    assert_eq!(feedback(&s, "agent-watchdog notice"), 1, "{report}");
    assert_eq!(
        feedback(&s, "agent-watchdog"),
        1,
        "only the notice was a Stop block\n{report}"
    );
    assert!(final_answer(&s).starts_with(PARENT_FINAL), "{report}");
    // 4 + 4 cut-off requests: the first run and the one continuation, nothing more.
    assert_eq!(subagent_requests(&s), 8, "{report}");
    let sid = s.session_id();
    let name = format!("{sid}.{}.json", agents[0]);
    assert_eq!(
        markers(state.path(), "continued"),
        std::slice::from_ref(&name)
    );
    assert_eq!(
        markers(state.path(), "noticed"),
        std::slice::from_ref(&name)
    );
    keep(s.dirs);
}

/// (b, late): the continued agent is cut off again only after the parent's turn has ended (its
/// replies are slow): the notice still reaches the parent, once.
#[test]
fn b_late_a_continued_agent_failing_after_the_turn_still_gets_one_notice() {
    let state = tempfile::tempdir().unwrap();
    let s = session(
        AgentScript {
            continue_frame_delay: Duration::from_millis(300),
            ..script(CutOffs::Always, CutOffs::Always)
        },
        state.path(),
    );
    let report = s.report();
    assert!(s.status.success(), "{report}");
    let agents = s.agents();
    assert_eq!(agents.len(), 1, "{report}");
    assert_eq!(
        s.send_messages(),
        agents,
        "exactly one SendMessage\n{report}"
    );
    assert_eq!(feedback(&s, "agent-watchdog notice"), 1, "{report}");
    assert_eq!(subagent_requests(&s), 8, "{report}");
    keep(s.dirs);
}

/// (e): a healthy agent, and agents the CLI recovers by itself (cut off 1 to 3 times): the hook
/// does nothing at all, not even open the state directory.
#[test]
fn e_healthy_and_self_recovered_agents_are_left_alone() {
    for cuts in [0, 1, 2, 3] {
        let state = tempfile::tempdir().unwrap();
        let s = session(
            script(CutOffs::Times(cuts), CutOffs::Times(0)),
            state.path(),
        );
        let report = s.report();
        assert!(s.status.success(), "{cuts}: {report}");
        assert_eq!(s.agents().len(), 1, "{cuts}: {report}");
        assert!(s.send_messages().is_empty(), "{cuts}: {report}");
        assert_eq!(feedback(&s, "agent-watchdog"), 0, "{cuts}: {report}");
        assert_eq!(subagent_requests(&s), cuts + 1, "{cuts}: {report}");
        assert!(
            final_answer(&s).starts_with(PARENT_FINAL),
            "{cuts}: {report}"
        );
        assert!(
            !state.path().join("subagents").exists(),
            "{cuts}: the ledger was touched"
        );
        keep(s.dirs);
    }
}

/// (c): a background agent, always cut off: continued once, like the foreground one.
#[test]
fn c_a_background_agent_cut_off_is_continued_exactly_once() {
    let state = tempfile::tempdir().unwrap();
    let s = session(
        AgentScript {
            background: true,
            ..script(CutOffs::Always, CutOffs::Times(0))
        },
        state.path(),
    );
    let report = s.report();
    assert!(s.status.success(), "{report}");
    let agents = s.agents();
    assert_eq!(agents.len(), 1, "{report}");
    assert_eq!(s.send_messages(), agents, "{report}");
    // Background: no PostToolUseFailure; the Stop hook blocked once with the instruction.
    assert_eq!(feedback(&s, "agent-watchdog: subagent"), 1, "{report}");
    assert_eq!(subagent_requests(&s), 5, "{report}");
    assert!(final_answer(&s).starts_with(PARENT_FINAL), "{report}");
    let sid = s.session_id();
    assert_eq!(
        markers(state.path(), "continued"),
        [format!("{sid}.{}.json", agents[0])]
    );
    keep(s.dirs);
}

/// (d): the session of (a) and of (b) resumed: the old failure is seen again by the Stop hook,
/// and nothing is continued a second time.
#[test]
fn d_a_resumed_session_never_continues_an_agent_again() {
    for after in [CutOffs::Times(0), CutOffs::Always] {
        let state = tempfile::tempdir().unwrap();
        let server =
            BlockingMockServer::start(Scenario::agents("agents", script(CutOffs::Always, after)))
                .unwrap();
        let first = session_on(&server, state.path(), None);
        assert_eq!(first.send_messages().len(), 1, "{}", first.report());
        let continued = markers(state.path(), "continued");
        let noticed = markers(state.path(), "noticed");
        let again = session_on(
            &server,
            state.path(),
            Some((&first, "Anything left to do?")),
        );
        let report = again.report();
        assert!(again.status.success(), "{report}");
        assert_eq!(again.session_id(), first.session_id(), "{report}");
        assert!(again.send_messages().is_empty(), "{report}");
        assert_eq!(feedback(&again, "agent-watchdog"), 0, "{report}");
        assert_eq!(subagent_requests(&again), 0, "{report}");
        assert!(final_answer(&again).starts_with(PARENT_FINAL), "{report}");
        assert_eq!(markers(state.path(), "continued"), continued);
        assert_eq!(markers(state.path(), "noticed"), noticed);
        keep(first.dirs);
    }
}

/// (f): two agents fail in one turn: each is continued once.
#[test]
fn f_two_agents_cut_off_in_one_turn_are_each_continued_once() {
    let state = tempfile::tempdir().unwrap();
    let s = session(
        AgentScript {
            agents: 2,
            ..script(CutOffs::Always, CutOffs::Times(0))
        },
        state.path(),
    );
    let report = s.report();
    assert!(s.status.success(), "{report}");
    let agents = s.agents();
    assert_eq!(agents.len(), 2, "{report}");
    let mut sent = s.send_messages();
    sent.sort();
    assert_eq!(sent, agents, "one SendMessage to each\n{report}");
    assert_safety_net_only(&s, agents.len(), &report);
    assert_eq!(subagent_requests(&s), 10, "{report}");
    assert!(final_answer(&s).starts_with(PARENT_FINAL), "{report}");
    let sid = s.session_id();
    let want: Vec<String> = agents.iter().map(|a| format!("{sid}.{a}.json")).collect();
    assert_eq!(markers(state.path(), "continued"), want);
    keep(s.dirs);
}

/// `agent-watchdog run` sees subagents: without the plugin a cut-off agent is a failure the
/// session "succeeded" over (exit 0 kept, reported in the summary and on stderr); with the
/// plugin the same failure shows as recovered.
#[test]
fn run_reports_subagent_failures_even_when_the_session_succeeded() {
    for plugin in [false, true] {
        let state = tempfile::tempdir().unwrap();
        let server = BlockingMockServer::start(Scenario::agents(
            "agents",
            script(CutOffs::Always, CutOffs::Times(0)),
        ))
        .unwrap();
        let mut run =
            ClaudeRun::new(claude(), server.base_url(), "Delegate the widget report.").unwrap();
        if plugin {
            run = run
                .arg("--plugin-dir")
                .arg(plugin_dir())
                .env("AGENT_WATCHDOG_BIN", BIN);
        }
        let cmd = run.command();
        let out_dir = tempfile::tempdir().unwrap();
        let summary = out_dir.path().join("summary.json");
        let out = cmd
            .behind(
                std::process::Command::new(BIN)
                    .arg("run")
                    .arg("--no-status")
                    .arg("--state-dir")
                    .arg(state.path())
                    .arg("--summary")
                    .arg(&summary)
                    .arg("--"),
            )
            .env("AGENT_WATCHDOG_STATE_DIR", state.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{plugin}: {stderr}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
        assert_eq!(v["outcome"], "success", "{plugin}: {v}");
        let failures = v["subagents"]["failures"].as_array().unwrap();
        assert_eq!(failures.len(), 1, "{plugin}: {v}");
        let agent = failures[0]["agent_id"].as_str().unwrap();
        assert_eq!(failures[0]["agent_type"], "general-purpose");
        assert!(failures[0]["error"]
            .as_str()
            .unwrap()
            .contains("max_output_tokens"));
        assert_eq!(failures[0]["recovered"], plugin, "{plugin}: {v}");
        assert_eq!(v["subagents"]["unrecovered"], u64::from(!plugin));
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("agent-watchdog: subagent "))
            .collect();
        assert_eq!(said.len(), 1, "{plugin}: {stderr}");
        assert!(said[0].contains(agent) && said[0].contains("general-purpose"));
    }
}

/// The plugin is one the real CLI accepts, and it wires exactly the two hooks.
/// Issue 28 (1): a hook that cannot work (bad variables, a binary that exits 2, one without the
/// `hook` subcommand, a missing one) never blocks the session: the real CLI makes one model
/// request and ends with its normal result. (Exit 2 from a `Stop` hook is a blocking error:
/// before the fix, one "say hi" made 9 requests and ended with an empty result.)
#[test]
fn a_broken_hook_never_costs_a_model_request() {
    use std::os::unix::fs::PermissionsExt;
    let bins = tempfile::tempdir().unwrap();
    let script = |name: &str, body: &str| -> std::ffi::OsString {
        let p = bins.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.into_os_string()
    };
    let exits_2 = script("two", "cat >/dev/null; echo 'error: broken' >&2; exit 2");
    std::os::unix::fs::symlink(BIN, bins.path().join("old.real")).unwrap();
    let old = script("old", "exec \"$0.real\" nohook \"$@\"");
    let bin = |b: &std::ffi::OsString| ("AGENT_WATCHDOG_BIN", b.clone());
    let cases: Vec<(&str, Vec<(&str, std::ffi::OsString)>)> = vec![
        (
            "an empty state dir",
            vec![("AGENT_WATCHDOG_STATE_DIR", "".into())],
        ),
        (
            "a switch that is none",
            vec![("AGENT_WATCHDOG_NO_RECOVER_OUTPUT_LIMIT", "enabled".into())],
        ),
        ("a binary that exits 2", vec![bin(&exits_2)]),
        ("a binary without `hook`", vec![bin(&old)]),
        (
            "no binary at all",
            vec![bin(&bins.path().join("missing").into_os_string())],
        ),
    ];
    for (what, env) in cases {
        let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
        let state = tempfile::tempdir().unwrap();
        let run = ClaudeRun::new(claude(), server.base_url(), "say hi").unwrap();
        let s = run_claude_env(run, state.path(), &env);
        let report = s.report();
        let main: Vec<_> = server
            .requests()
            .into_iter()
            .filter(|r| r.main_index.is_some())
            .collect();
        assert_eq!(main.len(), 1, "{what}: one model request\n{report}");
        assert!(s.status.success(), "{what}: {report}");
        assert_eq!(s.results().len(), 1, "{what}: {report}");
        assert_eq!(final_answer(&s), mock_api::FINAL_TEXT, "{what}: {report}");
        assert_eq!(feedback(&s, "Stop hook"), 0, "{what}: {report}");
    }
}

#[test]
fn the_plugin_validates_with_the_real_cli() {
    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(claude())
        .args(["plugin", "validate"])
        .arg(plugin_dir())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("hooks: PostToolUseFailure Agent|Task"),
        "{text}"
    );
    assert!(text.contains("hooks: Stop"), "{text}");
    assert!(!text.contains("rror"), "{text}");
}

/// Which Agent SDK drives the session.
#[derive(Debug, Clone, Copy)]
enum Sdk {
    TypeScript,
    Python,
}

/// The same plugin directory loaded the Agent SDK way (`plugins: [{type: "local", path}]`,
/// the SDKs from `.tools/sdk`, `scripts/install-sdk-test-deps`): one continuation.
fn sdk_session(sdk: Sdk) {
    let root = mock_api::harness::repo_root().expect("the repository root");
    let modules = root.join(".tools/sdk/node_modules");
    let python = root.join(".tools/sdk/py/bin/python");
    let state = tempfile::tempdir().unwrap();
    let server = BlockingMockServer::start(Scenario::agents(
        "agents",
        script(CutOffs::Always, CutOffs::Times(0)),
    ))
    .unwrap();
    let run = ClaudeRun::new(claude(), server.base_url(), "Delegate the widget report.")
        .unwrap()
        .env("AGENT_WATCHDOG_BIN", BIN)
        .env("AGENT_WATCHDOG_STATE_DIR", state.path());
    let cmd = run.command();
    let tests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    let mut c = match sdk {
        Sdk::TypeScript => {
            assert!(
                modules.join("@anthropic-ai/claude-agent-sdk/sdk.mjs").is_file(),
                "\n\nThis test needs the TypeScript Agent SDK in {}.\nRun `scripts/install-sdk-test-deps`.\n",
                modules.display()
            );
            let mut c = std::process::Command::new("node");
            c.arg(tests.join("plugin_query.mjs"));
            c
        }
        Sdk::Python => {
            assert!(
                python.is_file(),
                "\n\nThis test needs claude-agent-sdk in {}.\nRun `scripts/install-sdk-test-deps`.\n",
                python.display()
            );
            let mut c = std::process::Command::new(&python);
            c.arg(tests.join("plugin_query.py"));
            c
        }
    };
    let out = c
        .env_clear()
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("SDK_NODE_MODULES", &modules)
        .env("CLAUDE", claude())
        .env("PLUGIN_DIR", plugin_dir())
        .env("WORK_DIR", &cmd.cwd)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run the SDK script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let report = format!(
        "{sdk:?}: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = events
        .iter()
        .find(|e| e["event"] == "done")
        .unwrap_or_else(|| panic!("{report}"));
    assert!(done["error"].is_null(), "{report}");
    let plugins = events
        .iter()
        .find(|e| e["subtype"] == "init")
        .map(|e| e["plugins"].to_string())
        .unwrap_or_default();
    assert!(plugins.contains("agent-watchdog-subagents"), "{report}");
    let agents: Vec<String> = {
        let mut ids: Vec<String> = server
            .requests()
            .iter()
            .filter_map(|r| r.summary.as_ref()?.agent_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    };
    assert_eq!(agents.len(), 1, "{report}");
    let sent: Vec<String> = events
        .iter()
        .filter(|e| e["top_level"] == true)
        .flat_map(|e| e["send_to"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    assert_eq!(sent, agents, "{report}");
    let last = events
        .iter()
        .rev()
        .find(|e| e["type"] == "result")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(last["is_error"], false, "{report}");
    assert!(
        last["result"]
            .as_str()
            .unwrap_or("")
            .starts_with(PARENT_FINAL),
        "{report}"
    );
    assert_eq!(markers(state.path(), "continued").len(), 1, "{report}");
}

#[test]
fn the_typescript_sdk_loads_the_plugin_and_the_agent_is_continued_once() {
    sdk_session(Sdk::TypeScript);
}

#[test]
fn the_python_sdk_loads_the_plugin_and_the_agent_is_continued_once() {
    sdk_session(Sdk::Python);
}
