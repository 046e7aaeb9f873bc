//! Matchers: pick a turn by looking at the request rather than at its position.

use crate::RequestSummary;

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
    /// The conversation holds a `tool_result` for this `tool_use_id` (in any message: the CLI
    /// may add messages of its own after a tool's result).
    Answered(String),
    /// A message after the last `assistant` one contains this string anywhere (a turn the CLI
    /// started by itself: a wakeup's prompt, a monitor's event, a task notification).
    TailContains(String),
}

impl Matcher {
    pub(super) fn matches(&self, index: usize, summary: &RequestSummary) -> bool {
        match self {
            Matcher::Index(i) => *i == index,
            Matcher::LastUserTextContains(s) => summary
                .last_user_text
                .as_deref()
                .is_some_and(|t| t.contains(s.as_str())),
            Matcher::ToolResultFor(id) => summary.tool_result_ids.iter().any(|t| t == id),
            Matcher::AnyToolResult => !summary.tool_result_ids.is_empty(),
            Matcher::NonStreaming => !summary.stream,
            Matcher::Answered(id) => summary.answered_tool_ids.iter().any(|t| t == id),
            Matcher::TailContains(s) => summary
                .tail_text
                .as_deref()
                .is_some_and(|t| t.contains(s.as_str())),
        }
    }
}
