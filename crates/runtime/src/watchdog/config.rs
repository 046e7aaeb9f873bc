//! What a [`Watchdog`](super::Watchdog) is configured with: the default limits and the
//! callbacks, and the error a panicking callback is reported as.

use std::sync::Arc;
use std::time::Duration;

use watchdog_core::{ExtendReason, Kill, Limits, SessionId, StallClock};

type KillFn = dyn Fn(&Kill) + Send + Sync;
type ExtendFn = dyn Fn(SessionId, ExtendReason) + Send + Sync;
type StallFn = dyn Fn(SessionId, StallClock, Duration) + Send + Sync;
type ErrorFn = dyn Fn(&CallbackError) + Send + Sync;

/// A callback panicked; reported through [`WatchdogConfig::on_error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("watchdog callback {callback} panicked for session {}: {message}", session.as_u64())]
pub struct CallbackError {
    /// `on_kill`, `on_extend` or `on_stalling`.
    pub callback: &'static str,
    /// The session the event was about.
    pub session: SessionId,
    /// The panic message, when it was a string.
    pub message: String,
}

/// The policy limits and the callbacks of a [`Watchdog`](crate::Watchdog).
///
/// Callbacks run on the thread that produced the event (usually the timer task), without the
/// watchdog's lock held; keep them short. A panicking callback is caught and reported to
/// `on_error`; it never stops the timer or skips a cancellation.
#[derive(Clone, Default)]
pub struct WatchdogConfig {
    pub(crate) limits: Limits,
    pub(crate) on_kill: Option<Arc<KillFn>>,
    pub(crate) on_extend: Option<Arc<ExtendFn>>,
    pub(crate) on_stalling: Option<Arc<StallFn>>,
    pub(crate) on_error: Option<Arc<ErrorFn>>,
}

impl std::fmt::Debug for WatchdogConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchdogConfig")
            .field("limits", &self.limits)
            .field("on_kill", &self.on_kill.is_some())
            .field("on_extend", &self.on_extend.is_some())
            .field("on_stalling", &self.on_stalling.is_some())
            .field("on_error", &self.on_error.is_some())
            .finish()
    }
}

impl WatchdogConfig {
    /// Sessions use `limits` unless their [`SessionConfig`](watchdog_core::SessionConfig) overrides them.
    pub fn new(limits: Limits) -> Self {
        WatchdogConfig {
            limits,
            ..Default::default()
        }
    }
    /// Called when a session is killed: after the kill is recorded, before its token is
    /// cancelled.
    pub fn on_kill(mut self, f: impl Fn(&Kill) + Send + Sync + 'static) -> Self {
        self.on_kill = Some(Arc::new(f));
        self
    }
    /// Called when a session's idle patience is extended.
    pub fn on_extend(
        mut self,
        f: impl Fn(SessionId, ExtendReason) + Send + Sync + 'static,
    ) -> Self {
        self.on_extend = Some(Arc::new(f));
        self
    }
    /// Called when a session's clock passes the warning fraction (time left given).
    pub fn on_stalling(
        mut self,
        f: impl Fn(SessionId, StallClock, Duration) + Send + Sync + 'static,
    ) -> Self {
        self.on_stalling = Some(Arc::new(f));
        self
    }
    /// Called when another callback panicked.
    pub fn on_error(mut self, f: impl Fn(&CallbackError) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }
}
