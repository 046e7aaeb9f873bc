//! Replaying a session through the core [`Registry`] in virtual time.
//!
//! Virtual time is one base [`Instant`] plus each entry's offset. A line whose time equals a
//! deadline comes too late: the deadline fires first, as in a live run and in `replay` (the
//! rule of [`watchdog_host::replay`]).
//!
//! **Transcripts**: each run (see [`super::spells`]) is one supervised process, registered at its
//! first entry and ended at its last one (the transcript cannot say how long a dead process was
//! left hanging). Entries are fed as the stream-json lines they stand for: an assistant line
//! with its `tool_use` blocks; after a final answer, a `result` (an error result for an API error
//! message); a `user` line with `tool_result` blocks; a `system` line with the subtype; a
//! `tool_progress` keep-alive for a heartbeat; a subagent line (with `parent_tool_use_id`) for
//! subagent activity. A tool call that waited on a person is wrapped in a `can_use_tool`
//! request (after the call) and its `control_response` on stdin (before the result), so the
//! idle clocks pause as they would have. Queued prompts go to stdin and are not fed.
//!
//! **Captures** are replayed by the core's one replay ([`watchdog_host::replay::Replay`], the
//! same as `agent-watchdog replay`), streamed from the file again for every simulation, so
//! nothing of a capture is held in memory: `line` and `raw` as stdout, `stdin` as input, until
//! `exit`; without an `exit`, the child is assumed silent forever from its last line, so a
//! truncated capture shows when a hang would have been killed. Each run of a recording (after
//! a `boundary`) is replayed in turn; its kill is placed on the file's timeline after the runs
//! before it.

use std::io::Read;
use std::time::{Duration, Instant};

use watchdog_core::{Event, KillKind, Limits, LineView, Registry, SessionConfig, SessionId};
use watchdog_host::capture::EntryView;
use watchdog_host::replay::{ms_since, Replay, Step};

use watchdog_host::capture::lines::{Item, Lines};

use super::spells::{Analysis, Spell};
use super::transcript::Entry;
use super::transcript::{Ending, EntryKind, Format, SessionLog};

/// A kill the simulation found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimKill {
    /// Why.
    pub kind: KillKind,
    /// When, in ms since the session's first entry (captures: since spawn).
    pub at_ms: u64,
    /// The kill fell in a productive spell: the session was doing useful work.
    pub productive: bool,
}

/// Bound on deadline handling per step, so a faulty registry cannot spin forever.
const MAX_STEPS: usize = 100_000;

struct Sim<'a> {
    reg: Registry,
    id: SessionId,
    base: Instant,
    t0: i64,
    spells: &'a [Spell],
    kill: Option<SimKill>,
}

impl Sim<'_> {
    fn at(&self, t: i64) -> Instant {
        self.base + Duration::from_millis((t - self.t0).max(0) as u64)
    }

    fn drain(&mut self) {
        while let Some(ev) = self.reg.poll_event() {
            if let Event::Killed(k) = ev {
                if k.id == self.id && self.kill.is_none() {
                    let at_ms = k.at.saturating_duration_since(self.base).as_millis() as u64;
                    let productive = self
                        .spells
                        .iter()
                        .find(|s| s.start_ms <= at_ms && at_ms < s.start_ms + s.ms)
                        .is_some_and(|s| s.productive);
                    self.kill = Some(SimKill {
                        kind: k.kind,
                        at_ms,
                        productive,
                    });
                }
            }
        }
    }

    /// Fire every deadline strictly before `t` (or at or before, when `inclusive`; a line at
    /// `t` then fires the deadlines at `t` itself, in the registry, before it counts).
    fn advance(&mut self, t: Option<i64>, inclusive: bool) {
        let limit = t.map(|t| self.at(t));
        for _ in 0..MAX_STEPS {
            if self.kill.is_some() {
                return;
            }
            let Some(d) = self.reg.poll_timeout() else {
                return;
            };
            if let Some(l) = limit {
                if d > l || (d == l && !inclusive) {
                    return;
                }
            }
            self.reg.handle_timeout(d);
            self.drain();
        }
    }

    fn line(&mut self, t: i64, line: &[u8]) {
        let now = self.at(t);
        self.reg.observe_line(now, self.id, line);
        self.drain();
    }

    fn input(&mut self, t: i64, line: &[u8]) {
        if let Ok(v) = LineView::parse(line) {
            let now = self.at(t);
            self.reg.observe_input(now, self.id, &v);
            self.drain();
        }
    }
}

