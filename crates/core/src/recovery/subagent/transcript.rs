//! How a subagent ended, read from its transcript ([`SubagentEnd::from_transcript`]).

use serde_json::Value;

/// How a subagent's transcript ends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubagentEnd {
    /// A final answer (`end_turn` or `stop_sequence`, no tool call).
    Completed,
    /// Claude Code gave up on the output limit: the synthetic entry with
    /// `apiError: "max_output_tokens"`.
    OutputLimit,
    /// Another synthetic API error entry (`isApiErrorMessage`), with its error.
    ApiError(String),
    /// The model refused (`stop_reason: "refusal"`).
    Refusal,
    /// The user interrupted it.
    Aborted,
    /// Not ended: a tool call or request is in flight, or a message arrived for it.
    Running,
    /// Nothing we recognise (no message entry, an unknown stop reason): never recovered.
    Unknown,
}

impl SubagentEnd {
    /// Snake-case name: `completed`, `output_limit`, `api_error`, `refusal`, `aborted`,
    /// `running`, `unknown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SubagentEnd::Completed => "completed",
            SubagentEnd::OutputLimit => "output_limit",
            SubagentEnd::ApiError(_) => "api_error",
            SubagentEnd::Refusal => "refusal",
            SubagentEnd::Aborted => "aborted",
            SubagentEnd::Running => "running",
            SubagentEnd::Unknown => "unknown",
        }
    }

    /// Whether this end is a failure that counts as the second one after a continuation.
    pub fn is_failure(&self) -> bool {
        matches!(self, SubagentEnd::OutputLimit | SubagentEnd::ApiError(_))
    }

    /// How the transcript whose JSON Lines are `lines` (in file order; unparseable lines are
    /// skipped) ends, from its last `assistant` or `user` entry. Only lines holding a `"user"`
    /// or `"assistant"` token are parsed, so big attachment lines cost a substring search.
    pub fn from_transcript<'a>(lines: impl IntoIterator<Item = &'a str>) -> TranscriptEnd {
        let mut last: Option<Value> = None;
        let mut agent_type = None;
        let mut failures = 0usize;
        for line in lines {
            let line = line.trim();
            if line.is_empty() || !(line.contains("\"assistant\"") || line.contains("\"user\"")) {
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if !matches!(
                v.get("type").and_then(Value::as_str),
                Some("assistant" | "user")
            ) {
                continue;
            }
            if let Some(t) = v.get("attributionAgent").and_then(Value::as_str) {
                agent_type = Some(t.to_owned());
            }
            if v.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
                failures += 1;
            }
            last = Some(v);
        }
        let Some(entry) = last else {
            return TranscriptEnd {
                end: SubagentEnd::Unknown,
                failure_id: None,
                error: None,
                agent_type,
                failures,
            };
        };
        let (end, error) = classify_entry(&entry);
        TranscriptEnd {
            failure_id: end.is_failure().then(|| failure_ordinal(failures)),
            end,
            error,
            agent_type,
            failures,
        }
    }
}

fn failure_ordinal(n: usize) -> String {
    format!("failure-{n}")
}

impl TranscriptEnd {
    /// Use `n`, the synthetic error entries of the **whole** transcript, when only its tail was
    /// given to [`SubagentEnd::from_transcript`]: the failure id then counts every failure.
    pub fn with_failure_count(mut self, n: usize) -> Self {
        self.failures = self.failures.max(n);
        if self.end.is_failure() {
            self.failure_id = Some(failure_ordinal(self.failures));
        }
        self
    }

    /// Combine the transcript with a failure Claude Code already reported for this agent: the
    /// `error` of a `PostToolUseFailure` hook, which runs before the CLI has written the
    /// agent's last entries (measured: often the transcript still ends in the prompt or a
    /// cut-off reply). A transcript that has not ended yet (running or unknown), reported as
    /// `max_output_tokens`, ended on the output limit; its failure is the next one
    /// (`failures + 1`), the same id the synthetic entry gets once written.
    pub fn with_reported_error(mut self, reported: &str) -> Self {
        if matches!(self.end, SubagentEnd::Running | SubagentEnd::Unknown)
            && reported.contains("max_output_tokens")
        {
            self.end = SubagentEnd::OutputLimit;
            self.failure_id = Some(failure_ordinal(self.failures + 1));
            self.error = Some(reported.chars().take(500).collect());
        }
        self
    }
}

fn message_text(entry: &Value) -> Option<String> {
    let content = entry.pointer("/message/content")?;
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

fn classify_entry(entry: &Value) -> (SubagentEnd, Option<String>) {
    let text = message_text(entry).map(|t| t.chars().take(500).collect::<String>());
    let is_api_error = entry
        .get("isApiErrorMessage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if entry.get("type").and_then(Value::as_str) == Some("user") {
        if text
            .as_deref()
            .is_some_and(|t| t.starts_with("[Request interrupted"))
        {
            return (SubagentEnd::Aborted, text);
        }
        return (SubagentEnd::Running, None);
    }
    if is_api_error {
        let kind = entry
            .get("apiError")
            .or_else(|| entry.get("error"))
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        return if kind == "max_output_tokens" {
            (SubagentEnd::OutputLimit, text)
        } else {
            (SubagentEnd::ApiError(kind.to_owned()), text)
        };
    }
    let has_tool_use = entry
        .pointer("/message/content")
        .and_then(Value::as_array)
        .is_some_and(|b| {
            b.iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        });
    let stop = entry
        .pointer("/message/stop_reason")
        .and_then(Value::as_str);
    let end = match stop {
        _ if has_tool_use => SubagentEnd::Running,
        Some("end_turn" | "stop_sequence") => SubagentEnd::Completed,
        Some("refusal") => SubagentEnd::Refusal,
        Some("max_tokens" | "tool_use" | "pause_turn") | None => SubagentEnd::Running,
        Some(_) => SubagentEnd::Unknown,
    };
    (end, None)
}

/// What [`SubagentEnd::from_transcript`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptEnd {
    /// How it ends.
    pub end: SubagentEnd,
    /// Tells one failure from a later one: `failure-<n>` for the agent's n-th failure (the
    /// synthetic error entries counted), when it ends in one.
    pub failure_id: Option<String>,
    /// The error text of a failure entry (at most 500 characters).
    pub error: Option<String>,
    /// The agent type (`attributionAgent` of its assistant entries), if seen.
    pub agent_type: Option<String>,
    /// Synthetic error entries (`isApiErrorMessage`) seen: the agent's failures so far.
    pub failures: usize,
}
