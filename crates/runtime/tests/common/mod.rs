//! Helpers for the real-process tests.
#![allow(dead_code)]

use std::time::Duration;

use agent_sdk_watchdog::{Output, Report, Supervisor, SupervisorConfig};

/// A `sh -c script` command.
pub fn sh(script: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new("sh");
    c.arg("-c").arg(script);
    c
}

/// Fast graces for tests, no policy.
pub fn quick() -> SupervisorConfig {
    SupervisorConfig {
        policy: None,
        interrupt_grace: Duration::from_millis(300),
        term_grace: Duration::from_millis(300),
        drain_timeout: Duration::from_secs(2),
        ..SupervisorConfig::default()
    }
}

/// Everything a run produced.
#[derive(Default, Debug)]
pub struct Collected {
    pub stdout: Vec<agent_sdk_watchdog::Line>,
    pub stderr: Vec<agent_sdk_watchdog::Line>,
    pub other: Vec<Output>,
}

impl Collected {
    pub fn stdout_text(&self) -> Vec<String> {
        self.stdout
            .iter()
            .map(|l| String::from_utf8_lossy(&l.bytes).into_owned())
            .collect()
    }
}

/// Read all output, then the report; give up after `limit`.
pub async fn run_all(mut sup: Supervisor, limit: Duration) -> (Collected, Report) {
    let collect = async {
        let mut c = Collected::default();
        while let Some(o) = sup.next_output().await {
            match o {
                Output::Stdout(l) => c.stdout.push(l),
                Output::Stderr(l) => c.stderr.push(l),
                o => c.other.push(o),
            }
        }
        (c, sup.wait().await.expect("a report"))
    };
    tokio::time::timeout(limit, collect)
        .await
        .expect("the supervised run did not end in time")
}

/// Whether `pid` is gone or a zombie (not running).
pub fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => {
            let rest = &s[s.rfind(')').unwrap() + 1..];
            matches!(rest.split_whitespace().next(), Some("Z" | "X"))
        }
    }
}
