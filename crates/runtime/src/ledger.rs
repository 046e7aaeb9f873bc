//! The durable recovery ledger; see [`FileLedger`] (re-exported at the crate root).

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use watchdog_core::recovery::subagent::{
    SubagentEntry, SubagentKey, SubagentLedger, SubagentMarker,
};
use watchdog_core::recovery::{
    validate_session_id, Claim, Ledger, LedgerEntry, LedgerError, Marker,
};

/// Name of the application directory inside the state home.
pub const STATE_DIR_NAME: &str = "agent-watchdog";

const CONTINUED: &str = "continued";
const NOTICED: &str = "noticed";
const SUBAGENTS: &str = "subagents";
/// A marker larger than this is not a marker we wrote: corrupt (and so, claimed).
const MAX_MARKER_BYTES: u64 = 1 << 20;

/// The default state directory, from the values of `XDG_STATE_HOME` and `HOME`:
/// `$XDG_STATE_HOME/agent-watchdog` if it is set to an absolute path (the XDG rule: a relative
/// one is ignored), else `$HOME/.local/state/agent-watchdog`; `None` if neither gives an
/// absolute path.
///
/// ```
/// use std::ffi::OsStr;
/// use std::path::Path;
/// use agent_sdk_watchdog::default_state_dir;
///
/// let dir = default_state_dir(None, Some(OsStr::new("/home/ada")));
/// assert_eq!(dir.as_deref(), Some(Path::new("/home/ada/.local/state/agent-watchdog")));
/// ```
pub fn default_state_dir(xdg_state_home: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    if let Some(xdg) = absolute(xdg_state_home) {
        return Some(xdg.join(STATE_DIR_NAME));
    }
    absolute(home).map(|h| h.join(".local").join("state").join(STATE_DIR_NAME))
}

fn absolute(value: Option<&OsStr>) -> Option<&Path> {
    value.map(Path::new).filter(|p| p.is_absolute())
}

