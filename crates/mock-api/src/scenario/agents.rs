//! The agent scenario: a parent that delegates to subagents, subagents cut off by `max_tokens`,
//! and a parent that continues an agent with `SendMessage` when told to, as a model would.
//!
//! Requests of a subagent carry the `x-claude-code-agent-id` header (Claude Code 2.1.332); the
//! top level's do not. The parent's behaviour is read from the conversation in each request:
//!
//! 1. no `Agent` call yet: call `Agent` [`AgentScript::agents`] times (ids `toolu_mock_agent_<n>`);
//! 2. a user or system message asks to continue agents (text with `"to":"<agent id>"`, as the
//!    `agent-watchdog hook` instruction carries; one target counts once between two assistant
//!    replies, since the CLI renders a hook's output twice) that were not yet sent to: load `SendMessage`
//!    with `ToolSearch` `select:SendMessage`, then call `SendMessage {"to": <id>, …}` once per
//!    request; the message starts with [`MOCK_CONTINUE_TAG`];
//! 3. otherwise: the final answer ([`PARENT_FINAL`]).
//!
//! A subagent's replies are cut off [`AgentScript::cut_offs`] times (each agent counted on its
//! own), then it answers [`SUB_REPORT`]; after each `SendMessage` continuation (its request
//! carries one more [`MOCK_CONTINUE_TAG`]) the count starts again with
//! [`AgentScript::cut_offs_after_continue`].

use serde_json::{json, Value};

use super::Turn;
use crate::RequestSummary;

/// The subagent's prompt.
pub const SUB_TASK: &str = "SUBPROBE-TASK: write a long report about widgets.";
/// A subagent's final answer starts with this.
pub const SUB_REPORT: &str = "SUB-REPORT: the subagent finished.";
/// The parent's final answer starts with this.
pub const PARENT_FINAL: &str = "PARENT-FINAL:";
/// Every `SendMessage` message of the mock parent starts with this.
pub const MOCK_CONTINUE_TAG: &str = "MOCK-CONTINUE:";

/// How many times replies are cut off by `max_tokens` before an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutOffs {
    /// This many times (Claude Code retries a cut-off 3 times itself: 4 or more make the agent
    /// fail).
    Times(usize),
    /// Every time.
    Always,
}

impl CutOffs {
    fn cuts(self, seen: usize) -> bool {
        match self {
            CutOffs::Times(n) => seen < n,
            CutOffs::Always => true,
        }
    }
}

/// The agent scenario's knobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentScript {
    /// `Agent` calls in the parent's first reply (each a separate agent).
    pub agents: usize,
    /// `run_in_background` of the calls.
    pub background: bool,
    /// `subagent_type` of the calls.
    pub subagent_type: String,
    /// Cut-offs of each agent's first run.
    pub cut_offs: CutOffs,
    /// Cut-offs after each `SendMessage` continuation.
    pub cut_offs_after_continue: CutOffs,
    /// Delay between the stream frames of each reply to a continued agent (zero: none); a
    /// delay makes the parent's turn end before the continued agent does.
    pub continue_frame_delay: std::time::Duration,
    /// Delay between the stream frames of every subagent reply (zero: none): an agent that
    /// takes its time (each reply one progress line on stdout when it runs in the background).
    pub frame_delay: std::time::Duration,
    /// Every subagent reply stalls for ever after its first text (a wedged agent; the
    /// connection stays open until the client goes away).
    pub wedged: bool,
    /// Only the agent of the `n`th `Agent` call (1-based) stalls so, the others answer as
    /// configured: one lost among a fan-out (each call's prompt names its task:
    /// `SUB_TASK (task n)`).
    pub wedged_task: Option<usize>,
}

impl Default for AgentScript {
    /// One foreground `general-purpose` agent, always cut off; answers once continued.
    fn default() -> Self {
        AgentScript {
            agents: 1,
            background: false,
            subagent_type: "general-purpose".into(),
            cut_offs: CutOffs::Always,
            cut_offs_after_continue: CutOffs::Times(0),
            continue_frame_delay: std::time::Duration::ZERO,
            frame_delay: std::time::Duration::ZERO,
            wedged: false,
            wedged_task: None,
        }
    }
}

