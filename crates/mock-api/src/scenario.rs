//! Scenarios: what the mock answers to each `POST /v1/messages`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::agents::AgentScript;
use crate::RequestSummary;

/// Why a streamed message stopped (`message_delta.delta.stop_reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// `end_turn`: a final answer.
    EndTurn,
    /// `tool_use`: the CLI runs the tools and sends another request.
    ToolUse,
    /// `max_tokens`: the reply was cut off (the CLI auto-continues up to 3 times).
    MaxTokens,
    /// `stop_sequence`.
    StopSequence,
    /// Any other string.
    Other(String),
}

impl StopReason {
    /// The wire value.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Other(s) => s,
        }
    }
}

/// How long a stall lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stall {
    /// Stop writing for this long, then carry on.
    For(Duration),
    /// Never write again (until the client disconnects or the server shuts down).
    Forever,
}

impl Stall {
    /// `Some(d)` becomes [`Stall::For`], `None` [`Stall::Forever`].
    pub fn from_option(d: Option<Duration>) -> Self {
        d.map_or(Stall::Forever, Stall::For)
    }
}

/// One content block of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A text block, streamed as a few `text_delta`s.
    Text(String),
    /// A thinking block, streamed as `thinking_delta`s plus a `signature_delta`.
    Thinking(String),
    /// A tool call, its input streamed as `input_json_delta`s.
    ToolUse {
        /// `toolu_...` id; the CLI echoes it in the tool_result.
        id: String,
        /// Tool name, e.g. `Write` or `Bash`.
        name: String,
        /// Tool input. For `Write`, a relative `file_path` is resolved against the
        /// working directory the CLI reports in its request.
        input: Value,
    },
}

/// One step of a streamed turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    Block(Block),
    Stall(Stall),
}

/// The answer to one main request: a streamed message, or an HTTP error.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub(crate) status: u16,
    pub(crate) error: Option<(String, String)>,
    pub(crate) steps: Vec<Step>,
    pub(crate) headers_only_stall: Option<Stall>,
    pub(crate) stop_reason: Option<StopReason>,
    pub(crate) ping_every: Option<Duration>,
    pub(crate) frame_delay: Duration,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) rate_limit: Option<RateLimitHeaders>,
}

impl Default for Turn {
    fn default() -> Self {
        Turn::new()
    }
}

impl Turn {
    /// An empty streamed message (`200`, SSE). Add blocks with the builder methods.
    pub fn new() -> Self {
        Turn {
            status: 200,
            error: None,
            steps: Vec::new(),
            headers_only_stall: None,
            stop_reason: None,
            ping_every: None,
            frame_delay: Duration::ZERO,
            headers: Vec::new(),
            rate_limit: None,
        }
    }

    /// A final answer consisting of one text block.
    pub fn answer(text: impl Into<String>) -> Self {
        Turn::new().text(text)
    }

    /// An HTTP error answer: `status` with body
    /// `{"type":"error","error":{"type":error_type,"message":message}}`.
    pub fn error(status: u16, error_type: impl Into<String>, message: impl Into<String>) -> Self {
        Turn {
            status,
            error: Some((error_type.into(), message.into())),
            ..Turn::new()
        }
    }

    /// HTTP 429 `rate_limit_error` with a `retry-after` header (whole seconds, rounded up).
    pub fn rate_limited(retry_after: Duration) -> Self {
        Turn::error(429, "rate_limit_error", "mock: rate limited").retry_after(retry_after)
    }

    /// Adds a `retry-after` header (whole seconds, rounded up).
    pub fn retry_after(self, after: Duration) -> Self {
        let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        self.header("retry-after", secs.to_string())
    }