fn js(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Simulate one session under `limits`. `entries` are the session's timing entries (with any
/// subagent activity merged in) and `analysis` their analysis. Returns every kill (at most one
/// per run).
pub fn simulate(
    log: &SessionLog,
    entries: &[Entry],
    analysis: &Analysis,
    limits: &Limits,
) -> Vec<SimKill> {
    let base = Instant::now();
    match log.format {
        Format::Capture => simulate_capture(log, analysis, limits, base),
        Format::Transcript => simulate_transcript(entries, analysis, limits, base),
    }
}

fn new_sim<'a>(
    limits: &Limits,
    base: Instant,
    t0: i64,
    spells: &'a [Spell],
    start: i64,
) -> Sim<'a> {
    let mut reg = Registry::new(limits.clone());
    let now = base + Duration::from_millis((start - t0).max(0) as u64);
    let id = reg.register(now, SessionConfig::default());
    Sim {
        reg,
        id,
        base,
        t0,
        spells,
        kill: None,
    }
}

fn simulate_capture(
    log: &SessionLog,
    analysis: &Analysis,
    limits: &Limits,
    base: Instant,
) -> Vec<SimKill> {
    // The file was read once already; a file that cannot be read again gives no kill.
    let Ok(file) = crate::files::open(&log.file) else {
        return Vec::new();
    };
    replay_capture(file, &analysis.spells, limits, base)
}

/// Replay a capture from `r` with the core's replay; one kill at most per run, at its time on
/// the file's timeline (each run's `t_ms` continues from the `boundary` before it, as
/// [`super::transcript`] reads it).
fn replay_capture(r: impl Read, spells: &[Spell], limits: &Limits, base: Instant) -> Vec<SimKill> {
    let mut replay = Replay::new(limits.clone(), base);
    let mut lines = Lines::new(r);
    let mut kills = Vec::new();
    let mut offset = 0u64;
    let note = |replay: &mut Replay, offset: u64, kills: &mut Vec<SimKill>| {
        while let Some(e) = replay.poll_event() {
            if let Event::Killed(k) = e.event {
                let at_ms = offset.saturating_add(ms_since(base, k.at));
                let productive = spells
                    .iter()
                    .find(|s| s.start_ms <= at_ms && at_ms < s.start_ms + s.ms)
                    .is_some_and(|s| s.productive);
                kills.push(SimKill {
                    kind: k.kind,
                    at_ms,
                    productive,
                });
            }
        }
    };
    while let Ok(Some(item)) = lines.next_item() {
        let Item::Line { n, line, .. } = item else {
            continue;
        };
        let Ok(Some(entry)) = EntryView::parse(line) else {
            continue;
        };
        let step = replay.feed(n, &entry);
        note(&mut replay, offset, &mut kills);
        if let Step::RunEnded(v) = step {
            // The boundary's time, on the run that ended, is where the next run starts.
            offset = offset.saturating_add(v.boundary_ms.unwrap_or(0));
        }
    }
    let _ = replay.finish();
    note(&mut replay, offset, &mut kills);
    kills
}

fn simulate_transcript(
    entries: &[Entry],
    analysis: &Analysis,
    limits: &Limits,
    base: Instant,
) -> Vec<SimKill> {
    let Some(t0) = entries.first().map(|e| e.t) else {
        return Vec::new();
    };
    let mut kills = Vec::new();
    let mut settle_iter = analysis.settles.iter().peekable();
    for (r, &start) in analysis.run_starts.iter().enumerate() {
        let end = analysis
            .run_starts
            .get(r + 1)
            .copied()
            .unwrap_or(entries.len());
        if start >= end {
            continue;
        }
        let first_settle = analysis
            .settles
            .iter()
            .find(|(i, _)| (start..end).contains(i))
            .map(|(i, _)| entries[*i].t);
        if cannot_be_killed(&entries[start..end], first_settle, limits) {
            continue;
        }
        let mut sim = new_sim(limits, base, t0, &analysis.spells, entries[start].t);
        for (i, e) in entries.iter().enumerate().take(end).skip(start) {
            sim.advance(Some(e.t), false);
            if sim.kill.is_some() {
                break;
            }
            while settle_iter.peek().is_some_and(|(si, _)| *si < i) {
                settle_iter.next();
            }
            let settle = settle_iter
                .peek()
                .filter(|(si, _)| *si == i)
                .map(|(_, e)| *e);
            feed(&mut sim, e, settle, &analysis.human_tools);
        }
        if sim.kill.is_none() {
            let last = entries[end - 1].t;
            let now = sim.at(last);
            let _ = sim.reg.end(now, sim.id);
            sim.drain();
        }
        kills.extend(sim.kill);
    }
    kills
}

