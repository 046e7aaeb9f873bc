//! A borrowed, lenient view of one stream-json line.
//!
//! [`LineView::parse`] reads the handful of fields the policy needs from one stdout line of the
//! Claude Code CLI and skips everything else. It borrows from the input: a line without escaped
//! strings is read without a single allocation. Every field is read leniently: a field of an
//! unexpected JSON type reads as absent, an unknown `type` is still a view, and only a line that is
//! not a JSON object at all is an [`Unparseable`] error (which the classifier turns into a
//! keep-alive, never into a stop).

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::json_scan;

mod field;

use field::{unescape_key, FromFields};
pub use field::{Field, RawJson};

/// Declares a lenient wire struct: every field is an optional raw JSON value, so a field of an
/// unexpected type never fails the line; unknown fields are skipped; the last duplicate wins.
macro_rules! wire {
    ($name:ident { $($field:ident $(= $rename:literal)?),* $(,)? }) => {
        #[derive(Default)]
        struct $name<'a> {
            $( $field: Option<&'a str>, )*
            value: Option<&'a Value>,
        }

        impl<'a> $name<'a> {
            $(
                fn $field(&self) -> Option<Field<'a>> {
                    if let Some(v) = self.value {
                        return v.get(wire!(@key $field $(= $rename)?)).map(Field::Value);
                    }
                    self.$field.map(|t| Field::Raw(RawJson(t)))
                }
            )*

            fn set(&mut self, key: &str, value: &'a str) {
                match key {
                    $( wire!(@key $field $(= $rename)?) => self.$field = Some(value), )*
                    _ => {}
                }
            }
        }

        impl<'a> FromFields<'a> for $name<'a> {
            fn from_raw(raw: &'a str) -> Option<Self> {
                let mut out = $name::default();
                let is_object = json_scan::for_each_member(raw, |k, esc, v| {
                    if esc {
                        if let Some(k) = unescape_key(k) {
                            out.set(&k, v);
                        }
                    } else {
                        out.set(k, v);
                    }
                });
                is_object.then_some(out)
            }
            fn from_value(v: &'a Value) -> Self {
                $name { value: Some(v), ..Default::default() }
            }
        }
    };
    (@key $field:ident = $rename:literal) => { $rename };
    (@key $field:ident) => { stringify!($field) };
}

wire!(Top {
    ty = "type",
    subtype,
    session_id,
    parent_tool_use_id,
    event,
    message,
    stop_reason,
    is_error,
    terminal_reason,
    rate_limit_info,
    retry_delay_ms,
    state,
    request_id,
    request,
    response,
    abandoned_blocks,
    api_error,
    api_error_status,
    error,
    num_turns,
    total_cost_usd,
    tool_name,
    elapsed_time_seconds,
});

wire!(Block { ty = "type", id, name, tool_use_id, is_error });

/// A [`LineView`] being built from the members of a validated object, in order.
pub(crate) struct LineBuilder<'a> {
    top: Top<'a>,
}

impl<'a> LineBuilder<'a> {
    /// One top-level member (`key` as written between its quotes).
    pub(crate) fn member(&mut self, key: &str, escaped: bool, value: &'a str) {
        if escaped {
            if let Some(k) = unescape_key(key) {
                self.top.set(&k, value);
            }
        } else {
            self.top.set(key, value);
        }
    }

    /// The view of the object whose text is `whole` (for [`LineView::member`]).
    pub(crate) fn finish(self, whole: &'a str) -> LineView<'a> {
        LineView {
            top: self.top,
            whole: Field::Raw(RawJson(whole)),
        }
    }
}

/// A line that is not a JSON object (malformed, truncated, not UTF-8, or another JSON type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unparseable stream-json line: {reason}")]
pub struct Unparseable {
    /// What was wrong, for logs.
    pub reason: String,
}

/// A borrowed view of one stream-json line: the fields the policy reads, nothing else.
///
/// ```
/// use watchdog_core::LineView;
/// let line = br#"{"type":"stream_event","event":{"type":"ping"},"session_id":"s1"}"#;
/// let view = LineView::parse(line).unwrap();
/// assert_eq!(view.kind().as_deref(), Some("stream_event"));
/// assert_eq!(view.event_type().as_deref(), Some("ping"));
/// assert_eq!(view.session_id().as_deref(), Some("s1"));
/// ```
pub struct LineView<'a> {
    top: Top<'a>,
    /// The whole line, for [`LineView::member`] (fields the view does not keep).
    whole: Field<'a>,
}

