//! One in-process session: feed it what the SDK yields; it is cancelled when killed.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use watchdog_core::{Class, Event, Kill, LineView, Outcome, SessionId};

use super::cell::{Inner, InputMarker, Slot};
use crate::line::LineRef;

/// A session registered with a [`crate::Watchdog`]. Unregistered when dropped.
pub struct Session {
    id: SessionId,
    inner: Arc<Inner>,
    slot: Arc<Slot>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("killed", &self.slot.kill.get().map(|k| k.kind))
            .finish()
    }
}

impl Session {
    pub(crate) fn new(id: SessionId, inner: Arc<Inner>, slot: Arc<Slot>) -> Self {
        Session { id, inner, slot }
    }

    /// The core's id of this session.
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// Feed one stream-json line (an unparseable line counts as a keep-alive).
    pub fn observe_line(&self, line: &str) -> Class {
        self.observe_bytes(line.as_bytes())
    }

    /// Feed one stream-json line given as bytes.
    pub fn observe_bytes(&self, line: &[u8]) -> Class {
        let id = self.id;
        self.inner.op(|st, now| st.reg.observe_line(now, id, line))
    }

    /// Feed one message the SDK already parsed.
    pub fn observe_value(&self, value: &Value) -> Class {
        match LineView::from_value(value) {
            Ok(view) => {
                let id = self.id;
                self.inner.op(|st, now| st.reg.observe(now, id, &view))
            }
            // Not an object: the core's rule for unparseable lines applies.
            Err(_) => self.observe_bytes(value.to_string().as_bytes()),
        }
    }

    /// Feed a line or a message.
    pub fn observe(&self, line: LineRef<'_>) -> Class {
        match line {
            LineRef::Bytes(b) => self.observe_bytes(b),
            LineRef::Value(v) => self.observe_value(v),
        }
    }

    /// Report a line the host sent to the CLI (a `control_response` ends a human wait).
    pub fn observe_input(&self, line: &[u8]) {
        if let Ok(view) = LineView::parse(line) {
            let id = self.id;
            self.inner
                .op(|st, now| st.reg.observe_input(now, id, &view));
        }
    }

    /// The host's input to the CLI ended (for a session registered with
    /// [`SessionConfig::with_host_input`](watchdog_core::SessionConfig::with_host_input): it
    /// stops waiting for its host and lingers from now).
    pub fn input_closed(&self) {
        let id = self.id;
        self.inner.op(|st, now| st.reg.input_closed(now, id));
    }

    /// A tool boundary reported by a hook: `Some(name)` for a completed tool call.
    pub fn tool_boundary(&self, tool: Option<&str>) {
        let id = self.id;
        self.inner.op(|st, now| st.reg.tool_boundary(now, id, tool));
    }

    /// Settle the session by hand, as a `result` would.
    pub fn settle(&self) {
        let id = self.id;
        self.inner.op(|st, now| st.reg.settle(now, id));
    }

    /// The stream ended: stop the clocks and classify the outcome. Idempotent.
    pub fn end(&self) -> Option<Outcome> {
        let id = self.id;
        self.inner.op(|st, now| st.reg.end(now, id))
    }

    /// The kill, once the watchdog killed this session (readable after it ended).
    pub fn kill(&self) -> Option<Kill> {
        self.slot.kill.get().cloned()
    }

    /// Whether the watchdog killed this session.
    pub fn is_killed(&self) -> bool {
        self.slot.kill.get().is_some()
    }

    /// This session's events from now on (a bounded broadcast: a slow reader may lag).
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.slot.events.subscribe()
    }

    /// A token cancelled when the session is killed (cancelling it yourself affects only
    /// your token, not the session).
    pub fn token(&self) -> CancellationToken {
        self.slot.token.child_token()
    }

    /// Run `f` on the watchdog's registry with this session's id and the call's instant,
    /// under the watchdog's lock; the events it causes are then delivered as for any other
    /// call.
    pub(crate) fn with_registry<R>(
        &self,
        f: impl FnOnce(&mut watchdog_core::Registry, SessionId, std::time::Instant) -> R,
    ) -> R {
        let id = self.id;
        self.inner.op(|st, now| f(&mut st.reg, id, now))
    }

    /// How a reader tells the cell that it may hold unread lines of this session.
    pub(crate) fn input_marker(&self) -> InputMarker {
        InputMarker {
            inner: self.inner.clone(),
            id: self.id,
            pending: Default::default(),
        }
    }

    /// Wait until the session is killed; returns the kill.
    pub async fn killed(&self) -> Kill {
        self.slot.token.cancelled().await;
        // The kill is recorded before the token is cancelled.
        match self.kill() {
            Some(k) => k,
            None => std::future::pending().await,
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let id = self.id;
        self.inner.op(|st, _| {
            st.reg.unregister(id);
            st.slots.remove(&id);
        });
    }
}
