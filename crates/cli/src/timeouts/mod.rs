//! `agent-watchdog timeouts [POLICY FLAGS]`: the Temporal activity timeouts a watchdog policy
//! implies, as one JSON line, for the helpers (`agent_sdk_watchdog.temporal`,
//! `agent-sdk-watchdog/temporal`): one rule, the core's ([`watchdog_core::Limits::quiet`]), for both.
//!
//! - `heartbeat_timeout`: the longest a healthy session that holds nothing goes quiet under the
//!   policy ([`Quiet::unheld`](watchdog_core::config::Quiet::unheld): `max(startup, idle ×
//!   extend_factor, no_progress)`) plus the grace and the margin. The helpers heartbeat on a
//!   timer for as long as the watchdog lets the session run (a busy tool, an announced
//!   back-off, an MCP call, a human wait included), so this bound is how fast Temporal notices
//!   a worker that died: never later than a stall would have been noticed.
//! - `start_to_close_timeout`: the ceiling plus the grace and the margin (the watchdog ends
//!   every attempt by then); `null` without a ceiling.
//! - `quiet_ms`: how long the session may stay quiet, hold by hold (`busy_tool`, `backoff`,
//!   `mcp_call`), and `longest`: `null`, as a human wait (a permission prompt) pauses the
//!   clocks for as long as its answer takes. What a heartbeat timeout would have to cover if
//!   heartbeats came only with progress.
//!
//! The MCP floor is read from this process's environment as the drop-in reads the child's
//! (`MCP_TOOL_TIMEOUT` and friends).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use watchdog_core::config::Quiet;
use watchdog_core::mcp::McpSetup;

mod args;

pub use args::TimeoutsArgs;

pub use watchdog_host::options::activity_timeouts;

/// Run `timeouts`: print the JSON line, return 0.
pub fn main(args: TimeoutsArgs) -> i32 {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let setup = McpSetup::read(&["claude".to_owned()], &env, Path::new("/"), |_| {
        Err(String::new())
    });
    let (limits, _) = args.policy.limits().with_mcp_setup(&setup);
    let (heartbeat, start_to_close) =
        activity_timeouts(&limits, args.policy.grace(), args.margin.get());
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let q: Quiet = limits.quiet(true);
    println!(
        "{}",
        json!({
            "heartbeat_timeout_ms": ms(heartbeat),
            "start_to_close_timeout_ms": start_to_close.map(ms),
            "quiet_ms": {
                "unheld": ms(q.unheld),
                "busy_tool": ms(q.busy_tool),
                "backoff": ms(q.backoff),
                "mcp_call": q.mcp_call.map(ms),
                "longest": q.longest.map(ms),
            },
        })
    );
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchdog_core::Limits;

    #[test]
    fn the_longest_quiet_without_a_hold_plus_grace_and_margin() {
        let s = Duration::from_secs;
        // Defaults: idle 10m × 2 = 20m, no_progress 30m, startup 3m: 30m; no ceiling.
        let (hb, stc) = activity_timeouts(&Limits::default(), s(5), s(60));
        assert_eq!((hb, stc), (s(1800 + 65), None));
        let limits = Limits::default()
            .with_idle(s(600))
            .unwrap()
            .with_no_progress(s(300))
            .unwrap()
            .with_ceiling(Some(s(7200)))
            .unwrap();
        // idle × extend factor wins now.
        let (hb, stc) = activity_timeouts(&limits, s(2), s(60));
        assert_eq!((hb, stc), (s(1200 + 62), Some(s(7200 + 62))));
        let startup = Limits::default().with_startup(s(4000)).unwrap();
        assert_eq!(activity_timeouts(&startup, s(0), s(0)).0, s(4000));
        // The holds (2 h each by default) are not in it: the helpers heartbeat through them.
        let held = Limits::default().with_busy_cap(s(7200)).unwrap();
        assert_eq!(activity_timeouts(&held, s(0), s(0)).0, s(1800));
    }
}
