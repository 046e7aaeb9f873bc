//! What a run printed, tallied for the summary, the replay report and the status line: the
//! current activity, turns, rate-limit windows, subagent failures. (The session id and the last
//! `result`'s fields are the registry's, [`watchdog_core::facts`]; the line counts are the
//! supervisor's, or the replay's registry's: [`lines_json`].)

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use watchdog_core::{Class, LineKind, LineView, ResultFacts};

/// What the status line shows as the current activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    /// Nothing printed yet.
    Starting,
    /// Thinking (thinking deltas or `thinking_tokens`).
    Thinking,
    /// Writing text or a tool call.
    Writing,
    /// Waiting on the API (a request went out).
    Requesting,
    /// A tool runs: its name.
    Tool(String),
    /// A tool call known from its heartbeat (an MCP call, possibly a subagent's): its name and
    /// how long it had been outstanding when the heartbeat came, in seconds.
    InFlight {
        /// The tool, e.g. `mcp__db__query`.
        tool: String,
        /// Seconds outstanding at the heartbeat.
        for_secs: u64,
    },
    /// Retrying the API after an error.
    Retrying,
    /// Waiting on a human (a permission request).
    HumanWait,
    /// A `result` came.
    Settled,
}

impl std::fmt::Display for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Activity::Starting => f.write_str("starting"),
            Activity::Thinking => f.write_str("thinking"),
            Activity::Writing => f.write_str("writing"),
            Activity::Requesting => f.write_str("requesting"),
            Activity::Tool(name) | Activity::InFlight { tool: name, .. } => {
                write!(f, "tool {name}")
            }
            Activity::Retrying => f.write_str("retrying the API"),
            Activity::HumanWait => f.write_str("waiting on a human"),
            Activity::Settled => f.write_str("settled"),
        }
    }
}

impl Activity {
    /// How long the activity had already lasted when it was noted (a heartbeat's elapsed
    /// time; zero for the others).
    pub fn already(&self) -> std::time::Duration {
        match self {
            Activity::InFlight { for_secs, .. } => std::time::Duration::from_secs(*for_secs),
            _ => std::time::Duration::ZERO,
        }
    }
}

/// The running tally of one run's stdout.
#[derive(Debug, Clone)]
pub struct Tally {
    /// An `assistant` line came (a turn is in progress or done).
    assistant: bool,
    /// The last `rate_limit_info` seen.
    pub rate_limit: Option<Value>,
    /// The current activity.
    pub activity: Activity,
    /// Top-level `user` lines that answered tool calls (one model turn each).
    pub tool_rounds: u64,
    /// Tool calls started and not yet answered: (id, name).
    open_tools: Vec<(String, String)>,
    /// Subagents and their failures (`system/task_*` lines).
    pub subagents: Subagents,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            assistant: false,
            rate_limit: None,
            activity: Activity::Starting,
            tool_rounds: 0,
            open_tools: Vec::new(),
            subagents: Subagents::default(),
        }
    }
}

impl Tally {
    /// Whether tallying a line of class `class` looks inside it (init and other `system`
    /// lines, rate limits, heartbeats, top-level turns); the others are tallied from their
    /// class alone, so only these need a [`LineView`].
    pub fn needs_view(class: Class, top_level: bool) -> bool {
        matches!(
            class.kind,
            LineKind::RateLimit | LineKind::System | LineKind::ToolProgress
        ) || (top_level && matches!(class.kind, LineKind::Assistant | LineKind::User))
    }

    /// Tally one parsed stdout line of class `class`, as the supervisor reported it
    /// (`top_level`: no `parent_tool_use_id`). `view` is needed only when
    /// [`Tally::needs_view`] says so (it is not read otherwise); the result is the same as
    /// [`Tally::observe`]'s.
    pub fn observe_line(&mut self, view: Option<&LineView<'_>>, class: Class, top_level: bool) {
        self.assistant |= class.kind == LineKind::Assistant;
        match view {
            Some(view) if Self::needs_view(class, top_level) => {
                self.look_inside(view, class, top_level);
            }
            _ => self.note_class(class, top_level),
        }
    }

