//! The host's stdin: forwarded line by line to the first run's child, or not piped at all.
//!
//! On a terminal, a command that does not read stream-json input gets `/dev/null` (in its own
//! process group it could not read the terminal anyway, and `claude -p` would wait 3 s for
//! input that never comes): a supervised start is as fast as a direct one.

use std::ffi::OsString;
use std::io::IsTerminal;

use tokio::sync::mpsc;

/// Whether the command line asks `claude` to read stream-json on stdin.
/// (The core's rule, which a replay applies to the capture's `start` too.)
pub(crate) fn has_stream_json_input(argv: &[OsString]) -> bool {
    watchdog_host::claude_code::session::reads_stream_json_input(
        argv.iter().map(|a| a.to_string_lossy()),
    )
}

/// Whether the host's stdin is worth piping to the child: not when it is a terminal and the
/// command does not read stream-json input.
pub(crate) fn should_pipe(argv: &[OsString]) -> bool {
    has_stream_json_input(argv) || !std::io::stdin().is_terminal()
}

/// What the reader thread hands to [`forward`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HostInput {
    /// A whole line (its newline included; the last line of the input may have none).
    Line(Vec<u8>),
    /// Bytes of a line longer than the cap ([`MAX_STDIN_LINE`]): passed on as they come, never
    /// held whole.
    Overlong(Vec<u8>),
    /// The over-long line ended (its newline was in the last [`HostInput::Overlong`], or the
    /// input ended): how many bytes it had.
    OverlongEnd(u64),
    /// The host's stdin ended (or failed).
    End,
}

/// The host's stdin as [`spawn_reader`] delivers it.
pub(crate) type HostStdin = mpsc::Receiver<HostInput>;

/// The longest stdin line held whole (to write it at once and record it): the longest stdout
/// line, [`watchdog_core::config::MAX_LINE`]. A longer one is passed on in pieces and
/// recorded as a note: memory stays bounded whatever the host sends (`run < /dev/zero`).
pub(crate) const MAX_STDIN_LINE: usize = watchdog_core::config::MAX_LINE;

/// Read the host's stdin on a thread, line by line, never holding more than one line of at most
/// [`MAX_STDIN_LINE`] bytes (and the channel's few messages).
pub(crate) fn spawn_reader() -> HostStdin {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        read_lines(stdin.lock(), MAX_STDIN_LINE, |m| {
            tx.blocking_send(m).is_ok()
        });
    });
    rx
}

/// Split `input` into [`HostInput`]s (lines up to `max_line` bytes, without the newline, whole;
/// longer ones in pieces), handing each to `send` until it returns `false` or the input ends.
pub(crate) fn read_lines(
    mut input: impl std::io::BufRead,
    max_line: usize,
    mut send: impl FnMut(HostInput) -> bool,
) {
    let mut line: Vec<u8> = Vec::new();
    // The bytes so far of the over-long line being passed on, if any.
    let mut overlong: Option<u64> = None;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A read error ends the input, as its end does.
            Err(_) => &[][..],
        };
        if chunk.is_empty() {
            let last = match overlong {
                Some(n) => Some(HostInput::OverlongEnd(n)),
                None => (!line.is_empty()).then(|| HostInput::Line(std::mem::take(&mut line))),
            };
            if let Some(m) = last {
                if !send(m) {
                    return;
                }
            }
            send(HostInput::End);
            return;
        }
        let newline = memchr::memchr(b'\n', chunk);
        let take = newline.map_or(chunk.len(), |i| i + 1);
        let part = &chunk[..take];
        let mut out: Vec<HostInput> = Vec::with_capacity(2);
        match overlong.as_mut() {
            Some(n) => {
                *n += take as u64;
                out.push(HostInput::Overlong(part.to_vec()));
                if newline.is_some() {
                    out.push(HostInput::OverlongEnd(*n));
                    overlong = None;
                }
            }
            None if line.len() + take - usize::from(newline.is_some()) > max_line => {
                // Over the cap: what is held goes out first, then the rest as it comes.
                let mut first = std::mem::take(&mut line);
                first.extend_from_slice(part);
                let n = first.len() as u64;
                out.push(HostInput::Overlong(first));
                if newline.is_some() {
                    out.push(HostInput::OverlongEnd(n));
                } else {
                    overlong = Some(n);
                }
            }
            None => {
                line.extend_from_slice(part);
                if newline.is_some() {
                    out.push(HostInput::Line(std::mem::take(&mut line)));
                }
            }
        }
        input.consume(take);
        for m in out {
            if !send(m) {
                return;
            }
        }
    }
}

