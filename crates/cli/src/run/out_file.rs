//! The files a run writes (`--record`, `--summary`), opened before the child starts: a path
//! that cannot be written fails the run before it costs anything.
//!
//! - Symbolic links are followed to their target: the target is written (or replaced), never
//!   the link itself.
//! - A path that leads to an open file of a process (`/dev/stdout`, `/dev/stderr`,
//!   `/dev/fd/N`, `/proc/self/fd/N`) is a stream: written in place where that file is (our own
//!   stdout and stderr are shared, so the summary follows what the run printed there), never
//!   truncated or replaced.
//! - A FIFO is opened without blocking: with no process reading it, the open fails at once
//!   ("no process reads it") instead of hanging the run before it starts.
//! - A regular file (or a new one) given to `--summary` is written at the end through a
//!   temporary file in the same directory, created now, then renamed over it: a reader never
//!   sees half a summary, and an unwritable directory is found before the run.
//! - Anything else that is not a regular file (a character device such as `/dev/null`, a FIFO)
//!   is opened now and written in place at the end.
//! - On Windows (no `/proc`, no FIFOs under a path) a path is a file: the summary's rename
//!   replaces it, waiting out (up to 2 s) a reader that holds it open without sharing it for
//!   deletion, as NTFS refuses a replace meanwhile ([`crate::os::replace_file`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::os::{is_fifo, open_stream};

/// Where a path leads once its symbolic links are followed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resolved {
    /// The path with every symbolic link resolved (its last part may not exist yet).
    path: PathBuf,
    /// It names an open file of a process (`/proc/<pid>/fd/<n>`): a stream.
    fd: bool,
}

/// Follow the links of `path` (at most 40), directory by directory.
fn resolve(path: &Path) -> io::Result<Resolved> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let Some(name) = p.file_name().map(ToOwned::to_owned) else {
            return Ok(Resolved { path: p, fd: false });
        };
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let dir = std::fs::canonicalize(parent)?;
        let full = dir.join(name);
        // `/proc/<pid>/fd/<n>` entries are links to open files, some of which (pipes, sockets)
        // have no path: never follow them further.
        if dir.starts_with("/proc") && dir.file_name().is_some_and(|n| n == "fd") {
            return Ok(Resolved {
                path: full,
                fd: true,
            });
        }
        match std::fs::symlink_metadata(&full) {
            Ok(m) if m.file_type().is_symlink() => p = dir.join(std::fs::read_link(&full)?),
            _ => {
                return Ok(Resolved {
                    path: full,
                    fd: false,
                })
            }
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Open the process's open file `fd_path` (`/proc/<pid>/fd/<n>`) to write where it writes:
/// our own stdout and stderr are shared (same offset: after what the run printed), another is
/// opened for appending (never truncated).
fn open_fd(fd_path: &Path) -> io::Result<File> {
    let ours = PathBuf::from(format!("/proc/{}/fd", std::process::id()));
    if fd_path.parent() == Some(ours.as_path()) {
        let name = fd_path.file_name().and_then(|n| n.to_str());
        let shared = match name {
            Some("1") => Some(crate::os::dup_stdout()?),
            Some("2") => Some(crate::os::dup_stderr()?),
            _ => None,
        };
        if let Some(file) = shared {
            return Ok(file);
        }
    }
    open_stream(fd_path, true)
}

/// Open `path` for writing: through its links; a stream (see the module) in place; a regular
/// file created or truncated; a FIFO must have a reader.
pub fn create(path: &Path) -> io::Result<File> {
    let r = resolve(path)?;
    if r.fd {
        return open_fd(&r.path);
    }
    match std::fs::metadata(&r.path) {
        Ok(m) if m.is_dir() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is a directory",
        )),
        Ok(m) if is_fifo(&m) => open_stream(&r.path, false),
        _ => File::create(&r.path),
    }
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
        // Through the links: the target is replaced, never the link (`--summary /dev/stdout`
        // must not replace `/dev/stdout`).
        let r = resolve(path)?;
        if r.fd {
            return open_fd(&r.path).map(SummaryTarget::Direct);
        }
        let path = r.path;
        match std::fs::metadata(&path) {
            Ok(m) if !m.is_file() => {
                return create(&path).map(SummaryTarget::Direct);
            }
            // An existing file must be writable, as it would be without the rename.
            Ok(_) => drop(OpenOptions::new().append(true).open(&path)?),
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
            path: path.clone(),
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
                crate::os::replace_file(tmp, path)?;
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

    #[cfg(unix)]
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

    #[cfg(unix)]
    #[test]
    fn links_are_followed_and_their_targets_written_never_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.json");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        // A chain of links, and one through a linked directory.
        let link2 = dir.path().join("link2.json");
        std::os::unix::fs::symlink(&link, &link2).unwrap();
        let sub = dir.path().join("sub");
        std::os::unix::fs::symlink(dir.path(), &sub).unwrap();
        for (i, p) in [&link, &link2, &sub.join("link.json")]
            .into_iter()
            .enumerate()
        {
            SummaryTarget::open(p)
                .unwrap()
                .write(&format!("{{\"n\":{i}}}\n"))
                .unwrap();
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(
                std::fs::read_to_string(&target).unwrap(),
                format!("{{\"n\":{i}}}\n")
            );
        }
        // A dangling link: its target is created.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink("new.json", &dangling).unwrap();
        SummaryTarget::open(&dangling)
            .unwrap()
            .write("x\n")
            .unwrap();
        assert!(std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("new.json")).unwrap(),
            "x\n"
        );
        // `--record` too.
        let mut f = create(&link2).unwrap();
        f.write_all(b"rec\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "rec\n");
        assert!(std::fs::symlink_metadata(&link2)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[cfg(unix)]
    #[test]
    fn a_process_open_file_is_a_stream_appended_never_replaced() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, "before\n").unwrap();
        let held = OpenOptions::new().append(true).open(&path).unwrap();
        let fd = held.as_raw_fd();
        for p in [format!("/dev/fd/{fd}"), format!("/proc/self/fd/{fd}")] {
            let r = resolve(Path::new(&p)).unwrap();
            assert!(r.fd, "{p}: {r:?}");
            SummaryTarget::open(Path::new(&p))
                .unwrap()
                .write("s\n")
                .unwrap();
        }
        let mut f = create(Path::new(&format!("/dev/fd/{fd}"))).unwrap();
        f.write_all(b"r\n").unwrap();
        // Appended each time; the file is the same inode, no temporary left.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "before\ns\ns\nr\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // `/dev/stdout` is our stdout, whatever it is, and is never replaced.
        let r = resolve(Path::new("/dev/stdout")).unwrap();
        assert!(r.fd, "{r:?}");
        assert!(std::fs::symlink_metadata("/dev/stdout")
            .unwrap()
            .file_type()
            .is_symlink());
        // A character device is a stream too.
        assert!(matches!(
            SummaryTarget::open(Path::new("/dev/null")).unwrap(),
            SummaryTarget::Direct(_)
        ));
    }
}
