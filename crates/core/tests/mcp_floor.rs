//! The MCP floor: while an MCP tool call is outstanding, the no-progress kill never comes
//! before Claude Code itself gives up on that call, plus a margin (virtual time only).
//!
//! The timeline of a hung stdio MCP call is the measured one (`testdata/mcp/README.md`):
//! the `tool_use` at 0.874 s, one `tool_progress` heartbeat every 30 s naming the tool, and
//! under Claude Code's defaults its own abort (an `is_error` tool result) at 1,801.2 s.

mod common;

use std::time::Duration;

use common::{lines, sec, H};
use watchdog_core::{Event, KillKind, Limits, McpLimits, Outcome};

/// Claude Code's heartbeat tick.
const HEARTBEAT_TICK: Duration = Duration::from_secs(30);

const CALL: &str = "toolu_mock_mcp_1";
const TOOL: &str = "mcp__probe__wait";

fn heartbeat(n: u64) -> String {
    format!(
        r#"{{"type":"tool_progress","tool_use_id":"{CALL}-heartbeat-{n}","tool_name":"{TOOL}","parent_tool_use_id":"{CALL}","elapsed_time_seconds":{},"heartbeat":true,"session_id":"s"}}"#,
        30 * (n + 1)
    )
}

/// The start of the recorded session: init, then the MCP call at 0.874 s.
fn start_call(h: &mut H, limits: Limits) -> watchdog_core::SessionId {
    let id = h.reg_with(Duration::ZERO, limits);
    h.line(sec(0.737), id, lines::INIT);
    h.line(sec(0.874), id, &lines::tool_use(CALL, TOOL));
    h.line(sec(0.890), id, lines::DELTA);
    id
}

/// Heartbeats every 30 s from the call's start, up to (excluding) `until`.
fn heartbeats(h: &mut H, id: watchdog_core::SessionId, until: f64) -> Vec<Event> {
    let mut events = Vec::new();
    let mut n = 0;
    loop {
        let t = 0.874 + 30.0 * (n + 1) as f64;
        if t >= until {
            return events;
        }
        events.extend(h.tick(sec(t)));
        h.line(sec(t), id, &heartbeat(n));
        events.extend(h.drain());
        n += 1;
    }
}

fn killed(events: &[Event]) -> Option<&watchdog_core::Kill> {
    events.iter().find_map(|e| match e {
        Event::Killed(k) => Some(k),
        _ => None,
    })
}

#[test]
fn the_default_policy_lets_claude_code_abort_a_hung_mcp_call_itself() {
    let mut h = H::default();
    let id = start_call(&mut h, Limits::default());
    let events = heartbeats(&mut h, id, 1801.2);
    assert!(killed(&events).is_none(), "{events:?}");
    // Claude Code's own abort, then the session carries on to a success.
    let events = h.tick(sec(1801.2));
    assert!(killed(&events).is_none(), "{events:?}");
    h.line(sec(1801.2), id, &lines::tool_result(CALL, true));
    h.line(sec(1801.25), id, lines::DELTA);
    h.line(sec(1801.3), id, lines::RESULT_OK);
    assert_eq!(h.r.end(h.at(sec(1801.35)), id), Some(Outcome::Success));
    assert!(killed(&h.drain()).is_none());
}

#[test]
fn without_the_floor_the_same_session_was_killed_just_before_claude_codes_abort() {
    // The behaviour the floor fixes: a plain 30-minute no-progress limit from the last
    // progress (0.890 s) fires at 1,800.89 s, 0.3 s before Claude Code's abort.
    let mut h = H::default();
    let no_floor = Limits::default().with_mcp(McpLimits::default().with_give_up(None).unwrap());
    let id = start_call(&mut h, no_floor);
    let mut events = heartbeats(&mut h, id, 1801.2);
    events.extend(h.tick(sec(1801.2)));
    let k = killed(&events).expect("killed");
    assert_eq!(k.kind, KillKind::NoProgress);
    assert_eq!(h.off(k), sec(1800.890));
    assert!(h.off(k) < sec(1801.2));
}

#[test]
fn a_call_claude_code_never_aborts_is_killed_at_its_floor_and_named() {
    // Claude Code gives up at 1,800 s; if it does not (a broken CLI), the watchdog kills at
    // the call's start + 1,800 s + 30 s, and says which MCP tool hung and for how long.
    let mut h = H::default();
    let id = start_call(&mut h, Limits::default());
    let events = heartbeats(&mut h, id, 1900.0);
    let k = killed(&events).expect("killed");
    assert_eq!(k.kind, KillKind::NoProgress);
    assert_eq!(h.off(k), sec(0.874 + 1830.0));
    let call = k.mcp_call.as_ref().expect("the MCP call in flight");
    assert_eq!(call.tool, TOOL);
    assert_eq!(call.outstanding, sec(1830.0));
}

