//! What a session's lines said about its work, tallied as they are read, by the
//! [`Registry`](crate::Registry) (sessions registered with
//! [`SessionConfig::with_tally`](crate::SessionConfig::with_tally)): the current activity (for a
//! status line), the model turns, the subagents and their failures.

use std::sync::Arc;

use crate::classify::{Class, LineKind, Signal};
use crate::dialect::ToolEdge;
use crate::facts::live::{LineContext, LiveFacts, LiveNews};
use crate::facts::spells::{PendingTool, ProgressLine, Step};
use crate::facts::{ResultFacts, Subagents, TaskCounts};
use crate::view::LineView;

/// What the status line shows as the current activity.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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

/// The running tally of one session's stdout.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    /// An `assistant` line came (a turn is in progress or done).
    assistant: bool,
    activity: Activity,
    /// Top-level `user` lines that answered tool calls (one model turn each).
    tool_rounds: u64,
    /// Top-level tool calls started and not yet answered, in call order.
    open_tools: Vec<OpenTool>,
    /// Subagents and their failures (`system/task_*` lines).
    subagents: Subagents,
    /// Task runs started and ended (`system/task_*` lines).
    tasks: TaskCounts,
    /// What the session reports while it runs, when its host asked
    /// ([`SessionConfig::with_live_facts`](crate::SessionConfig::with_live_facts)).
    live: Option<Box<LiveFacts>>,
    /// While a live tally reads a line: the first pending call (in call order) the line
    /// answered.
    answered: Option<Arc<str>>,
    /// A live tally is reading a line (keep [`Tally::answered`]).
    reading_live: bool,
}

/// A top-level tool call not yet answered.
#[derive(Debug, Clone, PartialEq)]
struct OpenTool {
    /// Its `tool_use` id.
    id: String,
    /// The tool (shared with the quiet spells that name it).
    name: Arc<str>,
    /// A `tool_result` of the line being read answers it.
    answered: bool,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            assistant: false,
            activity: Activity::Starting,
            tool_rounds: 0,
            open_tools: Vec::new(),
            subagents: Subagents::default(),
            tasks: TaskCounts::default(),
            live: None,
            answered: None,
            reading_live: false,
        }
    }
}

impl Tally {
    /// A tally that also keeps what the session reports while it runs (`live`: quiet spells,
    /// MCP calls, the session id; see [`crate::facts`]).
    pub(crate) fn new(live: bool) -> Tally {
        Tally {
            live: live.then(Box::default),
            ..Tally::default()
        }
    }

    /// Whether the tally keeps the live facts ([`Tally::new`]).
    pub(crate) fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Tally one stdout line of class `class` (`view`: `None` for a line that did not parse).
    pub fn observe(&mut self, view: Option<&LineView<'_>>, class: Class) {
        self.read(view, class);
    }

    /// Tally one line as [`Tally::observe`] does and return whether it is top-level.
    fn read(&mut self, view: Option<&LineView<'_>>, class: Class) -> bool {
        self.assistant |= class.kind == LineKind::Assistant;
        match view {
            Some(view) => {
                let top_level = view.parent_tool_use_id().is_none();
                self.look_inside(view, class, top_level);
                top_level
            }
            None => {
                self.note_class(class, false);
                false
            }
        }
    }

    /// Tally one line as [`Tally::observe`] does and, for a tally made [`Tally::new`] with
    /// `live`, say what it makes news of ([`crate::facts::live`]).
    pub(crate) fn observe_in(
        &mut self,
        view: Option<&LineView<'_>>,
        class: Class,
        cx: &LineContext<'_>,
    ) -> LiveNews {
        let Some(mut live) = self.live.take() else {
            self.read(view, class);
            return LiveNews::default();
        };
        live.spells.line(cx.now);
        // The spell's tool is the latest pending before the line (its answer is read below).
        // An opencode `tool_use` reports a call that ran since the last line, unseen until
        // now: it is both the pending call and the one answered.
        let last_pending = self.open_tools.last().map(|t| t.name.clone()).or_else(|| {
            let tool = view.filter(|_| class.kind == LineKind::ToolUse)?.part()?;
            Some(Arc::from(&*tool.member("tool")?.as_str()?))
        });
        self.answered = None;
        self.reading_live = true;
        let top_level = self.read(view, class);
        self.reading_live = false;
        let step = Step::of(class, view.is_some(), top_level);
        let spell = match step {
            Step::Other => None,
            Step::HumanWait => {
                live.spells.human_wait();
                None
            }
            Step::Progress => {
                let answered = self.answered.take();
                let pending = |name| PendingTool {
                    name,
                    person_answered: false,
                };
                live.spells.progress(
                    cx.now,
                    ProgressLine {
                        waiting_on_person: cx.waiting_on_person,
                        last_pending: last_pending.as_ref().map(pending),
                        answered: answered.as_ref().map(pending),
                        settles: class.signal == Signal::Settle && top_level,
                        top_level,
                        ..ProgressLine::default()
                    },
                )
            }
        };
        let news = live.after_line(cx, class, spell);
        self.live = Some(live);
        news
    }

