//! The files a run writes (`--record`, `--summary`), opened before the child starts: a path
//! that cannot be written fails the run before it costs anything.
//!
//! - A FIFO is opened without blocking: with no process reading it, the open fails at once
//!   ("no process reads it") instead of hanging the run before it starts.
//! - A regular file (or a new one) given to `--summary` is written at the end through a
//!   temporary file in the same directory, created now, then renamed over it: a reader never
//!   sees half a summary, and an unwritable directory is found before the run.
//! - Anything else that is not a regular file (a character device such as `/dev/stderr`,
//!   a FIFO) is opened now and written in place at the end.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Open `path` for writing, creating or truncating a regular file; a FIFO must have a reader.
pub fn create(path: &Path) -> io::Result<File> {
    let is_fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    if !is_fifo {
        return File::create(path);
    }
    let nonblock = rustix::fs::OFlags::NONBLOCK.bits() as i32;
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(nonblock)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(n) if n == rustix::io::Errno::NXIO.raw_os_error() => io::Error::new(
                io::ErrorKind::NotConnected,
                "it is a FIFO that no process reads",
            ),
            _ => e,
        })?;
    // Writes block as usual from now on (a slow reader slows the run, it loses nothing).
    rustix::fs::fcntl_setfl(&file, rustix::fs::OFlags::empty())?;
    Ok(file)
}

/// Where `--summary` goes, opened before the run.
#[derive(Debug)]
pub enum SummaryTarget {
    /// `-`: our stderr.
    Stderr,
    /// A special file (device, FIFO), written in place.
    Direct(File),
    /// A regular file, replaced at the end by the temporary file beside it.
    Replace {
        /// The summary's path.
        path: PathBuf,
        /// The temporary file beside it (removed if the summary is never written).
        tmp: PathBuf,
        /// The temporary file, open.
        file: Option<File>,
    },
}

impl SummaryTarget {
    /// Get `path` ready to take the summary at the end (`-` for stderr).
    pub fn open(path: &Path) -> io::Result<Self> {
        if path.as_os_str() == "-" {
            return Ok(SummaryTarget::Stderr);
        }
        match std::fs::metadata(path) {
            Ok(m) if !m.is_file() => {
                if m.is_dir() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "it is a directory",
                    ));
                }
                return create(path).map(SummaryTarget::Direct);
            }
            // An existing file must be writable, as it would be without the rename.
            Ok(_) => drop(OpenOptions::new().append(true).open(path)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        Ok(SummaryTarget::Replace {
            path: path.to_path_buf(),
            tmp,
            file: Some(file),
        })
    }

    /// Write `text` (one line) and put it in place.
    pub fn write(mut self, text: &str) -> io::Result<()> {
        match &mut self {
            SummaryTarget::Stderr => {
                let mut e = io::stderr().lock();
                e.write_all(text.as_bytes())?;
                e.flush()
            }
            SummaryTarget::Direct(f) => {
                f.write_all(text.as_bytes())?;
                f.flush()
            }
            SummaryTarget::Replace { path, tmp, file } => {
                let mut f = file
                    .take()
                    .ok_or_else(|| io::Error::other("written twice"))?;
                f.write_all(text.as_bytes())?;
                f.sync_all()?;
                drop(f);
                std::fs::rename(&*tmp, &*path)?;
                // Renamed: nothing left to remove.
                *tmp = PathBuf::new();
                Ok(())
            }
        }
    }
}

impl Drop for SummaryTarget {
    fn drop(&mut self) {
        if let SummaryTarget::Replace { tmp, .. } = self {
            if !tmp.as_os_str().is_empty() {
                let _ = std::fs::remove_file(&*tmp);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, "old").unwrap();
        let t = SummaryTarget::open(&path).unwrap();
        // Until the end the old content stays.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        t.write("{\"new\":1}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"new\":1}\n");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn an_unwritable_summary_fails_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        assert!(SummaryTarget::open(&dir.path().join("missing/s.json")).is_err());
        assert!(SummaryTarget::open(dir.path()).is_err(), "a directory");
    }

    #[test]
    fn an_abandoned_summary_removes_its_temporary() {
        let dir = tempfile::tempdir().unwrap();
        drop(SummaryTarget::open(&dir.path().join("s.json")).unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_fifo_without_reader_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let err = create(&fifo).unwrap_err();
        assert!(err.to_string().contains("no process reads"), "{err}");
        let err = SummaryTarget::open(&fifo).unwrap_err();
        assert!(err.to_string().contains("no process reads"), "{err}");
    }
}
