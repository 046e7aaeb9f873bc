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
        }
    }
}
