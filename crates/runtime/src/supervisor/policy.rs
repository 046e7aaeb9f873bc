//! Where a supervised child's liveness policy lives: nowhere (supervise only), in a registry of
//! its own (its deadlines slept on by the supervisor's watching task), or as a session of a
//! shared [`Watchdog`](crate::Watchdog), whose one timer task handles the deadlines of every
//! session, in-process or supervised.

use std::time::Instant;

use watchdog_core::{Event, Registry, SessionId};

/// The policy cell of one supervised child.
pub(crate) enum Policy {
    /// No policy: explicit kills, signals and tree cleanup only.
    None,
    /// A registry of its own with this one session.
    Own(Box<Registry>, SessionId),
    /// A session of a shared watchdog (its events reach the session's subscribers).
    Shared(crate::Session),
}

impl Policy {
    /// Run `f` on the registry holding the session, with the session's id and `now`; `None`
    /// without a policy. For a shared watchdog, the events `f` causes are delivered by the
    /// watchdog (callbacks, the session's event stream) and its timer is re-armed.
    pub(crate) fn with<R>(
        &mut self,
        now: Instant,
        f: impl FnOnce(&mut Registry, SessionId, Instant) -> R,
    ) -> Option<R> {
        match self {
            Policy::None => None,
            Policy::Own(reg, id) => Some(f(reg, *id, now)),
            Policy::Shared(session) => Some(session.with_registry(|reg, id| f(reg, id, now))),
        }
    }

    /// The next deadline the supervisor itself must wake for (own registry only).
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Policy::Own(reg, _) => reg.poll_timeout(),
            _ => None,
        }
    }

    /// The events waiting in an own registry (a shared watchdog delivers its own).
    pub(crate) fn drain(&mut self) -> Vec<Event> {
        match self {
            Policy::Own(reg, _) => std::iter::from_fn(|| reg.poll_event()).collect(),
            _ => Vec::new(),
        }
    }

    /// The events of a shared watchdog's session, from now on.
    pub(crate) fn subscribe(&self) -> Option<tokio::sync::broadcast::Receiver<Event>> {
        match self {
            Policy::Shared(session) => Some(session.events()),
            _ => None,
        }
    }
}
