//! Each background task's own deadline (field reports N1, N2: a lost completion notification,
//! a `result` held for a task that died without its terminal event): counted from the task's
//! last sign of life (its `system/task_*` lines, the lines it prints), never from its start,
//! so a long task that works is never cut. A task silent past it is noticed
//! (`Event::TaskSilent`, once per silence) while the rest of the session works on; the idle
//! kill waits for every outstanding task's deadline and, with tasks outstanding, is
//! `task_silent`, its receipt naming each task (id, description, type, silence). Virtual
//! time only.

mod common;

use std::time::Duration;

use common::{lines as l, min, H};
use watchdog_core::{Event, Kill, KillKind, Limits, SessionConfig, SessionId, TaskNote};

/// Idle 5 m (no extension), no-progress 1 h, linger 3 m.
fn limits() -> Limits {
    Limits::default()
        .with_idle(min(5.0))
        .and_then(|l| l.with_extend_factor(1.0))
        .and_then(|l| l.with_no_progress(min(60.0)))
        .and_then(|l| l.with_linger(min(3.0)))
        .unwrap()
}

fn session(h: &mut H, limits: Limits, host_input: bool) -> SessionId {
    let cfg = SessionConfig::default()
        .with_limits(limits)
        .with_host_input(host_input);
    h.r.register(h.t0, cfg)
}

/// A background agent's start: `task_started` with its call's id.
fn started(task: &str, description: &str) -> String {
    format!(
        r#"{{"type":"system","subtype":"task_started","task_id":"{task}","tool_use_id":"toolu_{task}","description":"{description}","task_type":"local_agent","subagent_type":"general-purpose","is_backgrounded":true,"session_id":"s"}}"#
    )
}

/// A line the agent prints (its `agent_id` and its call's id as `parent_tool_use_id`).
fn agent_line(task: &str) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"working"}}]}},"parent_tool_use_id":"toolu_{task}","agent_id":"{task}","session_id":"s"}}"#
    )
}

/// A subagent's line found by its call's id only (no `agent_id`: an older CLI).
fn agent_line_by_call(task: &str) -> String {
    format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_x","content":"ok"}}]}},"parent_tool_use_id":"toolu_{task}","session_id":"s"}}"#
    )
}

fn progress(task: &str) -> String {
    format!(
        r#"{{"type":"system","subtype":"task_progress","task_id":"{task}","description":"d","usage":{{"total_tokens":1}},"session_id":"s"}}"#
    )
}

fn notified(task: &str) -> String {
    format!(
        r#"{{"type":"system","subtype":"task_notification","task_id":"{task}","tool_use_id":"toolu_{task}","status":"completed","summary":"done","session_id":"s"}}"#
    )
}

/// The parent's call of the agents, their starts, its answer and its (interim) result.
fn launch(h: &mut H, id: SessionId, at: Duration, tasks: &[(&str, &str)], result: bool) {
    h.line(at, id, l::INIT);
    for (task, _) in tasks {
        h.line(at, id, &l::tool_use(&format!("toolu_{task}"), "Agent"));
    }
    for (task, d) in tasks {
        h.line(at, id, &started(task, d));
    }
    h.line(at, id, l::ASSISTANT_TEXT);
    if result {
        h.line(at, id, l::RESULT_OK);
    }
}

/// Every event until `until`, by the registry's own timer, with its instant as an offset.
fn events_until(h: &mut H, until: Duration) -> Vec<(Duration, Event)> {
    h.run_until(until)
}

/// Lines fed at their instants, the registry's timer run up to each first: every event with
/// the instant it came at.
struct Script {
    h: H,
    id: SessionId,
    events: Vec<(Duration, Event)>,
}

impl Script {
    fn new(limits: Limits, host_input: bool) -> Script {
        let mut h = H::default();
        let id = session(&mut h, limits, host_input);
        Script {
            h,
            id,
            events: Vec::new(),
        }
    }

    fn line(&mut self, at: Duration, line: &str) {
        let mut ev = self.h.run_until(at);
        self.events.append(&mut ev);
        self.h.line(at, self.id, line);
        let drained = self.h.drain();
        self.events.extend(drained.into_iter().map(|e| (at, e)));
    }