    /// Tally one parsed stdout line of class `class`, looking inside it.
    pub fn observe(&mut self, view: &LineView<'_>, class: Class) {
        self.assistant |= class.kind == LineKind::Assistant;
        let top_level = view.parent_tool_use_id().is_none();
        self.look_inside(view, class, top_level);
    }

    /// What a line changes that its class alone tells.
    fn note_class(&mut self, class: Class, top_level: bool) {
        match class.kind {
            LineKind::Result => {
                self.open_tools.clear();
                self.activity = Activity::Settled;
            }
            LineKind::ApiRetry => self.activity = Activity::Retrying,
            LineKind::StreamEvent if top_level && self.open_tools.is_empty() => {
                self.activity = Activity::Writing;
            }
            // A subagent streams again: the call its heartbeat showed is over.
            LineKind::StreamEvent if matches!(self.activity, Activity::InFlight { .. }) => {
                self.activity = match self.open_tools.last() {
                    Some((_, name)) => Activity::Tool(name.clone()),
                    None => Activity::Requesting,
                };
            }
            LineKind::ControlRequest | LineKind::SessionState
                if class.signal == watchdog_core::Signal::HumanWait =>
            {
                self.activity = Activity::HumanWait;
            }
            _ => {}
        }
    }

    fn look_inside(&mut self, view: &LineView<'_>, class: Class, top_level: bool) {
        match class.kind {
            LineKind::RateLimit => {
                if let Some(info) = view.rate_limit_info().and_then(|f| f.to_value()) {
                    self.rate_limit = Some(info);
                }
            }
            LineKind::Assistant if top_level => {
                let mut any = false;
                for (id, name) in view.tool_uses() {
                    self.open_tools.push((id.into_owned(), name.into_owned()));
                    any = true;
                }
                if let Some((_, name)) = self.open_tools.last().filter(|_| any) {
                    self.activity = Activity::Tool(name.clone());
                } else {
                    self.activity = Activity::Writing;
                }
            }
            LineKind::User if top_level => {
                let mut any = false;
                for (id, _) in view.tool_results() {
                    self.open_tools.retain(|(open, _)| *open != id);
                    any = true;
                }
                self.tool_rounds += u64::from(any);
                self.activity = match self.open_tools.last() {
                    Some((_, name)) => Activity::Tool(name.clone()),
                    None => Activity::Requesting,
                };
            }
            LineKind::ToolProgress => {
                // An MCP call's heartbeat (its own tool_use may be a subagent's, unseen here):
                // show it, with the time it has been outstanding.
                let Some(tool) = view
                    .tool_name()
                    .filter(|t| watchdog_core::config::is_mcp_tool(t))
                else {
                    return;
                };
                if !matches!(&self.activity, Activity::Tool(t) if *t == *tool) {
                    let for_secs = view.elapsed_time_seconds().unwrap_or(0.0) as u64;
                    self.activity = Activity::InFlight {
                        tool: tool.into_owned(),
                        for_secs,
                    };
                }
            }
            LineKind::System => match view.subtype().as_deref() {
                Some("thinking_tokens") => self.activity = Activity::Thinking,
                Some("status") => self.activity = Activity::Requesting,
                Some(sub @ ("task_started" | "task_updated" | "task_notification")) => {
                    self.subagents.observe(sub, view);
                }
                _ => {}
            },
            _ => self.note_class(class, top_level),
        }
    }

    /// Model turns so far: the last `result`'s `num_turns` (`result`: the registry's facts),
    /// else one per tool round plus the turn in progress.
    pub fn num_turns(&self, result: Option<&ResultFacts>) -> u64 {
        if let Some(n) = result.and_then(|r| r.num_turns) {
            return n;
        }
        self.tool_rounds + u64::from(self.assistant)
    }

