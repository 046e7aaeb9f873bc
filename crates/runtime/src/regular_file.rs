//! Reading a file that must be a plain file: see [`open_regular`].
//!
//! Markers, hook inputs and configs are small regular files. A path that names anything else
//! (a FIFO, `/dev/zero`, a directory, a symlink to a device) must neither hang the reader (a FIFO
//! with no writer blocks `open(2)`), nor exhaust its memory (`/dev/zero` never ends), nor be
//! consumed (a pipe another process must read): it is refused with an error that says what it is.

use std::fs::{File, FileType};
use std::io::{self, Read};
use std::path::Path;

/// What a file type is, for an error message (`"a FIFO"`, …); `None` for a regular file.
pub fn special_kind(ft: FileType) -> Option<&'static str> {
    if ft.is_file() {
        return None;
    }
    if ft.is_dir() {
        return Some("a directory");
    }
    if ft.is_symlink() {
        return Some("a symbolic link");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return Some("a FIFO");
        }
        if ft.is_char_device() {
            return Some("a character device");
        }
        if ft.is_block_device() {
            return Some("a block device");
        }
        if ft.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

fn refuse(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: it is {what}, not a regular file", path.display()),
    )
}

/// Open `path` for reading if, and only if, it is a regular file.
///
/// The type is checked before the open (so a FIFO or a device is never opened: opening one can
/// block or have effects), the open itself never blocks (`O_NONBLOCK`, `O_NOCTTY`) and does not
/// follow a final symbolic link unless `follow_links` (`O_NOFOLLOW`), and the type is checked
/// again on the open file (the path may have been replaced in between).
///
/// # Errors
///
/// The OS error (a missing file keeps [`io::ErrorKind::NotFound`]), or
/// [`io::ErrorKind::InvalidInput`] naming what the path is when it is not a regular file.
///
/// ```
/// use agent_sdk_watchdog::open_regular;
/// let err = open_regular(std::path::Path::new("/dev/zero"), true).unwrap_err();
/// assert!(err.to_string().contains("a character device"), "{err}");
/// ```
pub fn open_regular(path: &Path, follow_links: bool) -> io::Result<File> {
    let meta = if follow_links {
        std::fs::metadata(path)?
    } else {
        std::fs::symlink_metadata(path)?
    };
    if let Some(what) = special_kind(meta.file_type()) {
        return Err(refuse(path, what));
    }
    let file = open_nonblocking(path, follow_links)?;
    if let Some(what) = special_kind(file.metadata()?.file_type()) {
        return Err(refuse(path, what));
    }
    Ok(file)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path, follow_links: bool) -> io::Result<File> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = OFlags::NONBLOCK | OFlags::NOCTTY;
    if !follow_links {
        flags |= OFlags::NOFOLLOW;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .map_err(|e| {
            if !follow_links && e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                refuse(path, "a symbolic link")
            } else {
                e
            }
        })
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path, _follow_links: bool) -> io::Result<File> {
    File::open(path)
}

/// The whole of the regular file `path` ([`open_regular`]), if it holds at most `max_bytes`.
///
/// # Errors
///
/// Those of [`open_regular`] and of reading, or [`io::ErrorKind::InvalidData`] when the file
/// is larger than `max_bytes` (never more than `max_bytes + 1` bytes are read).
pub fn read_regular(path: &Path, max_bytes: u64, follow_links: bool) -> io::Result<Vec<u8>> {
    let file = open_regular(path, follow_links)?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: larger than {max_bytes} bytes", path.display()),
        ));
    }
    Ok(bytes)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            path,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
    }

    #[test]
    fn only_regular_files_are_opened_and_nothing_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let link_to_zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link_to_zero).unwrap();
        let cases: [(&Path, bool, &str); 6] = [
            (&fifo, true, "a FIFO"),
            (Path::new("/dev/zero"), true, "a character device"),
            (Path::new("/dev/urandom"), false, "a character device"),
            (dir.path(), true, "a directory"),
            (&link_to_zero, true, "a character device"),
            (&link_to_zero, false, "a symbolic link"),
        ];
        for (path, follow, what) in cases {
            let err = read_regular(path, 1 << 20, follow).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{path:?}: {err}");
            assert!(err.to_string().contains(what), "{path:?}: {err}");
        }
        let missing = read_regular(&dir.path().join("missing"), 10, true).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_regular_file_is_read_up_to_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_regular(&path, 10, false).unwrap(), b"0123456789");
        let err = read_regular(&path, 9, false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("larger than 9 bytes"), "{err}");
        // A link to a regular file is read when links are followed.
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(read_regular(&link, 10, true).unwrap(), b"0123456789");
        assert!(read_regular(&link, 10, false).is_err());
    }
}
