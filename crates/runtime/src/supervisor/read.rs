//! The tasks that read the child's stdout and stderr: lines in batches, within the output
//! budget, fed to the policy once each.

use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore};
use watchdog_core::LineView;

use super::drain::ReaderState;
use super::hook::StdoutHook;
use super::lines::{LineMeta, Recycle, Splitter, StdoutBatch, CHUNK, OUTPUT_BUDGET};
use super::report::{Batch, Output};
use super::shared::Shared;
use super::woken::{self, Woken};
use crate::clock;

/// The budget an item takes: its bytes, capped so an item larger than the budget still passes
/// (alone).
pub(crate) fn cost(item: &Batch) -> u32 {
    let bytes = match item {
        Batch::Stdout(b) => b.bytes.len(),
        Batch::Output(Output::Stdout(l) | Output::Stderr(l)) => l.bytes.len() + 1,
        Batch::Output(_) => 0,
    };
    bytes.clamp(1, OUTPUT_BUDGET) as u32
}

/// The output channel as the readers use it: lines wait for budget, which the caller gives back
/// as it takes them ([`Supervisor::next_batch`]).
pub(super) struct Queue {
    pub(super) out: mpsc::UnboundedSender<Batch>,
    pub(super) budget: Arc<Semaphore>,
    pub(super) shared: Arc<Shared>,
}

impl Queue {
    /// Queue lines once the caller has room for them. Never waits once the caller is gone (its
    /// receiver dropped, e.g. by [`Supervisor::wait`]): the lines are dropped then. While it
    /// waits, the child is held back by the caller, not idle: the idle and no-progress clocks
    /// are paused.
    async fn send(&self, item: Batch) {
        use tokio::sync::TryAcquireError;
        let n = cost(&item);
        let permit = match self.budget.try_acquire_many(n) {
            Ok(p) => Some(p),
            Err(TryAcquireError::Closed) => None,
            Err(TryAcquireError::NoPermits) => {
                self.shared.output_blocked(clock::now());
                let permit = tokio::select! {
                    permit = self.budget.acquire_many(n) => permit.ok(),
                    () = self.out.closed() => None,
                };
                self.shared.output_unblocked(clock::now());
                permit
            }
        };
        if let Some(p) = permit {
            p.forget();
            let _ = self.out.send(item);
        }
    }
}

/// Ask for a larger stdout pipe (Linux): fewer, larger reads while a child prints fast, and
/// fewer wake-ups for both. The size is capped by the system (`fs.pipe-max-size`); failing
/// leaves the default.
fn enlarge_pipe(pipe: &tokio::process::ChildStdout) {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::pipe::fcntl_setpipe_size(pipe, CHUNK);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pipe;
}

/// The first `n` bytes of `buf`, leaving the rest in `buf` (with room for the next read). A
/// large batch moves the buffer itself out (only the incomplete line left over is copied); a
/// small one is copied out, so a quiet child's line does not pin a large buffer.
fn take_front(buf: &mut Vec<u8>, n: usize, recycle: &Recycle) -> Vec<u8> {
    if n * 2 < buf.capacity() {
        let front = buf[..n].to_vec();
        buf.drain(..n);
        front
    } else {
        let need = CHUNK.max(buf.len() - n);
        let mut rest = recycle
            .take(need)
            .unwrap_or_else(|| Vec::with_capacity(need));
        rest.extend_from_slice(&buf[n..]);
        buf.truncate(n);
        std::mem::replace(buf, rest)
    }
}

pub(super) async fn read_stdout(
    mut pipe: tokio::process::ChildStdout,
    max_line: usize,
    shared: Arc<Shared>,
    hook: Option<StdoutHook>,
    queue: Queue,
    state: Arc<ReaderState>,
) {
    enlarge_pipe(&pipe);
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    let recycle = Arc::new(Recycle::default());
    let woken = shared.input().cloned().map(Woken::new);
    let mut splitter = Splitter::default();
    loop {
        if buf.capacity() - buf.len() < CHUNK / 4 {
            buf.reserve(CHUNK);
        }
        // A read error ends the stream like its end does (what was read still goes out).
        let read = woken::read_buf(&mut pipe, &mut buf, woken.as_ref(), &state).await;
        let eof = !matches!(read, Ok(n) if n > 0);
        let mut lines = Vec::new();
        let used = splitter.split(&buf, max_line, eof, &mut lines);
        if !lines.is_empty() {
            // The lines that arrived together: one clock reading, one lock, one message. The
            // events they cause (a kill included) reach the output first, before waiting for
            // room: a full queue never delays a kill.
            let at = clock::now();
            let overlong = observe(&shared, hook.as_ref(), at, &buf[..used], &mut lines);
            for _ in 0..overlong {
                let _ = queue.out.send(Batch::Output(Output::Overlong { max_line }));
            }
            let bytes = take_front(&mut buf, used, &recycle);
            let recycle = (bytes.capacity() >= CHUNK).then(|| recycle.clone());
            queue
                .send(Batch::Stdout(StdoutBatch {
                    bytes,
                    lines,
                    at,
                    recycle,
                }))
                .await;
        }
        if eof {
            if let Some(w) = &woken {
                w.drained();
            }
            return;
        }
    }
}

/// Lines parsed, observed and shown to the hook at a time: parsing happens outside the state
/// lock, and the hook runs after the policy saw its lines, outside that lock too.
const OBSERVE_CHUNK: usize = 64;

/// Parse, observe and show to the hook the lines of one batch (`metas`, in `bytes`), in order.
/// Returns the number of over-long lines that began among them.
fn observe(
    shared: &Shared,
    hook: Option<&StdoutHook>,
    at: std::time::Instant,
    bytes: &[u8],
    metas: &mut [LineMeta],
) -> usize {
    let (mut overlong, mut panics) = (0, 0);
    let mut views = Vec::with_capacity(metas.len().min(OBSERVE_CHUNK));
    for chunk in metas.chunks_mut(OBSERVE_CHUNK) {
        views.clear();
        views.extend(chunk.iter().map(|m| match m.piece {
            // A piece of an over-long line is a keep-alive: not parsed, however huge.
            true => None,
            false => LineView::parse(bytes.get(m.start..m.start + m.len).unwrap_or_default()).ok(),
        }));
        let (first, n) = shared.observe_stdout(at, chunk, &views);
        overlong += n;
        if let Some(hook) = hook {
            panics += hook.call(bytes, at, first, chunk, &views);
        }
    }
    if panics > 0 {
        shared.hook_panicked(panics);
    }
    overlong
}

pub(super) async fn read_stderr(
    mut pipe: tokio::process::ChildStderr,
    max_line: usize,
    shared: Arc<Shared>,
    queue: Queue,
    state: Arc<ReaderState>,
) {
    // Split as stdout is (one splitter for both pipes); each line is sent on its own.
    let (mut buf, mut metas, mut splitter) = (Vec::new(), Vec::new(), Splitter::default());
    loop {
        buf.reserve(16 << 10);
        // A read error ends the pipe as its end would: what was read still counts.
        let read = woken::read_buf(&mut pipe, &mut buf, None, &state).await;
        let eof = !matches!(read, Ok(n) if n > 0);
        let used = splitter.split(&buf, max_line, eof, &mut metas);
        for m in metas.drain(..) {
            shared.observe_stderr();
            queue
                .send(Batch::Output(Output::Stderr(m.line_in(&buf))))
                .await;
        }
        buf.drain(..used);
        if eof {
            return;
        }
    }
}