    /// Appends a text block.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.steps.push(Step::Block(Block::Text(text.into())));
        self
    }

    /// Appends a thinking block.
    pub fn thinking(mut self, text: impl Into<String>) -> Self {
        self.steps.push(Step::Block(Block::Thinking(text.into())));
        self
    }

    /// Appends a `tool_use` block.
    pub fn tool_use(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> Self {
        self.steps.push(Step::Block(Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        }));
        self
    }

    /// Appends a `Write` tool call. A relative `path` is made absolute with the
    /// working directory found in the request.
    pub fn write(
        self,
        id: impl Into<String>,
        path: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        let input = json!({"file_path": path.into(), "content": content.into()});
        self.tool_use(id, "Write", input)
    }

    /// Appends a foreground `Bash` tool call (timeout 600 s). Note that the CLI
    /// refuses a command that starts with a standalone `sleep`.
    pub fn bash(self, id: impl Into<String>, command: impl Into<String>) -> Self {
        let input = json!({
            "command": command.into(),
            "description": "Mock command",
            "timeout": 600_000,
        });
        self.tool_use(id, "Bash", input)
    }

    /// Stops writing for `d` at this point of the stream (inside the last block,
    /// before its `content_block_stop`), then carries on.
    pub fn stall(mut self, d: Duration) -> Self {
        self.steps.push(Step::Stall(Stall::For(d)));
        self
    }

    /// Stops writing forever at this point of the stream; the connection stays open.
    pub fn stall_forever(mut self) -> Self {
        self.steps.push(Step::Stall(Stall::Forever));
        self
    }

    /// Sends the status line and SSE headers, then nothing for this long
    /// (no `message_start`, no pings), then the rest of the turn.
    pub fn headers_only_stall(mut self, stall: Stall) -> Self {
        self.headers_only_stall = Some(stall);
        self
    }

    /// Sends an SSE `event: ping` every `every` while stalled.
    pub fn pings_every(mut self, every: Duration) -> Self {
        self.ping_every = Some(every);
        self
    }

    /// Waits this long before each SSE frame.
    pub fn frame_delay(mut self, d: Duration) -> Self {
        self.frame_delay = d;
        self
    }

    /// Sets the stop reason (default: `tool_use` if the turn calls a tool, else `end_turn`).
    pub fn stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    /// Shorthand for `stop_reason(StopReason::MaxTokens)`.
    pub fn max_tokens(self) -> Self {
        self.stop_reason(StopReason::MaxTokens)
    }

    /// Adds a response header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// Adds unified rate-limit headers to this response (overrides the scenario's).
    pub fn rate_limit(mut self, headers: RateLimitHeaders) -> Self {
        self.rate_limit = Some(headers);
        self
    }

    /// The content blocks, in order.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.steps.iter().filter_map(|s| match s {
            Step::Block(b) => Some(b),
            Step::Stall(_) => None,
        })
    }

    /// The HTTP status this turn answers with.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The effective stop reason.
    pub fn effective_stop_reason(&self) -> StopReason {
        if let Some(r) = &self.stop_reason {
            return r.clone();
        }
        if self.blocks().any(|b| matches!(b, Block::ToolUse { .. })) {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        }
    }

    /// The total time a non-streaming answer waits, or `None` if it hangs forever.
    pub(crate) fn non_streaming_delay(&self) -> Option<Duration> {
        let mut total = Duration::ZERO;
        let stalls = self
            .headers_only_stall
            .iter()
            .chain(self.steps.iter().filter_map(|s| match s {
                Step::Stall(st) => Some(st),
                Step::Block(_) => None,
            }));
        for stall in stalls {
            match stall {
                Stall::For(d) => total += *d,
                Stall::Forever => return None,
            }
        }
        Some(total)
    }
}

/// Picks a turn by looking at the request rather than at its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    /// The 0-based index of the main request (number of main requests seen before it).
    Index(usize),
    /// The last `user` message's text contains this string.
    LastUserTextContains(String),
    /// The last `user` message carries a `tool_result` for this `tool_use_id`.
    ToolResultFor(String),
    /// The last `user` message carries any `tool_result`.
    AnyToolResult,
    /// The request asked for `stream: false`.
    NonStreaming,
}

impl Matcher {
    fn matches(&self, index: usize, summary: &RequestSummary) -> bool {
        match self {
            Matcher::Index(i) => *i == index,
            Matcher::LastUserTextContains(s) => summary
                .last_user_text
                .as_deref()
                .is_some_and(|t| t.contains(s.as_str())),
            Matcher::ToolResultFor(id) => summary.tool_result_ids.iter().any(|t| t == id),
            Matcher::AnyToolResult => !summary.tool_result_ids.is_empty(),
            Matcher::NonStreaming => !summary.stream,
        }
    }
}

