//! The one replay ([`watchdog_host::replay`]) agrees with the registry fed live: a capture of
//! a stream-json-input run waits for its host as the live run did, and recorded process-tree
//! samples replay to the live verdict.

#[path = "../../core/tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::lines::{tool_use, INIT, TOOL_PROGRESS};
use common::tree::{limits, proc, ROOT};
use common::{min, sec};
use watchdog_core::evidence::{ProcState, TreeSample};
use watchdog_core::{Event, Kill, KillKind, Limits, Registry, SessionConfig, SessionId};
use watchdog_host::capture::EntryView;
use watchdog_host::replay::{Replay, RunVerdict};

// ---------------------------------------------------------------- waiting for the host

fn replay(capture: &str) -> (RunVerdict, Vec<KillKind>) {
    let mut r = Replay::new(Limits::default(), std::time::Instant::now());
    let mut kills = Vec::new();
    for (i, line) in capture.lines().enumerate() {
        let entry = EntryView::parse(line.as_bytes()).unwrap().unwrap();
        r.feed(i as u64 + 1, &entry);
        while let Some(e) = r.poll_event() {
            if let Event::Killed(k) = e.event {
                kills.push(k.kind);
            }
        }
    }
    let v = r.finish();
    while let Some(e) = r.poll_event() {
        if let Event::Killed(k) = e.event {
            kills.push(k.kind);
        }
    }
    (v, kills)
}

/// Two turns an hour apart (the default linger is 11 m), then the host ends its input.
fn two_turns(argv: &str, closed_at: u64, exit_at: u64) -> String {
    format!(
        r#"{{"t_ms":0,"start":{{"wall_ms":1,"argv":{argv},"version":1}}}}
{{"t_ms":5,"stdin":{{"type":"user","message":{{"role":"user","content":"one"}}}}}}
{{"t_ms":40,"line":{{"type":"system","subtype":"init","session_id":"s1"}}}}
{{"t_ms":900,"line":{{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}}}}
{{"t_ms":3600000,"stdin":{{"type":"user","message":{{"role":"user","content":"two"}}}}}}
{{"t_ms":3600040,"line":{{"type":"system","subtype":"init","session_id":"s1"}}}}
{{"t_ms":3600900,"line":{{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}}}}
{{"t_ms":{closed_at},"stdin":{{"note":"stdin closed"}}}}
{{"t_ms":{exit_at},"exit":{{"code":0,"signal":null}}}}"#
    )
}

const STREAMING: &str =
    r#"["claude","-p","--input-format","stream-json","--output-format","stream-json","--verbose"]"#;

#[test]
fn a_replay_of_a_streaming_input_capture_waits_for_the_host_as_the_live_run_did() {
    let (v, kills) = replay(&two_turns(STREAMING, 7_200_000, 7_200_050));
    assert_eq!(kills, vec![]);
    assert_eq!(v.record.outcome, watchdog_core::Outcome::Success);
    // The same capture with `--input-format=stream-json` in one argument.
    let one = r#"["claude","-p","--input-format=stream-json"]"#;
    let (v, kills) = replay(&two_turns(one, 7_200_000, 7_200_050));
    assert_eq!(
        (kills, v.record.outcome),
        (vec![], watchdog_core::Outcome::Success)
    );
}

#[test]
fn a_replay_lingers_from_the_recorded_end_of_input() {
    // Input closed two hours after the last result; the child then stays 12 minutes.
    let (v, kills) = replay(&two_turns(STREAMING, 10_800_000, 10_800_000 + 12 * 60_000));
    assert_eq!(kills, vec![KillKind::Linger]);
    let k = v.record.kill.expect("a kill");
    assert_eq!(
        k.at - v.base,
        Duration::from_millis(10_800_000 + 11 * 60_000),
        "linger from the stdin-closed note"
    );
}

#[test]
fn a_replay_without_stream_json_input_lingers_from_the_result_as_before() {
    let argv = r#"["claude","-p","hi","--output-format","stream-json"]"#;
    let (v, kills) = replay(&two_turns(argv, 7_200_000, 7_200_050));
    assert_eq!(kills, vec![KillKind::Linger]);
    assert_eq!(
        v.record.kill.unwrap().at - v.base,
        Duration::from_millis(900 + 11 * 60_000)
    );
}

// ---------------------------------------------------------------- process-tree samples

/// A session on a fresh registry fed live, a tool call `Bash` begun at `t0`.
struct Run {
    reg: Registry,
    id: SessionId,
    t0: Instant,
}

impl Run {
    fn new(limits: Limits) -> Run {
        let t0 = Instant::now();
        let mut reg = Registry::new(limits);
        let id = reg.register(t0, SessionConfig::default().with_tree_evidence(true));
        reg.observe_line(t0, id, INIT.as_bytes());
        reg.observe_line(t0, id, tool_use("toolu_b", "Bash").as_bytes());
        Run { reg, id, t0 }
    }

    fn at(&self, d: Duration) -> Instant {
        self.t0 + d
    }

    fn heartbeat(&mut self, t: Duration) {
        let at = self.at(t);
        self.reg.observe_line(at, self.id, TOOL_PROGRESS.as_bytes());
    }

    fn kill(&self) -> Option<&Kill> {
        self.reg.kill(self.id)
    }

    fn killed_at(&self) -> Option<(KillKind, Duration)> {
        self.kill().map(|k| (k.kind, k.at - self.t0))
    }
}

/// A capture with `tree` records replays to the verdict the registry gave live.
#[test]
fn replay_applies_the_recorded_samples() {
    // Live: a busy tool, then a hung one.
    let mut live = Run::new(limits());
    let busy_until = min(45.0);
    let mut capture = vec![
        r#"{"t_ms":0,"start":{"wall_ms":1,"argv":["claude"],"version":1}}"#.to_owned(),
        format!(r#"{{"t_ms":0,"line":{INIT}}}"#),
        format!(r#"{{"t_ms":0,"line":{}}}"#, tool_use("toolu_b", "Bash")),
    ];
    let mut t = sec(1.0);
    while t <= min(200.0) && live.kill().is_none() {
        let t_ms = t.as_millis();
        if t.as_secs().is_multiple_of(30) {
            live.heartbeat(t);
            capture.push(format!(r#"{{"t_ms":{t_ms},"line":{TOOL_PROGRESS}}}"#));
        }
        let used = t.min(busy_until);
        let state = if t <= busy_until {
            ProcState::Running
        } else {
            ProcState::Asleep
        };
        let s = TreeSample {
            root: ROOT,
            procs: vec![proc(202, "make -j2", state, used, t)],
            fault: None,
        };
        let at = live.at(t);
        live.reg.observe_tree(at, live.id, &s);
        capture.push(format!(
            r#"{{"t_ms":{t_ms},"tree":{}}}"#,
            serde_json::to_string(&s).unwrap()
        ));
        t += sec(1.0);
    }
    let live_kill = live.killed_at().unwrap();
    assert_eq!(live_kill, (KillKind::NoProgress, busy_until + min(30.0)));

    let mut replay = Replay::new(limits(), Instant::now());
    for (i, line) in capture.iter().enumerate() {
        let entry = EntryView::parse(line.as_bytes()).unwrap().unwrap();
        replay.feed(i as u64 + 1, &entry);
        while replay.poll_event().is_some() {}
    }
    let verdict = replay.finish();
    let k = verdict.kill().unwrap();
    assert_eq!((k.kind, k.at - verdict.base), live_kill);
    assert_eq!(k.tree, live.kill().unwrap().tree);
    assert_eq!(verdict.record.tree.as_ref(), live.reg.tree_facts(live.id));
}
