//! The ledger's files on disk: published whole and at most once (a private temporary file,
//! flushed, then hard-linked under its name), read back only if a regular file of ours, and
//! private directories made durable.
//!
//! On NTFS the same holds: a hard link (`CreateHardLinkW`) fails when the name exists, in
//! every process, so one claim wins; the temporary name is removed while the marker lives on
//! under its own; the directory is flushed through a handle opened with backup semantics.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use watchdog_core::recovery::LedgerError;

/// A marker larger than this is not a marker we wrote: corrupt (and so, claimed).
const MAX_MARKER_BYTES: u64 = 1 << 20;

pub(super) fn unavailable(what: &str, path: &Path, e: io::Error) -> LedgerError {
    LedgerError::Unavailable(format!("cannot {what} {}: {e}", path.display()))
}

pub(super) fn now_ms() -> u64 {
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
pub(super) fn create_exclusive(path: &Path, contents: &[u8]) -> Result<bool, LedgerError> {
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
pub(super) fn read_small(path: &Path) -> Result<Option<String>, LedgerError> {
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

pub(super) fn exists(path: &Path) -> Result<bool, LedgerError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(unavailable("inspect", path, e)),
    }
}

#[cfg(unix)]
pub(super) fn create_private_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

#[cfg(not(unix))]
pub(super) fn create_private_dir(path: &Path) -> io::Result<()> {
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
pub(super) fn sync_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    // Only a directory is opened (a FIFO put in its place must not block the open).
    let flags = rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::NONBLOCK;
    OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?
        .sync_all()
}

/// Flush the directory's entries (the link just made) to disk. NTFS opens a directory only
/// with backup semantics, and flushes it through a handle opened for writing; where the
/// directory may not be opened so (no write access to the folder itself), the link is left to
/// NTFS's journal, which records the new name before the call returns.
#[cfg(windows)]
pub(super) fn sync_dir(path: &Path) -> io::Result<()> {
    use std::os::windows::fs::OpenOptionsExt;
    /// `FILE_FLAG_BACKUP_SEMANTICS`: what opening a directory takes.
    const BACKUP_SEMANTICS: u32 = 0x0200_0000;
    match OpenOptions::new()
        .write(true)
        .custom_flags(BACKUP_SEMANTICS)
        .open(path)
    {
        Ok(dir) => dir.sync_all(),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(not(any(unix, windows)))]
pub(super) fn sync_dir(_path: &Path) -> io::Result<()> {
    // Directories cannot be opened for flushing through std here; the file itself was flushed.
    Ok(())
}
