//! Background work outstanding at a `result` is working, not waiting: while the last
//! `system/background_tasks_changed` lists tasks (or a `task_started` with
//! `is_backgrounded: true` has not ended), the idle and no-progress clocks run as during a turn
//! (the tasks' progress counts), neither the linger nor the wait for the host applies; once the
//! list empties, the waiting rules apply again from then. Virtual time only.

mod common;

use std::time::Duration;

use common::{lines as l, min, testdata_dir, H};
use watchdog_core::{Event, KillKind, Limits, SessionConfig, SessionId};

const NS: Duration = Duration::from_nanos(1);

const AGENT_CALL: &str = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a1","name":"Agent","input":{"run_in_background":true}}]},"session_id":"s","parent_tool_use_id":null}"#;
const BG_LISTED: &str = r#"{"type":"system","subtype":"background_tasks_changed","tasks":[{"task_id":"a1","task_type":"local_agent","description":"probe"}],"session_id":"s"}"#;
const BG_EMPTY: &str =
    r#"{"type":"system","subtype":"background_tasks_changed","tasks":[],"session_id":"s"}"#;
const BG_STARTED: &str = r#"{"type":"system","subtype":"task_started","task_id":"a1","tool_use_id":"toolu_a1","description":"probe","task_type":"local_agent","is_backgrounded":true,"session_id":"s"}"#;
const FG_STARTED: &str = r#"{"type":"system","subtype":"task_started","task_id":"b1","tool_use_id":"toolu_b1","description":"sleep","task_type":"local_bash","is_backgrounded":false,"session_id":"s"}"#;
const BG_DONE: &str = r#"{"type":"system","subtype":"task_updated","task_id":"a1","patch":{"status":"completed","end_time":1},"session_id":"s"}"#;
const BG_NOTIFIED: &str = r#"{"type":"system","subtype":"task_notification","task_id":"a1","tool_use_id":"toolu_a1","status":"completed","summary":"done","session_id":"s"}"#;
const AMBIENT_LISTED: &str = r#"{"type":"system","subtype":"background_tasks_changed","tasks":[{"task_id":"w1","task_type":"local_bash","description":"watcher","ambient":true}],"session_id":"s"}"#;
/// A subagent's line: its `parent_tool_use_id` is the `Agent` call.
const AGENT_WORK: &str = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"working"}]},"session_id":"s","parent_tool_use_id":"toolu_a1"}"#;
const TASK_PROGRESS: &str = r#"{"type":"system","subtype":"task_progress","task_id":"a1","description":"probe","usage":{"total_tokens":1,"tool_uses":1,"duration_ms":1},"session_id":"s"}"#;
const USER_MSG: &str =
    r#"{"type":"user","message":{"role":"user","content":"next turn"},"session_id":""}"#;

/// Idle 5 m (no extension), no-progress 10 m, linger 3 m: distinct limits, the linger the
/// shortest (so a test fails if the linger, not the idle clock, decides).
fn limits() -> Limits {
    Limits::default()
        .with_idle(min(5.0))
        .and_then(|l| l.with_extend_factor(1.0))
        .and_then(|l| l.with_no_progress(min(10.0)))
        .and_then(|l| l.with_linger(min(3.0)))
        .unwrap()
}

fn session(h: &mut H, host_input: bool) -> SessionId {
    let cfg = SessionConfig::default()
        .with_limits(limits())
        .with_host_input(host_input);
    h.r.register(h.t0, cfg)
}

/// Init, an `Agent` call that runs in the background, then the interim `result` at `at`.
fn interim_result(h: &mut H, id: SessionId, at: Duration, listed: &str) {
    h.line(at, id, l::INIT);
    h.line(at, id, AGENT_CALL);
    h.line(at, id, listed);
    h.line(at, id, l::ASSISTANT_TEXT);
    h.line(at, id, l::RESULT_OK);
}

fn kills_until(h: &mut H, until: Duration) -> Vec<(Duration, KillKind)> {
    h.run_until(until)
        .into_iter()
        .filter_map(|(t, e)| match e {
            Event::Killed(k) => Some((h.off(&k), k.kind)).filter(|_| t >= Duration::ZERO),
            _ => None,
        })
        .collect()
}