    fn input(&mut self, at: Duration, line: &str) {
        let mut ev = self.h.run_until(at);
        self.events.append(&mut ev);
        self.h.input(at, self.id, line);
        let drained = self.h.drain();
        self.events.extend(drained.into_iter().map(|e| (at, e)));
    }

    fn launch(&mut self, at: Duration, tasks: &[(&str, &str)], result: bool) {
        let mut ev = self.h.run_until(at);
        self.events.append(&mut ev);
        launch(&mut self.h, self.id, at, tasks, result);
    }

    fn until(mut self, until: Duration) -> Vec<(Duration, Event)> {
        let mut ev = self.h.run_until(until);
        self.events.append(&mut ev);
        self.events
    }
}

fn kills(events: &[(Duration, Event)]) -> Vec<(Duration, Kill)> {
    events
        .iter()
        .filter_map(|(t, e)| match e {
            Event::Killed(k) => Some((*t, k.clone())),
            _ => None,
        })
        .collect()
}

fn notices(events: &[(Duration, Event)]) -> Vec<(Duration, TaskNote)> {
    events
        .iter()
        .filter_map(|(t, e)| match e {
            Event::TaskSilent { task, .. } => Some((*t, task.clone())),
            _ => None,
        })
        .collect()
}

fn task_ids(k: &Kill) -> Vec<&str> {
    k.outstanding
        .as_deref()
        .map(|o| o.tasks.iter().map(|t| t.task_id.as_str()).collect())
        .unwrap_or_default()
}

#[test]
fn a_held_result_with_a_dead_task_is_killed_naming_the_task_from_its_last_sign_of_life() {
    // N2 in `-p`: the CLI holds its result while the agent runs; the agent prints twice, then
    // dies without a terminal event. Its last sign of life (12 m) is the deadline's anchor,
    // not its start (1 m): no kill at 6 m or 11 m.
    let mut h = H::default();
    let id = session(&mut h, limits(), false);
    launch(&mut h, id, min(1.0), &[("a1", "Audit the parser")], false);
    for m in [4.0, 8.0, 12.0] {
        h.line(min(m), id, &agent_line("a1"));
    }
    let ev = events_until(&mut h, min(60.0));
    let k = kills(&ev);
    assert_eq!(k.len(), 1, "{ev:?}");
    let (at, kill) = &k[0];
    assert_eq!((*at, kill.kind), (min(17.0), KillKind::TaskSilent));
    let o = kill
        .outstanding
        .as_deref()
        .expect("the receipt names the task");
    assert_eq!(o.tasks.len(), 1);
    let t = &o.tasks[0];
    assert_eq!(t.task_id, "a1");
    assert_eq!(t.description.as_deref(), Some("Audit the parser"));
    assert_eq!(t.task_type.as_deref(), Some("local_agent"));
    assert_eq!(t.silent, min(5.0));
    assert!(o.wakeups.is_empty() && o.requests.is_empty());
}

#[test]
fn signs_of_life_are_the_tasks_own_lines_in_every_form() {
    // Each kind of sign of life renews the task's clock: a line with its agent_id, a line
    // with its call as parent only, its task_progress, a task_updated that does not end it.
    let renewals = [
        agent_line("a1"),
        agent_line_by_call("a1"),
        progress("a1"),
        r#"{"type":"system","subtype":"task_updated","task_id":"a1","patch":{"is_backgrounded":true},"session_id":"s"}"#.to_string(),
    ];
    for line in &renewals {
        let mut h = H::default();
        let id = session(&mut h, limits(), true);
        launch(&mut h, id, min(1.0), &[("a1", "d")], true);
        h.line(min(5.0), id, line);
        let k = kills(&events_until(&mut h, min(60.0)));
        assert_eq!(
            k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
            [(min(10.0), KillKind::TaskSilent)],
            "{line}"
        );
        assert_eq!(
            k[0].1.outstanding.as_ref().unwrap().tasks[0].silent,
            min(5.0)
        );
    }
}