    /// The rate-limit windows of the last `rate_limit_event` (`unifiedWindows` when present),
    /// as `{name: {utilization, resetsAt, status}}`.
    pub fn rate_limit_windows(&self) -> Value {
        let Some(info) = &self.rate_limit else {
            return Value::Null;
        };
        if let Some(w) = info.get("unifiedWindows").filter(|w| w.is_object()) {
            return w.clone();
        }
        let mut m = BTreeMap::new();
        if let Some(kind) = info.get("rateLimitType").and_then(Value::as_str) {
            m.insert(
                kind.to_owned(),
                json!({
                    "utilization": info.get("utilization"),
                    "resetsAt": info.get("resetsAt"),
                    "status": info.get("status"),
                }),
            );
        }
        json!(m)
    }
}

/// Line counts by kind as a JSON object (kinds with zero lines left out), and `overlong` (lines
/// over the maximum length, counted there only) when there were any.
pub fn lines_json(counts: impl IntoIterator<Item = (LineKind, u64)>, overlong: u64) -> Value {
    let mut m = Map::new();
    for (kind, n) in counts {
        if n > 0 {
            m.insert(kind.as_str().into(), json!(n));
        }
    }
    if overlong > 0 {
        m.insert("overlong".into(), json!(overlong));
    }
    Value::Object(m)
}

/// One subagent failure seen on stdout (`system/task_updated` with `status: "failed"`, or a
/// failed `task_notification`): one per run of an agent, so a continued agent that fails again
/// counts twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentFailure {
    /// The agent id (`task_id`).
    pub agent_id: String,
    /// Its type (`subagent_type` of its `task_started`).
    pub agent_type: Option<String>,
    /// The error (`patch.error`), e.g. `… (error type max_output_tokens)`.
    pub error: Option<String>,
    /// Whether a later run of the same agent (a `SendMessage` continuation) completed.
    pub recovered: bool,
}

/// The subagents of a run, from the `system/task_*` lines. Tasks that are not agents (no
/// `subagent_type`, e.g. background shells) are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subagents {
    /// Agent id → type, for every agent started.
    types: Vec<(String, Option<String>)>,
    /// (agent id, run id) of the failed runs already counted.
    failed_runs: Vec<(String, String)>,
    /// The failures, in order.
    pub failures: Vec<SubagentFailure>,
}

