//! What the Responses-API mock answers: a [`ResponsesScenario`] of [`ResponseTurn`]s.

use std::time::Duration;

use serde_json::{json, Value};

use crate::scenario::Stall;

/// One output item of a response.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    /// An assistant message, its text streamed as a few `response.output_text.delta`s.
    Text(String),
    /// A function call (a tool call): `call_id`, the function's name, its arguments.
    Call {
        call_id: String,
        name: String,
        arguments: Value,
    },
}

/// How a turn stalls after its first item began (mid-answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StallSpec {
    pub(crate) stall: Stall,
    /// SSE comments (`: keep-alive`) while stalled, this often.
    pub(crate) keep_alive: Option<Duration>,
}

/// The answer to one `POST /v1/responses`: output items streamed over SSE, or an HTTP error,
/// or a stall mid-answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseTurn {
    pub(crate) items: Vec<Item>,
    pub(crate) stall: Option<StallSpec>,
    pub(crate) error: Option<(u16, String)>,
}

impl Default for ResponseTurn {
    fn default() -> Self {
        ResponseTurn::new()
    }
}

impl ResponseTurn {
    /// A turn with no items yet.
    pub fn new() -> Self {
        ResponseTurn {
            items: Vec::new(),
            stall: None,
            error: None,
        }
    }

    /// A turn that answers `text` and ends.
    pub fn answer(text: impl Into<String>) -> Self {
        ResponseTurn::new().text(text)
    }

    /// Add an assistant message.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.items.push(Item::Text(text.into()));
        self
    }

    /// Add a call of Codex's `exec_command` tool running `cmd` in a shell. Codex 0.169 waits
    /// at most 30 s for a command before it yields it (`yield_time_ms`, asked for here), so a
    /// command's item stays open that long.
    pub fn command(self, call_id: impl Into<String>, cmd: impl Into<String>) -> Self {
        let cmd: String = cmd.into();
        self.call(
            call_id,
            "exec_command",
            json!({"cmd": cmd, "login": false, "yield_time_ms": 30_000}),
        )
    }

    /// Add a function call of `name` with `arguments`.
    pub fn call(
        mut self,
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.items.push(Item::Call {
            call_id: call_id.into(),
            name: name.into(),
            arguments,
        });
        self
    }

    /// Stall after the first item began (the text of an answer half written) for `stall`.
    pub fn stall(mut self, stall: Stall) -> Self {
        self.stall = Some(StallSpec {
            stall,
            keep_alive: self.stall.and_then(|s| s.keep_alive),
        });
        self
    }

    /// While stalled, send an SSE comment (`: keep-alive`) this often: bytes on the wire,
    /// nothing for the client to print.
    pub fn keep_alive_every(mut self, every: Duration) -> Self {
        let stall = self.stall.map_or(Stall::Forever, |s| s.stall);
        self.stall = Some(StallSpec {
            stall,
            keep_alive: Some(every),
        });
        self
    }

    /// Answer with HTTP `status` and an API error body carrying `message`.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        ResponseTurn {
            error: Some((status, message.into())),
            ..ResponseTurn::new()
        }
    }
}

/// A scripted Responses API: the turn for each request, by position or by the tool call
/// whose output the request carries.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesScenario {
    pub(crate) name: String,
    pub(crate) turns: Vec<ResponseTurn>,
    pub(crate) after: Vec<(String, ResponseTurn)>,
}

impl ResponsesScenario {
    /// An empty scenario (every request gets [`crate::FINAL_TEXT`]).
    pub fn new(name: impl Into<String>) -> Self {
        ResponsesScenario {
            name: name.into(),
            turns: Vec::new(),
            after: Vec::new(),
        }
    }

    /// The next turn by position: request `i` gets turn `i`, the last one repeats (a
    /// client's retries of a failed request get the same answer).
    pub fn turn(mut self, turn: ResponseTurn) -> Self {
        self.turns.push(turn);
        self
    }

    /// The turn for a request that carries the output of tool call `call_id` (its
    /// `function_call_output`), wherever it comes.
    pub fn after_output(mut self, call_id: impl Into<String>, turn: ResponseTurn) -> Self {
        self.after.push((call_id.into(), turn));
        self
    }

    /// The scenario's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The turn for request `index` (requests seen before it) whose last input item is the
    /// output of `last_output` (if any).
    pub(crate) fn select(&self, index: usize, last_output: Option<&str>) -> ResponseTurn {
        if let Some((_, t)) = last_output.and_then(|id| self.after.iter().find(|(c, _)| c == id)) {
            return t.clone();
        }
        match self.turns.get(index).or(self.turns.last()) {
            Some(t) => t.clone(),
            None => ResponseTurn::answer(crate::FINAL_TEXT),
        }
    }
}
