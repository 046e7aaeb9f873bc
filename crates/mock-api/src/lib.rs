//! A scripted mock of the Anthropic Messages API, for driving the real Claude Code
//! CLI offline.
//!
//! The server speaks just enough HTTP/1.1 on `127.0.0.1` for the CLI's fetch client:
//! `POST /v1/messages` answers with a server-sent-event stream (or a JSON message for
//! `stream: false`) scripted by a [`Scenario`]; `HEAD /api/hello`,
//! `/v1/messages/count_tokens` and `/v1/models` are answered harmlessly; everything
//! else is a 404. Every request is recorded ([`RecordedRequest`]).
//!
//! Beside it: a mock of OpenAI's Responses API for the OpenAI Codex CLI ([`responses`]), and
//! the harness that runs the real Codex and opencode CLIs against the two ([`other_clis`]).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use mock_api::{MockServer, Scenario, Turn};
//!
//! let scenario = Scenario::new("write then answer")
//!     .turn(Turn::new().text("Writing.").write("toolu_1", "hello.txt", "hi\n"))
//!     .turn(Turn::answer("Done."));
//! let server = MockServer::start(scenario).await?;
//! // ... run `claude` with ANTHROPIC_BASE_URL = server.base_url() ...
//! assert_eq!(server.main_request_count(), 2);
//! server.shutdown().await;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod harness;
mod http;
pub mod other_clis;
pub mod responses;
mod scenario;
mod server;
mod validate;

pub use scenario::agents;
pub use scenario::agents::{AgentScript, CutOffs};
pub use scenario::{
    Block, Matcher, RateLimitHeaders, Scenario, ScenarioOptions, Stall, StopReason, Turn,
    BASH_TOOL_ID, CRON_ARMED, CRON_DONE, CRON_ID, CRON_PROMPT, FINAL_TEXT, MCP_CALL_ID,
    MCP_FINAL_TEXT, MCP_SEARCH_ID, MONITOR_ARMED, MONITOR_EVENT, MONITOR_ID, MONITOR_TICK,
    WAKE_ARMED, WAKE_DONE, WAKE_ID, WAKE_PROMPT, WRITE_TOOL_ID,
};
pub use server::{BlockingMockServer, MockServer, RecordedRequest, RequestLog, RequestSummary};
pub use validate::{validate_messages, Invalid};
