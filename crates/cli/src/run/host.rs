//! What one invocation shares between its runs ([`Host`]), and its wall clock.

use std::time::{SystemTime, UNIX_EPOCH};

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

/// Now, epoch milliseconds.
pub(crate) fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(ms)
        .unwrap_or(0)
}