/// Every string inside `v`, in order.
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// The agent ids named as `"to":"<id>"` (or `"to": "<id>"`) in `text`.
pub fn continue_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for pat in ["\"to\":\"", "\"to\": \""] {
        let mut rest = text;
        while let Some(pos) = rest.find(pat) {
            rest = &rest[pos + pat.len()..];
            let id: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if !id.is_empty() {
                out.push(id);
            }
        }
    }
    out
}

fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

fn blocks(m: &Value) -> Vec<&Value> {
    m.get("content")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn tool_uses<'a>(m: &'a Value, name: &str) -> Vec<&'a Value> {
    blocks(m)
        .into_iter()
        .filter(|b| {
            b.get("type").and_then(Value::as_str) == Some("tool_use")
                && b.get("name").and_then(Value::as_str) == Some(name)
        })
        .collect()
}

impl AgentScript {
    /// The turn for a request; `count(key)` returns how many times `key` was counted before
    /// and counts it once more (the server keeps the counts).
    pub(crate) fn turn(
        &self,
        summary: &RequestSummary,
        body: &Value,
        count: &mut dyn FnMut(String) -> usize,
    ) -> Turn {
        let messages: &[Value] = body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        match &summary.agent_id {
            Some(agent) => self.subagent_turn(agent, messages, count),
            None => self.parent_turn(messages),
        }
    }

    fn subagent_turn(
        &self,
        agent: &str,
        messages: &[Value],
        count: &mut dyn FnMut(String) -> usize,
    ) -> Turn {
        let mut texts = Vec::new();
        for m in messages.iter().filter(|m| role(m) == "user") {
            strings(m, &mut texts);
        }
        let phase: usize = texts
            .iter()
            .map(|t| t.matches(MOCK_CONTINUE_TAG).count())
            .sum();
        let seen = count(format!("{agent}#{phase}"));
        let wedged_here = self
            .wedged_task
            .is_some_and(|n| texts.iter().any(|t| t.contains(&format!("(task {n})"))));
        if self.wedged || wedged_here {
            return Turn::answer("Subagent working on ").stall_forever();
        }
        let limit = if phase == 0 {
            self.cut_offs
        } else {
            self.cut_offs_after_continue
        };
        let turn = if limit.cuts(seen) {
            Turn::answer(format!(
                "Subagent partial report number {}, cut off in the mid",
                seen + 1
            ))
            .max_tokens()
        } else {
            Turn::answer(format!("{SUB_REPORT} (agent {agent}, run {phase})"))
        };
        if phase > 0 && !self.continue_frame_delay.is_zero() {
            turn.frame_delay(self.continue_frame_delay)
        } else if !self.frame_delay.is_zero() {
            turn.frame_delay(self.frame_delay)
        } else {
            turn
        }
    }

