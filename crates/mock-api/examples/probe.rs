//! Runs the real CLI against a named scenario and prints what it wrote and what
//! the mock received: `cargo run -p agent-sdk-watchdog-mock --example probe -- healthy [seconds]`
//! (`PROBE_BODY=file.json` also saves the first request body).
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use mock_api::harness::{find_claude, ClaudeRun};
use mock_api::{BlockingMockServer, Scenario};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "healthy".into());
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20);
    let scenario = Scenario::named(&name).expect("unknown scenario");
    let gateway = scenario.uses_rate_limit_headers();
    let server = BlockingMockServer::start(scenario).expect("start mock");
    let bin = find_claude().unwrap_or_else(|e| panic!("{e}"));
    let mut run = ClaudeRun::new(bin, server.base_url(), "Say hello.").expect("dirs");
    if gateway {
        run = run.gateway_auth().env("CLAUDE_CODE_MAX_RETRIES", "0");
    }
    let mut child = run
        .command()
        .to_std()
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().unwrap();
    let t0 = Instant::now();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!(
                "{:>6} {}",
                t0.elapsed().as_millis(),
                &line[..line.len().min(400)]
            );
        }
    });
    while t0.elapsed() < Duration::from_secs(secs) {
        if let Some(st) = child.try_wait().unwrap() {
            println!("exit {st:?}");
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    for r in server.requests() {
        println!("REQ {} {} {:?} {:?}", r.method, r.path, r.query, r.summary);
    }
    if let (Some(r), Some(path)) = (
        server.main_requests().first(),
        std::env::var_os("PROBE_BODY"),
    ) {
        // PROBE_BODY=/some/file.json saves the first request body for inspection.
        std::fs::write(&path, serde_json::to_string_pretty(&r.body).unwrap()).unwrap();
        println!("headers: {:?}", r.headers);
    }
}
