//! Reading a pipe as lines, with a maximum line length and nothing lost: one splitter for both
//! pipes ([`Splitter`]); stdout's lines go out in batches of the lines that arrived together
//! ([`StdoutBatch`]), stderr's one at a time.

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use watchdog_core::Class;

/// How many bytes of child output may wait for the caller before the readers stop reading (the
/// child then waits on its pipe): bounded memory whatever the child prints. Four batches of a
/// full 1 MiB pipe: enough for the reader to run ahead of the caller, small enough that a fast
/// child keeps `run` under 16 MB (8 MiB peaked at 16-28 MB on a loaded machine).
pub(crate) const OUTPUT_BUDGET: usize = 4 << 20;

/// How much stdout is read at once, and the pipe size asked for: a fast child's lines come in
/// batches of up to this size, with one clock reading, one lock and one message each.
pub(crate) const CHUNK: usize = 1 << 20;

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

/// One line (or piece of an over-long line) of a [`StdoutBatch`]: where it is, and what the
/// supervisor made of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LineMeta {
    /// Offset of the line's first byte in [`StdoutBatch::bytes`].
    pub start: usize,
    /// Length of the line, without its `\n`.
    pub len: usize,
    /// Whether a `\n` follows the line in the stream (see [`Line::newline`]).
    pub newline: bool,
    /// More of the same over-long line follows (see [`Line::continues`]).
    pub continues: bool,
    /// A piece of an over-long line (any piece, the last one too). Pieces are keep-alives and
    /// were not parsed.
    pub piece: bool,
    /// The class the policy gave the line ([`Class::UNPARSEABLE`] for a piece).
    pub class: Class,
    /// The line parsed and has no `parent_tool_use_id` (not a subagent's line).
    pub top_level: bool,
}

impl LineMeta {
    /// The metadata of one line before the policy saw it.
    pub(crate) fn new(start: usize, len: usize, newline: bool, continues: bool) -> Self {
        LineMeta {
            start,
            len,
            newline,
            continues,
            piece: false,
            class: Class::UNPARSEABLE,
            top_level: false,
        }
    }

    /// The line, copied out of `buf` (the bytes the metadata was found in).
    pub(crate) fn line_in(&self, buf: &[u8]) -> Line {
        Line {
            bytes: buf[self.start..self.start + self.len].to_vec(),
            newline: self.newline,
            continues: self.continues,
        }
    }
}

/// Stdout lines that were read together, in order: their bytes, contiguous and exactly as in
/// the stream (newlines included, so one `write` passes them on), and per-line metadata.
#[derive(Debug, Clone)]
pub struct StdoutBatch {
    pub(crate) bytes: Vec<u8>,
    pub(crate) lines: Vec<LineMeta>,
    pub(crate) at: Instant,
    /// Where the bytes' buffer goes back to when the caller drops the batch.
    pub(crate) recycle: Option<Arc<Recycle>>,
}

impl PartialEq for StdoutBatch {
    fn eq(&self, other: &Self) -> bool {
        (&self.bytes, &self.lines, self.at) == (&other.bytes, &other.lines, other.at)
    }
}

impl Eq for StdoutBatch {}

impl Drop for StdoutBatch {
    fn drop(&mut self) {
        if let Some(r) = self.recycle.take() {
            r.put(std::mem::take(&mut self.bytes));
        }
    }
}

/// Large batch buffers the caller is done with, for the stdout reader to fill again: a child
/// that prints fast then reuses the same few buffers instead of the allocator handing out (and
/// keeping) a fresh 1 MiB buffer per read, from whichever thread's heap the reader ran on.
#[derive(Debug, Default)]
pub(crate) struct Recycle(std::sync::Mutex<Vec<Vec<u8>>>);

impl Recycle {
    /// Buffers kept for reuse at most: as many as the output budget holds, plus the one the
    /// caller writes and the one the reader fills, so a steady flood allocates nothing.
    const KEEP: usize = OUTPUT_BUDGET / CHUNK + 2;

