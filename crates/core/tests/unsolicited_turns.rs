//! Results nobody asked for (field report N5): Claude Code takes turns by itself (a declared
//! wakeup, a monitor's event, a background task's notification, a Stop hook) and prints a
//! `result` for each; an SDK host that pairs one result with each of its messages then reads
//! the wrong one. The registry counts the host's top-level `user` messages (one prompt for a
//! session without host input) and the top-level results, and reports each result beyond
//! them (`Event::UnsolicitedResult`), in the tally (`Tally::turns`) too. Virtual time only.

mod common;

use std::time::Duration;

use common::{lines as l, sec, testdata_dir, H};
use watchdog_core::{Event, Limits, SessionConfig, SessionId};

const USER: &str = r#"{"type":"user","session_id":"","parent_tool_use_id":null,"message":{"role":"user","content":[{"type":"text","text":"go"}]}}"#;
const SUB_RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"parent_tool_use_id":"toolu_a","session_id":"s"}"#;

fn session(h: &mut H, host_input: bool, tally: bool) -> SessionId {
    let cfg = SessionConfig::default()
        .with_limits(Limits::default())
        .with_host_input(host_input)
        .with_tally(tally);
    h.r.register(h.t0, cfg)
}

/// The unsolicited results reported: (results, messages) of each.
fn unsolicited(events: &[Event]) -> Vec<(u32, u32)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::UnsolicitedResult {
                results, messages, ..
            } => Some((*results, *messages)),
            _ => None,
        })
        .collect()
}

fn turn(h: &mut H, id: SessionId, at: Duration) {
    h.line(at, id, l::INIT);
    h.line(at, id, l::ASSISTANT_TEXT);
    h.line(at, id, l::RESULT_OK);
}

#[test]
fn one_result_per_host_message_is_solicited_and_a_turn_of_its_own_is_not() {
    let mut h = H::default();
    let id = session(&mut h, true, true);
    h.input(sec(0.0), id, USER);
    turn(&mut h, id, sec(1.0));
    h.input(sec(2.0), id, USER);
    turn(&mut h, id, sec(3.0));
    assert_eq!(unsolicited(&h.drain()), []);
    // A background task's notification starts a turn by itself.
    turn(&mut h, id, sec(4.0));
    // A subagent's own result line is not the session's.
    h.line(sec(4.5), id, SUB_RESULT);
    // The host's third message: a host that took the third result as its answer finds the
    // fourth unasked for; by count it is unsolicited too (the host is out of step from the
    // first extra result on).
    h.input(sec(5.0), id, USER);
    turn(&mut h, id, sec(6.0));
    assert_eq!(unsolicited(&h.drain()), [(3, 2), (4, 3)]);
    let turns = h.r.turns(id).unwrap();
    assert_eq!(
        (turns.messages, turns.results, turns.unsolicited),
        (3, 4, 2)
    );
}

#[test]
fn without_host_input_the_prompt_is_the_one_message() {
    // `-p` with a wakeup or a monitor: every result after the first is a turn of its own.
    let mut h = H::default();
    let id = session(&mut h, false, true);
    for s in 0..5 {
        turn(&mut h, id, sec(f64::from(s)));
    }
    assert_eq!(unsolicited(&h.drain()), [(2, 1), (3, 1), (4, 1), (5, 1)]);
}

#[test]
fn the_recorded_background_agent_run_printed_two_results_for_one_prompt() {
    // testdata/subagents/a8 (`claude -p`, a background agent): the CLI held its first result
    // until the agent ended, then took a turn on the agent's notification and printed a
    // second. A one-shot SDK host keeps the first ("agent launched, waiting for its
    // notification") as the answer.
    let text =
        std::fs::read_to_string(testdata_dir().join("subagents/a8_sub_mt_all_bg.stdout.jsonl"))
            .unwrap();
    let mut h = H::default();
    let id = session(&mut h, false, true);
    for (i, line) in text.lines().enumerate() {
        h.line(sec(i as f64 * 0.1), id, line);
    }
    assert_eq!(unsolicited(&h.drain()), [(2, 1)]);
}

#[test]
fn a_session_without_a_tally_reports_nothing_and_keeps_its_clocks() {
    let mut h = H::default();
    let id = session(&mut h, true, false);
    h.input(sec(0.0), id, USER);
    for s in 1..4 {
        turn(&mut h, id, sec(f64::from(s)));
    }
    let events = h.drain();
    assert_eq!(unsolicited(&events), []);
    assert!(h.r.snapshot(id).unwrap().paused, "waiting for its host");
}