#[test]
fn a_background_agent_that_wedges_after_the_result_is_killed_task_silent_not_waited_for() {
    // Both modes: `-p` (the linger was the only clock) and streaming input (no clock at all
    // but the ceiling ran). The agent never prints again after the interim result.
    for host_input in [false, true] {
        let mut h = H::default();
        let id = session(&mut h, host_input);
        interim_result(&mut h, id, min(1.0), BG_LISTED);
        let snap = h.r.snapshot(id).unwrap();
        assert!(
            !snap.paused,
            "host_input={host_input}: not waiting: {snap:?}"
        );
        assert_eq!(
            kills_until(&mut h, min(60.0)),
            [(min(6.0), KillKind::TaskSilent)],
            "host_input={host_input}: idle 5 m after the last line, the task named"
        );
    }
}

#[test]
fn a_background_agent_that_works_then_wedges_is_killed_after_its_last_line() {
    for host_input in [false, true] {
        let mut h = H::default();
        let id = session(&mut h, host_input);
        interim_result(&mut h, id, min(1.0), BG_LISTED);
        h.line(min(5.0), id, AGENT_WORK);
        h.line(min(9.0), id, TASK_PROGRESS);
        assert_eq!(
            kills_until(&mut h, min(60.0)),
            [(min(14.0), KillKind::TaskSilent)],
            "host_input={host_input}"
        );
    }
}

#[test]
fn a_background_agent_that_keeps_working_outlives_the_linger_then_the_waiting_rules_apply() {
    let mut h = H::default();
    let id = session(&mut h, false);
    interim_result(&mut h, id, min(1.0), BG_LISTED);
    // 40 minutes of work, a line every 4 minutes: each gap past the 3 m linger, the whole
    // past the 10 m no-progress; the agent's work is progress.
    for m in (5..=41).step_by(4) {
        let line = if m % 8 == 5 {
            AGENT_WORK
        } else {
            TASK_PROGRESS
        };
        h.line(min(f64::from(m)), id, line);
    }
    assert_eq!(kills_until(&mut h, min(41.0)), []);
    assert!(h.r.snapshot(id).unwrap().settled, "its own turn is over");
    // The agent ends (its last lines at 42 m; the list empties after them): the linger runs
    // from its end.
    h.line(min(42.0), id, BG_DONE);
    h.line(min(42.0), id, BG_NOTIFIED);
    h.line(min(43.0), id, BG_EMPTY);
    assert_eq!(kills_until(&mut h, min(45.0) - NS), []);
    assert_eq!(
        kills_until(&mut h, min(60.0)),
        [(min(45.0), KillKind::Linger)]
    );
}

#[test]
fn with_the_host_input_open_the_wait_for_the_host_begins_when_the_tasks_end() {
    let mut h = H::default();
    let id = session(&mut h, true);
    interim_result(&mut h, id, min(1.0), BG_LISTED);
    h.line(min(2.0), id, AGENT_WORK);
    h.line(min(3.0), id, BG_EMPTY);
    let snap = h.r.snapshot(id).unwrap();
    assert!(
        snap.settled && snap.paused,
        "waiting for the host: {snap:?}"
    );
    assert_eq!(kills_until(&mut h, min(24.0 * 60.0)), [], "the host thinks");
    // The host's next message starts the next turn with fresh clocks.
    h.input(min(24.0 * 60.0), id, USER_MSG);
    assert_eq!(
        kills_until(&mut h, min(24.0 * 60.0 + 6.0)),
        [(min(24.0 * 60.0 + 5.0), KillKind::Idle)]
    );
}

#[test]
fn the_host_may_start_its_next_turn_while_the_tasks_run() {
    let mut h = H::default();
    let id = session(&mut h, true);
    interim_result(&mut h, id, min(1.0), BG_LISTED);
    h.input(min(1.5), id, USER_MSG);
    let snap = h.r.snapshot(id).unwrap();
    assert!(!snap.settled, "a new turn: {snap:?}");
    // Its result, with the task still listed: still working.
    h.line(min(2.0), id, l::ASSISTANT_TEXT);
    h.line(min(2.0), id, l::RESULT_OK);
    assert_eq!(
        kills_until(&mut h, min(60.0)),
        [(min(7.0), KillKind::TaskSilent)]
    );
}

