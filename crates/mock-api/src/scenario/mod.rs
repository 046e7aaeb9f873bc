//! Scenarios: what the mock answers to each `POST /v1/messages`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::RequestSummary;
use agents::AgentScript;

pub mod agents;
mod matcher;
mod rate_limit;
mod turn;
mod waits;

pub use matcher::Matcher;
pub use rate_limit::RateLimitHeaders;
pub(crate) use turn::Step;
pub use turn::{Block, Stall, StopReason, Turn};
pub use waits::{
    CRON_ARMED, CRON_DONE, CRON_ID, CRON_PROMPT, MONITOR_ARMED, MONITOR_EVENT, MONITOR_ID,
    MONITOR_TICK, WAKE_ARMED, WAKE_DONE, WAKE_ID, WAKE_PROMPT,
};

/// Timing knobs of the named scenarios, so tests can keep them short.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioOptions {
    /// How long stalls last (`None`: forever). Default: forever.
    pub stall: Option<Duration>,
    /// SSE ping interval of `ping_only_stall`. Default: 2 s.
    pub ping_every: Duration,
    /// How far ahead rate-limit resets and `retry-after` point in
    /// `rate_limited_then_ok` and `rejected`. Default: 2 s.
    pub reset_in: Duration,
    /// How long the `long_tool` Bash command sleeps. Default: 35 s (heartbeats come at 30 s).
    pub long_tool: Duration,
}

impl Default for ScenarioOptions {
    fn default() -> Self {
        ScenarioOptions {
            stall: None,
            ping_every: Duration::from_secs(2),
            reset_in: Duration::from_secs(2),
            long_tool: Duration::from_secs(35),
        }
    }
}

/// Tool id of the `Write` call in the named scenarios.
pub const WRITE_TOOL_ID: &str = "toolu_mock_write_1";
/// Tool id of the `Bash` call in the named scenarios.
pub const BASH_TOOL_ID: &str = "toolu_mock_bash_1";
/// Final answer text of the named scenarios.
pub const FINAL_TEXT: &str = "Hello from the mock Messages API.";

/// Tool id of the `ToolSearch` call of [`Scenario::mcp_tool_call`].
pub const MCP_SEARCH_ID: &str = "toolu_mock_ts_mcp";
/// Tool id of the MCP tool call of [`Scenario::mcp_tool_call`].
pub const MCP_CALL_ID: &str = "toolu_mock_mcp_1";
/// Final answer text of [`Scenario::mcp_tool_call`].
pub const MCP_FINAL_TEXT: &str = "MCP-FINAL: the MCP call is over.";

/// A scripted conversation: which [`Turn`] answers each main request.
///
/// The turn for a request is the first [`Scenario::when`] rule that matches, else
/// `turns[n]` where `n` is the number of main requests seen before it; past the end
/// the last turn repeats. An empty scenario answers with [`FINAL_TEXT`].
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    name: String,
    turns: Vec<Turn>,
    rules: Vec<(Matcher, Turn)>,
    rate_limit: Option<RateLimitHeaders>,
    headers: Vec<(String, String)>,
    agents: Option<AgentScript>,
    validating: bool,
}

