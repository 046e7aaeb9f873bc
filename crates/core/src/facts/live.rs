//! What a session registered with
//! [`SessionConfig::with_live_facts`](crate::SessionConfig::with_live_facts) reports while it
//! runs, beside the deadlines' events: the quiet spells its lines end
//! ([`Event::QuietSpells`](crate::Event::QuietSpells)), the MCP calls it has outstanding
//! whenever they change ([`Event::McpCalls`](crate::Event::McpCalls)), and Claude Code's
//! session id once it is known ([`Event::SessionIdentified`](crate::Event::SessionIdentified)).
//! A host that records a run as it goes (the CLI's telemetry) reads these instead of reading
//! the lines a second time. Here the facts ([`LiveNews`] per line); the registry queues them as
//! events.
//!
//! The registry reads each line once; its [`Tally`](super::Tally) keeps this state and is
//! handed, per line, what only the registry knows (the instant, whether a person is waited
//! on, the outstanding MCP calls, the session id). Per line: two instant comparisons and a few
//! flags; a progress line adds one [`QuietSpell`] to the event of the lines read together
//! (one event, not one per line); the MCP calls are compared (their count and ids) only on
//! the lines that can change them.

use crate::time::Instant;

use crate::classify::{Class, LineKind};

use super::spells::{QuietSpell, SpellTracker};
use super::ClaudeSessionId;

/// An outstanding MCP tool call, as the registry keeps it (with its session's rare state).
#[derive(Debug)]
pub(crate) struct PendingMcp {
    /// The session's `id_hash` of `id`.
    pub hash: u64,
    /// The `tool_use` id.
    pub id: Box<str>,
    /// The tool, `mcp__<server>__<tool>`.
    pub tool: Box<str>,
    /// When the call started.
    pub started: u64,
    /// The no-progress kill comes no earlier than this (0: no floor).
    pub floor: u64,
}

/// What the registry hands the tally with one line: what the tally cannot see itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineContext<'a> {
    /// The line's instant (the registry's clock).
    pub now: Instant,
    /// The registry's time zero (MCP calls are kept relative to it).
    pub epoch: Instant,
    /// A permission request is open (idle and no-progress clocks paused).
    pub waiting_on_person: bool,
    /// The MCP calls outstanding after the line.
    pub mcp_calls: &'a [PendingMcp],
    /// Claude Code's session id as the registry read it, after the line.
    pub session: Option<&'a ClaudeSessionId>,
}

/// An MCP tool call outstanding now, as [`Event::McpCalls`](crate::Event::McpCalls) lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutstandingMcp {
    /// The tool, e.g. `mcp__db__query`.
    pub tool: String,
    /// When it started (its `tool_use`, or as its heartbeats said).
    pub since: Instant,
}

/// What one line made news of: the registry queues each as its event.
#[derive(Debug, Default)]
pub(crate) struct LiveNews {
    /// Claude Code's session id, learned or changed.
    pub session: Option<ClaudeSessionId>,
    /// The quiet spell the line ended.
    pub spell: Option<QuietSpell>,
    /// Every MCP call outstanding now, when they changed.
    pub mcp: Option<Vec<OutstandingMcp>>,
}

/// The state behind the live reports of one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LiveFacts {
    /// The spell in progress.
    pub(crate) spells: SpellTracker,
    /// The count and a digest of the MCP calls last reported.
    mcp: (usize, u64),
    /// The session id last reported.
    session: Option<ClaudeSessionId>,
}

/// A digest of the outstanding calls (their ids' hashes and their starts), order-independent.
fn digest(calls: &[PendingMcp]) -> (usize, u64) {
    let d = calls
        .iter()
        .fold(0u64, |acc, m| acc ^ m.hash.rotate_left(17) ^ m.started);
    (calls.len(), d)
}