/// Whether a transcript run is provably safe under `limits` without replaying it: every gap
/// between fed lines is shorter than the base idle limit, every gap between progress lines is
/// shorter than the no-progress limit, the first line comes before the startup limit, and the
/// whole run is shorter than the linger limit after its result (it ends at its last entry) and
/// than the ceiling. Every deadline of the policy is at least as far as these bounds (patience
/// only grows with extensions, back-offs and human waits), so no kill can fall inside the run;
/// such runs, the vast majority, skip the registry entirely.
fn cannot_be_killed(run: &[Entry], first_settle: Option<i64>, limits: &Limits) -> bool {
    let ms = |d: Duration| d.as_millis().min(i64::MAX as u128) as i64;
    let (idle, no_progress, startup) = (
        ms(limits.idle()),
        ms(limits.no_progress()),
        ms(limits.startup()),
    );
    let Some(first) = run.first() else {
        return true;
    };
    let fed = |k: &EntryKind| {
        !matches!(
            k,
            EntryKind::Enqueue
                | EntryKind::HumanWaitEnd
                | EntryKind::HumanWaitStart
                | EntryKind::Result(_)
        )
    };
    let mut last_line: Option<i64> = None;
    // The no-progress clock runs from registration.
    let mut last_progress = Some(first.t);
    for e in run.iter().filter(|e| fed(&e.kind)) {
        match last_line {
            None if e.t - first.t >= startup => return false,
            Some(prev) if e.t - prev >= idle => return false,
            _ => {}
        }
        last_line = Some(e.t);
        if e.kind.is_progress() {
            if last_progress.is_some_and(|prev| e.t - prev >= no_progress) {
                return false;
            }
            last_progress = Some(e.t);
        }
    }
    let end = run.last().map_or(first.t, |e| e.t);
    match last_line {
        None if end - first.t >= startup => return false,
        Some(l) if end - l >= idle => return false,
        _ => {}
    }
    // The trailing spell: the stream ends at `end`, keep-alives or not.
    if last_progress.is_some_and(|p| end - p >= no_progress) {
        return false;
    }
    if first_settle.is_some_and(|s| end - s >= ms(limits.linger())) {
        return false;
    }
    if limits.ceiling().is_some_and(|c| end - first.t >= ms(c)) {
        return false;
    }
    true
}

