//! An SDK host's ending is `run`'s on the same stream (issue 50): the SDK-run fold the Temporal
//! helpers drive (`watchdog_host::sdk_run`), fed what the drop-in printed for a scripted
//! claude, names the ending `agent-watchdog run` reports and exits by for the same script: a
//! success, a `linger` kill after a success (the kill, 124), a success stopped on `tool_use`
//! (`incomplete`, 3), no result (3), an error result (the child's 1), a stall (`idle`, 124).

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use watchdog_host::options::SessionPolicy;
use watchdog_host::sdk_run::SdkRun;

mod common;

use common::{say, script, watchdog, ASSISTANT, INIT, RESULT_OK};

const DROP_IN: &str = env!("CARGO_BIN_EXE_claude-watchdog");

/// The policy of every case, as flags of `run` and as the drop-in's variables.
const POLICY: [(&str, &str); 3] = [("idle", "1s"), ("linger", "1s"), ("grace", "1s")];

/// `run`'s ending of `child` (the summary's kill kind, else its outcome) and its exit code.
fn run_ending(child: &std::path::Path) -> (String, i32) {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("s.json");
    let mut c = watchdog();
    c.arg("run")
        .arg("--no-status")
        .arg("--summary")
        .arg(&summary);
    for (k, v) in POLICY {
        c.arg(format!("--{k}")).arg(v);
    }
    let out = c
        .arg("--")
        .arg(child)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    let name = s["kill"]["kind"]
        .as_str()
        .or(s["outcome"].as_str())
        .unwrap()
        .to_owned();
    (name, out.status.code().unwrap())
}

/// The fold's ending of what the drop-in printed running `child` under the same policy.
fn helper_ending(child: &std::path::Path) -> String {
    let vars: BTreeMap<String, String> = POLICY
        .iter()
        .map(|(k, v)| {
            (
                format!("AGENT_WATCHDOG_{}", k.to_uppercase()),
                (*v).to_owned(),
            )
        })
        .collect();
    let mut c = Command::new(DROP_IN);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AGENT_WATCHDOG_") {
            c.env_remove(k);
        }
    }
    let out = c
        .envs(&vars)
        .env("AGENT_WATCHDOG_CLAUDE", child)
        .args(["-p", "hi", "--output-format", "stream-json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let t0 = Instant::now();
    let policy = SessionPolicy::from_env(&vars).unwrap();
    let mut fold = SdkRun::new(
        t0,
        0,
        &policy,
        &BTreeMap::new(),
        Duration::from_secs(1),
        true,
    );
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        fold.observe(t0, line.as_bytes());
    }
    fold.finish(t0).end.name().to_owned()
}

#[test]
fn an_sdk_hosts_ending_is_runs_on_the_same_stream() {
    let mid_task = r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"tool_use","session_id":"s1"}"#;
    let error = r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","session_id":"s1"}"#;
    let cases = [
        (
            "success",
            vec![INIT, ASSISTANT, RESULT_OK],
            "",
            "success",
            0,
        ),
        (
            "linger",
            vec![INIT, ASSISTANT, RESULT_OK],
            "exec sleep 30",
            "linger",
            124,
        ),
        (
            "incomplete",
            vec![INIT, ASSISTANT, mid_task],
            "",
            "incomplete",
            3,
        ),
        ("no_result", vec![INIT, ASSISTANT], "", "no_result", 3),
        (
            "error_result",
            vec![INIT, error],
            "exit 1",
            "error_result",
            1,
        ),
        ("idle", vec![INIT, ASSISTANT], "exec sleep 30", "idle", 124),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, lines, tail, want, code) in cases {
        let body: Vec<String> = lines.iter().map(|l| say(l)).collect();
        let child = script(dir.path(), name, &format!("{}\n{tail}", body.join("\n")));
        let (ran, exit) = run_ending(&child);
        assert_eq!((ran.as_str(), exit), (want, code), "{name}: run");
        assert_eq!(
            helper_ending(&child),
            ran,
            "{name}: the helper's ending is run's"
        );
    }
}