#[test]
fn a_short_claude_code_limit_gives_a_short_floor() {
    // CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT=20000: Claude Code aborts on the 30 s tick; the
    // floor is 30 s + 30 s from the call's start, so a 5 s no-progress limit waits for it.
    let give_up = watchdog_core::mcp::give_up(Some(sec(20.0)), None);
    assert_eq!(give_up, Some(sec(30.0)));
    let limits = Limits::default()
        .with_no_progress(sec(5.0))
        .unwrap()
        .with_mcp(McpLimits::default().with_give_up(give_up).unwrap());
    let mut h = H::default();
    let id = start_call(&mut h, limits.clone());
    let events = heartbeats(&mut h, id, 30.9);
    assert!(killed(&events).is_none(), "{events:?}");
    // Claude Code's abort at 30.9 s (measured): progress, the session goes on and succeeds.
    h.line(sec(30.893), id, &lines::tool_result(CALL, true));
    h.line(sec(30.923), id, lines::RESULT_OK);
    assert_eq!(h.r.end(h.at(sec(30.973)), id), Some(Outcome::Success));

    // The same call never answered: killed at 0.874 + 60 s, not at 5 s.
    let mut h = H::default();
    let id = start_call(&mut h, limits);
    let events = heartbeats(&mut h, id, 100.0);
    let k = killed(&events).expect("killed");
    assert_eq!(h.off(k), sec(60.874));
}

#[test]
fn with_claude_codes_limits_disabled_the_plain_no_progress_limit_applies() {
    let limits = Limits::default()
        .with_no_progress(sec(5.0))
        .unwrap()
        .with_mcp(McpLimits::default().with_give_up(None).unwrap());
    let mut h = H::default();
    start_call(&mut h, limits);
    let events = h.run_until(sec(60.0));
    let k = killed(&events.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>())
        .cloned()
        .expect("killed");
    assert_eq!(h.off(&k), sec(5.890));
    let call = k.mcp_call.expect("the MCP call in flight is still named");
    assert_eq!(call.tool, TOOL);
    assert_eq!(call.outstanding, sec(5.016));
}

#[test]
fn a_per_server_limit_overrides_the_default() {
    let mcp = McpLimits::default()
        .with_server("probe", Some(sec(120.0)))
        .unwrap();
    let limits = Limits::default()
        .with_no_progress(sec(5.0))
        .unwrap()
        .with_mcp(mcp);
    let mut h = H::default();
    let id = start_call(&mut h, limits);
    let events = heartbeats(&mut h, id, 400.0);
    assert_eq!(h.off(killed(&events).expect("killed")), sec(150.874));
}

#[test]
fn a_heartbeat_alone_proves_a_call_outstanding_since_its_elapsed_time() {
    // No tool_use line seen (e.g. a capture that starts late): the heartbeat at 30 s says the
    // call began 30 s earlier.
    let limits = Limits::default()
        .with_no_progress(sec(5.0))
        .unwrap()
        .with_mcp(McpLimits::default().with_give_up(Some(sec(30.0))).unwrap());
    let mut h = H::default();
    let id = h.reg_with(Duration::ZERO, limits);
    h.line(sec(0.5), id, lines::INIT);
    // Before the heartbeat only the plain limit holds: keep the session alive with progress.
    for t in 1..=30 {
        h.line(sec(t as f64), id, lines::DELTA);
    }
    h.line(sec(30.874), id, &heartbeat(0));
    let events = h.run_until(sec(200.0));
    let k = events
        .iter()
        .find_map(|(_, e)| match e {
            Event::Killed(k) => Some(k.clone()),
            _ => None,
        })
        .expect("killed");
    assert_eq!(h.off(&k), sec(0.874 + 60.0));
    assert_eq!(k.mcp_call.map(|c| c.tool).as_deref(), Some(TOOL));
}

#[test]
fn an_answered_call_no_longer_holds_the_kill_back() {
    let limits = Limits::default().with_no_progress(sec(5.0)).unwrap();
    let mut h = H::default();
    let id = start_call(&mut h, limits);
    h.line(sec(4.0), id, &lines::tool_result(CALL, false));
    let events = h.run_until(sec(100.0));
    let (t, k) = events
        .iter()
        .find_map(|(t, e)| match e {
            Event::Killed(k) => Some((*t, k.clone())),
            _ => None,
        })
        .expect("killed");
    assert_eq!((t, h.off(&k)), (sec(9.0), sec(9.0)));
    assert_eq!(k.mcp_call, None);
}

#[test]
fn other_tools_get_no_floor() {
    let limits = Limits::default().with_no_progress(sec(5.0)).unwrap();
    let mut h = H::default();
    let id = h.reg_with(Duration::ZERO, limits);
    h.line(sec(0.5), id, &lines::tool_use("toolu_b", "Bash"));
    h.line(sec(30.5), id, lines::TOOL_PROGRESS);
    let events = h.run_until(sec(100.0));
    let k = events
        .iter()
        .find_map(|(_, e)| match e {
            Event::Killed(k) => Some(k.clone()),
            _ => None,
        })
        .expect("killed");
    assert_eq!(h.off(&k), sec(5.5));
}

#[test]
fn the_limits_are_validated() {
    assert!(McpLimits::default().with_margin(sec(29.9)).is_err());
    assert!(McpLimits::default().with_margin(HEARTBEAT_TICK).is_ok());
    assert!(McpLimits::default()
        .with_give_up(Some(Duration::ZERO))
        .is_err());
    assert!(McpLimits::default()
        .with_server("db", Some(Duration::ZERO))
        .is_err());
    let m = McpLimits::default()
        .with_server("db", Some(sec(10.0)))
        .unwrap()
        .with_server("db", None)
        .unwrap();
    assert_eq!(m.servers().len(), 1);
    assert_eq!(m.floor_for_tool("mcp__db__q"), None);
    assert_eq!(McpLimits::default().give_up(), Some(sec(1800.0)));
    assert_eq!(McpLimits::default().margin(), sec(30.0));
}
