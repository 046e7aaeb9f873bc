//! The registry reads each line once and says everything that follows from it: the deadlines,
//! the rate-limit reading (and when a window's reset changes the patience), the tally of a
//! session's work, and a continuation that runs the wrong session. Virtual time throughout.

use std::time::{Duration, Instant};

use watchdog_core::facts::{Activity, Tally};
use watchdog_core::rate_limit::RateLimitEvent;
use watchdog_core::{
    classify, facts::ClaudeSessionId, Event, KillKind, Limits, LineView, Registry, SessionConfig,
};

const MIN: u64 = 60;
/// The wall clock at t0 (epoch ms): 2030-03-17T17:46:40Z.
const WALL0: u64 = 1_900_000_000_000;

fn limits() -> Limits {
    Limits::default()
        .with_idle(Duration::from_secs(10 * MIN))
        .unwrap()
}

/// A frame: five_hour at `utilization`, resetting `resets_in` seconds after t0.
fn frame(utilization: f64, resets_in: u64) -> String {
    let at = WALL0 / 1000 + resets_in;
    format!(
        r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"allowed_warning","rateLimitType":"five_hour","utilization":{utilization},"resetsAt":{at}}},"session_id":"s1"}}"#
    )
}

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s1"}"#;
const WRITE_USE: &str = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"w","name":"Write","input":{}}]},"session_id":"s1"}"#;
const WRITE_DONE: &str = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"w"}]},"session_id":"s1"}"#;

/// Run the registry to its next wake-ups until `until`; the kills' kinds and times since t0.
fn run_until(r: &mut Registry, t0: Instant, until: Duration) -> Vec<(KillKind, Duration)> {
    let mut kills = Vec::new();
    let mut wakes = 0;
    while let Some(at) = r.poll_timeout() {
        if at > t0 + until {
            break;
        }
        wakes += 1;
        assert!(
            wakes < 1000,
            "the registry keeps asking for a wake-up at {at:?}"
        );
        r.handle_timeout(at);
        while let Some(e) = r.poll_event() {
            if let Event::Killed(k) = e {
                kills.push((k.kind, k.at - t0));
            }
        }
    }
    kills
}

/// A session whose first write landed at t0, then a frame at 95 % whose window resets at 15m;
/// the registry anchored to the wall clock or not.
fn wrote_then_high_frame(anchored: bool) -> (Registry, watchdog_core::SessionId, Instant) {
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    if anchored {
        r.set_wall_clock(t0, WALL0);
    }
    let id = r.register(t0, SessionConfig::default());
    for l in [INIT, WRITE_USE, WRITE_DONE] {
        r.observe_line(t0, id, l.as_bytes());
    }
    r.observe_line(t0, id, frame(0.95, 15 * MIN).as_bytes());
    (r, id, t0)
}

/// High utilization extends the idle patience (10m → 20m); the window resets at 15m, so the
/// extension ends then and the session, past its base idle, is killed at exactly 15m, with no
/// line and no call from the host but the wake-up the registry asked for.
#[test]
fn a_window_reset_is_a_deadline_of_its_own() {
    let (mut r, _, t0) = wrote_then_high_frame(true);
    assert_eq!(r.utilization(), Some(0.95), "the line set the utilization");
    let kills = run_until(&mut r, t0, Duration::from_secs(60 * MIN));
    assert_eq!(kills, [(KillKind::Idle, Duration::from_secs(15 * MIN))]);
    assert_eq!(r.utilization(), None, "the window reset");
    assert_eq!(r.wall_ms(t0 + Duration::from_secs(1)), Some(WALL0 + 1000));
}

/// Without a wall-clock anchor the registry keeps the readings but leaves the utilization to
/// its host: no extension from the frame; a host that sets it has it hold to its end (20m),
/// with no reset.
#[test]
fn without_a_wall_clock_the_host_sets_the_utilization() {
    let (mut r, _, t0) = wrote_then_high_frame(false);
    assert_eq!(r.utilization(), None, "not set by the registry");
    assert_eq!(r.rate_limits().utilization(WALL0), Some(0.95), "but read");
    r.set_utilization(t0, Some(0.95));
    let kills = run_until(&mut r, t0, Duration::from_secs(60 * MIN));
    assert_eq!(kills, [(KillKind::Idle, Duration::from_secs(20 * MIN))]);
    assert_eq!(r.wall_ms(t0), None);
}