impl LiveFacts {
    /// After the tally read a line of class `class`: the session id if it changed, `spell` (the
    /// spell the line ended), and the MCP calls if they changed.
    pub(crate) fn after_line(
        &mut self,
        cx: &LineContext<'_>,
        class: Class,
        spell: Option<QuietSpell>,
    ) -> LiveNews {
        let mut news = LiveNews {
            spell,
            ..LiveNews::default()
        };
        // A session id is learned from the first line that has one, and an `init` replaces it.
        let may_name = self.session.is_none() || class.kind == LineKind::System;
        if let Some(sid) = cx
            .session
            .filter(|s| may_name && self.session.as_ref() != Some(*s))
        {
            self.session = Some(sid.clone());
            news.session = Some(sid.clone());
        }
        let may_change_mcp = matches!(
            class.kind,
            LineKind::Assistant | LineKind::User | LineKind::ToolProgress | LineKind::Result
        );
        if may_change_mcp {
            let now = digest(cx.mcp_calls);
            if now != self.mcp {
                self.mcp = now;
                news.mcp = Some(
                    cx.mcp_calls
                        .iter()
                        .map(|m| OutstandingMcp {
                            tool: m.tool.to_string(),
                            since: cx
                                .epoch
                                .checked_add(std::time::Duration::from_nanos(m.started))
                                .unwrap_or(cx.epoch),
                        })
                        .collect(),
                );
            }
        }
        news
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::facts::spells::SpellKind;
    use crate::{Event, Limits, Registry, SessionConfig, SessionId};

    const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s1"}"#;

    fn live_registry() -> (Registry, SessionId, Instant) {
        let t0 = Instant::now();
        let mut reg = Registry::new(Limits::default());
        let id = reg.register(t0, SessionConfig::default().with_live_facts(true));
        (reg, id, t0)
    }

    fn events(reg: &mut Registry) -> Vec<Event> {
        std::iter::from_fn(|| reg.poll_event()).collect()
    }

    fn at(t0: Instant, s: u64) -> Instant {
        t0 + Duration::from_secs(s)
    }

    #[test]
    fn the_session_id_is_said_when_learned_and_when_an_init_changes_it() {
        let (mut reg, id, t0) = live_registry();
        reg.observe_line(t0, id, INIT.as_bytes());
        let named = |reg: &mut Registry| -> Vec<Event> {
            events(reg)
                .into_iter()
                .filter(|e| matches!(e, Event::SessionIdentified { .. }))
                .collect()
        };
        let sid = ClaudeSessionId::parse("s1").unwrap();
        assert_eq!(
            named(&mut reg),
            vec![Event::SessionIdentified { id, session: sid }]
        );
        // The same id again, on any line: nothing.
        reg.observe_line(at(t0, 1), id, INIT.as_bytes());
        reg.observe_line(
            at(t0, 2),
            id,
            br#"{"type":"stream_event","event":{"type":"ping"},"session_id":"other"}"#,
        );
        assert_eq!(named(&mut reg), vec![]);
        // A new init: the new id.
        reg.observe_line(
            at(t0, 3),
            id,
            br#"{"type":"system","subtype":"init","session_id":"s2"}"#,
        );
        assert_eq!(
            named(&mut reg),
            vec![Event::SessionIdentified {
                id,
                session: ClaudeSessionId::parse("s2").unwrap()
            }]
        );
    }

    #[test]
    fn outstanding_mcp_calls_are_said_whenever_they_change() {
        let (mut reg, id, t0) = live_registry();
        reg.observe_line(t0, id, INIT.as_bytes());
        events(&mut reg);
        reg.observe_line(
            at(t0, 1),
            id,
            br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"m1","name":"mcp__db__query"},{"type":"tool_use","id":"b1","name":"Bash"}]},"session_id":"s1"}"#,
        );
        let mcp = |evs: Vec<Event>| -> Vec<Vec<(String, Instant)>> {
            evs.into_iter()
                .filter_map(|e| match e {
                    Event::McpCalls { calls, .. } => {
                        Some(calls.into_iter().map(|c| (c.tool, c.since)).collect())
                    }
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            mcp(events(&mut reg)),
            vec![vec![("mcp__db__query".to_owned(), at(t0, 1))]]
        );
        // A heartbeat of a subagent's call 30 s old: a second call, dated by the heartbeat.
        reg.observe_line(
            at(t0, 40),
            id,
            br#"{"type":"tool_progress","tool_use_id":"x","tool_name":"mcp__web__fetch","parent_tool_use_id":"m2","elapsed_time_seconds":30,"session_id":"s1"}"#,
        );
        let got = mcp(events(&mut reg));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].contains(&("mcp__web__fetch".to_owned(), at(t0, 10))),
            "{got:?}"
        );
        // The same heartbeat again, and a Bash result: no change, nothing said.
        reg.observe_line(
            at(t0, 41),
            id,
            br#"{"type":"tool_progress","tool_use_id":"x","tool_name":"mcp__web__fetch","parent_tool_use_id":"m2","elapsed_time_seconds":31,"session_id":"s1"}"#,
        );
        reg.observe_line(
            at(t0, 42),
            id,
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"b1"}]},"session_id":"s1"}"#,
        );
        assert_eq!(mcp(events(&mut reg)), Vec::<Vec<_>>::new());
        // Answered: one left; the result ends the turn: none.
        reg.observe_line(
            at(t0, 43),
            id,
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"m1"}]},"session_id":"s1"}"#,
        );
        assert_eq!(
            mcp(events(&mut reg)),
            vec![vec![("mcp__web__fetch".to_owned(), at(t0, 10))]]
        );
        reg.observe_line(
            at(t0, 44),
            id,
            br#"{"type":"result","subtype":"success","session_id":"s1"}"#,
        );
        assert_eq!(mcp(events(&mut reg)), vec![vec![]]);
    }

    #[test]
    fn a_session_without_live_facts_reports_none() {
        let t0 = Instant::now();
        let mut reg = Registry::new(Limits::default());
        let id = reg.register(t0, SessionConfig::default().with_tally(true));
        reg.observe_line(t0, id, INIT.as_bytes());
        reg.observe_line(
            at(t0, 1),
            id,
            br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"m1","name":"mcp__db__query"}]},"session_id":"s1"}"#,
        );
        reg.observe_line(
            at(t0, 2),
            id,
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"m1"}]},"session_id":"s1"}"#,
        );
        assert!(events(&mut reg).iter().all(|e| !matches!(
            e,
            Event::QuietSpells { .. } | Event::McpCalls { .. } | Event::SessionIdentified { .. }
        )));
    }

    #[test]
    fn the_spells_of_lines_read_together_come_in_one_event() {
        let t0 = Instant::now();
        let mut reg = Registry::new(Limits::default());
        let a = reg.register(t0, SessionConfig::default().with_live_facts(true));
        let b = reg.register(t0, SessionConfig::default().with_live_facts(true));
        let line = br#"{"type":"assistant","message":{"content":[]},"session_id":"s1"}"#;
        for s in 0..4 {
            reg.observe_line(at(t0, s), a, line);
        }
        reg.observe_line(at(t0, 4), b, line);
        reg.observe_line(at(t0, 5), b, line);
        reg.observe_line(at(t0, 7), a, line);
        let spells: Vec<(SessionId, Vec<u64>)> = events(&mut reg)
            .into_iter()
            .filter_map(|e| match e {
                Event::QuietSpells { id, spells } => {
                    Some((id, spells.iter().map(|s| s.length.as_secs()).collect()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            spells,
            vec![(a, vec![1, 1, 1]), (b, vec![1]), (a, vec![4])],
            "one event per stretch of one session's lines"
        );
    }

    #[test]
    fn a_question_to_the_user_and_a_permission_request_are_human_spells() {
        let (mut reg, id, t0) = live_registry();
        let kinds = |reg: &mut Registry| -> Vec<(SpellKind, Option<String>, u64, u64)> {
            events(reg)
                .into_iter()
                .filter_map(|e| match e {
                    Event::QuietSpells { spells, .. } => Some(spells),
                    _ => None,
                })
                .flatten()
                .map(|s| {
                    (
                        s.kind,
                        s.tool.map(|t| t.to_string()),
                        s.length.as_secs(),
                        s.quiet.as_secs(),
                    )
                })
                .collect()
        };
        reg.observe_line(t0, id, INIT.as_bytes());
        reg.observe_line(
            at(t0, 2),
            id,
            br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"q1","name":"AskUserQuestion"}]},"session_id":"s1"}"#,
        );
        // A keep-alive splits the next spell's silence: 10 s long, 6 s the longest gap.
        reg.observe_line(
            at(t0, 6),
            id,
            br#"{"type":"stream_event","event":{"type":"ping"},"session_id":"s1"}"#,
        );
        reg.observe_line(
            at(t0, 12),
            id,
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"q1"}]},"session_id":"s1"}"#,
        );
        assert_eq!(
            kinds(&mut reg),
            vec![
                (SpellKind::Model, None, 2, 2),
                (SpellKind::Human, Some("AskUserQuestion".into()), 10, 6)
            ]
        );
        // A permission request for a Bash call, answered on stdin.
        reg.observe_line(
            at(t0, 13),
            id,
            br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"b1","name":"Bash"}]},"session_id":"s1"}"#,
        );
        reg.observe_line(
            at(t0, 14),
            id,
            br#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash"}}"#,
        );
        reg.observe_input(
            at(t0, 30),
            id,
            &crate::LineView::parse(
                br#"{"type":"control_response","response":{"request_id":"r1","subtype":"success"}}"#,
            )
            .unwrap(),
        );
        reg.observe_line(
            at(t0, 31),
            id,
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"b1"}]},"session_id":"s1"}"#,
        );
        reg.observe_line(
            at(t0, 33),
            id,
            br#"{"type":"result","subtype":"success","session_id":"s1"}"#,
        );
        reg.observe_line(
            at(t0, 40),
            id,
            br#"{"type":"user","message":{"content":[{"type":"text","text":"next"}]},"session_id":"s1"}"#,
        );
        let got = kinds(&mut reg);
        assert_eq!(
            got,
            vec![
                (SpellKind::Model, None, 1, 1),
                (SpellKind::Human, Some("Bash".into()), 18, 17),
                (SpellKind::Model, None, 2, 2),
                (SpellKind::AfterResult, None, 7, 7),
            ]
        );
    }
}
