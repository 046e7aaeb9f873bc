//! Reading a capture, a transcript (or any JSON Lines file) line by line in bounded memory,
//! from any [`Read`]: the one reader of `agent-watchdog replay` and the audit.
//!
//! - Lines are handed out in place from one buffer; nothing is kept.
//! - A line longer than [`MAX_LINE`] (64 MiB, the same cap as `run`'s) is not buffered: its
//!   bytes are counted and dropped up to its newline, and it comes out as
//!   [`Item::Overlong`]. A file without any newline (`/dev/zero`) therefore costs at most
//!   about 64 MiB of memory, never more.
//! - A UTF-8 byte order mark at the start of the file is skipped.
//!
//! Opening files is the host's: the audit's `watchdog_audit::files::open` refuses character
//! devices and FIFOs (they may never end).

use std::io::{self, Read};

use watchdog_core::config::MAX_LINE;

/// The most read at once, and the buffer's growth step past the cap.
const CHUNK: usize = 1 << 20;
/// The buffer's first size: small files (most transcripts) need no more.
const FIRST: usize = 64 << 10;
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One line of the input.
#[derive(Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// A line (without its newline), with its 1-based number.
    Line {
        /// Its 1-based number.
        n: u64,
        /// Its bytes, without the newline.
        line: &'a [u8],
        /// Whether it ended with a newline (only the last line of a file may not).
        newline: bool,
    },
    /// A line longer than the cap, dropped: its number and its length in bytes.
    Overlong(u64, u64),
}

/// Splits a reader into lines (see the module docs).
#[derive(Debug)]
pub struct Lines<R> {
    r: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    line: u64,
    max_line: usize,
    /// Bytes of an over-long line dropped so far, while inside one.
    skipping: Option<u64>,
    at_start: bool,
    eof: bool,
    /// Bytes read in all.
    pub bytes: u64,
}

impl<R: Read> Lines<R> {
    /// Lines of `r`, capped at [`MAX_LINE`].
    pub fn new(r: R) -> Self {
        Self::with_max_line(r, MAX_LINE)
    }

    /// Lines of `r`, capped at `max_line` bytes.
    pub fn with_max_line(r: R, max_line: usize) -> Self {
        Lines {
            r,
            buf: Vec::new(),
            start: 0,
            end: 0,
            line: 0,
            max_line: max_line.max(1),
            skipping: None,
            at_start: true,
            eof: false,
            bytes: 0,
        }
    }

    /// Lines of `r` read through `buf` (its contents are ignored; its allocation is reused, see
    /// [`Lines::into_buffer`]), capped at [`MAX_LINE`].
    pub fn with_buffer(r: R, mut buf: Vec<u8>) -> Self {
        buf.clear();
        let cap = buf.capacity().min(MAX_LINE + CHUNK);
        // Already zeroed memory is not zeroed again: `resize` only writes what it adds.
        buf.resize(cap, 0);
        Lines {
            buf,
            ..Self::new(r)
        }
    }

    /// The buffer, for the next file (shrunk back if an over-long line grew it).
    pub fn into_buffer(self) -> Vec<u8> {
        let mut buf = self.buf;
        if buf.len() > CHUNK {
            buf.truncate(CHUNK);
            buf.shrink_to_fit();
        }
        buf
    }

    /// The buffer's size now (for tests of the memory bound).
    pub fn buffer_len(&self) -> usize {
        self.buf.len()
    }

    /// The next line, or `None` at the end.
    pub fn next_item(&mut self) -> io::Result<Option<Item<'_>>> {
        loop {
            if let Some(p) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let (s, e) = (self.start, self.start + p);
                self.start = e + 1;
                return Ok(Some(self.emit(s, e, true)));
            }
            if self.eof {
                if self.start < self.end || self.skipping.is_some() {
                    let (s, e) = (self.start, self.end);
                    self.start = self.end;
                    return Ok(Some(self.emit(s, e, false)));
                }
                return Ok(None);
            }
            // No newline in what is buffered: drop an over-long line's bytes as they come.
            let pending = self.end - self.start;
            if self.skipping.is_some() || pending > self.max_line {
                *self.skipping.get_or_insert(0) += pending as u64;
                self.start = 0;
                self.end = 0;
            } else if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let want = (self.buf.len() * 2).clamp(FIRST, self.max_line + CHUNK);
                let grown = want.max(self.end + 1);
                self.buf.resize(grown, 0);
            }
            let n = match self.r.read(&mut self.buf[self.end..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
            }
            self.end += n;
            self.bytes += n as u64;
        }
    }

    fn emit(&mut self, s: usize, e: usize, newline: bool) -> Item<'_> {
        self.line += 1;
        let mut line = &self.buf[s..e];
        if std::mem::take(&mut self.at_start) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        match self.skipping.take() {
            Some(n) => Item::Overlong(self.line, n + line.len() as u64),
            None if line.len() > self.max_line => Item::Overlong(self.line, line.len() as u64),
            None => Item::Line {
                n: self.line,
                line,
                newline,
            },
        }
    }
}

/// Whether a line holds nothing but whitespace.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8], max: usize) -> Vec<String> {
        let mut l = Lines::with_max_line(input, max);
        let mut out = Vec::new();
        while let Some(item) = l.next_item().unwrap() {
            out.push(match item {
                Item::Line { n, line, newline } => {
                    format!(
                        "{n}:{}{}",
                        String::from_utf8_lossy(line),
                        if newline { "" } else { "$" }
                    )
                }
                Item::Overlong(n, len) => format!("{n}:overlong {len}"),
            });
        }
        out
    }

    #[test]
    fn splits_lines_skips_a_bom_and_keeps_a_last_line_without_newline() {
        assert_eq!(
            collect(b"\xEF\xBB\xBF{\"a\":1}\n\nb\r\nlast", 100),
            ["1:{\"a\":1}", "2:", "3:b\r", "4:last$"]
        );
        assert_eq!(collect(b"", 100), Vec::<String>::new());
        assert_eq!(
            collect(b"x\xEF\xBB\xBF\n\xEF\xBB\xBFy", 100),
            ["1:x\u{feff}", "2:\u{feff}y$"]
        );
    }

    #[test]
    fn an_overlong_line_is_counted_and_dropped() {
        let mut input = b"short\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 5000));
        input.extend(b"\nafter\n");
        input.extend(std::iter::repeat_n(b'y', 3000));
        assert_eq!(
            collect(&input, 1000),
            ["1:short", "2:overlong 5000", "3:after", "4:overlong 3000"]
        );
    }

    /// An endless line (`/dev/zero` on stdin) keeps the buffer at the cap plus one read.
    #[test]
    fn an_endless_line_never_grows_the_buffer_past_the_cap() {
        let zeros = io::repeat(0).take(40 << 20);
        let mut l = Lines::with_max_line(zeros, 3 << 20);
        let item = l.next_item().unwrap();
        assert_eq!(item, Some(Item::Overlong(1, 40 << 20)));
        assert!(l.buffer_len() <= (3 << 20) + CHUNK, "{}", l.buffer_len());
        assert_eq!(l.next_item().unwrap(), None);
    }
}
