//! One turn of a scenario: its content blocks, stalls and stop reason.

use std::time::Duration;

use serde_json::{json, Value};

use super::RateLimitHeaders;

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
