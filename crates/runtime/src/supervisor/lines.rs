//! Reading a pipe as lines, with a maximum line length and nothing lost.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line (or one piece of an over-long line) read from a child's stdout or stderr.
///
/// Writing `bytes`, then `\n` when [`Line::newline`] is true, for every `Line` in order,
/// reproduces the stream byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The bytes of the line, without its `\n` (a `\r` before it is kept).
    pub bytes: Vec<u8>,
    /// Whether a `\n` ended these bytes in the stream. False for the last line of a stream
    /// that did not end with a newline, and for the pieces of an over-long line before its last.
    pub newline: bool,
    /// True when this is a piece of an over-long line (longer than the maximum) and more of
    /// the same line follows in the next `Line`.
    pub continues: bool,
}

/// Splits an async reader into [`Line`]s of at most `max` bytes.
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::new(),
            max: max.max(1),
        }
    }

    /// The next line, `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let avail = self.inner.fill_buf().await?;
            if avail.is_empty() {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(self.take(false, false)));
            }
            let room = self.max - self.buf.len();
            let window = &avail[..avail.len().min(room)];
            if let Some(i) = window.iter().position(|&b| b == b'\n') {
                self.buf.extend_from_slice(&window[..i]);
                self.inner.consume(i + 1);
                return Ok(Some(self.take(true, false)));
            }
            let n = window.len();
            self.buf.extend_from_slice(window);
            self.inner.consume(n);
            if self.buf.len() >= self.max {
                // Exactly `max` bytes so far: a newline right after means the line fits.
                let next = self.inner.fill_buf().await?;
                return Ok(Some(match next.first() {
                    None => self.take(false, false),
                    Some(b'\n') => {
                        self.inner.consume(1);
                        self.take(true, false)
                    }
                    Some(_) => self.take(false, true),
                }));
            }
        }
    }

    fn take(&mut self, newline: bool, continues: bool) -> Line {
        Line {
            bytes: std::mem::take(&mut self.buf),
            newline,
            continues,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn split(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = LineReader::new(tokio::io::BufReader::with_capacity(3, input), max);
        let mut out = Vec::new();
        while let Some(l) = r.next().await.unwrap() {
            out.push(l);
        }
        out
    }

    fn join(lines: &[Line]) -> Vec<u8> {
        let mut v = Vec::new();
        for l in lines {
            v.extend_from_slice(&l.bytes);
            if l.newline {
                v.push(b'\n');
            }
        }
        v
    }

    #[tokio::test]
    async fn splits_and_round_trips() {
        for input in [
            &b""[..],
            b"\n",
            b"a\nbb\n",
            b"a\nbb",
            b"abcdef\nxy\r\n\n",
            b"abcd\nabcde\nabc",
        ] {
            for max in 1..8 {
                let lines = split(input, max).await;
                assert_eq!(join(&lines), input, "max {max}");
                for l in &lines {
                    assert!(l.bytes.len() <= max);
                }
            }
        }
    }

    #[tokio::test]
    async fn exact_max_is_not_overlong() {
        let lines = split(b"abcd\nabcde\n", 4).await;
        assert_eq!(lines[0].bytes, b"abcd");
        assert!(lines[0].newline && !lines[0].continues);
        assert_eq!(lines[1].bytes, b"abcd");
        assert!(lines[1].continues && !lines[1].newline);
        assert_eq!(lines[2].bytes, b"e");
        assert!(lines[2].newline && !lines[2].continues);
    }

    #[tokio::test]
    async fn last_line_without_newline() {
        let lines = split(b"x\ny", 10).await;
        assert_eq!(lines.len(), 2);
        assert!(lines[0].newline);
        assert!(!lines[1].newline);
    }
}
