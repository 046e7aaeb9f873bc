//! `agent-watchdog timeouts [POLICY FLAGS]`: the Temporal activity timeouts a watchdog policy
//! implies, as one JSON line, for the helpers (`agent_sdk_watchdog.temporal`,
//! `agent-sdk-watchdog/temporal`): one rule, here, for both.
//!
//! - `heartbeat_timeout`: the longest a healthy session goes without progress under the
//!   policy — `max(startup, idle × extend_factor, no_progress)` — plus the grace and the margin.
//!   Past it the watchdog has ended the session already, so a heartbeat timeout means the
//!   worker itself is gone.
//! - `start_to_close_timeout`: the ceiling plus the grace and the margin (the watchdog ends
//!   every attempt by then); `null` without a ceiling.

use std::time::Duration;

use serde_json::json;
use watchdog_core::Limits;

mod args;

pub use args::TimeoutsArgs;

/// The two timeouts of `limits` with `grace` and `margin`: (heartbeat, start-to-close).
pub fn activity_timeouts(
    limits: &Limits,
    grace: Duration,
    margin: Duration,
) -> (Duration, Option<Duration>) {
    let patience = limits.idle().mul_f64(limits.extend_factor());
    let longest = limits.startup().max(patience).max(limits.no_progress());
    let heartbeat = longest.saturating_add(grace).saturating_add(margin);
    let start_to_close = limits
        .ceiling()
        .map(|c| c.saturating_add(grace).saturating_add(margin));
    (heartbeat, start_to_close)
}

/// Run `timeouts`: print the JSON line, return 0.
pub fn main(args: TimeoutsArgs) -> i32 {
    let (heartbeat, start_to_close) = activity_timeouts(
        &args.policy.limits(),
        args.policy.grace(),
        args.margin.get(),
    );
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    println!(
        "{}",
        json!({
            "heartbeat_timeout_ms": ms(heartbeat),
            "start_to_close_timeout_ms": start_to_close.map(ms),
        })
    );
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_quiet_a_policy_allows_plus_grace_and_margin() {
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
    }
}