#[test]
fn a_lost_notification_among_a_fan_out_is_noticed_while_the_others_work_then_named_at_the_kill() {
    // N1: three agents; b1 reports once at 2 m, then nothing (its notification is lost); a1
    // and c1 work until 40 m and end. The session is never killed while they work (a1 and
    // c1 keep the idle clock alive), b1 is noticed silent at 7 m (once), and when the rest
    // ends the session waits on b1 alone: killed 5 m after the last line, naming b1 only.
    let mut sc = Script::new(limits(), true);
    sc.launch(
        min(1.0),
        &[("a1", "Fix A"), ("b1", "Fix B"), ("c1", "Fix C")],
        true,
    );
    sc.line(min(2.0), &agent_line("b1"));
    let mut m = 3.0;
    while m <= 40.0 {
        sc.line(min(m), &agent_line("a1"));
        sc.line(min(m + 0.5), &progress("c1"));
        m += 3.0;
    }
    sc.line(min(40.0), &notified("a1"));
    sc.line(min(40.0), &notified("c1"));
    let ev = sc.until(min(120.0));
    let n = notices(&ev);
    assert_eq!(
        n.iter()
            .map(|(t, k)| (*t, k.task_id.as_str()))
            .collect::<Vec<_>>(),
        [(min(7.0), "b1")],
        "{ev:?}"
    );
    assert_eq!(n[0].1.description.as_deref(), Some("Fix B"));
    let k = kills(&ev);
    assert_eq!(k.len(), 1, "{ev:?}");
    assert_eq!((k[0].0, k[0].1.kind), (min(45.0), KillKind::TaskSilent));
    assert_eq!(task_ids(&k[0].1), ["b1"]);
    assert_eq!(
        k[0].1.outstanding.as_ref().unwrap().tasks[0].silent,
        min(43.0)
    );
}

#[test]
fn a_longer_task_silence_holds_the_idle_kill_for_a_quiet_agent_that_still_works() {
    // --task-silence 20m, idle 5m: an agent quiet for 15 m (one long reply) is not killed at
    // the idle patience; one silent past its 20 m is.
    let quiet = limits().with_task_silence(Some(min(20.0))).unwrap();
    for host_input in [false, true] {
        let mut h = H::default();
        let id = session(&mut h, quiet.clone(), host_input);
        launch(&mut h, id, min(1.0), &[("a1", "d")], true);
        h.line(min(16.0), id, &agent_line("a1"));
        h.line(min(17.0), id, &notified("a1"));
        let ev = events_until(&mut h, min(19.0));
        assert!(kills(&ev).is_empty(), "host_input={host_input}: {ev:?}");
        assert!(notices(&ev).is_empty(), "{ev:?}");
    }
    let mut h = H::default();
    let id = session(&mut h, quiet, false);
    launch(&mut h, id, min(1.0), &[("a1", "d")], true);
    h.line(min(3.0), id, &agent_line("a1"));
    let k = kills(&events_until(&mut h, min(60.0)));
    assert_eq!(
        k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
        [(min(23.0), KillKind::TaskSilent)]
    );
}

#[test]
fn a_shorter_task_silence_notices_early_and_kills_no_earlier_than_idle() {
    // --task-silence 2m with idle 5m: the notice at 2 m of silence, the kill still at the
    // idle patience (the session's own waiting rule), named for the task.
    let short = limits().with_task_silence(Some(min(2.0))).unwrap();
    let mut h = H::default();
    let id = session(&mut h, short, true);
    launch(&mut h, id, min(1.0), &[("a1", "d")], true);
    let ev = events_until(&mut h, min(60.0));
    assert_eq!(
        notices(&ev).iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        [min(3.0)]
    );
    assert_eq!(
        kills(&ev)
            .iter()
            .map(|(t, k)| (*t, k.kind))
            .collect::<Vec<_>>(),
        [(min(6.0), KillKind::TaskSilent)]
    );
}