impl fmt::Debug for LineView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineView")
            .field("type", &self.kind())
            .field("subtype", &self.subtype())
            .field("event_type", &self.event_type())
            .finish_non_exhaustive()
    }
}

impl<'a> LineView<'a> {
    /// Parse one stdout line (without its newline; a trailing `\r` and surrounding whitespace
    /// are fine). Fails only when the line is not a JSON object.
    pub fn parse(line: &'a [u8]) -> Result<Self, Unparseable> {
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'{') {
            return Err(Unparseable {
                reason: match first {
                    None => "empty line".into(),
                    Some(_) => "not a JSON object".into(),
                },
            });
        }
        let text = std::str::from_utf8(line).map_err(|e| Unparseable {
            reason: format!("not UTF-8: {e}"),
        })?;
        let mut top = Top::default();
        json_scan::members(text, |k, esc, v| {
            if esc {
                if let Some(k) = unescape_key(k) {
                    top.set(&k, v);
                }
            } else {
                top.set(k, v);
            }
        })
        .map_err(|e| Unparseable {
            reason: e.to_string(),
        })?;
        Ok(LineView {
            top,
            whole: Field::Raw(RawJson(text)),
        })
    }

    /// Start a view built member by member by a scan that validates them
    /// ([`LineBuilder::member`]).
    pub(crate) fn builder() -> LineBuilder<'a> {
        LineBuilder {
            top: Top::default(),
        }
    }

    /// A view of a JSON value that an enclosing line's scan already validated (a capture's
    /// `line` member): its members are skimmed, not checked again. `None` when the value is
    /// not an object.
    pub(crate) fn from_validated(text: &'a str) -> Option<Self> {
        Top::from_raw(text).map(|top| LineView {
            top,
            whole: Field::Raw(RawJson(text)),
        })
    }

    /// A view of a line that [`LineView::parse`] accepted before (e.g. a line the supervisor
    /// passed on with its class): its members are skimmed, not validated again, which costs
    /// a fraction of a parse. On any other input it never panics, but which fields it reads
    /// is unspecified. `None` when the line is not UTF-8 or not an object.
    ///
    /// ```
    /// use watchdog_core::LineView;
    /// let line = br#"{"type":"system","subtype":"init","session_id":"s1"}"#;
    /// assert!(LineView::parse(line).is_ok());
    /// let view = LineView::parse_validated(line).unwrap();
    /// assert_eq!(view.subtype().as_deref(), Some("init"));
    /// ```
    pub fn parse_validated(line: &'a [u8]) -> Option<Self> {
        let text = std::str::from_utf8(line).ok()?;
        Self::from_validated(text.trim_ascii())
    }

    /// Parse one line given as text.
    pub fn parse_str(line: &'a str) -> Result<Self, Unparseable> {
        Self::parse(line.as_bytes())
    }

    /// A view of an already parsed message. Fails only when `value` is not an object.
    pub fn from_value(value: &'a Value) -> Result<Self, Unparseable> {
        if !value.is_object() {
            return Err(Unparseable {
                reason: "not a JSON object".into(),
            });
        }
        Ok(LineView {
            top: Top::from_value(value),
            whole: Field::Value(value),
        })
    }

    fn s(f: Option<Field<'a>>) -> Option<Cow<'a, str>> {
        f.and_then(|f| f.as_str())
    }

    /// `type`, e.g. `assistant`, `stream_event`, `result`, or any unknown type.
    pub fn kind(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.ty())
    }
    /// `subtype` (on `system` and `result` lines).
    pub fn subtype(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.subtype())
    }
    /// `session_id`.
    pub fn session_id(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.session_id())
    }
    /// `parent_tool_use_id`; `None` when absent or `null` (a top-level line).
    pub fn parent_tool_use_id(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.parent_tool_use_id())
    }
    /// `event.type` of a `stream_event` line.
    pub fn event_type(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.event()?.member("type"))
    }
    /// Whether the line carries `abandoned_blocks` (the CLI closing a stream its own stall
    /// watchdog gave up on).
    pub fn has_abandoned_blocks(&self) -> bool {
        self.top.abandoned_blocks().is_some_and(|f| !f.is_null())
    }
    /// `stop_reason`: the top-level one (on `result`), else `message.stop_reason`.
    pub fn stop_reason(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.stop_reason())
            .or_else(|| Self::s(self.top.message()?.member("stop_reason")))
    }
    /// `is_error`.
    pub fn is_error(&self) -> Option<bool> {
        self.top.is_error().and_then(|f| f.as_bool())
    }
    /// `terminal_reason` (on `result`).
    pub fn terminal_reason(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.terminal_reason())
    }
    /// `api_error` (on `result` and synthetic `assistant` lines), e.g. `max_output_tokens`.
    pub fn api_error(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.api_error())
    }
    /// `api_error_status` (on `result`), e.g. 429.
    pub fn api_error_status(&self) -> Option<u16> {
        let n = self.top.api_error_status()?.as_f64()?;
        (n.is_finite() && (0.0..=999.0).contains(&n)).then_some(n as u16)
    }
    /// `error` when it is a string (`max_output_tokens` on an assistant line, `rate_limit` on
    /// an `api_retry`).
    pub fn error(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.error())
    }
    /// `rate_limit_info` of a `rate_limit_event`, as a borrowed field.
    pub fn rate_limit_info(&self) -> Option<Field<'a>> {
        self.top.rate_limit_info().filter(|f| !f.is_null())
    }
    /// `retry_delay_ms` of a `system/api_retry` line, when it is a finite, non-negative number.
    pub fn retry_delay_ms(&self) -> Option<f64> {
        let n = self.top.retry_delay_ms()?.as_f64()?;
        (n.is_finite() && n >= 0.0).then_some(n)
    }
    /// `state` of a `system/session_state_changed` line.
    pub fn state(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.state())
    }
    /// `num_turns` (on `result`).
    pub fn num_turns(&self) -> Option<u64> {
        let n = self.top.num_turns()?.as_f64()?;
        (n.is_finite() && n >= 0.0).then_some(n as u64)
    }
    /// `total_cost_usd` (on `result`).
    pub fn total_cost_usd(&self) -> Option<f64> {
        self.top
            .total_cost_usd()?
            .as_f64()
            .filter(|n| n.is_finite())
    }
    /// `tool_name` (on `tool_progress`).
    pub fn tool_name(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.tool_name())
    }
    /// `elapsed_time_seconds` of a `tool_progress` heartbeat, when it is a finite,
    /// non-negative number.
    pub fn elapsed_time_seconds(&self) -> Option<f64> {
        let n = self.top.elapsed_time_seconds()?.as_f64()?;
        (n.is_finite() && n >= 0.0).then_some(n)
    }
    /// Any top-level member by key, including those the view does not keep: scans the line's
    /// text up to the first member with that key (for rare lines; the kept fields have their
    /// own accessors).
    pub fn member(&self, key: &str) -> Option<Field<'a>> {
        self.whole.member(key)
    }
    /// `task_id` of a `system/task_*` line (a subagent's agent id).
    pub fn task_id(&self) -> Option<Cow<'a, str>> {
        Self::s(self.member("task_id"))
    }
    /// `run_id` of a `system/task_*` line: one run of a task (a continuation is a new run).
    pub fn run_id(&self) -> Option<Cow<'a, str>> {
        Self::s(self.member("run_id"))
    }
    /// `subagent_type` of a `system/task_started` line.
    pub fn subagent_type(&self) -> Option<Cow<'a, str>> {
        Self::s(self.member("subagent_type"))
    }
    /// A task's status: `patch.status` of `system/task_updated`, else `status` (on
    /// `system/task_notification`), e.g. `failed`, `completed`.
    pub fn task_status(&self) -> Option<Cow<'a, str>> {
        Self::s(self.member("patch").and_then(|p| p.member("status")))
            .or_else(|| Self::s(self.member("status")))
    }
    /// A task's error: `patch.error` of `system/task_updated`.
    pub fn task_error(&self) -> Option<Cow<'a, str>> {
        Self::s(self.member("patch")?.member("error"))
    }
    /// `request_id` of a `control_request`, or `response.request_id` of a `control_response`.
    pub fn request_id(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.request_id())
            .or_else(|| Self::s(self.top.response()?.member("request_id")))
    }
    /// `request.subtype` of a `control_request`, e.g. `can_use_tool`, `interrupt`.
    pub fn request_subtype(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.request()?.member("subtype"))
    }
    /// `request.tool_name` of a `control_request` (a `can_use_tool` request).
    pub fn request_tool_name(&self) -> Option<Cow<'a, str>> {
        Self::s(self.top.request()?.member("tool_name"))
    }

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
    fn reads_the_fields_of_a_result_whose_type_is_not_first() {
        let line = br#"{"stop_reason":"tool_use","session_id":"abc","type":"result","subtype":"success","is_error":false,"terminal_reason":"completed","num_turns":3}"#;
        let v = LineView::parse(line).unwrap();
        assert_eq!(v.kind().as_deref(), Some("result"));
        assert_eq!(v.subtype().as_deref(), Some("success"));
        assert_eq!(v.stop_reason().as_deref(), Some("tool_use"));
        assert_eq!(v.is_error(), Some(false));
        assert_eq!(v.terminal_reason().as_deref(), Some("completed"));
        assert_eq!(v.num_turns(), Some(3));
    }

    #[test]
    fn escaped_strings_are_unescaped() {
        let line = br#"{"type":"as\u0073istant","session_id":"a\"b"}"#;
        let v = LineView::parse(line).unwrap();
        assert_eq!(v.kind().as_deref(), Some("assistant"));
        assert_eq!(v.session_id().as_deref(), Some("a\"b"));
    }

    #[test]
    fn a_field_of_the_wrong_type_reads_as_absent_not_as_an_error() {
        let line = br#"{"type":"result","subtype":7,"is_error":"yes","event":"x","message":[1]}"#;
        let v = LineView::parse(line).unwrap();
        assert_eq!(v.kind().as_deref(), Some("result"));
        assert_eq!(v.subtype(), None);
        assert_eq!(v.is_error(), None);
        assert_eq!(v.event_type(), None);
        assert_eq!(v.tool_uses().count(), 0);
    }

    #[test]
    fn malformed_input_is_unparseable() {
        for bad in [
            &b""[..],
            b"   ",
            b"[1,2]",
            b"\"str\"",
            b"{\"type\":",
            b"{\"type\":\"a\"} trailing",
            b"{\"type\":\"\xff\xfe\"}",
            b"not json",
        ] {
            assert!(
                LineView::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

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
    fn control_request_and_response_ids() {
        let req = br#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Write"}}"#;
        let resp = br#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{}}}"#;
        let q = LineView::parse(req).unwrap();
        assert_eq!(q.request_id().as_deref(), Some("r1"));
        assert_eq!(q.request_subtype().as_deref(), Some("can_use_tool"));
        assert_eq!(q.request_tool_name().as_deref(), Some("Write"));
        assert_eq!(
            LineView::parse(resp).unwrap().request_id().as_deref(),
            Some("r1")
        );
    }

    #[test]
    fn user_content_as_plain_string_has_no_blocks() {
        let u = br#"{"type":"user","message":{"role":"user","content":"Say hello."}}"#;
        assert_eq!(LineView::parse(u).unwrap().tool_results().count(), 0);
    }
}
