//! Many sessions on one timer: the deterministic deadline engine (quinn-proto style).
//!
//! Time is a parameter: every call takes `now`. The caller sleeps until [`Registry::poll_timeout`],
//! calls [`Registry::handle_timeout`], then drains [`Registry::poll_event`].

use std::time::Instant;

use crate::classify::Class;
use crate::config::{Limits, SessionConfig};
use crate::event::{Event, Kill, Outcome, SessionId};
use crate::view::LineView;

/// The registry of supervised sessions.
#[derive(Debug)]
pub struct Registry {
    limits: Limits,
}

impl Registry {
    /// A registry whose sessions use `limits` unless their [`SessionConfig`] overrides them.
    pub fn new(limits: Limits) -> Self {
        Registry { limits }
    }

    /// The registry-wide limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Start supervising one session at `now`.
    pub fn register(&mut self, now: Instant, config: SessionConfig) -> SessionId {
        let _ = (now, config);
        todo!()
    }

    /// Feed one parsed stdout line of session `id`; returns its class. Unknown ids are ignored
    /// (the class is still returned).
    pub fn observe(&mut self, now: Instant, id: SessionId, line: &LineView<'_>) -> Class {
        let _ = (now, id, line);
        todo!()
    }

    /// Parse and feed one raw stdout line; an unparseable line counts as a keep-alive.
    pub fn observe_line(&mut self, now: Instant, id: SessionId, line: &[u8]) -> Class {
        let _ = (now, id, line);
        todo!()
    }

    /// Feed one line the host wrote to the child's stdin (a `control_response` that answers a
    /// permission request ends that human wait).
    pub fn observe_input(&mut self, now: Instant, id: SessionId, line: &LineView<'_>) {
        let _ = (now, id, line);
        todo!()
    }

    /// A tool boundary reported by a hook: `Some(name)` for a completed tool (a write tool ends
    /// the pre-write extension), `None` for a boundary that is not a completed call.
    pub fn tool_boundary(&mut self, now: Instant, id: SessionId, tool: Option<&str>) {
        let _ = (now, id, tool);
        todo!()
    }

    /// Settle the session by hand, as a `result` would.
    pub fn settle(&mut self, now: Instant, id: SessionId) {
        let _ = (now, id);
        todo!()
    }

    /// The stream ended (or the process exited): stop all deadlines and emit
    /// [`Event::Ended`] with the outcome, which is also returned. Idempotent.
    pub fn end(&mut self, now: Instant, id: SessionId) -> Option<Outcome> {
        let _ = (now, id);
        todo!()
    }

    /// Forget the session. Its kill, if any, stays readable through the returned value.
    pub fn unregister(&mut self, id: SessionId) -> Option<Kill> {
        let _ = id;
        todo!()
    }

    /// The current rate-limit utilization (highest active window), or `None` when unknown.
    pub fn set_utilization(&mut self, now: Instant, utilization: Option<f64>) {
        let _ = (now, utilization);
        todo!()
    }

    /// The earliest instant at which [`Registry::handle_timeout`] has work, if any.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        todo!()
    }

    /// Process every deadline due at or before `now`. Cheap when nothing is due.
    pub fn handle_timeout(&mut self, now: Instant) {
        let _ = now;
        todo!()
    }

    /// The next pending event.
    pub fn poll_event(&mut self) -> Option<Event> {
        todo!()
    }

    /// The kill of a session, if it was killed.
    pub fn kill(&self, id: SessionId) -> Option<&Kill> {
        let _ = id;
        todo!()
    }

    /// Number of registered sessions.
    pub fn len(&self) -> usize {
        todo!()
    }

    /// Whether no session is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
