//! Serves one named scenario for a test in another language (the Python in-process API's
//! pytest suite, the Node API's end-to-end test) and prints, as one JSON line on stdout, what a
//! `claude` run against it needs:
//! `{"base_url":…,"cwd":…,"env":{…}}` (the environment of [`ClaudeRun::command`], fresh
//! session directories included). Serves until its stdin closes.
//!
//! `cargo run -p agent-sdk-watchdog-mock --example serve -- SCENARIO [--ping-every S]
//! [--long-tool S]`
use std::io::Read;
use std::time::Duration;

use mock_api::harness::ClaudeRun;
use mock_api::{BlockingMockServer, Scenario, ScenarioOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "healthy".into());
    let mut options = ScenarioOptions::default();
    while let Some(flag) = args.next() {
        let secs: f64 = args
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{flag} needs a number of seconds"));
        let d = Duration::from_secs_f64(secs);
        match flag.as_str() {
            "--ping-every" => options.ping_every = d,
            "--long-tool" => options.long_tool = d,
            _ => panic!("unknown flag {flag}"),
        }
    }
    let scenario =
        Scenario::named_with(&name, &options).unwrap_or_else(|| panic!("unknown scenario {name}"));
    let server = BlockingMockServer::start(scenario).expect("start the mock");
    let run = ClaudeRun::new("claude", server.base_url(), "").expect("session directories");
    let cmd = run.command();
    let env: serde_json::Map<String, serde_json::Value> = cmd
        .env
        .iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned().into(),
            )
        })
        .collect();
    let out = serde_json::json!({
        "base_url": server.base_url(),
        "cwd": cmd.cwd.to_string_lossy(),
        "env": env,
    });
    println!("{out}");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    server.shutdown();
    drop(run);
}
