//! The user's signals during one run ([`Interrupts`]): the first is forwarded, and if the child
//! is still there `grace` later its whole tree is killed; a second one kills the tree at once.

use std::time::Duration;

use super::host_signals::UserSig;
use super::live::Live;
use watchdog_core::config::HumanDuration;

/// The user's signals during one run, and when the first one escalates.
pub(super) struct Interrupts {
    /// The first signal, forwarded to the child.
    first: Option<UserSig>,
    /// When the child, still there, gets its whole tree killed.
    escalate_at: Option<tokio::time::Instant>,
    /// How long the child has to end after the forwarded signal.
    grace: Duration,
}

impl Interrupts {
    /// No signal yet; the first one escalates `grace` after it.
    pub(super) fn new(grace: Duration) -> Self {
        Interrupts {
            first: None,
            escalate_at: None,
            grace,
        }
    }

    /// The signal that was forwarded, if one came.
    pub(super) fn first(&self) -> Option<UserSig> {
        self.first
    }

    /// Ready when the first signal's grace is over (never while none is pending).
    pub(super) async fn escalation(&self) {
        match self.escalate_at {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    /// The user signalled us: the first signal is forwarded to the child, a second kills its
    /// whole tree at once.
    pub(super) fn on_signal(&mut self, sig: UserSig, live: &mut Live<'_>) {
        if self.first.is_some() {
            live.host.status.say(&format!(
                "second signal ({}): killing the command's whole process tree",
                sig.name()
            ));
            live.handle.kill_tree_now();
            self.escalate_at = None;
        } else {
            self.first = Some(sig);
            live.interrupted = true;
            live.handle.signal(sig.signal());
            live.host.telemetry.signal_forwarded(sig.name());
            self.escalate_at = tokio::time::Instant::now().checked_add(self.grace);
        }
    }

    /// The child is still there `grace` after the forwarded signal: kill its whole tree.
    pub(super) fn escalate(&mut self, live: &mut Live<'_>) {
        self.escalate_at = None;
        live.host.status.say(&format!(
            "{} still runs {} after {}: killing its whole process tree",
            live.what,
            HumanDuration(self.grace),
            self.first.map_or("the signal", UserSig::name),
        ));
        live.handle.kill_tree_now();
    }
}
