//! The dialects through the registry, in virtual time: the recorded streams of the real Codex
//! 0.169.0 and opencode 1.18.33 (`testdata/dialects/`), their endings and outcomes, the session
//! id, retry notices that are keep-alives, opencode's silent tool held by the tree's evidence,
//! the dialect chosen from the lines; and a Claude Code stream read exactly as before.

mod common;

use std::time::Duration;

use common::{sec, testdata_dir, H};
use watchdog_core::evidence::{ProcFacts, ProcState, TreeSample};
use watchdog_core::{
    classify, Class, Dialect, Event, KillKind, Limits, LineKind, LineView, Outcome, RawJson,
    SessionConfig, SessionDialect, SessionId, Signal,
};

/// One recorded stdout line: its time and its text.
struct Rec {
    t_ms: u64,
    line: String,
}

/// The `line` records of a capture, with their times (read with the core's envelope reader).
fn recording(path: &std::path::Path) -> Vec<Rec> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    for entry in text.lines() {
        let (mut t_ms, mut line) = (None, None);
        let view = LineView::parse_envelope(entry, "line", |k, v: RawJson<'_>| match k {
            "t_ms" => t_ms = v.get().parse().ok(),
            "line" => line = Some(v.get().to_owned()),
            _ => {}
        })
        .unwrap();
        if let (Some(_), Some(t_ms), Some(line)) = (view, t_ms, line) {
            out.push(Rec { t_ms, line });
        }
    }
    out
}

/// Every recording of a dialect, by name.
fn recordings(prefix: &str) -> Vec<(String, Vec<Rec>)> {
    let dir = testdata_dir().join("dialects");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no {prefix} recordings in {}",
        dir.display()
    );
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, recording(&p))
        })
        .collect()
}

/// Every line of every recording is one the dialect knows (none is an unknown type), each as
/// the grammar table says, and each an unknown keep-alive to Claude Code's classifier: what
/// every Codex and opencode line was before dialects.
#[test]
fn every_recorded_line_is_one_the_dialect_knows() {
    for (d, prefix) in [(Dialect::Codex, "codex_"), (Dialect::Opencode, "opencode_")] {
        let grammar: Vec<Class> = d
            .grammar()
            .iter()
            .map(|r| Class {
                signal: r.signal,
                kind: r.kind,
            })
            .collect();
        for (name, lines) in recordings(prefix) {
            for rec in lines {
                let view = LineView::parse_str(&rec.line).unwrap();
                let class = d.classify(&view);
                assert_ne!(class.kind, LineKind::Unknown, "{name}: {}", rec.line);
                assert!(grammar.contains(&class), "{name}: {class:?} has no row");
                assert_eq!(Dialect::of_line(&view), Some(d), "{name}: {}", rec.line);
                let claude = classify(&view);
                assert_eq!(
                    (claude.signal, claude.kind),
                    (Signal::KeepAlive, LineKind::Unknown),
                    "{name}"
                );
            }
        }
    }
}

/// A recording through a registry with the limits it was recorded under; the end at the last
/// line plus `tail`. Returns the outcome, the kill (kind, at ms), the session id, the dialect.
struct Verdict {
    outcome: Outcome,
    kill: Option<(KillKind, u64)>,
    session: Option<String>,
    dialect: Dialect,
}

fn replay_lines(lines: &[Rec], limits: Limits, config: SessionConfig, end: bool) -> Verdict {
    let mut h = H::new(limits);
    let id = h.r.register(h.t0, config.with_tally(true));
    let mut last = 0;
    for rec in lines {
        h.r.observe_line(
            h.at(Duration::from_millis(rec.t_ms)),
            id,
            rec.line.as_bytes(),
        );
        last = rec.t_ms;
    }
    let mut kill = None;
    if end {
        h.r.end(h.at(Duration::from_millis(last + 1)), id);
    } else {
        for (at, e) in h.run_until(sec(600.0)) {
            if let Event::Killed(k) = e {
                kill = Some((k.kind, at.as_millis() as u64));
            }
        }
    }
    let dialect = h.r.dialect(id).unwrap();
    let record = h.r.finish(h.at(sec(601.0)), id).unwrap();
    if !end {
        let recorded = record
            .kill
            .as_ref()
            .map(|k| (k.kind, (k.at - h.t0).as_millis() as u64));
        assert_eq!(kill, recorded, "the timer's kill is the record's");
    }
    Verdict {
        kill: record
            .kill
            .as_ref()
            .map(|k| (k.kind, (k.at - h.t0).as_millis() as u64)),
        outcome: record.outcome,
        session: record.session_id.map(|s| s.as_str().to_owned()),
        dialect,
    }
}