/// A reset that falls due while the host was away (it calls late) lands at its own instant,
/// after the deadlines before it: the kill is dated 15m, not when the host came back.
#[test]
fn a_late_wake_up_dates_the_reset_at_its_instant() {
    let (mut r, id, t0) = wrote_then_high_frame(true);
    r.handle_timeout(t0 + Duration::from_secs(40 * MIN));
    let kill = r.kill(id).expect("killed").clone();
    assert_eq!(kill.at - t0, Duration::from_secs(15 * MIN));
    assert!(r
        .poll_timeout()
        .is_none_or(|at| at > t0 + Duration::from_secs(40 * MIN)));
}

/// Warnings come once per window, as events of the session whose line it was; the same frame
/// again says nothing.
#[test]
fn rate_limit_warnings_are_events_said_once() {
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    r.set_wall_clock(t0, WALL0);
    let id = r.register(t0, SessionConfig::default());
    r.observe_line(t0, id, INIT.as_bytes());
    for s in 1..4 {
        r.observe_line(
            t0 + Duration::from_secs(s),
            id,
            frame(0.93, 60 * MIN).as_bytes(),
        );
    }
    let said: Vec<_> = std::iter::from_fn(|| r.poll_event())
        .filter_map(|e| match e {
            Event::RateLimit { id: of, event } => Some((of, event)),
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        [(
            id,
            RateLimitEvent::Warning {
                window: "five_hour".into(),
                utilization: 0.93
            }
        )]
    );
    assert_eq!(r.rate_limits().utilization(WALL0), Some(0.93));
}

/// A continuation that must run session `s1`: another id in its `init` is said once; a
/// subagent's `init` and the right id are not.
#[test]
fn a_continuation_on_another_session_is_reported_once() {
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    let s1 = ClaudeSessionId::parse("s1").unwrap();
    let right = r.register(
        t0,
        SessionConfig::default().with_expected_session(s1.clone()),
    );
    let wrong = r.register(
        t0,
        SessionConfig::default().with_expected_session(s1.clone()),
    );
    r.observe_line(t0, right, INIT.as_bytes());
    let sub = r#"{"type":"system","subtype":"init","session_id":"zz","parent_tool_use_id":"t1"}"#;
    r.observe_line(t0, wrong, sub.as_bytes());
    for _ in 0..2 {
        let other = r#"{"type":"system","subtype":"init","session_id":"s2"}"#;
        r.observe_line(t0, wrong, other.as_bytes());
    }
    let mismatches: Vec<_> = std::iter::from_fn(|| r.poll_event())
        .filter_map(|e| match e {
            Event::SessionMismatch { id, expected, got } => Some((id, expected, got)),
            _ => None,
        })
        .collect();
    assert_eq!(
        mismatches,
        [(wrong, s1, Some(ClaudeSessionId::parse("s2").unwrap()))]
    );
}

/// The registry's tally of a recorded session is the tally of its lines, and it goes on
/// through the lines printed after a kill (what the child said while it was stopped).
#[test]
fn the_tally_is_read_from_the_same_lines() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/subagents/a2_sub_mt_all_fg.stdout.jsonl"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    let id = r.register(t0, SessionConfig::default().with_tally(true));
    let plain = r.register(t0, SessionConfig::default());
    let mut direct = Tally::default();
    for l in text.lines() {
        r.observe_line(t0, id, l.as_bytes());
        r.observe_line(t0, plain, l.as_bytes());
        let v = LineView::parse(l.as_bytes()).ok();
        direct.observe(
            v.as_ref(),
            v.as_ref()
                .map_or(watchdog_core::Class::UNPARSEABLE, classify),
        );
    }
    let tally = r.tally(id).expect("kept");
    assert_eq!(*tally, direct);
    assert_eq!(*tally.activity(), Activity::Settled);
    assert_eq!(
        tally.subagents().failures.len(),
        1,
        "the subagent's failure"
    );
    assert!(r.tally(plain).is_none(), "kept only when asked for");

    // Killed at the startup deadline with no line; a line after the kill still counts.
    let late = r.register(t0, SessionConfig::default().with_tally(true));
    r.handle_timeout(t0 + Duration::from_secs(3600));
    assert!(r.kill(late).is_some());
    r.observe_line(t0 + Duration::from_secs(3601), late, WRITE_USE.as_bytes());
    assert_eq!(
        *r.tally(late).unwrap().activity(),
        Activity::Tool("Write".into())
    );
}
