//! The durable recovery ledger; see [`FileLedger`] (re-exported at the crate root).

mod durable_files;
pub(crate) mod records;
mod session_markers;
mod state_dir;
mod subagent_markers;

use std::path::{Path, PathBuf};

use watchdog_core::recovery::{validate_session_id, LedgerError};

use durable_files::{create_private_dir, sync_dir, unavailable};
use records::{CONTINUED, NOTICED};
pub use state_dir::{default_state_dir, default_state_dir_from_env, STATE_DIR_NAME};

/// Continuation markers as files in a state directory: durable and race-free across threads,
/// processes and crashes.
///
/// The durable, race-free recovery ledger: [`FileLedger`], the file implementation of the
/// core [`Ledger`] trait.
///
/// **The guarantee.** At most one automatic continuation per recovery chain: before a stopped
/// session is continued, [`Ledger::try_claim`] writes a marker file named after the session id,
/// and only the caller that created it gets [`Claim::Won`]. The marker is written completely
/// to a private temporary file, flushed to disk, then published under its final name with
/// `link(2)`, which fails if the name exists; the directory is flushed before `Won` is
/// returned. So among any number of threads and processes racing on one session exactly one
/// wins; a marker, once there, stops every later continuation of that session, across
/// restarts and duplicate events; a crash between the marker and the continuation costs the
/// continuation, never duplicates it; and a reader never sees a half-written marker (a marker
/// that is unreadable anyway — a corrupt file, a filesystem fault — still counts as claimed:
/// every ledger error means *do not continue*).
///
/// # Layout
///
/// ```text
/// <state dir>/                 mode 0700; default $XDG_STATE_HOME/agent-watchdog/,
///                              else ~/.local/state/agent-watchdog/ (see default_state_dir)
///     continued/<session-id>.json   the continuation marker (core Marker as JSON), mode 0600
///     noticed/<session-id>.json     written once when the notice of a failed continuation was given
///     subagents/continued/<session-id>.<agent-id>.json   a subagent's marker (core SubagentMarker)
///     subagents/noticed/<session-id>.<agent-id>.json     its single notice
/// ```
///
/// Subagent markers (`Ledger<SubagentKey, SubagentMarker>`) follow the same rules, keyed by session id + agent id
/// ([`SubagentKey`], both validated before any path is built); their directories are created
/// on first use.
///
/// Session ids are checked with [`validate_session_id`] (a UUID) before any path is built, and
/// file names use the id in lower case, so `ABC…` and `abc…` share one marker. Publishing a
/// marker needs hard links, which every local Unix filesystem has; where they are missing,
/// `try_claim` fails (closed).
///
/// # Example
///
/// ```
/// use watchdog_core::recovery::{Claim, Ledger, Marker, Recovery, TerminalFacts};
/// use watchdog_core::{facts::ClaudeSessionId, Outcome, facts::ResultFacts};
/// use agent_sdk_watchdog::FileLedger;
///
/// let state = tempfile::tempdir().unwrap();
/// let id = "90455ab9-05b5-4ba0-9d10-01a53fd0bcdc";
/// let cut_off = Outcome::ErrorResult(Box::new(ResultFacts {
///     subtype: Some("success".into()),
///     terminal_reason: Some("api_error".into()),
///     stop_reason: Some("stop_sequence".into()),
///     api_error: Some("max_output_tokens".into()),
///     api_error_status: None,
///     ..ResultFacts::default()
/// }));
/// let sid = ClaudeSessionId::parse(id).unwrap();
/// let facts = TerminalFacts::new(cut_off, 1_000).with_session_id(sid);
/// let recovery = Recovery::default();
///
/// // The run was cut off: decide, then claim the marker before continuing.
/// let ledger = FileLedger::open(state.path()).unwrap();
/// let decision = recovery.decide(&facts, &ledger.get(id).unwrap().into());
/// let marker = Marker::for_continue(&facts, &decision).unwrap();
/// assert_eq!(ledger.try_claim(id, &marker).unwrap(), Claim::Won); // continue once
///
/// // A restart, or a second process, sees the marker: never a second continuation.
/// let again = FileLedger::open(state.path()).unwrap();
/// assert_eq!(again.try_claim(id, &marker).unwrap(), Claim::AlreadyClaimed);
/// assert_eq!(again.get(id).unwrap().unwrap().marker, marker);
/// ```
///
/// [`Claim::Won`]: watchdog_core::recovery::Claim::Won
/// [`Ledger`]: watchdog_core::recovery::Ledger
/// [`Ledger::try_claim`]: watchdog_core::recovery::Ledger::try_claim
/// [`SubagentKey`]: watchdog_core::recovery::SubagentKey
#[derive(Debug, Clone)]
pub struct FileLedger {
    dir: PathBuf,
}

impl FileLedger {
    /// Use `dir` as the state directory, creating it (mode 0700 on Unix) and its
    /// subdirectories if needed.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Unavailable`], naming the path and the OS error, if the directory cannot
    /// be created or flushed. The caller must then not continue anything.
    pub fn open(dir: impl Into<PathBuf>) -> Result<FileLedger, LedgerError> {
        let dir = dir.into();
        for sub in [CONTINUED, NOTICED] {
            let path = dir.join(sub);
            create_private_dir(&path).map_err(|e| unavailable("create directory", &path, e))?;
        }
        // Make the new directory entries durable, so a marker in them can be.
        for path in [dir.join(CONTINUED), dir.join(NOTICED), dir.clone()] {
            sync_dir(&path).map_err(|e| unavailable("flush directory", &path, e))?;
        }
        Ok(FileLedger { dir })
    }

    /// [`FileLedger::open`] on [`default_state_dir_from_env`].
    ///
    /// # Errors
    ///
    /// [`LedgerError::Unavailable`] if neither `XDG_STATE_HOME` nor `HOME` is an absolute
    /// path, or if the directory cannot be created.
    pub fn open_default() -> Result<FileLedger, LedgerError> {
        let dir = default_state_dir_from_env().ok_or_else(|| {
            LedgerError::Unavailable(
                "no state directory: neither XDG_STATE_HOME nor HOME is an absolute path; \
                 pass one explicitly"
                    .into(),
            )
        })?;
        FileLedger::open(dir)
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the continuation marker of `session_id` lives (whether or not it exists).
    ///
    /// # Errors
    ///
    /// [`LedgerError::InvalidSessionId`] unless `session_id` is a UUID.
    pub fn marker_path(&self, session_id: &str) -> Result<PathBuf, LedgerError> {
        self.path(CONTINUED, session_id)
    }

    /// Where the notice record of `session_id` lives (whether or not it exists).
    ///
    /// # Errors
    ///
    /// [`LedgerError::InvalidSessionId`] unless `session_id` is a UUID.
    pub fn notice_path(&self, session_id: &str) -> Result<PathBuf, LedgerError> {
        self.path(NOTICED, session_id)
    }

    fn path(&self, sub: &str, session_id: &str) -> Result<PathBuf, LedgerError> {
        validate_session_id(session_id)?;
        Ok(self
            .dir
            .join(sub)
            .join(format!("{}.json", session_id.to_ascii_lowercase())))
    }
}
