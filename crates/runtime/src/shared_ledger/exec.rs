//! Where a shared ledger's client runs: on the tokio runtime the caller already has, or, in a
//! program without one (the hook), on a single-thread runtime of its own. Never a second
//! runtime inside one.

use std::future::Future;
use std::time::Duration;

use tokio::runtime::{Builder, Handle, Runtime, RuntimeFlavor};

/// How long one request to the server (connecting included) may take, in seconds, before the
/// ledger counts as unreachable (and so nothing is continued).
pub const REQUEST_TIMEOUT_SECS: u64 = 10;

/// [`REQUEST_TIMEOUT_SECS`] as a duration.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(REQUEST_TIMEOUT_SECS);

const SINGLE_THREAD: &str = "a shared ledger cannot block a single-thread tokio runtime: \
                             use it outside the runtime, or from a multi-thread one";

/// How the ledger's blocking calls reach its asynchronous client.
pub(super) enum Exec {
    /// The caller's multi-thread runtime: calls from its tasks go through `block_in_place`.
    Host(Handle),
    /// No runtime around when the ledger was opened: one of its own, single-thread.
    Own(Option<Runtime>),
}

impl Exec {
    /// The runtime of the caller if it has one, else a single-thread one of the ledger's own.
    pub(super) fn here() -> Result<Exec, String> {
        match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => Ok(Exec::Host(h)),
            Ok(_) => Err(SINGLE_THREAD.to_owned()),
            Err(_) => Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|rt| Exec::Own(Some(rt)))
                .map_err(|e| format!("cannot start the ledger's runtime: {e}")),
        }
    }

    /// Run `f` to its end, blocking this thread, bounded by [`REQUEST_TIMEOUT`]. Never panics:
    /// a call from a place that must not block is an error.
    pub(super) fn run<T, F>(&self, f: F) -> Result<T, String>
    where
        F: Future<Output = Result<T, String>>,
    {
        let bounded = async {
            match tokio::time::timeout(REQUEST_TIMEOUT, f).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {}s", REQUEST_TIMEOUT.as_secs())),
            }
        };
        let current = Handle::try_current().ok().map(|h| h.runtime_flavor());
        match (self, current) {
            (_, Some(flavor)) if flavor != RuntimeFlavor::MultiThread => {
                Err(SINGLE_THREAD.to_owned())
            }
            (Exec::Host(h), Some(_)) => tokio::task::block_in_place(|| h.block_on(bounded)),
            (Exec::Host(h), None) => h.block_on(bounded),
            (Exec::Own(_), Some(_)) => Err("a shared ledger opened outside any runtime is used \
                                            inside one: open it where it is used"
                .to_owned()),
            (Exec::Own(rt), None) => match rt {
                Some(rt) => rt.block_on(bounded),
                None => Err("the ledger's runtime is gone".to_owned()),
            },
        }
    }

    /// Start `task` (a client's connection driver) on this runtime.
    #[cfg(feature = "ledger-postgres")]
    pub(super) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        match self {
            Exec::Host(h) => drop(h.spawn(task)),
            Exec::Own(Some(rt)) => drop(rt.spawn(task)),
            Exec::Own(None) => {}
        }
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        // Dropping a runtime inside another one would panic; this never waits.
        if let Exec::Own(rt) = self {
            if let Some(rt) = rt.take() {
                rt.shutdown_background();
            }
        }
    }
}
