//! Opening the files the audit and `agent-watchdog replay` read: regular files only (a
//! character device or a FIFO may never end); the lines are read by the core's
//! [`Lines`](watchdog_host::capture::lines::Lines).

use std::fs::File;
use std::io;
use std::path::Path;

/// Why a path cannot be read as a file.
pub fn refuse_special(path: &Path) -> io::Result<()> {
    let ft = std::fs::metadata(path)?.file_type();
    let what = if ft.is_dir() {
        "a folder"
    } else if let Some(what) = device_kind(ft) {
        what
    } else {
        return Ok(());
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {what}, not a file (to read it anyway, pass it on standard input as `-`)"),
    ))
}

/// A device, FIFO or socket (Unix), which may never end; `None` otherwise (and on Windows,
/// whose file metadata tells none of them apart).
#[cfg(unix)]
fn device_kind(ft: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_fifo() {
        Some("a FIFO")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

#[cfg(not(unix))]
fn device_kind(_: std::fs::FileType) -> Option<&'static str> {
    None
}

/// Open `path` for reading, refusing what is not a regular file (see [`refuse_special`]).
pub fn open(path: &Path) -> io::Result<File> {
    refuse_special(path)?;
    File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused() {
        let e = open(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        assert!(e.to_string().contains("`-`"), "{e}");
        let e = open(Path::new("/nonexistent/x")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
