//! What one invocation shares between its runs ([`Host`]), and its wall clock.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::host_signals::UserSignals;
use super::record::Recorder;
use super::{stdin, stdout, vanished};
use crate::status::Status;
use crate::verdict::ms;

/// What one invocation shares between its runs: our stdout and stderr, the capture, the
/// user's signals, and the host's stdin (forwarded to the first run only).
pub(crate) struct Host {
    pub(crate) status: Status,
    pub(crate) recorder: Recorder,
    pub(crate) signals: UserSignals,
    pub(crate) stdout: stdout::StdoutSink,
    pub(super) stdin: Option<stdin::HostStdin>,
    /// A reader or host that went away while the child is silent.
    pub(super) vanished: vanished::Vanished,
    /// What the runs record as they go (empty with telemetry off).
    pub(crate) telemetry: crate::telemetry::Live,
}

/// How waiting for our stdout ended ([`Host::drain_stdout`]).
#[derive(Debug)]
pub(crate) enum Drained {
    /// Every byte was delivered (or nothing was to be).
    Done,
    /// Writing failed: nothing more is written.
    Failed(stdout::WriteError),
    /// The reader took no byte for the output-blocked bound in force, for this long
    /// (counted): what waits is still there, for the caller to drop and say.
    Blocked(Duration),
    /// The user signalled us meanwhile: what waited (this many bytes) was dropped.
    Interrupted(u64),
}

impl Host {
    /// Wait until everything handed to our stdout is delivered, as long as the reader takes
    /// bytes: the output-blocked bound in force ([`stdout::StdoutSink::look`]) or a signal of
    /// the user's ends the wait. A reader that does read gets every byte.
    pub(crate) async fn drain_stdout(&mut self) -> Drained {
        loop {
            self.stdout.flush();
            if let Some(e) = self.stdout.take_error() {
                return Drained::Failed(e);
            }
            if self.stdout.in_flight() == 0 {
                return Drained::Done;
            }
            let look_at = self.stdout.look_at();
            tokio::select! {
                biased;
                () = self.stdout.progressed() => {}
                _ = self.signals.recv() => {
                    let waiting = self.stdout.waiting();
                    self.stdout.abandon();
                    return Drained::Interrupted(waiting);
                }
                () = sleep_until_opt(look_at) => {
                    if let Some(d) = self.stdout.look(Instant::now()) {
                        return Drained::Blocked(d);
                    }
                }
            }
        }
    }
}

/// Sleep until `at`, or for ever (`None`).
pub(crate) async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Now, epoch milliseconds.
pub(crate) fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(ms)
        .unwrap_or(0)
}
