//! # agent-sdk-watchdog
//!
//! Makes every Claude Code / Agent SDK session end, for a reason its owner can read. The
//! policy (when to stop a session, and why) is the sans-IO [`watchdog_core`] (its types, such
//! as [`Limits`](watchdog_core::Limits), are used from there); this crate runs it on tokio:
//!
//! - [`Watchdog`] and [`Session`]: one timer task for any number of in-process sessions
//!   (SDK users), a [`CancellationToken`](tokio_util::sync::CancellationToken) per session,
//!   callbacks, and [`supervise`], a stream combinator that ends an SDK message stream with
//!   [`Killed`] the moment its session is killed, even if the stream never yields again.
//! - [`Supervisor`] (Unix and Windows): runs a `claude` child in a tree of its own (Unix: its
//!   own process group; Windows: a Job Object), delivers every output line unchanged, feeds
//!   the policy, and stops the whole process tree with a kill ladder (interrupt request, the
//!   graceful rung, the kill of every descendant, reap). See [`Supervisor`] for what differs
//!   between Linux, macOS and Windows.
//! - [`FileLedger`]: the durable, at-most-once recovery ledger; [`SharedLedger`] the same on a
//!   Redis or PostgreSQL server for a fleet (cargo features `ledger-redis`, `ledger-postgres`).
//! - [`Watchdog::metrics`]: what a watchdog counted (kills, ends, warnings, kill lateness),
//!   rendered for Prometheus by [`Metrics::render_prometheus`]; with the cargo feature
//!   `prometheus`, `prometheus::serve` answers `GET /metrics` for a long-lived host.
//!
//! All times come from tokio's clock, so tests can run under `tokio::time::pause()`.
//! The library prints nothing: it reports through values, events and callbacks.
//!
//! ## Wrapping an SDK message stream
//!
//! ```
//! use std::time::Duration;
//! use watchdog_core::{Limits, SessionConfig};
//! use agent_sdk_watchdog::{supervise, Killed, Watchdog, WatchdogConfig};
//! # struct Never; // stands in for an SDK stream that hangs
//! # impl futures_core::Stream for Never { type Item = String;
//! #   fn poll_next(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>)
//! #     -> std::task::Poll<Option<String>> { std::task::Poll::Pending } }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let limits = Limits::default().with_startup(Duration::from_secs(30)).unwrap();
//! let watchdog = Watchdog::new(WatchdogConfig::new(limits).on_kill(|k| eprintln!("killed: {}", k.kind)));
//! let session = watchdog.register(SessionConfig::default());
//! let mut messages = supervise(Never, session);
//! while let Some(item) = messages.next().await {
//!     match item {
//!         Ok(line) => println!("{line}"),
//!         Err(Killed(kill)) => { assert_eq!(kill.kind.as_str(), "startup"); break }
//!     }
//! }
//! # }
//! ```
//!
//! ## Supervising a `claude -p` child
//!
//! ```no_run
//! use agent_sdk_watchdog::{Output, Supervisor, SupervisorConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut cmd = tokio::process::Command::new("claude");
//! cmd.args(["-p", "Fix the failing test", "--output-format", "stream-json", "--verbose"]);
//! let config = SupervisorConfig { pipe_stdin: false, ..SupervisorConfig::default() };
//! let mut child = Supervisor::spawn(cmd, config)?; // fails at once if `claude` is missing
//! let _signals = agent_sdk_watchdog::forward_signals(child.handle())?;
//! while let Some(out) = child.next_output().await {
//!     if let Output::Stdout(line) = out { println!("{}", String::from_utf8_lossy(&line.bytes)) }
//! }
//! let report = child.wait().await?; // the run's record, the ladder, the exit status, counts
//! let stage = report.kill.as_ref().map(|k| k.stage);
//! println!("{:?} {:?} {:?}", report.outcome(), stage, report.status);
//! # Ok(()) }
//! ```
//!
//! `next_output` hands over one line at a time. A host that forwards a fast child's output
//! can take it in batches instead ([`Supervisor::next_batch`]):
//! the bytes of everything read at once, ready for one write, with each line's range and the
//! class the policy gave it. A host that needs fields of some lines can have them without
//! parsing again: [`SupervisorConfig::on_stdout_line`]
//! runs a hook with the view the policy already built.
// No unsafe code, but where the OS offers no safe path, each allowing it locally: setting the
// parent-death signal between fork and exec (`supervisor/os/unix/spawn.rs`), and the Job
// Object calls of the Windows backend (`supervisor/os/windows/ffi.rs`, one small function a
// call).
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod clock;
mod ledger;
mod line;
mod metrics;
#[cfg(feature = "prometheus")]
pub mod prometheus;
mod regular_file;
mod shared_ledger;
mod supervise;
#[cfg(any(unix, windows))]
mod supervisor;
mod watchdog;

pub use ledger::{default_state_dir, default_state_dir_from_env, FileLedger, STATE_DIR_NAME};
pub use line::{AsLine, LineRef};
pub use metrics::{LatenessHistogram, Metrics};
pub use regular_file::{open_regular, read_regular, special_kind};
pub use shared_ledger::{
    LedgerBackend, LedgerUrl, LedgerUrlError, SharedLedger, REQUEST_TIMEOUT_SECS,
};
pub use supervise::{supervise, Killed, Supervised};
#[cfg(any(unix, windows))]
pub use supervisor::{
    forward_signals, keep_out_of_trees, kill_trees_of, Batch, Facility, KillCause, KillReport,
    Line, LineCounts, LineInfo, LineMeta, Output, Report, RunPhase, Signal, SignalForwarder,
    SpawnError, Stage, StdinWriter, StdoutBatch, StdoutHook, Supervisor, SupervisorConfig,
    SupervisorHandle, WaitError, TREE_MARKER_VAR,
};
pub use watchdog::{CallbackError, Session, Watchdog, WatchdogConfig};