/// Unified rate-limit response headers (`anthropic-ratelimit-unified-*`).
///
/// The CLI only reads them when authenticated with a gateway token (see
/// [`crate::harness::gateway_jwt`]). Reset times are offsets from the moment the
/// response is written.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitHeaders {
    status: String,
    reset_in: Duration,
    windows: Vec<(String, f64, Duration, String)>,
    overage: Option<(String, String)>,
    representative_claim: Option<String>,
    extra: Vec<(String, String)>,
}

impl RateLimitHeaders {
    /// Headers with `anthropic-ratelimit-unified-status: status` and `-reset` `reset_in` from now.
    pub fn new(status: impl Into<String>, reset_in: Duration) -> Self {
        RateLimitHeaders {
            status: status.into(),
            reset_in,
            windows: Vec::new(),
            overage: None,
            representative_claim: None,
            extra: Vec::new(),
        }
    }

    /// Adds the `-5h-utilization`, `-5h-reset`, `-5h-status` headers.
    pub fn five_hour(
        self,
        utilization: f64,
        reset_in: Duration,
        status: impl Into<String>,
    ) -> Self {
        self.window("5h", utilization, reset_in, status)
    }

    /// Adds the `-7d-utilization`, `-7d-reset`, `-7d-status` headers.
    pub fn seven_day(
        self,
        utilization: f64,
        reset_in: Duration,
        status: impl Into<String>,
    ) -> Self {
        self.window("7d", utilization, reset_in, status)
    }

    /// Adds `-{name}-utilization`, `-{name}-reset`, `-{name}-status` headers for any window name.
    pub fn window(
        mut self,
        name: impl Into<String>,
        utilization: f64,
        reset_in: Duration,
        status: impl Into<String>,
    ) -> Self {
        self.windows
            .push((name.into(), utilization, reset_in, status.into()));
        self
    }

    /// Adds `-overage-status` and `-overage-disabled-reason`.
    pub fn overage(
        mut self,
        status: impl Into<String>,
        disabled_reason: impl Into<String>,
    ) -> Self {
        self.overage = Some((status.into(), disabled_reason.into()));
        self
    }

    /// Adds `-representative-claim` (e.g. `five_hour`).
    pub fn representative_claim(mut self, claim: impl Into<String>) -> Self {
        self.representative_claim = Some(claim.into());
        self
    }

    /// Adds any other header verbatim.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// 5-hour window at 95 % with the reset `reset_in` ahead (the CLI derives
    /// `allowed_warning` when the reset is at least ~1.4 h away), 7-day at 42 %.
    pub fn warning(reset_in: Duration) -> Self {
        RateLimitHeaders::new("allowed", reset_in)
            .five_hour(0.95, reset_in, "allowed_warning")
            .seven_day(0.42, Duration::from_secs(5 * 86_400), "allowed")
            .overage("rejected", "org_level_disabled")
            .representative_claim("five_hour")
    }

    /// 5-hour window exhausted (`rejected`), resetting `reset_in` from now.
    pub fn rejected(reset_in: Duration) -> Self {
        RateLimitHeaders::new("rejected", reset_in)
            .five_hour(1.0, reset_in, "rejected")
            .seven_day(0.42, Duration::from_secs(5 * 86_400), "allowed")
            .overage("rejected", "org_level_disabled")
            .representative_claim("five_hour")
    }

    /// The header list, with resets computed from `now_epoch_secs`.
    pub fn to_headers(&self, now_epoch_secs: u64) -> Vec<(String, String)> {
        const P: &str = "anthropic-ratelimit-unified";
        let at = |d: &Duration| (now_epoch_secs + d.as_secs()).to_string();
        let mut h = vec![
            (format!("{P}-status"), self.status.clone()),
            (format!("{P}-reset"), at(&self.reset_in)),
        ];
        for (name, util, reset, status) in &self.windows {
            h.push((format!("{P}-{name}-utilization"), util.to_string()));
            h.push((format!("{P}-{name}-reset"), at(reset)));
            h.push((format!("{P}-{name}-status"), status.clone()));
        }
        if let Some((status, reason)) = &self.overage {
            h.push((format!("{P}-overage-status"), status.clone()));
            h.push((format!("{P}-overage-disabled-reason"), reason.clone()));
        }
        if let Some(claim) = &self.representative_claim {
            h.push((format!("{P}-representative-claim"), claim.clone()));
        }
        h.extend(self.extra.iter().cloned());
        h
    }
}

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
