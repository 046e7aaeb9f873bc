//! How a subagent ended, read from its transcript ([`SubagentEnd::from_transcript`]) by the
//! one transcript reader ([`crate::transcript::Entry`]).

use crate::transcript::Entry;

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
        let mut last: Option<(SubagentEnd, Option<String>)> = None;
        let mut agent_type = None;
        let mut failures = 0usize;
        for line in lines {
            let line = line.trim();
            if line.is_empty() || !(line.contains("\"assistant\"") || line.contains("\"user\"")) {
                continue;
            }
            let Some(entry) = Entry::parse(line.as_bytes()) else {
                continue;
            };
            if !matches!(entry.kind().as_deref(), Some("assistant" | "user")) {
                continue;
            }
            if let Some(t) = entry.attribution_agent() {
                agent_type = Some(t.into_owned());
            }
            if entry.is_api_error() {
                failures += 1;
            }
            last = Some(classify_entry(&entry));
        }
        let Some((end, error)) = last else {
            return TranscriptEnd {
                end: SubagentEnd::Unknown,
                failure_id: None,
                error: None,
                agent_type,
                failures,
            };
        };
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

fn classify_entry(entry: &Entry<'_>) -> (SubagentEnd, Option<String>) {
    let text = || {
        entry
            .text()
            .map(|t| t.chars().take(500).collect::<String>())
    };
    if entry.kind().as_deref() == Some("user") {
        if entry.is_interrupt() {
            return (SubagentEnd::Aborted, text());
        }
        return (SubagentEnd::Running, None);
    }
    if entry.is_api_error() {
        let kind = entry.api_error().unwrap_or("unknown".into());
        return if kind == "max_output_tokens" {
            (SubagentEnd::OutputLimit, text())
        } else {
            (SubagentEnd::ApiError(kind.into_owned()), text())
        };
    }
    let has_tool_use = entry.tool_uses().next().is_some();
    let end = match entry.stop_reason().as_deref() {
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