    /// Keep `buf` for reuse if it is a reader's buffer (`min..=2 × min` bytes of capacity) and
    /// there is room.
    pub(crate) fn put(&self, mut buf: Vec<u8>) {
        let min = Recycle::min();
        if !(min..=2 * min).contains(&buf.capacity()) {
            return;
        }
        buf.clear();
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() < Recycle::KEEP {
            kept.push(buf);
        }
    }

    /// An empty buffer of at least `at_least` bytes of capacity, if one was given back.
    pub(crate) fn take(&self, at_least: usize) -> Option<Vec<u8>> {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let i = kept.iter().position(|b| b.capacity() >= at_least)?;
        Some(kept.swap_remove(i))
    }

    fn min() -> usize {
        CHUNK
    }
}

impl StdoutBatch {
    /// The stream's bytes: writing them for every batch in order reproduces stdout exactly.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    /// The lines, in order.
    pub fn lines(&self) -> &[LineMeta] {
        &self.lines
    }
    /// The bytes of one line of this batch, without its `\n`.
    pub fn line(&self, meta: &LineMeta) -> &[u8] {
        self.bytes
            .get(meta.start..meta.start + meta.len)
            .unwrap_or_default()
    }
    /// When the lines were read: the instant the policy observed them at.
    pub fn at(&self) -> Instant {
        self.at
    }
    /// Drop the first `n` lines (they were handed out one by one).
    pub(crate) fn drop_front(&mut self, n: usize) {
        let cut = match self.lines.get(n) {
            Some(m) => m.start,
            None => self.bytes.len(),
        };
        self.bytes.drain(..cut);
        self.lines.drain(..n.min(self.lines.len()));
        for m in &mut self.lines {
            m.start -= cut;
        }
    }
    /// The `i`th line as an owned [`Line`].
    pub(crate) fn to_line(&self, i: usize) -> Option<Line> {
        Some(self.lines.get(i)?.line_in(&self.bytes))
    }
}

/// The one line splitter of both pipes: what it knows of the bytes not yet taken between
/// two calls.
#[derive(Debug, Default)]
pub(crate) struct Splitter {
    /// The line being read is over-long (an earlier piece was cut).
    in_long: bool,
    /// Bytes at the front of the next call's `buf` already searched for a newline in vain: a
    /// long line arriving a read at a time is searched once, not once a read.
    searched: usize,
}

