//! `agent-watchdog hook`, JSON in and JSON out, against the hook inputs and subagent transcripts
//! the real CLI recorded (testdata/subagents). Each case lays out a session directory the way
//! Claude Code 2.1.332 does (`<project>/<session>.jsonl`, `<project>/<session>/subagents/
//! agent-<id>.jsonl` + `.meta.json`), points the recorded input's `transcript_path` at it, and runs
//! the binary. Whatever happens, the hook exits 0; errors are one stderr line and no decision.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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
        self.hook_with(&["hook"], Input::Bytes(stdin), env)
    }

    /// Run `BIN args…` with `stdin`; the hook must exit 0 within [`HOOK_BOUND`] (a hang fails
    /// the test instead of hanging it).
    fn hook_with(&self, args: &[&str], stdin: Input<'_>, env: &[(&str, &str)]) -> Out {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env_clear()
            .env("AGENT_WATCHDOG_STATE_DIR", &self.state)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = run_bounded(cmd, stdin);
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

/// Far more than any hook here needs, and less than Claude Code's 30 s hook timeout.
const HOOK_BOUND: Duration = Duration::from_secs(20);

/// What a hook process reads on stdin.
enum Input<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

/// Run `cmd` to its end, killing it (and failing) after [`HOOK_BOUND`].
fn run_bounded(mut cmd: Command, stdin: Input<'_>) -> std::process::Output {
    match stdin {
        Input::Bytes(_) => cmd.stdin(Stdio::piped()),
        Input::File(p) => cmd.stdin(std::fs::File::open(p).unwrap()),
    };
    let mut child = cmd.spawn().unwrap();
    if let (Input::Bytes(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A hook that refuses a huge input may close its stdin early.
        let _ = pipe.write_all(bytes);
    }
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(HOOK_BOUND) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("the hook did not end within {HOOK_BOUND:?}");
        }
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

/// The stop input of session `sid`, in world `w`.
fn stop(w: &World, sid: &str) -> Value {
    w.localise(json!({
        "session_id": sid, "transcript_path": "", "hook_event_name": "Stop", "stop_hook_active": false
    }))
}

/// Issue 28 (1): no value of the hook's variables is a usage error (exit 2 from a `Stop` hook
/// blocks the session in Claude Code). An empty state directory means the default one (empty is
/// unset); a switch that is not one fails closed (nothing continued) and says so in one line.
#[test]
fn no_value_of_the_hooks_variables_fails_the_hook() {
    // Empty: the default directory under $HOME, and the agent is still continued.
    let w = World::new();
    let (input, _, agent) = setup_b2(&w);
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap();
    let out = w.hook_with(
        &["hook"],
        Input::Bytes(input.to_string().as_bytes()),
        &[("AGENT_WATCHDOG_STATE_DIR", ""), ("HOME", home_s)],
    );
    let v = out
        .json
        .expect("continued with the default state directory");
    assert!(v.to_string().contains(&agent), "{v}");
    // An empty variable is an unset one in every subcommand (`forget_empty_env_vars`), so
    // there is nothing to say.
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(home
        .path()
        .join(".local/state/agent-watchdog/subagents/continued")
        .is_dir());
    assert!(!w.state.exists());

    // The switch: empty is unset (the hook acts); `2`, `enabled`: taken as set, one line.
    let w = World::new();
    let (input, _, _) = setup_b2(&w);
    let out = w.hook_raw(
        input.to_string().as_bytes(),
        &[("AGENT_WATCHDOG_NO_RECOVER_OUTPUT_LIMIT", "")],
    );
    assert!(
        out.json.is_some() && out.stderr.is_empty(),
        "{}",
        out.stderr
    );
    for bad in ["2", "enabled", "-"] {
        let w = World::new();
        let (input, _, _) = setup_b2(&w);
        let out = w.hook_raw(
            input.to_string().as_bytes(),
            &[("AGENT_WATCHDOG_NO_RECOVER_OUTPUT_LIMIT", bad)],
        );
        assert!(out.failed_closed(), "{bad}: {}", out.stderr);
        assert!(out.stderr.contains("not a switch"), "{bad}: {}", out.stderr);
        assert!(!w.state.exists(), "{bad}: nothing was claimed");
    }
}

/// A bad command line of `hook` (an unknown flag, a missing value, an extra argument) is one
/// line and exit 0, never clap's usage error (exit 2).
#[test]
fn no_command_line_of_hook_is_a_usage_error() {
    let w = World::new();
    let (input, _, _) = setup_b2(&w);
    for args in [
        &["hook", "--bogus"][..],
        &["hook", "--state-dir"],
        &["hook", "extra"],
        &["hook", "--no-recover-output-limit=maybe"],
    ] {
        let out = w.hook_with(args, Input::Bytes(input.to_string().as_bytes()), &[]);
        assert!(out.failed_closed(), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.starts_with("agent-watchdog hook: "),
            "{}",
            out.stderr
        );
    }
    assert!(!w.state.exists());
}

/// Stdin that is not one hook input: endless zeros, over 16 MiB of valid JSON, a directory.
#[test]
fn an_endless_or_huge_stdin_fails_closed() {
    let w = World::new();
    let out = w.hook_with(&["hook"], Input::File(Path::new("/dev/zero")), &[]);
    assert!(out.failed_closed(), "{}", out.stderr);
    assert!(out.stderr.contains("larger than 16 MiB"), "{}", out.stderr);
    let (input, _, _) = setup_b2(&w);
    let mut padded = input.to_string().into_bytes();
    padded.extend(std::iter::repeat_n(b' ', 17 << 20));
    let out = w.hook_raw(&padded, &[]);
    assert!(out.failed_closed(), "{}", out.stderr);
    assert!(!w.state.exists());
}

fn mkfifo(p: &Path) {
    rustix::fs::mkfifoat(rustix::fs::CWD, p, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
}

type Make = fn(&Path);

/// Things that are not a transcript or a meta file: each is refused at once (never read to its
/// end, never waited on), for that agent only.
const NOT_FILES: [(&str, Make); 6] = [
    ("/dev/zero", |p| {
        std::os::unix::fs::symlink("/dev/zero", p).unwrap()
    }),
    ("/dev/urandom", |p| {
        std::os::unix::fs::symlink("/dev/urandom", p).unwrap()
    }),
    ("a FIFO with no writer", mkfifo),
    ("a directory", |p| std::fs::create_dir(p).unwrap()),
    ("a link to a FIFO", |p| {
        let fifo = p.with_extension("fifo");
        mkfifo(&fifo);
        std::os::unix::fs::symlink(&fifo, p).unwrap()
    }),
    ("a link to a directory", |p| {
        std::os::unix::fs::symlink("/", p).unwrap()
    }),
];

/// Issue 28 (1): a transcript that is a device, a FIFO or a directory neither hangs the hook
/// nor fills its memory; the healthy agent beside it is still continued.
#[test]
fn a_transcript_that_is_not_a_file_fails_closed_for_that_agent_only() {
    for (what, make) in NOT_FILES {
        let w = World::new();
        let (_input, sid, agent) = setup_b2(&w);
        let d = w.subagents(&sid);
        make(&d.join("agent-a0000000000000bad.jsonl"));
        let out = w.hook(&stop(&w, &sid));
        assert_eq!(out.stderr.lines().count(), 1, "{what}: {}", out.stderr);
        assert!(
            out.stderr.contains("a0000000000000bad"),
            "{what}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("not a regular file"),
            "{what}: {}",
            out.stderr
        );
        let v = out
            .json
            .unwrap_or_else(|| panic!("{what}: the good agent is continued"));
        assert!(v["reason"].as_str().unwrap().contains(&agent), "{what}");
        assert_eq!(
            w.markers("continued"),
            [format!("{sid}.{agent}.json")],
            "{what}"
        );
    }
}

/// The same for the meta file that maps a `tool_use_id` to its agent: the `PostToolUseFailure`
/// fails closed (nothing said, one line) and quickly.
#[test]
fn a_meta_file_that_is_not_a_file_fails_closed() {
    for (what, make) in NOT_FILES {
        let w = World::new();
        let (input, sid, agent) = setup_b2(&w);
        let meta = w.subagents(&sid).join(format!("agent-{agent}.meta.json"));
        std::fs::remove_file(&meta).unwrap();
        make(&meta);
        let out = w.hook(&input);
        assert!(out.failed_closed(), "{what}: {}", out.stderr);
        assert!(
            out.stderr.contains("not a regular file"),
            "{what}: {}",
            out.stderr
        );
        assert!(w.markers("continued").is_empty(), "{what}");
    }
    // A meta file over its 1 MiB cap (sparse: 4 GiB) is not read to its end.
    let w = World::new();
    let (input, sid, agent) = setup_b2(&w);
    let meta = w.subagents(&sid).join(format!("agent-{agent}.meta.json"));
    std::fs::File::create(&meta)
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    let out = w.hook(&input);
    assert!(out.failed_closed(), "{}", out.stderr);
    assert!(out.stderr.contains("larger than"), "{}", out.stderr);
    assert!(w.markers("continued").is_empty());
}

/// A marker that is a FIFO or a link to a device: refused at once, it counts as claimed.
#[test]
fn a_marker_that_is_not_a_file_counts_as_claimed_and_never_hangs() {
    for (what, make) in NOT_FILES {
        let w = World::new();
        let (input, sid, agent) = setup_b2(&w);
        let dir = w.state.join("subagents/continued");
        std::fs::create_dir_all(&dir).unwrap();
        make(&dir.join(format!("{sid}.{agent}.json")));
        let out = w.hook(&input);
        assert!(out.failed_closed(), "{what}: {}", out.stderr);
        assert!(out.stderr.contains(&agent), "{what}: {}", out.stderr);
    }
}

/// A transcript over the 1 GiB cap (sparse, ending in the cut-off entry) is not scanned: the
/// hook says so in one line and continues nothing, in bounded time and memory.
#[test]
fn a_transcript_over_the_cap_is_not_scanned() {
    let w = World::new();
    let (input, sid, agent) = setup_b2(&w);
    let path = w.subagents(&sid).join(format!("agent-{agent}.jsonl"));
    let tail = std::fs::read(&path).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"\n").unwrap();
    f.write_all(&tail).unwrap();
    drop(f);
    let out = w.hook(&input);
    assert!(out.failed_closed(), "{}", out.stderr);
    assert!(
        out.stderr.contains("larger than 1024 MiB"),
        "{}",
        out.stderr
    );
    assert!(w.markers("continued").is_empty());
}

/// The command of `plugin/hooks/hooks.json`, run the way Claude Code runs it (`sh -c`).
fn plugin_command(event: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../plugin/hooks/hooks.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    v["hooks"][event][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Every command hook of the plugin declares the timeout the core states as Claude Code's
/// bound on the hook ([`PLUGIN_HOOK_TIMEOUT`](watchdog_host::claude_code::PLUGIN_HOOK_TIMEOUT)),
/// the one the hook's own limits are sized for.
#[test]
fn the_plugin_declares_the_hook_timeout_the_core_states() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../plugin/hooks/hooks.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let want = watchdog_host::claude_code::PLUGIN_HOOK_TIMEOUT.as_secs();
    let mut seen = Vec::new();
    for (event, groups) in v["hooks"].as_object().unwrap() {
        for hook in groups
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
        {
            assert_eq!(hook["timeout"].as_u64(), Some(want), "{event}: {hook}");
            seen.push(event.clone());
        }
    }
    assert_eq!(seen, ["PostToolUseFailure", "Stop"]);
}

/// Issue 28 (1): whatever `AGENT_WATCHDOG_BIN` names (a binary without the `hook` subcommand,
/// one that exits 2 or crashes, none at all), the plugin's command exits 0 and adds nothing to
/// stdout; with the real binary its decision reaches stdout intact.
#[test]
fn the_plugin_command_never_exits_2_and_keeps_the_decision() {
    let w = World::new();
    let (input, _, agent) = setup_b2(&w);
    let bins = tempfile::tempdir().unwrap();
    let script = |name: &str, body: &str| {
        let p = bins.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    };
    let cases = [
        (
            "exits 2",
            script("two", "cat >/dev/null; echo 'error: no hook' >&2; exit 2"),
        ),
        ("is killed", script("killed", "kill -9 $$")),
        ("aborts", script("aborts", "kill -ABRT $$")),
        (
            "is missing",
            bins.path().join("missing").display().to_string(),
        ),
        ("is not executable", {
            let p = bins.path().join("plain");
            std::fs::write(&p, "").unwrap();
            p.display().to_string()
        }),
        // An old agent-watchdog: clap's "unrecognized subcommand", exit 2.
        (
            "lacks the subcommand",
            script("old", "exec \"$0.real\" nohook \"$@\""),
        ),
    ];
    std::os::unix::fs::symlink(BIN, bins.path().join("old.real")).unwrap();
    for event in ["Stop", "PostToolUseFailure"] {
        let command = plugin_command(event);
        for (what, bin) in &cases {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", &command])
                .env("AGENT_WATCHDOG_BIN", bin)
                .env("AGENT_WATCHDOG_STATE_DIR", &w.state)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let out = run_bounded(cmd, Input::Bytes(input.to_string().as_bytes()));
            assert_eq!(out.status.code(), Some(0), "{event}: a binary that {what}");
            assert!(out.stdout.is_empty(), "{event}: a binary that {what}");
        }
    }
    // The real binary: the decision, byte for byte what `hook` prints.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &plugin_command("PostToolUseFailure")])
        .env("AGENT_WATCHDOG_BIN", BIN)
        .env("AGENT_WATCHDOG_STATE_DIR", &w.state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = run_bounded(cmd, Input::Bytes(input.to_string().as_bytes()));
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.to_string().contains(&agent), "{v}");
    assert_eq!(w.markers("continued").len(), 1);
}