fn lines_of(name: &str) -> Vec<Rec> {
    recording(
        &testdata_dir()
            .join("dialects")
            .join(format!("{name}.capture.jsonl")),
    )
}

/// The first session id a recording printed (Codex's `thread_id`, opencode's `sessionID`).
fn printed_id(lines: &[Rec]) -> String {
    let first = LineView::parse_str(&lines[0].line).unwrap();
    first
        .member("thread_id")
        .or_else(|| first.member("sessionID"))
        .and_then(|f| f.as_str())
        .unwrap()
        .into_owned()
}

/// The clean and failed runs end as the CLI said, with its own session id, whether the host
/// named the dialect or the lines chose it (a Claude Code expectation is overruled).
#[test]
fn the_recorded_runs_end_as_the_cli_said() {
    let cases = [
        ("codex_healthy", Dialect::Codex, "success"),
        ("codex_api_error", Dialect::Codex, "error_result"),
        ("codex_retries", Dialect::Codex, "error_result"),
        ("opencode_healthy", Dialect::Opencode, "success"),
        ("opencode_api_error", Dialect::Opencode, "error_result"),
    ];
    for (name, d, outcome) in cases {
        let lines = lines_of(name);
        for expect in [d, Dialect::Claude] {
            let v = replay_lines(
                &lines,
                Limits::default(),
                SessionConfig::default().with_dialect(expect),
                true,
            );
            assert_eq!(v.outcome.as_str(), outcome, "{name} expecting {expect}");
            assert_eq!(v.dialect, d, "{name} expecting {expect}");
            assert_eq!(v.session.as_deref(), Some(&*printed_id(&lines)), "{name}");
        }
        // Before dialects: every line a keep-alive, no result, no session id.
        let before = replay_lines(&lines, Limits::default(), SessionConfig::default(), true);
        assert_eq!(before.outcome, Outcome::NoResult, "{name}");
        assert_eq!(before.session, None, "{name}");
    }
}

/// Read as keep-alives, the healthy runs were killed `no_progress` before their end; read in
/// their dialect they were not.
#[test]
fn a_healthy_run_is_not_killed_under_a_short_no_progress() {
    // The limits they were recorded under (opencode's steps are slower: its tools are silent).
    for (name, limit) in [("codex_healthy", 6.0), ("opencode_healthy", 20.0)] {
        let limits = Limits::default().with_no_progress(sec(limit)).unwrap();
        let lines = lines_of(name);
        let d = if name.starts_with("codex") {
            Dialect::Codex
        } else {
            Dialect::Opencode
        };
        let v = replay_lines(
            &lines,
            limits.clone(),
            SessionConfig::default().with_dialect(d),
            true,
        );
        assert_eq!(v.kill, None, "{name}");
        assert_eq!(v.outcome, Outcome::Success, "{name}");
        let before = replay_lines(&lines, limits.clone(), SessionConfig::default(), true);
        let (kind, at) = before.kill.unwrap();
        assert_eq!(kind, KillKind::NoProgress, "{name}");
        assert!(at < lines.last().unwrap().t_ms, "{name}: before its end");
    }
}