    /// The current activity.
    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    /// Top-level `user` lines that answered tool calls (one model turn each).
    pub fn tool_rounds(&self) -> u64 {
        self.tool_rounds
    }

    /// The subagents and their failures.
    pub fn subagents(&self) -> &Subagents {
        &self.subagents
    }

    /// The task runs started and ended.
    pub fn tasks(&self) -> &TaskCounts {
        &self.tasks
    }

    /// What a line changes that its class alone tells.
    fn note_class(&mut self, class: Class, top_level: bool) {
        // A `result`, or another dialect's end of a turn.
        if class.signal == Signal::Settle {
            self.open_tools.clear();
            self.activity = Activity::Settled;
            return;
        }
        match class.kind {
            // Claude Code's announced retry; a Codex notice (its retries).
            LineKind::ApiRetry | LineKind::Error => self.activity = Activity::Retrying,
            LineKind::TurnStarted => self.activity = Activity::Requesting,
            LineKind::Text => self.activity = Activity::Writing,
            LineKind::Reasoning => self.activity = Activity::Thinking,
            LineKind::StreamEvent if top_level && self.open_tools.is_empty() => {
                self.activity = Activity::Writing;
            }
            // A subagent streams again: the call its heartbeat showed is over.
            LineKind::StreamEvent if matches!(self.activity, Activity::InFlight { .. }) => {
                self.activity = match self.open_tools.last() {
                    Some(t) => Activity::Tool(t.name.to_string()),
                    None => Activity::Requesting,
                };
            }
            LineKind::ControlRequest | LineKind::SessionState
                if class.signal == Signal::HumanWait =>
            {
                self.activity = Activity::HumanWait;
            }
            _ => {}
        }
    }

    fn look_inside(&mut self, view: &LineView<'_>, class: Class, top_level: bool) {
        match class.kind {
            LineKind::Assistant if top_level => {
                let mut any = false;
                for (id, name) in view.tool_uses() {
                    self.open_tools.push(OpenTool {
                        id: id.into_owned(),
                        name: Arc::from(&*name),
                        answered: false,
                    });
                    any = true;
                }
                if let Some(t) = self.open_tools.last().filter(|_| any) {
                    self.activity = Activity::Tool(t.name.to_string());
                } else {
                    self.activity = Activity::Writing;
                }
            }
            LineKind::User if top_level => {
                let mut any = false;
                for (id, _) in view.tool_results() {
                    for t in self.open_tools.iter_mut().filter(|t| t.id == *id) {
                        t.answered = true;
                    }
                    any = true;
                }
                if self.reading_live {
                    let first = self.open_tools.iter().find(|t| t.answered);
                    self.answered = first.map(|t| t.name.clone());
                }
                self.open_tools.retain(|t| !t.answered);
                self.tool_rounds += u64::from(any);
                self.activity = match self.open_tools.last() {
                    Some(t) => Activity::Tool(t.name.to_string()),
                    None => Activity::Requesting,
                };
            }
            LineKind::ToolProgress => {
                // An MCP call's heartbeat (its own tool_use may be a subagent's, unseen here):
                // show it, with the time it has been outstanding.
                let Some(tool) = view.tool_name().filter(|t| crate::mcp::is_mcp_tool(t)) else {
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
                    self.tasks.observe(sub, view);
                }
                _ => {}
            },
            LineKind::ItemStarted | LineKind::ItemCompleted if class.signal == Signal::Progress => {
                self.codex_item(view, class.kind);
            }
            // An opencode step is one model request: a turn, and a tool round when it ends to
            // call tools.
            LineKind::StepStart => {
                self.assistant = true;
                self.activity = Activity::Requesting;
            }
            LineKind::StepFinish if class.signal == Signal::Progress => {
                self.tool_rounds += 1;
                self.activity = Activity::Requesting;
            }
            LineKind::ToolUse => {
                if self.reading_live {
                    let tool = view.part().and_then(|p| p.member("tool"));
                    self.answered = tool.and_then(|t| t.as_str()).map(|t| Arc::from(&*t));
                }
                self.activity = Activity::Requesting;
            }
            _ => self.note_class(class, top_level),
        }
    }

