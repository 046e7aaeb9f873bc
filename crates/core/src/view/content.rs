//! The content blocks of an `assistant` or `user` line: tool calls and their results.

use std::borrow::Cow;

use super::{Block, Field, LineView};

impl<'a> LineView<'a> {
    /// Call `f` for every content block of `message.content` (assistant and user lines), in
    /// order. A content that is a plain string, or a block of an unexpected shape, is skipped.
    pub fn for_each_block(&self, mut f: impl FnMut(ContentBlock<'a>)) {
        if let Some(content) = self.top.message().and_then(|m| m.member("content")) {
            content.for_each_element(|item| {
                if let Some(b) = item.object::<Block<'a>>() {
                    f(ContentBlock::from_wire(&b));
                }
            });
        }
    }

    /// The `tool_use` blocks of an `assistant` line, as `(id, name)`.
    pub fn tool_uses(&self) -> impl Iterator<Item = (Cow<'a, str>, Cow<'a, str>)> {
        let mut out = Vec::new();
        self.for_each_block(|b| {
            if let ContentBlock::ToolUse { id, name } = b {
                out.push((id, name));
            }
        });
        out.into_iter()
    }

    /// The `tool_result` blocks of a `user` line, as `(tool_use_id, is_error)`.
    pub fn tool_results(&self) -> impl Iterator<Item = (Cow<'a, str>, bool)> {
        let mut out = Vec::new();
        self.for_each_block(|b| {
            if let ContentBlock::ToolResult {
                tool_use_id,
                is_error,
            } = b
            {
                out.push((tool_use_id, is_error));
            }
        });
        out.into_iter()
    }
}

/// One content block of an `assistant` or `user` message, as far as the policy cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentBlock<'a> {
    /// A `tool_use` block: the model called a tool.
    ToolUse {
        /// The tool_use id, e.g. `toolu_…`.
        id: Cow<'a, str>,
        /// The tool name, e.g. `Bash`.
        name: Cow<'a, str>,
    },
    /// A `tool_result` block: a tool call finished.
    ToolResult {
        /// The id of the `tool_use` it answers.
        tool_use_id: Cow<'a, str>,
        /// Whether the tool reported an error.
        is_error: bool,
    },
    /// Any other block (text, thinking, image, …).
    Other,
}

impl<'a> ContentBlock<'a> {
    fn from_wire(b: &Block<'a>) -> Self {
        let s = |f: Option<Field<'a>>| f.and_then(|f| f.as_str());
        match s(b.ty()).as_deref() {
            Some("tool_use") => match (s(b.id()), s(b.name())) {
                (Some(id), Some(name)) => ContentBlock::ToolUse { id, name },
                _ => ContentBlock::Other,
            },
            Some("tool_result") => match s(b.tool_use_id()) {
                Some(tool_use_id) => ContentBlock::ToolResult {
                    tool_use_id,
                    is_error: b.is_error().and_then(|f| f.as_bool()).unwrap_or(false),
                },
                None => ContentBlock::Other,
            },
            _ => ContentBlock::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_use_and_tool_result_blocks_are_read_from_raw_and_value() {
        let a = br#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Write","input":{}}],"stop_reason":null}}"#;
        let u = br#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"ok"},{"tool_use_id":"t2","type":"tool_result","is_error":true}]}}"#;
        for (a, u) in [
            (LineView::parse(a).unwrap(), LineView::parse(u).unwrap()),
            (
                LineView::from_value(Box::leak(Box::new(serde_json::from_slice(a).unwrap())))
                    .unwrap(),
                LineView::from_value(Box::leak(Box::new(serde_json::from_slice(u).unwrap())))
                    .unwrap(),
            ),
        ] {
            let uses: Vec<_> = a.tool_uses().collect();
            assert_eq!(uses, vec![("t1".into(), "Write".into())]);
            assert_eq!(a.stop_reason(), None);
            let results: Vec<_> = u.tool_results().collect();
            assert_eq!(results, vec![("t1".into(), false), ("t2".into(), true)]);
        }
    }

    #[test]
    fn user_content_as_plain_string_has_no_blocks() {
        let u = br#"{"type":"user","message":{"role":"user","content":"Say hello."}}"#;
        assert_eq!(LineView::parse(u).unwrap().tool_results().count(), 0);
    }
}
