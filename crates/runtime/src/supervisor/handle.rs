//! Handles to a running supervisor: stop or signal it, feed it, write to the child's stdin.

use std::sync::Arc;

use tokio::sync::{mpsc, Mutex as AsyncMutex};

use super::control::Control;
use super::report::KillCause;
use super::shared::{RunPhase, Shared};
use super::signal::Signal;

/// A cheap, cloneable handle to a running supervisor: stop it or signal it.
#[derive(Clone)]
pub struct SupervisorHandle {
    pub(crate) ctrl: mpsc::UnboundedSender<Control>,
    pub(crate) pid: u32,
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for SupervisorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SupervisorHandle")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl SupervisorHandle {
    /// Start the kill ladder now (no effect once it runs or the child has exited).
    pub fn kill_now(&self) {
        let _ = self.ctrl.send(Control::Kill(KillCause::Requested));
    }
    /// SIGKILL the child's group and every known descendant now, skipping the graces.
    pub fn kill_tree_now(&self) {
        let _ = self.ctrl.send(Control::KillTree(KillCause::Requested));
    }
    /// Send SIGINT to the child's process group.
    pub fn interrupt(&self) {
        self.signal(Signal::Int);
    }
    /// Send SIGTERM to the child's process group.
    pub fn terminate(&self) {
        self.signal(Signal::Term);
    }
    /// Send `sig` to the child's process group (no effect once the group is gone).
    pub fn signal(&self, sig: Signal) {
        let _ = self.ctrl.send(Control::Signal(sig));
    }
    /// Feed the current rate-limit utilization (0–1, highest window; `None` when unknown):
    /// high utilization extends the idle patience.
    pub fn set_utilization(&self, utilization: Option<f64>) {
        self.shared.set_utilization(utilization);
    }
    /// The child's current activity, as the policy's tally holds it (for a status display;
    /// `None` unless [`SessionConfig::with_tally`](watchdog_core::SessionConfig::with_tally)).
    pub fn activity(&self) -> Option<watchdog_core::facts::Activity> {
        self.shared.activity()
    }
    /// A copy of the policy's rate-limit readings (for a status display; `None` without a
    /// policy).
    pub fn rate_limits(&self) -> Option<watchdog_core::rate_limit::RateLimitMonitor> {
        self.shared.rate_limits()
    }
    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }
    /// How far the run is ([`RunPhase`]): a kill under way, or the child's own exit, known
    /// at once even while the caller takes none of the output (a caller whose own reader
    /// stopped can still end within seconds).
    pub fn phase(&self) -> tokio::sync::watch::Receiver<RunPhase> {
        self.shared.phase()
    }
}

/// Writes lines to the child's stdin and reports them to the policy (a `control_response`
/// that answers a permission request ends that human wait). Cloneable.
#[derive(Clone)]
pub struct StdinWriter {
    pub(crate) pipe: Arc<AsyncMutex<Option<tokio::process::ChildStdin>>>,
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for StdinWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdinWriter").finish_non_exhaustive()
    }
}

impl StdinWriter {
    /// Write one line (a `\n` is appended when missing) and flush it.
    pub async fn write_line(&self, line: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        let mut guard = self.pipe.lock().await;
        let Some(pipe) = guard.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin is closed",
            ));
        };
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        pipe.write_all(body).await?;
        pipe.write_all(b"\n").await?;
        pipe.flush().await?;
        drop(guard);
        self.shared.observe_input(body);
        Ok(())
    }

    /// Write `bytes` to the child's stdin as they are (no newline added, not seen by the
    /// policy): a piece of a line too long to hold whole.
    pub async fn write_raw(&self, bytes: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        let mut guard = self.pipe.lock().await;
        let Some(pipe) = guard.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin is closed",
            ));
        };
        pipe.write_all(bytes).await?;
        pipe.flush().await
    }

    /// Close stdin (the child sees end of input). The policy learns that the host's input
    /// ended: a child that waited for its host's next message lingers from now.
    pub async fn close(&self) {
        self.pipe.lock().await.take();
        self.shared.input_closed();
    }
}