impl Splitter {
    /// Finds the complete lines (and pieces of over-long lines) at the front of `buf`: appends
    /// their metadata to `lines` and returns how many bytes they take; the caller keeps the
    /// rest at the front of the next call's `buf`. `eof`: nothing more will come, so what
    /// remains is a last line without a newline. `max` ≥ 1 (the supervisor's `max_line` is a
    /// `NonZeroUsize`).
    pub(crate) fn split(
        &mut self,
        buf: &[u8],
        max: usize,
        eof: bool,
        lines: &mut Vec<LineMeta>,
    ) -> usize {
        let mut pos = 0;
        let mut searched = std::mem::take(&mut self.searched);
        loop {
            let rest = &buf[pos..];
            // A newline right after `max` bytes still ends a line that fits.
            let window = &rest[..rest.len().min(max.saturating_add(1))];
            let from = std::mem::take(&mut searched).min(window.len());
            let found = memchr::memchr(b'\n', &window[from..]).map(|i| from + i);
            let (len, newline, continues) = match found {
                Some(i) => (i, true, false),
                None if rest.len() > max => (max, false, true),
                None if eof && !rest.is_empty() => (rest.len(), false, false),
                None => {
                    // `rest` fits in the window and holds no newline.
                    self.searched = rest.len();
                    return pos;
                }
            };
            let mut m = LineMeta::new(pos, len, newline, continues);
            m.piece = self.in_long || continues;
            self.in_long = continues;
            lines.push(m);
            pos += len + usize::from(newline);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Splitter::split`] over `input` fed in pieces of `step` bytes, as a pipe delivers it.
    fn split_fed(input: &[u8], max: usize, step: usize) -> Vec<Line> {
        let (mut buf, mut out, mut splitter) = (Vec::new(), Vec::new(), Splitter::default());
        let mut fed = 0;
        loop {
            let end = (fed + step).min(input.len());
            buf.extend_from_slice(&input[fed..end]);
            fed = end;
            let eof = fed == input.len();
            let mut metas = Vec::new();
            let used = splitter.split(&buf, max, eof, &mut metas);
            out.extend(metas.iter().map(|m| m.line_in(&buf)));
            buf.drain(..used);
            if eof {
                assert!(buf.is_empty());
                return out;
            }
        }
    }

    /// The lines of `input`, the same however the pipe cut it.
    fn split(input: &[u8], max: usize) -> Vec<Line> {
        let whole = split_fed(input, max, input.len().max(1));
        for step in 1..5 {
            assert_eq!(split_fed(input, max, step), whole, "max {max} step {step}");
        }
        whole
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

    /// Streams to split: empty, newlines only, a last line with and without its newline, a
    /// `\r`, lines at and over the maximum.
    const INPUTS: [&[u8]; 7] = [
        b"",
        b"\n",
        b"a\nbb\n",
        b"a\nbb",
        b"abcdef\nxy\r\n\n",
        b"abcd\nabcde\nabc",
        b"abcdefghij\n\nabcd",
    ];

    #[test]
    fn splits_and_round_trips() {
        for &input in &INPUTS {
            for max in 1..8 {
                let lines = split(input, max);
                assert_eq!(join(&lines), input, "max {max}");
                for l in &lines {
                    assert!(l.bytes.len() <= max);
                }
            }
        }
    }

    #[test]
    fn exact_max_is_not_overlong() {
        let lines = split(b"abcd\nabcde\n", 4);
        assert_eq!(lines[0].bytes, b"abcd");
        assert!(lines[0].newline && !lines[0].continues);
        assert_eq!(lines[1].bytes, b"abcd");
        assert!(lines[1].continues && !lines[1].newline);
        assert_eq!(lines[2].bytes, b"e");
        assert!(lines[2].newline && !lines[2].continues);
    }

    #[test]
    fn pieces_are_marked() {
        let mut lines = Vec::new();
        let used = Splitter::default().split(b"abcdefghij\nxy\n", 4, false, &mut lines);
        assert_eq!(used, 14);
        let p: Vec<_> = lines
            .iter()
            .map(|m| (m.len, m.piece, m.continues))
            .collect();
        assert_eq!(
            p,
            [
                (4, true, true),
                (4, true, true),
                (2, true, false),
                (2, false, false)
            ]
        );
    }

    #[test]
    fn a_dropped_batch_gives_its_buffer_back() {
        let chunk = super::CHUNK;
        let recycle = Arc::new(Recycle::default());
        let mut bytes = Vec::with_capacity(chunk);
        bytes.extend_from_slice(b"a\n");
        let batch = StdoutBatch {
            bytes,
            lines: Vec::new(),
            at: Instant::now(),
            recycle: Some(recycle.clone()),
        };
        assert_eq!(batch.clone(), batch, "the recycler is not part of equality");
        drop(batch);
        let again = recycle.take(chunk).expect("the buffer came back");
        assert!(again.is_empty() && again.capacity() >= chunk);
        assert!(recycle.take(1).is_none(), "given out once");
        // Small buffers and more than the pool keeps are dropped.
        recycle.put(Vec::with_capacity(16));
        assert!(recycle.take(1).is_none());
        for _ in 0..Recycle::KEEP + 3 {
            recycle.put(Vec::with_capacity(chunk));
        }
        assert_eq!(recycle.0.lock().unwrap().len(), Recycle::KEEP);
    }

    #[test]
    fn last_line_without_newline() {
        let lines = split(b"x\ny", 10);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].newline);
        assert!(!lines[1].newline);
    }
}