/// [`default_state_dir`] with this process's `XDG_STATE_HOME` and `HOME`.
pub fn default_state_dir_from_env() -> Option<PathBuf> {
    default_state_dir(
        std::env::var_os("XDG_STATE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

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
/// Subagent markers ([`SubagentLedger`]) follow the same rules, keyed by session id + agent id
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
/// use watchdog_core::recovery::*;
/// use watchdog_core::{ClaudeSessionId, Outcome, ResultFacts};
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

impl Ledger for FileLedger {
    fn try_claim(&self, session_id: &str, marker: &Marker) -> Result<Claim, LedgerError> {
        let path = self.marker_path(session_id)?;
        let mut json = marker.to_json();
        json.push('\n');
        Ok(if create_exclusive(&path, json.as_bytes())? {
            Claim::Won
        } else {
            Claim::AlreadyClaimed
        })
    }

    fn get(&self, session_id: &str) -> Result<Option<LedgerEntry>, LedgerError> {
        let path = self.marker_path(session_id)?;
        let Some(text) = read_small(&path)? else {
            return Ok(None);
        };
        let marker = Marker::from_json(&text).map_err(|e| {
            let why = match e {
                LedgerError::Corrupt(why) => why,
                other => other.to_string(),
            };
            LedgerError::Corrupt(format!("{}: {why}", path.display()))
        })?;
        if !marker.session_id.eq_ignore_ascii_case(session_id) {
            return Err(LedgerError::Corrupt(format!(
                "{}: holds session id {:?}",
                path.display(),
                marker.session_id
            )));
        }
        let notice_recorded = exists(&self.notice_path(session_id)?)?;
        Ok(Some(LedgerEntry {
            marker,
            notice_recorded,
        }))
    }

    fn record_notice(&self, session_id: &str) -> Result<bool, LedgerError> {
        if !exists(&self.marker_path(session_id)?)? {
            return Ok(false);
        }
        let path = self.notice_path(session_id)?;
        let record = serde_json::json!({
            "session_id": session_id,
            "noticed_at_ms": now_ms(),
        });
        create_exclusive(&path, format!("{record}\n").as_bytes())
    }
}

impl FileLedger {
    /// Where the marker of the subagent `key` lives (whether or not it exists).
    pub fn subagent_marker_path(&self, key: &SubagentKey) -> PathBuf {
        self.dir
            .join(SUBAGENTS)
            .join(CONTINUED)
            .join(key.file_name())
    }

    /// Where the notice record of the subagent `key` lives (whether or not it exists).
    pub fn subagent_notice_path(&self, key: &SubagentKey) -> PathBuf {
        self.dir.join(SUBAGENTS).join(NOTICED).join(key.file_name())
    }

    /// Create the subagent directories (mode 0700) and make them durable.
    fn subagent_dirs(&self) -> Result<(), LedgerError> {
        let top = self.dir.join(SUBAGENTS);
        for sub in [CONTINUED, NOTICED] {
            let path = top.join(sub);
            if !path.is_dir() {
                create_private_dir(&path).map_err(|e| unavailable("create directory", &path, e))?;
                sync_dir(&path).map_err(|e| unavailable("flush directory", &path, e))?;
            }
        }
        for path in [&top, &self.dir] {
            sync_dir(path).map_err(|e| unavailable("flush directory", path, e))?;
        }
        Ok(())
    }
}

impl SubagentLedger for FileLedger {
    fn try_claim(&self, key: &SubagentKey, marker: &SubagentMarker) -> Result<Claim, LedgerError> {
        self.subagent_dirs()?;
        let mut json = marker.to_json();
        json.push('\n');
        Ok(
            if create_exclusive(&self.subagent_marker_path(key), json.as_bytes())? {
                Claim::Won
            } else {
                Claim::AlreadyClaimed
            },
        )
    }

    fn get(&self, key: &SubagentKey) -> Result<Option<SubagentEntry>, LedgerError> {
        let path = self.subagent_marker_path(key);
        let Some(text) = read_small(&path)? else {
            return Ok(None);
        };
        let marker = SubagentMarker::from_json(&text)
            .map_err(|e| LedgerError::Corrupt(format!("{}: {e}", path.display())))?;
        if !marker.session_id.eq_ignore_ascii_case(key.session_id())
            || marker.agent_id != key.agent_id()
        {
            return Err(LedgerError::Corrupt(format!(
                "{}: holds {}/{}",
                path.display(),
                marker.session_id,
                marker.agent_id
            )));
        }
        let notice_recorded = exists(&self.subagent_notice_path(key))?;
        Ok(Some(SubagentEntry {
            marker,
            notice_recorded,
        }))
    }

    fn record_notice(&self, key: &SubagentKey) -> Result<bool, LedgerError> {
        if !exists(&self.subagent_marker_path(key))? {
            return Ok(false);
        }
        self.subagent_dirs()?;
        let record = serde_json::json!({
            "session_id": key.session_id(),
            "agent_id": key.agent_id(),
            "noticed_at_ms": now_ms(),
        });
        create_exclusive(
            &self.subagent_notice_path(key),
            format!("{record}\n").as_bytes(),
        )
    }
}

fn unavailable(what: &str, path: &Path, e: io::Error) -> LedgerError {
    LedgerError::Unavailable(format!("cannot {what} {}: {e}", path.display()))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis().min(u64::MAX as u128) as u64)
        .unwrap_or(0)
}

/// Create `path` with `contents` unless it exists: `Ok(true)` if this call created it.
///
/// The contents go to a uniquely named temporary file in the same directory, which is flushed
/// and then hard-linked to `path` (`link` fails if `path` exists, in every process). The
/// temporary name is removed and the directory flushed before returning, so `Ok(true)` means
/// the file is durable.
fn create_exclusive(path: &Path, contents: &[u8]) -> Result<bool, LedgerError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(LedgerError::Unavailable(format!(
            "not a file path: {}",
            path.display()
        )));
    };
    // Unique per process (pid) and per call (counter); a stale one left by a crash with the
    // same pid is skipped. Temporary names start with '.', so never look like a marker.
    let mut attempt = 0;
    let (tmp, mut file) = loop {
        let tmp = dir.join(format!(
            ".{}.{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        match create_new_private(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
            Err(e) => return Err(unavailable("create a file in", dir, e)),
        }
    };
    let written = file
        .write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(|e| unavailable("write", &tmp, e));
    drop(file);
    let linked = written.and_then(|()| match fs::hard_link(&tmp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(unavailable("create", path, e)),
    });
    // Best effort: a leftover temporary file is harmless.
    let _ = fs::remove_file(&tmp);
    let won = linked?;
    if won {
        sync_dir(dir).map_err(|e| unavailable("flush directory", dir, e))?;
    }
    Ok(won)
}

/// The contents of `path`, `None` if it does not exist. Only a regular file we could have
/// written is read: a FIFO, a device or a symbolic link in its place is never opened (it would
/// block or never end) and is corrupt, which counts as claimed.
fn read_small(path: &Path) -> Result<Option<String>, LedgerError> {
    let bytes = match crate::regular_file::read_regular(path, MAX_MARKER_BYTES, false) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData
            ) =>
        {
            // The error names the path.
            return Err(LedgerError::Corrupt(e.to_string()));
        }
        Err(e) => return Err(unavailable("read", path, e)),
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| LedgerError::Corrupt(format!("{}: not UTF-8", path.display())))
}

fn exists(path: &Path) -> Result<bool, LedgerError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(unavailable("inspect", path, e)),
    }
}

#[cfg(unix)]
fn create_private_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

#[cfg(not(unix))]
fn create_private_dir(path: &Path) -> io::Result<()> {
    fs::create_dir_all(path)
}

fn create_new_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(unix)]
fn sync_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    // Only a directory is opened (a FIFO put in its place must not block the open).
    let flags = rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::NONBLOCK;
    OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?
        .sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_path: &Path) -> io::Result<()> {
    // Directories cannot be opened for flushing through std here; the file itself was flushed.
    Ok(())
}