#[test]
fn task_lifecycle_lines_alone_tell_a_background_task() {
    // No `background_tasks_changed` at all: a backgrounded `task_started` counts until its end.
    let mut h = H::default();
    let id = session(&mut h, false);
    interim_result(&mut h, id, min(1.0), BG_STARTED);
    h.line(min(4.5), id, AGENT_WORK);
    h.line(min(8.0), id, BG_NOTIFIED);
    // Ended: settled, the linger from the end.
    assert_eq!(
        kills_until(&mut h, min(60.0)),
        [(min(11.0), KillKind::Linger)]
    );
}

#[test]
fn foreground_and_ambient_tasks_are_not_background_work() {
    for listed in [FG_STARTED, AMBIENT_LISTED] {
        let mut h = H::default();
        let id = session(&mut h, false);
        interim_result(&mut h, id, min(1.0), listed);
        assert_eq!(
            kills_until(&mut h, min(60.0)),
            [(min(4.0), KillKind::Linger)],
            "{listed}"
        );
    }
}

#[test]
fn the_cli_going_on_by_itself_after_the_tasks_is_a_new_turn() {
    // The parent takes a turn of its own on the agent's notification (`-p` mode): top-level
    // progress un-settles the session; a hang in that turn is an idle kill, not a linger.
    let mut h = H::default();
    let id = session(&mut h, false);
    interim_result(&mut h, id, min(1.0), BG_LISTED);
    h.line(min(2.0), id, BG_NOTIFIED);
    h.line(min(2.0), id, BG_EMPTY);
    h.line(min(2.5), id, l::INIT);
    h.line(min(2.5), id, l::ASSISTANT_TEXT);
    assert!(!h.r.snapshot(id).unwrap().settled);
    assert_eq!(kills_until(&mut h, min(60.0)), [(min(7.5), KillKind::Idle)]);
}

#[test]
fn the_recorded_background_agent_stream_is_working_until_the_agent_ends() {
    // The real CLI's lines of a background agent (testdata/subagents/a8, where `-p` printed the
    // interim `result` only at the end); here the interim result comes right after the
    // parent's answer to the launch, as in streaming-input mode, and each line a minute apart.
    let text =
        std::fs::read_to_string(testdata_dir().join("subagents/a8_sub_mt_all_bg.stdout.jsonl"))
            .unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains(r#""type":"result""#))
        .collect();
    let answered = lines
        .iter()
        .position(|l| l.contains("PARENT: agent launched"))
        .expect("the parent's answer to the background agent's launch");
    let ended = lines
        .iter()
        .position(|l| l.contains(r#""subtype":"task_updated""#))
        .expect("the agent's end");
    let mut h = H::default();
    let id = session(&mut h, true);
    for (i, line) in lines[..=answered].iter().enumerate() {
        h.line(min(i as f64 * 0.1), id, line);
    }
    h.line(min(1.0), id, l::RESULT_OK);
    // The agent's lines, a minute apart: working (clocks run, no wait for the host).
    for (i, line) in lines[answered + 1..ended].iter().enumerate() {
        h.line(min(2.0 + i as f64), id, line);
        let snap = h.r.snapshot(id).unwrap();
        assert!(snap.settled && !snap.paused, "line {i}: working: {snap:?}");
    }
    let at = min(2.0 + (ended - answered - 1) as f64);
    assert_eq!(kills_until(&mut h, at - NS), []);
    // Its end: the session waits for its host again (no clock but the ceiling).
    for line in &lines[ended..] {
        h.line(at, id, line);
        if line.contains(r#""subtype":"init""#) {
            break;
        }
        let snap = h.r.snapshot(id).unwrap();
        assert!(
            snap.settled && snap.paused,
            "waiting for the host: {snap:?}"
        );
    }
}
