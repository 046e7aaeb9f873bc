//! Serves one named scenario until stdin closes, for tests written in another language:
//! `cargo run -p agent-sdk-watchdog-mock --example serve -- healthy` prints the base URL
//! (`http://127.0.0.1:PORT`) as its first stdout line, then serves until its stdin reaches EOF.
//! Pings (in `ping_only_stall`) come every second.
use std::io::{Read, Write};
use std::time::Duration;

use mock_api::{BlockingMockServer, Scenario, ScenarioOptions};

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "healthy".into());
    let options = ScenarioOptions {
        ping_every: Duration::from_secs(1),
        ..ScenarioOptions::default()
    };
    let scenario = Scenario::named_with(&name, &options)
        .unwrap_or_else(|| panic!("unknown scenario {name:?}: one of {:?}", Scenario::NAMES));
    let server = BlockingMockServer::start(scenario).expect("start the mock");
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", server.base_url()).expect("stdout");
    out.flush().expect("stdout");
    drop(out);
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(server);
}
