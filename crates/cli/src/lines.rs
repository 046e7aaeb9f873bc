//! Reading a child's pipe as lines with a maximum length, nothing lost: writing every
//! [`Line`]'s bytes, plus `\n` when [`Line::newline`], reproduces the stream byte for byte.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest stdout line handled as one line (64 MiB); longer ones come in pieces.
pub const MAX_LINE: usize = 64 << 20;

/// One line, or one piece of an over-long line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The bytes, without the `\n`.
    pub bytes: Vec<u8>,
    /// Whether a `\n` followed in the stream.
    pub newline: bool,
    /// Whether more of the same (over-long) line follows.
    pub continues: bool,
}

/// Splits an async reader into [`Line`]s of at most `max` bytes.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Read `inner` in lines of at most `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::new(),
            max: max.max(1),
        }
    }

    /// The next line; `None` at the end of the stream.
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
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

    #[test]
    fn round_trips_byte_for_byte() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for input in [
            &b""[..],
            b"\n",
            b"a\nbb\n",
            b"a\nbb",
            b"ab\xffcdef\nxy\r\n\n",
        ] {
            for max in 1..8 {
                let lines = rt.block_on(split(input, max));
                let mut joined = Vec::new();
                for l in &lines {
                    assert!(l.bytes.len() <= max);
                    joined.extend_from_slice(&l.bytes);
                    if l.newline {
                        joined.push(b'\n');
                    }
                }
                assert_eq!(joined, input, "max {max}");
            }
        }
    }
}