/// A stall mid-answer after `turn.started` / `step_start`: killed at the last progress plus
/// the limit.
#[test]
fn a_recorded_stall_is_killed_at_no_progress() {
    let limits = Limits::default().with_no_progress(sec(5.0)).unwrap();
    for (name, d) in [
        ("codex_stall", Dialect::Codex),
        ("opencode_stall", Dialect::Opencode),
    ] {
        let lines = lines_of(name);
        let last_progress = lines
            .iter()
            .rev()
            .find(|r| d.classify(&LineView::parse_str(&r.line).unwrap()).signal == Signal::Progress)
            .map(|r| r.t_ms)
            .unwrap();
        let v = replay_lines(
            &lines,
            limits.clone(),
            SessionConfig::default().with_dialect(d),
            false,
        );
        assert_eq!(
            v.kill,
            Some((KillKind::NoProgress, last_progress + 5_000)),
            "{name}"
        );
    }
}

fn codex_session(h: &mut H) -> SessionId {
    let id =
        h.r.register(h.t0, SessionConfig::default().with_dialect(Dialect::Codex));
    h.line(
        sec(0.0),
        id,
        r#"{"type":"thread.started","thread_id":"t-1"}"#,
    );
    h.line(sec(0.1), id, r#"{"type":"turn.started"}"#);
    id
}

/// Codex's retry notices prove it alive, not working and not done: they hold the idle clock,
/// not the no-progress one, and the turn is not over.
#[test]
fn retry_notices_are_keep_alives_not_progress_and_not_an_end() {
    let limits = Limits::default()
        .with_idle(sec(10.0))
        .unwrap()
        .with_extend_factor(1.0)
        .unwrap()
        .with_no_progress(sec(30.0))
        .unwrap();
    let mut h = H::new(limits);
    let id = codex_session(&mut h);
    for i in 1..=3 {
        let notice = format!(
            r#"{{"type":"error","message":"Reconnecting... {i}/5 (stream disconnected)"}}"#
        );
        let c = h.line(sec(8.0 * f64::from(i)), id, &notice);
        assert_eq!((c.signal, c.kind), (Signal::KeepAlive, LineKind::Error));
    }
    // 24 s of notices 8 s apart: no idle kill (each one is a line), no settle.
    assert!(!h
        .drain()
        .iter()
        .any(|e| matches!(e, Event::Settled { .. } | Event::Killed(_))));
    let kills = h.kills(sec(30.1));
    assert_eq!(kills.len(), 1);
    assert_eq!(
        (kills[0].kind, h.off(&kills[0])),
        (KillKind::NoProgress, sec(30.1))
    );
}

/// `turn.failed` is the end, an error; `turn.completed` a success; the last one decides.
#[test]
fn a_turn_s_end_is_the_outcome() {
    let mut h = H::default();
    let id = codex_session(&mut h);
    h.line(
        sec(1.0),
        id,
        r#"{"type":"turn.failed","error":{"message":"boom"}}"#,
    );
    assert!(h.drain().iter().any(|e| matches!(e, Event::Settled { .. })));
    let Outcome::ErrorResult(facts) = h.r.end(h.at(sec(2.0)), id).unwrap() else {
        panic!("not an error result");
    };
    assert_eq!(facts.terminal_reason.as_deref(), Some("turn.failed"));
    let mut h = H::default();
    let id = codex_session(&mut h);
    h.line(
        sec(1.0),
        id,
        r#"{"type":"turn.failed","error":{"message":"boom"}}"#,
    );
    h.line(sec(2.0), id, r#"{"type":"turn.started"}"#);
    h.line(sec(3.0), id, r#"{"type":"turn.completed","usage":{}}"#);
    assert_eq!(h.r.end(h.at(sec(4.0)), id), Some(Outcome::Success));
}

fn opencode_line(ty: &str, part: &str) -> String {
    format!(r#"{{"type":"{ty}","timestamp":1,"sessionID":"ses_1","part":{part}}}"#)
}

/// opencode's steps: one that stops to call tools is progress, the last one settles; after
/// it, only the linger runs.
#[test]
fn opencode_s_last_step_settles_and_the_others_do_not() {
    let limits = Limits::default().with_linger(sec(20.0)).unwrap();
    let mut h = H::new(limits);
    let id = h.r.register(
        h.t0,
        SessionConfig::default().with_dialect(Dialect::Opencode),
    );
    h.line(sec(0.0), id, &opencode_line("step_start", "{}"));
    let mid = h.line(
        sec(1.0),
        id,
        &opencode_line("step_finish", r#"{"reason":"tool-calls"}"#),
    );
    assert_eq!(mid.signal, Signal::Progress);
    h.line(sec(2.0), id, &opencode_line("step_start", "{}"));
    let last = h.line(
        sec(3.0),
        id,
        &opencode_line("step_finish", r#"{"reason":"stop"}"#),
    );
    assert_eq!(last.signal, Signal::Settle);
    let kills = h.kills(sec(23.0));
    assert_eq!(
        kills.iter().map(|k| k.kind).collect::<Vec<_>>(),
        [KillKind::Linger]
    );
    assert_eq!(
        h.r.finish(h.at(sec(24.0)), id)
            .unwrap()
            .session_id
            .unwrap()
            .as_str(),
        "ses_1"
    );
}

fn proc(pid: u32, ppid: u32, age_ms: u64, cpu_ms: u64, running: bool) -> ProcFacts {
    ProcFacts {
        pid,
        start: u64::from(pid),
        ppid,
        pgid: pid,
        cmd: format!("p{pid}"),
        state: if running {
            ProcState::Running
        } else {
            ProcState::Asleep
        },
        cpu_ms,
        rss: 1 << 20,
        age_ms,
        tcp: 0,
        net: None,
    }
}

/// opencode prints nothing while its tool runs: the step is the call, and a busy tool process
/// started in it holds the no-progress kill to the busy cap; asleep, it does not.
#[test]
fn opencode_s_silent_tool_is_held_while_busy() {
    let limits = Limits::default()
        .with_no_progress(sec(8.0))
        .unwrap()
        .with_busy_cap(sec(20.0))
        .unwrap();
    for busy in [true, false] {
        let mut h = H::new(limits.clone());
        let config = SessionConfig::default()
            .with_dialect(Dialect::Opencode)
            .with_tree_evidence(true);
        let id = h.r.register(h.t0, config);
        // The root (opencode) started at 0; the step at 6 s; its bash tool 1 s later.
        h.line(sec(6.0), id, &opencode_line("step_start", "{}"));
        let want = h.r.tree_want(id).unwrap();
        assert!(want.tool_since.is_some(), "the step is an outstanding call");
        let mut kill = None;
        for s in 7..40u64 {
            let age = (s - 7) * 1000;
            let cpu = if busy { age } else { 0 };
            let sample = TreeSample {
                root: 1,
                procs: vec![
                    proc(1, 0, s * 1000, 3000, false),
                    proc(9, 1, age, cpu, busy),
                ],
                fault: None,
            };
            h.r.observe_tree(h.at(sec(s as f64)), id, &sample);
            if let Some(k) = h.r.kill(id) {
                kill = Some((k.kind, k.at - h.t0));
                break;
            }
        }
        let expect = if busy { sec(26.0) } else { sec(14.0) };
        assert_eq!(kill, Some((KillKind::NoProgress, expect)), "busy {busy}");
    }
}

/// A Codex command item is the call the evidence watches: from its start to its completion.
#[test]
fn a_codex_command_is_an_outstanding_call_until_its_item_completes() {
    let mut h = H::default();
    let config = SessionConfig::default()
        .with_dialect(Dialect::Codex)
        .with_tree_evidence(true);
    let id = h.r.register(h.t0, config);
    h.line(sec(0.0), id, r#"{"type":"thread.started","thread_id":"t"}"#);
    assert!(h.r.tree_want(id).unwrap().tool_since.is_none());
    h.line(sec(1.0), id, r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"make","status":"in_progress"}}"#);
    assert_eq!(h.r.tree_want(id).unwrap().tool_since, Some(h.at(sec(1.0))));
    h.line(sec(2.0), id, r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"make","exit_code":0,"status":"completed"}}"#);
    assert!(h.r.tree_want(id).unwrap().tool_since.is_none());
}

/// A completed file change (Codex) or write call (opencode) is the first write: the
/// pre-write extension of the idle patience ends.
#[test]
fn the_first_write_ends_the_pre_write_extension() {
    let writes = [
        (
            Dialect::Codex,
            r#"{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"a","kind":"add"}],"status":"completed"}}"#,
        ),
        (
            Dialect::Opencode,
            r#"{"type":"tool_use","sessionID":"s","part":{"tool":"write","state":{"status":"completed"}}}"#,
        ),
    ];
    for (d, write) in writes {
        let limits = Limits::default().with_idle(sec(10.0)).unwrap();
        let mut h = H::new(limits);
        let id = h.r.register(h.t0, SessionConfig::default().with_dialect(d));
        h.line(sec(0.0), id, write);
        // Patience is the base idle now, not twice it.
        let kills = h.kills(sec(10.0));
        assert_eq!(kills.len(), 1, "{d}");
        assert_eq!(kills[0].kind, KillKind::Idle, "{d}");
    }
}

/// Every line of every Claude Code recording is read exactly as before by a session that
/// expects Claude Code and asks its lines to confirm it, through the registry: the same
/// classes, line for line, and the same outcome and session id.
#[test]
fn a_claude_code_stream_is_read_exactly_as_before() {
    let dir = testdata_dir().join("captures");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut lines_seen = 0;
    for path in files {
        let lines = recording(&path);
        let mut plain = H::default();
        let mut given = H::default();
        let a = plain.r.register(plain.t0, SessionConfig::default());
        let b = given.r.register(
            given.t0,
            SessionConfig::default().with_dialect(Dialect::Claude),
        );
        let mut reader = SessionDialect::expect(Dialect::Claude);
        for rec in &lines {
            let at = Duration::from_millis(rec.t_ms);
            let x = plain.line(at, a, &rec.line);
            let y = given.line(at, b, &rec.line);
            assert_eq!(x, y, "{}: {}", path.display(), rec.line);
            let view = LineView::parse_str(&rec.line).unwrap();
            assert_eq!(reader.classify(&view), classify(&view));
            lines_seen += 1;
        }
        assert_eq!(given.r.dialect(b), Some(Dialect::Claude));
        let end = Duration::from_millis(lines.last().map_or(0, |r| r.t_ms) + 1);
        let (ra, rb) = (
            plain.r.finish(plain.at(end), a).unwrap(),
            given.r.finish(given.at(end), b).unwrap(),
        );
        assert_eq!(ra.outcome, rb.outcome, "{}", path.display());
        assert_eq!(ra.session_id, rb.session_id, "{}", path.display());
    }
    assert!(lines_seen > 300, "{lines_seen} lines");
}

/// A newer opencode's `done` after its last step keeps that step's outcome; alone, it is a
/// success.
#[test]
fn opencode_s_done_keeps_the_last_step_s_outcome() {
    let done = r#"{"type":"done","sessionID":"ses_1","reason":"idle"}"#;
    for (last, want) in [
        (Some(r#"{"reason":"length"}"#), "error_result"),
        (Some(r#"{"reason":"stop"}"#), "success"),
        (None, "success"),
    ] {
        let mut h = H::default();
        let id = h.r.register(
            h.t0,
            SessionConfig::default().with_dialect(Dialect::Opencode),
        );
        h.line(sec(0.0), id, &opencode_line("step_start", "{}"));
        if let Some(part) = last {
            h.line(sec(1.0), id, &opencode_line("step_finish", part));
        }
        assert_eq!(h.line(sec(2.0), id, done).signal, Signal::Settle);
        assert_eq!(
            h.r.end(h.at(sec(3.0)), id).unwrap().as_str(),
            want,
            "{last:?}"
        );
    }
}