impl Subagents {
    fn observe(&mut self, subtype: &str, view: &LineView<'_>) {
        let Some(id) = view.task_id() else { return };
        match subtype {
            "task_started" => {
                if let Some(t) = view.subagent_type() {
                    if !self.types.iter().any(|(a, _)| *a == *id) {
                        self.types.push((id.into_owned(), Some(t.into_owned())));
                    }
                }
            }
            _ => {
                let Some((_, agent_type)) = self.types.iter().find(|(a, _)| *a == *id) else {
                    return;
                };
                let agent_type = agent_type.clone();
                match view.task_status().as_deref() {
                    Some("failed") => {
                        let run = view.run_id().map(|r| r.into_owned()).unwrap_or_default();
                        let key = (id.to_string(), run);
                        if let Some(i) = self.failed_runs.iter().position(|k| *k == key) {
                            // The notification after the update: keep the error we have.
                            let f = &mut self.failures[i];
                            if f.error.is_none() {
                                f.error = view.task_error().map(Into::into);
                            }
                            return;
                        }
                        self.failed_runs.push(key);
                        self.failures.push(SubagentFailure {
                            agent_id: id.into_owned(),
                            agent_type,
                            error: view.task_error().map(Into::into),
                            recovered: false,
                        });
                    }
                    Some("completed") => {
                        for f in self.failures.iter_mut().filter(|f| *f.agent_id == *id) {
                            f.recovered = true;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Failures whose agent never completed afterwards.
    pub fn unrecovered(&self) -> impl Iterator<Item = &SubagentFailure> {
        self.failures.iter().filter(|f| !f.recovered)
    }

    /// The failures as JSON: `[{agent_id, agent_type, error, recovered}]`.
    pub fn failures_json(&self) -> Value {
        Value::Array(
            self.failures
                .iter()
                .map(|f| {
                    json!({
                        "agent_id": f.agent_id,
                        "agent_type": f.agent_type,
                        "error": f.error,
                        "recovered": f.recovered,
                    })
                })
                .collect(),
        )
    }

    /// One line per failure for stderr, e.g. `subagent a02f… (general-purpose) failed:
    /// … (error type max_output_tokens); the session went on without it`.
    pub fn report_lines(&self) -> Vec<String> {
        self.failures
            .iter()
            .map(|f| {
                format!(
                    "subagent {} ({}) failed: {}; {}",
                    f.agent_id,
                    f.agent_type.as_deref().unwrap_or("unknown type"),
                    f.error.as_deref().unwrap_or("no error given"),
                    if f.recovered {
                        "a later run of the same agent completed"
                    } else {
                        "its work is unfinished even if the session succeeded"
                    }
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchdog_core::classify;

    fn feed(t: &mut Tally, line: &str) {
        let v = LineView::parse_str(line).unwrap();
        let c = classify(&v);
        t.observe(&v, c);
    }

    /// The same line tallied as `run` does: from the class, parsed only when needed.
    fn feed_class(t: &mut Tally, line: &str) {
        let v = LineView::parse_str(line).unwrap();
        let c = classify(&v);
        let top = v.parent_tool_use_id().is_none();
        let view = Tally::needs_view(c, top).then_some(&v);
        t.observe_line(view, c, top);
    }

    #[test]
    fn class_only_tally_matches_the_full_one() {
        let lines = [
            r#"{"type":"system","subtype":"init","session_id":"s1"}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"s1","parent_tool_use_id":null}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash"}]},"session_id":"s1"}"#,
            r#"{"type":"stream_event","event":{"type":"ping"},"session_id":"s1"}"#,
            r#"{"type":"system","subtype":"api_retry","session_id":"s1"}"#,
            r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool"}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1"}]}}"#,
            r#"{"type":"stream_event","event":{"type":"message_start"},"session_id":"s2"}"#,
            r#"{"type":"system","subtype":"thinking_tokens","session_id":"s2"}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"s2","parent_tool_use_id":"t9"}"#,
            r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"},"session_id":"s2"}"#,
            r#"{"type":"result","subtype":"success","num_turns":3,"session_id":"s2"}"#,
        ];
        let (mut full, mut by_class) = (Tally::default(), Tally::default());
        for (i, l) in lines.iter().enumerate() {
            feed(&mut full, l);
            feed_class(&mut by_class, l);
            assert_eq!(full.activity, by_class.activity, "after line {i}");
        }
        assert_eq!(full.activity, Activity::Settled);
        assert_eq!(full.num_turns(None), by_class.num_turns(None));
        assert_eq!(full.rate_limit, by_class.rate_limit);
        assert_eq!(full.tool_rounds, by_class.tool_rounds);
    }

    #[test]
    fn tracks_tools_and_results() {
        let mut t = Tally::default();
        feed(
            &mut t,
            r#"{"type":"system","subtype":"init","session_id":"s1"}"#,
        );
        feed(
            &mut t,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash"}]},"session_id":"s1"}"#,
        );
        assert_eq!(t.activity, Activity::Tool("Bash".into()));
        feed(
            &mut t,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1"}]}}"#,
        );
        assert_eq!(t.activity, Activity::Requesting);
        feed(
            &mut t,
            r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","session_id":"s1"}"#,
        );
        assert_eq!(t.activity, Activity::Settled);
        // No `num_turns` in the result: one tool round and the turn that ended.
        assert_eq!(t.num_turns(None), 2);
        let facts = ResultFacts {
            num_turns: Some(5),
            ..ResultFacts::default()
        };
        assert_eq!(t.num_turns(Some(&facts)), 5);
    }

    fn recorded(name: &str) -> Vec<String> {
        let path = format!(
            "{}/../../testdata/subagents/{name}.stdout.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn a_subagent_failure_is_seen_in_a_successful_session() {
        for name in ["a2_sub_mt_all_fg", "a8_sub_mt_all_bg"] {
            let mut t = Tally::default();
            for l in recorded(name) {
                feed_class(&mut t, &l);
            }
            assert_eq!(t.activity, Activity::Settled, "{name}");
            let f = &t.subagents.failures;
            assert_eq!(
                f.len(),
                1,
                "{name}: one failure, update and notification merged"
            );
            assert_eq!(f[0].agent_type.as_deref(), Some("general-purpose"));
            assert!(f[0].error.as_deref().unwrap().contains("max_output_tokens"));
            assert!(!f[0].recovered);
            assert_eq!(t.subagents.unrecovered().count(), 1);
            let line = &t.subagents.report_lines()[0];
            assert!(
                line.contains(&f[0].agent_id) && line.contains("unfinished"),
                "{line}"
            );
            assert_eq!(
                t.subagents.failures_json()[0]["agent_id"],
                f[0].agent_id.as_str()
            );
        }
    }

    #[test]
    fn a_failed_agent_continued_with_send_message_counts_as_recovered() {
        let mut t = Tally::default();
        for l in recorded("b1_sub_mt4_sendmessage") {
            feed_class(&mut t, &l);
        }
        assert_eq!(t.subagents.failures.len(), 1);
        assert!(t.subagents.failures[0].recovered);
        assert_eq!(t.subagents.unrecovered().count(), 0);
    }

    #[test]
    fn healthy_agents_and_other_tasks_are_no_failures() {
        let mut t = Tally::default();
        for l in recorded("a1_healthy_fg") {
            feed_class(&mut t, &l);
        }
        // A background shell task that failed: not an agent.
        feed(
            &mut t,
            r#"{"type":"system","subtype":"task_started","task_id":"b1","run_id":"r","task_type":"local_bash"}"#,
        );
        feed(
            &mut t,
            r#"{"type":"system","subtype":"task_updated","task_id":"b1","run_id":"r","patch":{"status":"failed","error":"exit 1"}}"#,
        );
        assert!(t.subagents.failures.is_empty());
        assert_eq!(t.subagents.failures_json(), json!([]));
    }

    #[test]
    fn an_mcp_heartbeat_names_the_call_in_flight_and_how_long_it_has_been_outstanding() {
        let mut t = Tally::default();
        // A subagent's MCP call: its tool_use is not top-level; the heartbeat tells.
        feed_class(
            &mut t,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a1","name":"Agent"}]},"session_id":"s"}"#,
        );
        feed_class(
            &mut t,
            r#"{"type":"tool_progress","tool_use_id":"m1-heartbeat-0","tool_name":"mcp__db__query","parent_tool_use_id":"m1","elapsed_time_seconds":1860,"heartbeat":true,"session_id":"s"}"#,
        );
        let a = t.activity.clone();
        assert_eq!(a.to_string(), "tool mcp__db__query");
        assert_eq!(a.already(), std::time::Duration::from_secs(1860));
        // The subagent streams again: back to the tool that runs it.
        feed_class(
            &mut t,
            r#"{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"s","parent_tool_use_id":"a1"}"#,
        );
        assert_eq!(t.activity, Activity::Tool("Agent".into()));
        // A Bash heartbeat changes nothing.
        feed_class(
            &mut t,
            r#"{"type":"tool_progress","tool_name":"Bash","parent_tool_use_id":"b1","elapsed_time_seconds":30,"session_id":"s"}"#,
        );
        assert_eq!(t.activity, Activity::Tool("Agent".into()));
    }

    #[test]
    fn rate_limit_windows() {
        let mut t = Tally::default();
        feed(
            &mut t,
            r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","unifiedWindows":{"five_hour":{"utilization":0.91,"resetsAt":100},"seven_day":{"utilization":0.42,"resetsAt":200}}}}"#,
        );
        let w = t.rate_limit_windows();
        assert_eq!(w["five_hour"]["utilization"], 0.91);
        assert_eq!(w["seven_day"]["resetsAt"], 200);
    }
}