    /// A Codex item began or completed: a tool call (a command, an MCP or web call) is
    /// outstanding from its start to its completion, one round each; the model writes or
    /// thinks.
    fn codex_item(&mut self, view: &LineView<'_>, kind: LineKind) {
        self.assistant = true;
        match crate::dialect::tool_edge(view, kind) {
            Some(ToolEdge::Began { id, name }) => {
                self.open_tools.push(OpenTool {
                    id: id.into_owned(),
                    name: Arc::from(&*name),
                    answered: false,
                });
                self.activity = Activity::Tool(name.into_owned());
            }
            Some(ToolEdge::Ended { id }) => {
                for t in self.open_tools.iter_mut().filter(|t| t.id == *id) {
                    t.answered = true;
                }
                if self.reading_live {
                    let first = self.open_tools.iter().find(|t| t.answered);
                    self.answered = first.map(|t| t.name.clone());
                }
                let before = self.open_tools.len();
                self.open_tools.retain(|t| !t.answered);
                self.tool_rounds += u64::from(self.open_tools.len() < before);
                self.activity = match self.open_tools.last() {
                    Some(t) => Activity::Tool(t.name.to_string()),
                    None => Activity::Requesting,
                };
            }
            None if kind == LineKind::ItemStarted => {
                let item = view.item().and_then(|i| i.member("type"));
                self.activity = match item.and_then(|t| t.as_str()).as_deref() {
                    Some("reasoning") => Activity::Thinking,
                    _ => Activity::Writing,
                };
            }
            None => {}
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify;
    use serde_json::json;

    fn feed(t: &mut Tally, line: &str) {
        let v = LineView::parse_str(line).unwrap();
        let c = classify(&v);
        t.observe(Some(&v), c);
    }

    #[test]
    fn the_activity_follows_the_lines() {
        let lines = [
            (
                r#"{"type":"system","subtype":"init","session_id":"s1"}"#,
                "starting",
            ),
            (
                r#"{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"s1","parent_tool_use_id":null}"#,
                "writing",
            ),
            (
                r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash"}]},"session_id":"s1"}"#,
                "tool Bash",
            ),
            (
                r#"{"type":"stream_event","event":{"type":"ping"},"session_id":"s1"}"#,
                "tool Bash",
            ),
            (
                r#"{"type":"system","subtype":"api_retry","session_id":"s1"}"#,
                "retrying the API",
            ),
            (
                r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool"}}"#,
                "waiting on a human",
            ),
            (
                r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1"}]}}"#,
                "requesting",
            ),
            (
                r#"{"type":"stream_event","event":{"type":"message_start"},"session_id":"s2"}"#,
                "writing",
            ),
            (
                r#"{"type":"system","subtype":"thinking_tokens","session_id":"s2"}"#,
                "thinking",
            ),
            (
                r#"{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"s2","parent_tool_use_id":"t9"}"#,
                "thinking",
            ),
            (
                r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"},"session_id":"s2"}"#,
                "thinking",
            ),
            (
                r#"{"type":"result","subtype":"success","num_turns":3,"session_id":"s2"}"#,
                "settled",
            ),
        ];
        let mut t = Tally::default();
        for (i, (l, want)) in lines.iter().enumerate() {
            feed(&mut t, l);
            assert_eq!(t.activity().to_string(), *want, "after line {i}");
        }
        // An unparseable line changes nothing.
        t.observe(None, crate::Class::UNPARSEABLE);
        assert_eq!(*t.activity(), Activity::Settled);
        assert_eq!(t.num_turns(None), 2);
        assert_eq!(t.tool_rounds(), 1);
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
                feed(&mut t, &l);
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
            feed(&mut t, &l);
        }
        assert_eq!(t.subagents.failures.len(), 1);
        assert!(t.subagents.failures[0].recovered);
        assert_eq!(t.subagents.unrecovered().count(), 0);
    }

    #[test]
    fn healthy_agents_and_other_tasks_are_no_failures() {
        let mut t = Tally::default();
        for l in recorded("a1_healthy_fg") {
            feed(&mut t, &l);
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
        feed(
            &mut t,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a1","name":"Agent"}]},"session_id":"s"}"#,
        );
        feed(
            &mut t,
            r#"{"type":"tool_progress","tool_use_id":"m1-heartbeat-0","tool_name":"mcp__db__query","parent_tool_use_id":"m1","elapsed_time_seconds":1860,"heartbeat":true,"session_id":"s"}"#,
        );
        let a = t.activity.clone();
        assert_eq!(a.to_string(), "tool mcp__db__query");
        assert_eq!(a.already(), std::time::Duration::from_secs(1860));
        // The subagent streams again: back to the tool that runs it.
        feed(
            &mut t,
            r#"{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"s","parent_tool_use_id":"a1"}"#,
        );
        assert_eq!(t.activity, Activity::Tool("Agent".into()));
        // A Bash heartbeat changes nothing.
        feed(
            &mut t,
            r#"{"type":"tool_progress","tool_name":"Bash","parent_tool_use_id":"b1","elapsed_time_seconds":30,"session_id":"s"}"#,
        );
        assert_eq!(t.activity, Activity::Tool("Agent".into()));
    }
}