fn feed(sim: &mut Sim<'_>, e: &Entry, settle: Option<Ending>, human_tools: &[Box<str>]) {
    let t = e.t;
    let is_human = |id: &str| human_tools.iter().any(|h| &**h == id);
    match &e.kind {
        EntryKind::Assistant { tools, .. } => {
            let blocks: Vec<String> = tools
                .iter()
                .map(|u| {
                    format!(
                        r#"{{"type":"tool_use","id":{},"name":{},"input":{{}}}}"#,
                        js(&u.id),
                        js(&u.name)
                    )
                })
                .collect();
            let line = format!(
                r#"{{"type":"assistant","message":{{"content":[{}],"stop_reason":null}}}}"#,
                blocks.join(",")
            );
            sim.line(t, line.as_bytes());
            for u in tools.iter().filter(|u| is_human(&u.id)) {
                let req = format!(
                    r#"{{"type":"control_request","request_id":{},"request":{{"subtype":"can_use_tool","tool_name":{}}}}}"#,
                    js(&format!("audit-{}", u.id)),
                    js(&u.name)
                );
                sim.line(t, req.as_bytes());
            }
            if let Some(end) = settle {
                let result = match end {
                    Ending::Result => {
                        r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn"}"#
                    }
                    Ending::MaxTokens => {
                        r#"{"type":"result","subtype":"success","is_error":true,"stop_reason":"max_tokens","api_error":"max_output_tokens"}"#
                    }
                    _ => {
                        r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error"}"#
                    }
                };
                sim.line(t, result.as_bytes());
            }
        }
        EntryKind::ToolResults { ids, .. } => {
            for id in ids.iter().filter(|id| is_human(id)) {
                let resp = format!(
                    r#"{{"type":"control_response","response":{{"subtype":"success","request_id":{},"response":{{}}}}}}"#,
                    js(&format!("audit-{id}"))
                );
                sim.input(t, resp.as_bytes());
            }
            let blocks: Vec<String> = ids
                .iter()
                .map(|id| format!(r#"{{"type":"tool_result","tool_use_id":{}}}"#, js(id)))
                .collect();
            let line = format!(
                r#"{{"type":"user","message":{{"role":"user","content":[{}]}}}}"#,
                blocks.join(",")
            );
            sim.line(t, line.as_bytes());
        }
        EntryKind::Prompt { .. } => {
            sim.line(t, br#"{"type":"user","message":{"role":"user","content":"."}}"#)
        }
        EntryKind::Enqueue | EntryKind::HumanWaitEnd => {}
        EntryKind::System { subtype, .. } => {
            let line = match subtype {
                Some(s) => format!(r#"{{"type":"system","subtype":{}}}"#, js(s)),
                None => r#"{"type":"system"}"#.to_string(),
            };
            sim.line(t, line.as_bytes());
        }
        EntryKind::SubagentProgress => sim.line(
            t,
            br#"{"type":"assistant","parent_tool_use_id":"audit-subagent","message":{"content":[]}}"#,
        ),
        EntryKind::Progress => sim.line(t, br#"{"type":"tool_use_summary"}"#),
        EntryKind::KeepAlive => sim.line(t, br#"{"type":"tool_progress","heartbeat":true}"#),
        EntryKind::Result(_) | EntryKind::HumanWaitStart => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spells::analyse;
    use crate::transcript::{Stop, ToolUse};

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// The shortcut never skips a run the registry would kill.
    #[test]
    fn the_no_kill_shortcut_is_sound() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut skipped = 0;
        for case in 0..10000 {
            let mut t = 0i64;
            let mut entries = Vec::new();
            let mut pending: Vec<Box<str>> = Vec::new();
            for i in 0..(2 + rng.below(12)) {
                let long = rng.below(4) == 0;
                t += rng.below(if long { 400_000 } else { 20_000 }) as i64;
                let kind = match rng.below(10) {
                    0 | 1 => {
                        let id: Box<str> = format!("t{case}_{i}").into();
                        pending.push(id.clone());
                        let name = ["Bash", "Write", "Read"][rng.below(3) as usize];
                        EntryKind::Assistant {
                            tools: vec![ToolUse {
                                id,
                                name: name.into(),
                            }],
                            stop: Stop::ToolUse,
                            api_error: false,
                            max_tokens_error: false,
                        }
                    }
                    2 if !pending.is_empty() => EntryKind::ToolResults {
                        ids: vec![pending.remove(0)],
                        human: rng.below(5) == 0,
                    },
                    3 => EntryKind::KeepAlive,
                    4 => EntryKind::Prompt {
                        human: false,
                        interrupt: false,
                    },
                    5 => EntryKind::SubagentProgress,
                    6 => EntryKind::System {
                        subtype: Some("api_retry".into()),
                        progress: false,
                    },
                    7 => EntryKind::Enqueue,
                    8 => EntryKind::Prompt {
                        human: true,
                        interrupt: rng.below(3) == 0,
                    },
                    _ => EntryKind::Assistant {
                        tools: Vec::new(),
                        stop: Stop::EndTurn,
                        api_error: false,
                        max_tokens_error: false,
                    },
                };
                entries.push(Entry { t, kind });
            }
            let a = analyse(Format::Transcript, &entries);
            let secs = |n: u64| Duration::from_secs(n);
            let limits = Limits::default()
                .with_idle(secs(30 + rng.below(600)))
                .and_then(|l| l.with_no_progress(secs(30 + rng.below(900))))
                .and_then(|l| l.with_linger(secs(30 + rng.below(600))))
                .and_then(|l| l.with_startup(secs(1 + rng.below(60))))
                .unwrap();
            let base = Instant::now();
            let t0 = entries[0].t;
            for (r, &start) in a.run_starts.iter().enumerate() {
                let end = a.run_starts.get(r + 1).copied().unwrap_or(entries.len());
                let first_settle = a
                    .settles
                    .iter()
                    .find(|(i, _)| (start..end).contains(i))
                    .map(|(i, _)| entries[*i].t);
                if !cannot_be_killed(&entries[start..end], first_settle, &limits) {
                    continue;
                }
                skipped += 1;
                let mut sim = new_sim(&limits, base, t0, &a.spells, entries[start].t);
                for (i, e) in entries.iter().enumerate().take(end).skip(start) {
                    sim.advance(Some(e.t), false);
                    let settle = a.settles.iter().find(|(si, _)| *si == i).map(|(_, e)| *e);
                    feed(&mut sim, e, settle, &a.human_tools);
                }
                let now = sim.at(entries[end - 1].t);
                let _ = sim.reg.end(now, sim.id);
                sim.drain();
                assert_eq!(sim.kill, None, "case {case}: {entries:?} under {limits:?}");
            }
        }
        assert!(skipped > 3000, "{skipped}");
    }
}