/// How many bytes of written stdin lines may wait to be recorded before the forwarding waits
/// (a line larger than this waits alone): while our stdout is blocked the run loop records
/// nothing, and stdin must not pile up meanwhile.
const RECORD_BUDGET: usize = 8 << 20;

/// One written line for the capture, holding its share of [`RECORD_BUDGET`] until taken.
type Note = (Vec<u8>, tokio::sync::OwnedSemaphorePermit);

/// The lines [`forward`] wrote, for the capture (`None`: stdin was closed).
#[derive(Debug)]
pub(crate) struct Written {
    rx: mpsc::UnboundedReceiver<Option<Note>>,
}

/// The sending side of [`Written`]: waits while [`RECORD_BUDGET`] bytes are not yet taken.
#[derive(Debug)]
struct Notes {
    tx: mpsc::UnboundedSender<Option<Note>>,
    budget: std::sync::Arc<tokio::sync::Semaphore>,
}

impl Written {
    /// The next note if one is queued now (`Ok(None)`: stdin was closed).
    pub(crate) fn try_recv(&mut self) -> Result<Option<Vec<u8>>, mpsc::error::TryRecvError> {
        self.rx
            .try_recv()
            .map(|note| note.map(|(line, _permit)| line))
    }
}

fn notes() -> (Notes, Written) {
    let (tx, rx) = mpsc::unbounded_channel();
    let budget = std::sync::Arc::new(tokio::sync::Semaphore::new(RECORD_BUDGET));
    (Notes { tx, budget }, Written { rx })
}

impl Notes {
    /// Queue `line` for the capture once the budget has room; `false` if nobody takes it.
    async fn send(&self, line: Vec<u8>) -> bool {
        let cost = line.len().clamp(1, RECORD_BUDGET) as u32;
        let Ok(permit) = self.budget.clone().acquire_many_owned(cost).await else {
            return false;
        };
        self.tx.send(Some((line, permit))).is_ok()
    }

    fn closed(&self) {
        let _ = self.tx.send(None);
    }
}

/// Forward the host's stdin to the child (in order; its end closes the child's stdin) and
/// report what was written, for the capture (an over-long line as a note, never whole).
pub(crate) fn forward(
    mut host_stdin: HostStdin,
    writer: agent_sdk_watchdog::StdinWriter,
) -> Written {
    let (notes, written) = notes();
    tokio::spawn(async move {
        while let Some(input) = host_stdin.recv().await {
            let (result, note) = match input {
                HostInput::Line(line) => {
                    let w = writer.write_line(&line).await;
                    (w, Some(line))
                }
                HostInput::Overlong(bytes) => (writer.write_raw(&bytes).await, None),
                HostInput::OverlongEnd(n) => (Ok(()), Some(overlong_note(n))),
                HostInput::End => break,
            };
            if result.is_err() {
                break;
            }
            if let Some(note) = note {
                if !notes.send(note).await {
                    return;
                }
            }
        }
        writer.close().await;
        notes.closed();
    });
    written
}

/// What the capture records for a stdin line over the cap.
fn overlong_note(bytes: u64) -> Vec<u8> {
    serde_json::json!({
        "note": format!(
            "stdin line over the {} MiB cap: passed on, not recorded",
            MAX_STDIN_LINE >> 20
        ),
        "bytes": bytes,
    })
    .to_string()
    .into_bytes()
}