#[test]
fn a_task_is_noticed_once_per_silence() {
    let short = limits()
        .with_task_silence(Some(min(2.0)))
        .and_then(|l| l.with_idle(min(30.0)))
        .unwrap();
    let mut sc = Script::new(short, true);
    sc.launch(min(1.0), &[("a1", "d"), ("b1", "e")], true);
    // b1 keeps the session alive; a1 is silent from 1 m, shows life at 10 m, then is silent
    // again.
    for m in 2..=20 {
        sc.line(min(f64::from(m)), &agent_line("b1"));
        if m == 10 {
            sc.line(min(10.0), &progress("a1"));
        }
    }
    let ev = sc.until(min(20.0));
    let a1: Vec<Duration> = notices(&ev)
        .into_iter()
        .filter(|(_, k)| k.task_id == "a1")
        .map(|(t, _)| t)
        .collect();
    assert_eq!(a1, [min(3.0), min(12.0)], "{ev:?}");
}

#[test]
fn a_human_wait_stops_the_tasks_clocks_as_it_stops_the_idle_clock() {
    // A permission request open from 2 m to 12 m: the task's 5 m run 1–2 m and 12–16 m (its
    // notice at 16 m); the idle clock's from the request's line at 2 m, 12–17 m.
    let mut sc = Script::new(limits(), true);
    sc.launch(min(1.0), &[("a1", "d")], true);
    sc.line(min(2.0), &l::can_use_tool("r1"));
    sc.input(min(12.0), &l::control_response("r1"));
    let ev = sc.until(min(60.0));
    let n = notices(&ev);
    let k = kills(&ev);
    assert_eq!(k.len(), 1, "{ev:?}");
    assert_eq!((k[0].0, k[0].1.kind), (min(17.0), KillKind::TaskSilent));
    assert_eq!(
        n.iter().map(|(t, k)| (*t, k.silent)).collect::<Vec<_>>(),
        [(min(16.0), min(15.0))],
        "the silence counts real time; the deadline, the unpaused: {ev:?}"
    );
}

#[test]
fn a_monitor_declares_its_expiry_a_sign_of_life() {
    // A Monitor (a background shell that prints nothing of its own while it watches) with a
    // 30 m timeout: the session is not killed before its expiry plus the silence; a monitor
    // whose CLI never ends it is then named.
    let mut h = H::default();
    let id = session(&mut h, limits(), true);
    h.line(min(1.0), id, l::INIT);
    h.line(min(1.0), id, &l::tool_use("toolu_mon", "Monitor"));
    h.line(
        min(1.0),
        id,
        r#"{"type":"system","subtype":"task_started","task_id":"bmon","tool_use_id":"toolu_mon","description":"watch the log","task_type":"local_bash","is_backgrounded":true,"session_id":"s"}"#,
    );
    h.line(
        min(1.0),
        id,
        r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_mon","type":"tool_result","content":"Monitor started"}]},"parent_tool_use_id":null,"session_id":"s","tool_use_result":{"taskId":"bmon","timeoutMs":1800000,"persistent":false}}"#,
    );
    h.line(min(1.0), id, l::ASSISTANT_TEXT);
    h.line(min(1.0), id, l::RESULT_OK);
    let ev = events_until(&mut h, min(120.0));
    let k = kills(&ev);
    assert_eq!(
        k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
        [(min(36.0), KillKind::TaskSilent)],
        "{ev:?}"
    );
    let task = &k[0].1.outstanding.as_ref().unwrap().tasks[0];
    assert_eq!(
        (task.task_id.as_str(), task.description.as_deref()),
        ("bmon", Some("watch the log"))
    );
}

#[test]
fn a_task_that_ends_is_no_longer_waited_on_and_no_other_task_is_named() {
    let mut h = H::default();
    let id = session(&mut h, limits(), false);
    launch(&mut h, id, min(1.0), &[("a1", "d")], true);
    h.line(min(2.0), id, &notified("a1"));
    let ev = events_until(&mut h, min(60.0));
    let k = kills(&ev);
    // Ended: the linger from then, nothing outstanding.
    assert_eq!(
        k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
        [(min(5.0), KillKind::Linger)]
    );
    assert!(k[0].1.outstanding.is_none());
    assert!(notices(&ev).is_empty());
}