impl Scenario {
    /// Names accepted by [`Scenario::named`].
    pub const NAMES: &'static [&'static str] = &[
        "healthy",
        "tool_then_answer",
        "long_tool",
        "silent_after_tool_result",
        "ping_only_stall",
        "headers_only_stall",
        "max_tokens_always",
        "max_tokens_once",
        "rate_limit_warning",
        "rate_limited_then_ok",
        "rejected",
    ];

    /// An empty scenario.
    pub fn new(name: impl Into<String>) -> Self {
        Scenario {
            name: name.into(),
            turns: Vec::new(),
            rules: Vec::new(),
            rate_limit: None,
            headers: Vec::new(),
            agents: None,
            validating: false,
        }
    }

    /// The agent scenario: the parent delegates to subagents that are cut off as `script`
    /// says, and continues an agent with `SendMessage` when a message asks it to (see
    /// [`AgentScript`]). Rules and turns are not used for its requests.
    pub fn agents(name: impl Into<String>, script: AgentScript) -> Self {
        Scenario {
            agents: Some(script),
            ..Scenario::new(name)
        }
    }

    /// Appends the turn for the next main request.
    pub fn turn(mut self, turn: Turn) -> Self {
        self.turns.push(turn);
        self
    }

    /// Answers requests that match `matcher` with `turn` (rules are tried in order,
    /// before the positional turns).
    pub fn when(mut self, matcher: Matcher, turn: Turn) -> Self {
        self.rules.push((matcher, turn));
        self
    }

    /// Sends these unified rate-limit headers on every `/v1/messages` response
    /// (unless the turn has its own).
    pub fn rate_limit_headers(mut self, headers: RateLimitHeaders) -> Self {
        self.rate_limit = Some(headers);
        self
    }

    /// Sends this header on every `/v1/messages` response.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// Check each main request's conversation as the Messages API does
    /// ([`validate_messages`](crate::validate_messages)) and answer one that breaks a rule
    /// with the API's `400 invalid_request_error`, as a resumed session with a poisoned
    /// transcript would get.
    pub fn validating(mut self) -> Self {
        self.validating = true;
        self
    }

    /// Whether requests are validated ([`Scenario::validating`]).
    pub fn validates(&self) -> bool {
        self.validating
    }

    /// The scenario's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether any response carries unified rate-limit headers, which the CLI only
    /// reads under gateway auth ([`crate::harness::ClaudeRun::gateway_auth`]).
    pub fn uses_rate_limit_headers(&self) -> bool {
        self.rate_limit.is_some()
            || self
                .turns
                .iter()
                .chain(self.rules.iter().map(|(_, t)| t))
                .any(|t| t.rate_limit.is_some())
    }

    /// A named scenario with default timing (see [`Scenario::NAMES`]).
    pub fn named(name: &str) -> Option<Scenario> {
        Scenario::named_with(name, &ScenarioOptions::default())
    }

    /// A named scenario with the given timing:
    ///
    /// - `healthy`: one text answer.
    /// - `tool_then_answer`: a `Write hello.txt` call, then the answer.
    /// - `long_tool`: a foreground `Bash` running `o.long_tool` (heartbeats at 30 s), then the answer.
    /// - `silent_after_tool_result`: a `Write` call; the next reply stalls mid-block, no pings.
    /// - `ping_only_stall`: a partial text block, then only SSE pings every `o.ping_every`.
    /// - `headers_only_stall`: status line and SSE headers, then nothing.
    /// - `max_tokens_always` / `max_tokens_once`: every / the first reply cut off by `max_tokens`.
    /// - `rate_limit_warning`: the answer with 5-hour utilization 0.95 headers (gateway auth).
    /// - `rate_limited_then_ok`: a 429 with `retry-after: o.reset_in`, then the answer.
    /// - `rejected`: every reply a 429 with `unified-status: rejected` (gateway auth; set
    ///   `CLAUDE_CODE_MAX_RETRIES=0` or the CLI retries for ~3 minutes).
    ///
    /// Stalls last `o.stall` (forever by default).
    pub fn named_with(name: &str, o: &ScenarioOptions) -> Option<Scenario> {
        let stall = Stall::from_option(o.stall);
        let write = || {
            Turn::new().text("I will write a file.").write(
                WRITE_TOOL_ID,
                "hello.txt",
                "hello from mock\n",
            )
        };
        let cut = || Turn::answer("This reply is cut off in the mid").max_tokens();
        let s = Scenario::new(name);
        let s = match name {
            "healthy" => s.turn(Turn::answer(FINAL_TEXT)),
            "tool_then_answer" => s.turn(write()).turn(Turn::answer(FINAL_TEXT)),
            "long_tool" => {
                let cmd = format!(
                    "echo start; sleep {}; echo end",
                    o.long_tool.as_secs().max(1)
                );
                s.turn(
                    Turn::new()
                        .text("Now running a long command.")
                        .bash(BASH_TOOL_ID, cmd),
                )
                .turn(Turn::answer(FINAL_TEXT))
            }
            "silent_after_tool_result" => s
                .turn(write())
                .turn(with_stall(Turn::answer("Working on the next "), stall)),
            "ping_only_stall" => {
                s.turn(with_stall(Turn::answer("Thinking about "), stall).pings_every(o.ping_every))
            }
            "headers_only_stall" => s.turn(Turn::answer(FINAL_TEXT).headers_only_stall(stall)),
            "max_tokens_always" => s.turn(cut()),
            "max_tokens_once" => s.turn(cut()).turn(Turn::answer(FINAL_TEXT)),
            "rate_limit_warning" => s
                .turn(Turn::answer(FINAL_TEXT))
                .rate_limit_headers(RateLimitHeaders::warning(Duration::from_secs(4 * 3600))),
            "rate_limited_then_ok" => s
                .turn(
                    Turn::rate_limited(o.reset_in)
                        .rate_limit(RateLimitHeaders::new("allowed", o.reset_in)),
                )
                .turn(Turn::answer(FINAL_TEXT)),
            "rejected" => s.turn(
                Turn::error(429, "rate_limit_error", "mock: usage limit reached")
                    .retry_after(o.reset_in)
                    .rate_limit(RateLimitHeaders::rejected(o.reset_in)),
            ),
            _ => return None,
        };
        Some(s)
    }

    /// An MCP tool call, as in the recordings (`testdata/mcp`): the model loads the deferred
    /// tool `tool` (e.g. `mcp__probe__wait`) with `ToolSearch` (`select:<tool>`), calls it
    /// ([`MCP_CALL_ID`]), and answers [`MCP_FINAL_TEXT`] once the call's tool result comes
    /// (the server's answer, or Claude Code's own abort). Not one of [`Scenario::NAMES`]: it
    /// needs an MCP server (`--mcp-config`) beside the CLI.
    pub fn mcp_tool_call(tool: &str) -> Scenario {
        let search = json!({"query": format!("select:{tool}"), "max_results": 1});
        Scenario::new("mcp_tool_call")
            .when(
                Matcher::ToolResultFor(MCP_CALL_ID.into()),
                Turn::answer(MCP_FINAL_TEXT),
            )
            .when(
                Matcher::ToolResultFor(MCP_SEARCH_ID.into()),
                Turn::new()
                    .text("Calling the MCP tool.")
                    .tool_use(MCP_CALL_ID, tool, json!({})),
            )
            .turn(Turn::new().text("Loading the MCP tool.").tool_use(
                MCP_SEARCH_ID,
                "ToolSearch",
                search,
            ))
    }

    /// The turn answering a main request: `index` = main requests seen before it.
    pub fn select(&self, index: usize, summary: &RequestSummary) -> Turn {
        if let Some((_, t)) = self.rules.iter().find(|(m, _)| m.matches(index, summary)) {
            return t.clone();
        }
        match self.turns.get(index).or(self.turns.last()) {
            Some(t) => t.clone(),
            None => Turn::answer(FINAL_TEXT),
        }
    }

    /// The turn answering a main request whose whole body is `body`; `count(key)` is the
    /// server's per-key request counter (used by the agent scenario).
    pub(crate) fn select_request(
        &self,
        index: usize,
        summary: &RequestSummary,
        body: &Value,
        count: &mut dyn FnMut(String) -> usize,
    ) -> Turn {
        match &self.agents {
            Some(script) => script.turn(summary, body, count),
            None => self.select(index, summary),
        }
    }

    /// The response headers of `turn` beyond the framing ones.
    pub(crate) fn response_headers(
        &self,
        turn: &Turn,
        now_epoch_secs: u64,
    ) -> Vec<(String, String)> {
        let mut h = self.headers.clone();
        if let Some(rl) = turn.rate_limit.as_ref().or(self.rate_limit.as_ref()) {
            h.extend(rl.to_headers(now_epoch_secs));
        }
        h.extend(turn.headers.iter().cloned());
        h
    }
}

fn with_stall(turn: Turn, stall: Stall) -> Turn {
    match stall {
        Stall::For(d) => turn.stall(d),
        Stall::Forever => turn.stall_forever(),
    }
}