/// The next line forwarded (pending forever once there are no more).
pub(crate) async fn recv_written(rx: &mut Option<Written>) -> Option<Vec<u8>> {
    match rx {
        // The line's share of the budget is given back as it is taken.
        Some(w) => w.rx.recv().await.flatten().map(|(line, _permit)| line),
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn split(input: impl std::io::BufRead, max: usize) -> Vec<HostInput> {
        let mut out = Vec::new();
        read_lines(input, max, |m| {
            out.push(m);
            true
        });
        out
    }

    #[test]
    fn lines_up_to_the_cap_are_whole_and_longer_ones_pass_in_pieces() {
        use HostInput::*;
        let input = b"ab\n1234567\ncd\n123456789\nlast".to_vec();
        // A reader of 4-byte reads: lines cross reads.
        let r = std::io::BufReader::with_capacity(4, &input[..]);
        let got = split(r, 7);
        let pieces: Vec<u8> = got
            .iter()
            .flat_map(|m| match m {
                Line(b) | Overlong(b) => b.clone(),
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(pieces, input, "every byte passes, in order");
        assert_eq!(got[0], Line(b"ab\n".to_vec()));
        assert_eq!(got[1], Line(b"1234567\n".to_vec()), "at the cap: whole");
        assert_eq!(got[2], Line(b"cd\n".to_vec()));
        assert!(matches!(got[3], Overlong(_)));
        let end = got.iter().position(|m| *m == OverlongEnd(10)).unwrap();
        assert_eq!(got[end + 1], Line(b"last".to_vec()));
        assert_eq!(got.last(), Some(&End));
    }

    #[test]
    fn an_endless_line_is_passed_on_in_bounded_pieces() {
        let zeros = std::io::BufReader::new(std::io::repeat(0).take(50 << 20));
        let mut biggest = 0;
        let mut total = 0u64;
        let mut ends = Vec::new();
        read_lines(zeros, 1 << 20, |m| {
            match m {
                HostInput::Overlong(b) => {
                    biggest = biggest.max(b.len());
                    total += b.len() as u64;
                }
                HostInput::Line(_) => panic!("never a whole line"),
                other => ends.push(other),
            }
            true
        });
        assert_eq!(total, 50 << 20);
        assert!(biggest <= (1 << 20) + 8192, "{biggest}");
        assert_eq!(ends, [HostInput::OverlongEnd(50 << 20), HostInput::End]);
    }

    /// While the run loop records nothing (our stdout blocked), written lines wait for room
    /// instead of piling up: the forwarding stops at the budget and resumes as lines are taken.
    #[test]
    fn written_lines_wait_for_the_recorder_within_the_budget() {
        use std::future::Future;
        use std::pin::pin;
        use std::task::{Context, Poll, Waker};
        let mut cx = Context::from_waker(Waker::noop());
        let (notes, written) = notes();
        let mut written = Some(written);
        let half = vec![b'x'; RECORD_BUDGET / 2];
        for _ in 0..2 {
            let send = pin!(notes.send(half.clone()));
            assert_eq!(send.poll(&mut cx), Poll::Ready(true), "within the budget");
        }
        {
            let mut third = pin!(notes.send(b"more".to_vec()));
            assert!(
                third.as_mut().poll(&mut cx).is_pending(),
                "over the budget: it waits"
            );
            let taken = pin!(recv_written(&mut written)).poll(&mut cx);
            assert_eq!(
                taken.map(|l| l.map(|l| l.len())),
                Poll::Ready(Some(half.len()))
            );
            assert_eq!(third.poll(&mut cx), Poll::Ready(true), "room again");
        }
        // A line larger than the whole budget still passes, alone.
        let _ = pin!(recv_written(&mut written)).poll(&mut cx);
        let _ = pin!(recv_written(&mut written)).poll(&mut cx);
        let big = pin!(notes.send(vec![0; RECORD_BUDGET * 2]));
        assert_eq!(big.poll(&mut cx), Poll::Ready(true));
        notes.closed();
        let taken = pin!(recv_written(&mut written)).poll(&mut cx);
        assert_eq!(
            taken.map(|l| l.map(|l| l.len())),
            Poll::Ready(Some(RECORD_BUDGET * 2))
        );
        let end = pin!(recv_written(&mut written)).poll(&mut cx);
        assert_eq!(end, Poll::Ready(None));
    }

    #[test]
    fn the_note_of_an_overlong_line_is_json_with_its_size() {
        let v: serde_json::Value = serde_json::from_slice(&overlong_note(70 << 20)).unwrap();
        assert_eq!(v["bytes"], 70 << 20);
        assert!(v["note"].as_str().unwrap().contains("64 MiB cap"));
    }
}
