//! The fields of a [`LineView`], one accessor each: the kept ones read from the view, the
//! rare ones found in the line's text.

use std::borrow::Cow;

use super::{Field, LineView};

impl<'a> LineView<'a> {
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
    /// `item` of an OpenAI Codex `item.*` line (the item that started, changed or completed).
    pub fn item(&self) -> Option<Field<'a>> {
        self.top.item()
    }
    /// `part` of an opencode line (the message part it reports).
    pub fn part(&self) -> Option<Field<'a>> {
        self.top.part()
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
}