    fn parent_turn(&self, messages: &[Value]) -> Turn {
        let agent_calls: usize = messages
            .iter()
            .filter(|m| role(m) == "assistant")
            .map(|m| tool_uses(m, "Agent").len())
            .sum();
        if agent_calls == 0 {
            let mut t = Turn::new().text("Delegating to subagents.");
            for i in 1..=self.agents.max(1) {
                t = t.tool_use(
                    format!("toolu_mock_agent_{i}"),
                    "Agent",
                    json!({
                        "description": format!("Probe subagent task {i}"),
                        "prompt": format!("{SUB_TASK} (task {i})"),
                        "subagent_type": self.subagent_type,
                        "run_in_background": self.background,
                    }),
                );
            }
            return t;
        }
        // Continuations asked for, minus those already sent, in order.
        let mut pending: Vec<String> = Vec::new();
        let mut sends = 0usize;
        let mut searches = 0usize;
        // Claude Code shows one hook output twice (a user reminder and a `system` message):
        // a target counts once per stretch of messages between two assistant replies.
        let mut this_turn: Vec<String> = Vec::new();
        for m in messages {
            match role(m) {
                "user" | "system" => {
                    let mut texts = Vec::new();
                    strings(m, &mut texts);
                    for t in texts {
                        for target in continue_targets(t) {
                            if !this_turn.contains(&target) {
                                this_turn.push(target.clone());
                                pending.push(target);
                            }
                        }
                    }
                }
                "assistant" => {
                    this_turn.clear();
                    searches += tool_uses(m, "ToolSearch").len();
                    for call in tool_uses(m, "SendMessage") {
                        sends += 1;
                        let to = call.pointer("/input/to").and_then(Value::as_str);
                        if let Some(i) = pending.iter().position(|p| Some(p.as_str()) == to) {
                            pending.remove(i);
                        }
                    }
                }
                _ => {}
            }
        }
        if pending.is_empty() {
            let what = if sends > 0 {
                "after SendMessage continuation"
            } else {
                "got the subagent result"
            };
            return Turn::answer(format!("{PARENT_FINAL} {what}."));
        }
        let last_assistant = messages.iter().rev().find(|m| role(m) == "assistant");
        let just_searched = last_assistant.is_some_and(|m| !tool_uses(m, "ToolSearch").is_empty());
        if !just_searched {
            return Turn::new().text("Loading SendMessage.").tool_use(
                format!("toolu_mock_ts_{}", searches + 1),
                "ToolSearch",
                json!({"query": "select:SendMessage", "max_results": 1}),
            );
        }
        let mut t = Turn::new().text("Continuing the subagent.");
        for (i, agent) in pending.iter().enumerate() {
            t = t.tool_use(
                format!("toolu_mock_send_{}", sends + i + 1),
                "SendMessage",
                json!({
                    "to": agent,
                    "message": format!("{MOCK_CONTINUE_TAG} Continue the unfinished task from where you stopped."),
                    "summary": "continue after output limit",
                }),
            );
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::Block;
    use super::*;

    fn tool_calls(t: &Turn) -> Vec<(String, Value)> {
        t.blocks()
            .filter_map(|b| match b {
                Block::ToolUse { name, input, .. } => Some((name.clone(), input.clone())),
                _ => None,
            })
            .collect()
    }

    fn text(t: &Turn) -> String {
        t.blocks()
            .filter_map(|b| match b {
                Block::Text(s) => Some(s.clone()),
                _ => None,
            })
            .collect()
    }

    fn ask(
        script: &AgentScript,
        agent: Option<&str>,
        messages: Value,
        counts: &mut HashMap<String, usize>,
    ) -> Turn {
        let summary = RequestSummary {
            agent_id: agent.map(str::to_owned),
            ..RequestSummary::default()
        };
        let mut count = |k: String| {
            let n = counts.entry(k).or_insert(0);
            *n += 1;
            *n - 1
        };
        script.turn(&summary, &json!({ "messages": messages }), &mut count)
    }

    #[test]
    fn the_parent_delegates_then_continues_each_named_agent_once() {
        let script = AgentScript {
            agents: 2,
            ..AgentScript::default()
        };
        let mut c = HashMap::new();
        let first = ask(
            &script,
            None,
            json!([{"role": "user", "content": "go"}]),
            &mut c,
        );
        let calls = tool_calls(&first);
        assert_eq!(calls.len(), 2);
        assert!(calls
            .iter()
            .all(|(n, i)| n == "Agent" && i["run_in_background"] == false));
        let agent_msg = json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_mock_agent_1", "name": "Agent", "input": {}}]});
        let instruction = r#"SendMessage with {"to":"a1","message":"m"}"#;
        // The hook's text shows twice in one turn (user reminder + system message): one target.
        let msgs = json!([
            {"role": "user", "content": "go"}, agent_msg,
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_mock_agent_1", "content": "err"}]},
            {"role": "user", "content": format!("<system-reminder>{instruction}</system-reminder>")},
            {"role": "system", "content": format!("Stop hook blocking error: {instruction}")},
        ]);
        let search = ask(&script, None, msgs.clone(), &mut c);
        assert_eq!(tool_calls(&search)[0].0, "ToolSearch");
        assert_eq!(tool_calls(&search)[0].1["query"], "select:SendMessage");
        let mut m = msgs.as_array().unwrap().clone();
        m.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_mock_ts_1", "name": "ToolSearch", "input": {}}]}));
        m.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_mock_ts_1", "content": []}]}));
        let send = ask(&script, None, json!(m), &mut c);
        let calls = tool_calls(&send);
        assert_eq!(calls.len(), 1, "one SendMessage for one instruction");
        assert_eq!(calls[0].0, "SendMessage");
        assert_eq!(calls[0].1["to"], "a1");
        assert!(calls[0].1["message"]
            .as_str()
            .unwrap()
            .starts_with(MOCK_CONTINUE_TAG));
        m.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_mock_send_1", "name": "SendMessage", "input": {"to": "a1"}}]}));
        m.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_mock_send_1", "content": "ok"}]}));
        let done = ask(&script, None, json!(m.clone()), &mut c);
        assert!(tool_calls(&done).is_empty());
        assert!(text(&done).starts_with(PARENT_FINAL));
        // The same instruction given again in a later turn is followed again (so a hook that
        // asked twice would show as two SendMessage calls).
        m.push(json!({"role": "assistant", "content": "ok"}));
        m.push(json!({"role": "user", "content": instruction}));
        assert_eq!(
            tool_calls(&ask(&script, None, json!(m), &mut c))[0].0,
            "ToolSearch"
        );
    }

    #[test]
    fn a_subagent_is_cut_off_as_configured_per_run() {
        let script = AgentScript {
            cut_offs: CutOffs::Times(2),
            cut_offs_after_continue: CutOffs::Times(1),
            ..AgentScript::default()
        };
        let mut c = HashMap::new();
        let first_run = json!([{"role": "user", "content": SUB_TASK}]);
        let stops: Vec<_> = (0..3)
            .map(|_| ask(&script, Some("a1"), first_run.clone(), &mut c).effective_stop_reason())
            .collect();
        use crate::StopReason::{EndTurn, MaxTokens};
        assert_eq!(stops, [MaxTokens, MaxTokens, EndTurn]);
        // Another agent is counted on its own.
        assert_eq!(
            ask(&script, Some("b2"), first_run, &mut c).effective_stop_reason(),
            MaxTokens
        );
        let continued = json!([{"role": "user", "content": SUB_TASK},
            {"role": "user", "content": format!("The coordinator sent a message: {MOCK_CONTINUE_TAG} go on")}]);
        let stops: Vec<_> = (0..2)
            .map(|_| ask(&script, Some("a1"), continued.clone(), &mut c).effective_stop_reason())
            .collect();
        assert_eq!(stops, [MaxTokens, EndTurn]);
        let always = AgentScript::default();
        for _ in 0..10 {
            assert_eq!(
                ask(&always, Some("a9"), json!([]), &mut c).effective_stop_reason(),
                MaxTokens
            );
        }
    }

    #[test]
    fn only_the_named_task_wedges_among_a_fan_out() {
        let script = AgentScript {
            agents: 3,
            background: true,
            cut_offs: CutOffs::Times(0),
            wedged_task: Some(2),
            ..AgentScript::default()
        };
        let mut c = HashMap::new();
        let calls = tool_calls(&ask(
            &script,
            None,
            json!([{"role": "user", "content": "go"}]),
            &mut c,
        ));
        let prompts: Vec<String> = calls
            .iter()
            .map(|(_, i)| i["prompt"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(prompts.len(), 3);
        for (i, p) in prompts.iter().enumerate() {
            let turn = ask(
                &script,
                Some(&format!("a{i}")),
                json!([{"role": "user", "content": p}]),
                &mut c,
            );
            let stalls = turn
                .steps
                .iter()
                .any(|s| matches!(s, crate::scenario::Step::Stall(_)));
            assert_eq!(stalls, i == 1, "{p}");
        }
    }

    #[test]
    fn finds_targets_in_both_spacings() {
        assert_eq!(
            continue_targets(
                r#"call SendMessage with {"to":"a1b2","message":"x"} and {"to": "c_3"}"#
            ),
            ["a1b2", "c_3"]
        );
        assert!(continue_targets("no target here").is_empty());
    }
}
