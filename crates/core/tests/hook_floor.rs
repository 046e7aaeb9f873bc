//! A hook of Claude Code's that runs holds the idle kill until Claude Code's own timeout (field
//! report N7, measured on 2.1.332: a `SessionStart` hook that never exits prints
//! `system/hook_started`, then nothing; Claude Code cancels it 600.1 s later and the session
//! runs as usual; an idle patience of 10 minutes (the default, without the pre-write
//! extension: a `SessionStart` hook also runs at a `compact` or a `resume`, after writes) killed
//! it 0.07 s before that). The idle kill comes no earlier than the hook's start + 630 s (the
//! default hook timeout and one heartbeat tick) while it runs. Virtual time only.

mod common;

use std::time::Duration;

use common::{lines as l, min, sec, H};
use watchdog_core::{Event, KillKind, Limits, SessionConfig, SessionId};

const STARTED: &str = r#"{"type":"system","subtype":"hook_started","hook_id":"h1","hook_name":"SessionStart:startup","hook_event":"SessionStart","session_id":"s"}"#;
const CANCELLED: &str = r#"{"type":"system","subtype":"hook_response","hook_id":"h1","hook_name":"SessionStart:startup","hook_event":"SessionStart","exit_code":1,"outcome":"cancelled","session_id":"s"}"#;

fn session(h: &mut H, limits: Limits) -> SessionId {
    h.r.register(h.t0, SessionConfig::default().with_limits(limits))
}

fn kills(h: &mut H, until: Duration) -> Vec<(Duration, KillKind)> {
    h.run_until(until)
        .into_iter()
        .filter_map(|(_, e)| match e {
            Event::Killed(k) => Some((h.off(&k), k.kind)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_recorded_session_start_hook_is_not_killed_before_claude_cancels_it() {
    // The measured timing, under the default idle of 10 m, unextended.
    let mut h = H::default();
    let id = session(&mut h, Limits::default().with_extend_factor(1.0).unwrap());
    h.line(sec(0.684), id, STARTED);
    assert_eq!(kills(&mut h, sec(600.752)), []);
    h.line(sec(600.752), id, CANCELLED);
    h.line(sec(601.075), id, l::INIT);
    h.line(sec(601.362), id, l::ASSISTANT_TEXT);
    h.line(sec(601.372), id, l::RESULT_OK);
    let record = h.r.finish(h.at(sec(602.3)), id).unwrap();
    assert_eq!(record.outcome.as_str(), "success");
}

#[test]
fn a_short_patience_waits_for_the_hooks_timeout_and_a_hook_never_cancelled_is_killed() {
    // Idle 20 s: held until the hook's start + 630 s, then killed idle if Claude Code never
    // cancelled it.
    let limits = Limits::default()
        .with_idle(sec(20.0))
        .and_then(|l| l.with_extend_factor(1.0))
        .unwrap();
    let mut h = H::default();
    let id = session(&mut h, limits);
    h.line(sec(1.0), id, STARTED);
    assert_eq!(kills(&mut h, min(60.0)), [(sec(631.0), KillKind::Idle)]);
}

#[test]
fn the_hooks_response_ends_the_hold() {
    let limits = Limits::default()
        .with_idle(sec(20.0))
        .and_then(|l| l.with_extend_factor(1.0))
        .unwrap();
    let mut h = H::default();
    let id = session(&mut h, limits.clone());
    h.line(sec(1.0), id, STARTED);
    h.line(sec(5.0), id, CANCELLED);
    assert_eq!(kills(&mut h, min(60.0)), [(sec(25.0), KillKind::Idle)]);
    // A subagent's hook line is not the session's start: it holds nothing.
    let mut h = H::default();
    let id = session(&mut h, limits);
    h.line(
        sec(1.0),
        id,
        &STARTED.replace(
            r#""session_id":"s""#,
            r#""session_id":"s","parent_tool_use_id":"toolu_a""#,
        ),
    );
    assert_eq!(kills(&mut h, min(60.0)), [(sec(21.0), KillKind::Idle)]);
}
