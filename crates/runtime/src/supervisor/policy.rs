//! Where a supervised child's liveness policy lives: a session on a policy cell, a private
//! [`Watchdog`] by default or the shared one given in [`SupervisorConfig::watchdog`]. Either
//! way there is one deadline loop (the cell's timer task), one pause rule (the core's
//! [`Registry::output_blocked`]) and one event path (the cell delivers every event of the
//! child, whatever caused it, into the supervisor's sink, in order).
//!
//! [`SupervisorConfig::watchdog`]: super::SupervisorConfig::watchdog

use std::time::Instant;

use tokio::sync::mpsc;
use watchdog_core::{Event, Limits, Registry, SessionConfig, SessionId};

use super::control::Control;
use super::report::{Batch, KillCause, Output};
use crate::watchdog::{InputMarker, Sink};
use crate::{Session, Watchdog, WatchdogConfig};

/// A supervised child's session on its policy cell.
pub(crate) struct Policy {
    session: Session,
    /// How the stdout reader tells the cell it may hold unread lines.
    input: InputMarker,
    /// The private cell, alive while the child is supervised (its timer task ends with it).
    _private: Option<Watchdog>,
}

impl Policy {
    /// Register the child's session, its clocks from `started` (the spawn; `started_wall` is
    /// the wall clock then, epoch ms), on `shared` or on a private cell. Its events go to the
    /// supervisor's output, in order; a kill also starts the ladder.
    pub(crate) fn register(
        session: SessionConfig,
        shared: Option<&Watchdog>,
        started: Instant,
        started_wall: u64,
        out: mpsc::UnboundedSender<Batch>,
        ctrl: mpsc::UnboundedSender<Control>,
    ) -> Policy {
        let private = match shared {
            Some(_) => None,
            // Sessions carry their limits ([`SessionConfig`]); the cell's are never used.
            None => Some(Watchdog::anchored(
                WatchdogConfig::new(Limits::default()),
                started,
                started_wall,
            )),
        };
        let cell = shared
            .or(private.as_ref())
            .expect("a cell, shared or private");
        let session = cell.register_supervised(session, started, sink(out, ctrl));
        Policy {
            input: session.input_marker(),
            session,
            _private: private,
        }
    }

    /// Run `f` on the cell's registry with the session's id and the call's instant; the
    /// events it causes reach the sink before this returns.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Registry, SessionId, Instant) -> R) -> R {
        self.session.with_registry(f)
    }

    /// How the stdout reader says it may hold unread lines.
    pub(crate) fn input(&self) -> &InputMarker {
        &self.input
    }
}

/// Every event to the output (a kill also to the watching task, after it).
fn sink(out: mpsc::UnboundedSender<Batch>, ctrl: mpsc::UnboundedSender<Control>) -> Sink {
    Box::new(move |ev: &Event| {
        let _ = out.send(Batch::Output(Output::Event(ev.clone())));
        if let Event::Killed(k) = ev {
            let _ = ctrl.send(Control::Kill(KillCause::Watchdog(k.clone())));
        }
    })
}
