//! The end of the output. Once the child and its tree are gone, what they wrote is in the pipes
//! (at most a pipe's worth each), in the readers' hands, or waiting for the caller; only a
//! process outside the tree can still write. The pipes get
//! [`drain_timeout`](super::SupervisorConfig::drain_timeout) to close, and the wait goes on
//! while a reader is still busy with what was written before (splitting it, or waiting for the
//! caller to take it) — unless it has read more than a pipe holds since the end began, which
//! only an outsider can have written. When the wait gives up, the readers stop reading and pass
//! on what they hold (a last line without its newline included): a slow caller loses nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::lines::CHUNK;

/// What a pipe holds at most: stdout's is asked for at [`CHUNK`], stderr keeps the system's
/// (smaller) default. Bytes read beyond this after the end began were written after it.
const PIPE_HOLDS: u64 = CHUNK as u64;

/// What the end's wait knows of one reader; the reader keeps it up to date.
#[derive(Debug, Default)]
pub(super) struct ReaderState {
    /// The end began: bytes read count towards [`PIPE_HOLDS`].
    ending: AtomicBool,
    /// The reader's last read found its pipe empty and waits for more.
    waiting: AtomicBool,
    /// Bytes read since the end began.
    since_end: AtomicU64,
    /// Told to stop reading and pass on what it holds.
    cut: CancellationToken,
}

impl ReaderState {
    /// The pipe was found empty: everything written before now has been read.
    pub(super) fn found_empty(&self) {
        self.waiting.store(true, SeqCst);
    }

    /// `n` bytes were read (0 at the pipe's end).
    pub(super) fn read(&self, n: usize) {
        self.waiting.store(false, SeqCst);
        if self.ending.load(SeqCst) {
            self.since_end.fetch_add(n as u64, SeqCst);
        }
    }

    /// Resolves when the reader is told to stop reading.
    pub(super) fn cut(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.cut.cancelled()
    }

    /// Tell the reader to stop reading.
    #[cfg(test)]
    pub(super) fn cut_now(&self) {
        self.cut.cancel();
    }

    /// Whether the reader has read all that was written before the end began.
    pub(super) fn caught_up(&self) -> bool {
        self.waiting.load(SeqCst) || self.since_end.load(SeqCst) >= PIPE_HOLDS
    }
}

/// The reading tasks, and how far each got.
#[derive(Debug, Default)]
pub(super) struct Readers {
    tasks: Vec<(JoinHandle<()>, Arc<ReaderState>)>,
}

impl Readers {
    /// Start a reader: `read` is given its state to keep up to date.
    pub(super) fn spawn<F>(&mut self, read: impl FnOnce(Arc<ReaderState>) -> F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let state = Arc::new(ReaderState::default());
        self.tasks.push((tokio::spawn(read(state.clone())), state));
    }

    /// Wait for every pipe to end, one reader after the other: each `timeout`, a reader that has
    /// caught up by then ([`ReaderState::caught_up`]) is told to stop. Returns true if a
    /// reader had to be told (its pipe was left open).
    pub(super) async fn drain(self, timeout: Duration) -> bool {
        for (_, s) in &self.tasks {
            s.ending.store(true, SeqCst);
        }
        let mut left_open = false;
        for (task, state) in self.tasks {
            let mut task = std::pin::pin!(task);
            loop {
                tokio::select! {
                    _ = &mut task => break,
                    () = tokio::time::sleep(timeout) => {
                        if state.caught_up() && !state.cut.is_cancelled() {
                            left_open = true;
                            state.cut.cancel();
                        }
                    }
                }
            }
        }
        left_open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader still busy with what was written before the end is waited for, however long
    /// the caller takes; one that found its pipe empty is cut after one timeout, and so is one
    /// that read more than a pipe holds since the end began (an outsider writing).
    #[tokio::test(start_paused = true)]
    async fn busy_readers_are_waited_for_and_open_pipes_are_cut() {
        let t = Duration::from_secs(2);
        for (name, after_end, busy_for, cut) in [
            ("busy for ten timeouts", 0, 20, false),
            ("waiting on an empty pipe", 0, 0, true),
            ("an outsider writing", PIPE_HOLDS as usize, 20, true),
        ] {
            let mut readers = Readers::default();
            let was_cut = Arc::new(AtomicBool::new(false));
            let flag = was_cut.clone();
            readers.spawn(|state| async move {
                // Reading before the end: never counted.
                state.read(10 * PIPE_HOLDS as usize);
                tokio::task::yield_now().await;
                state.read(after_end);
                let busy = tokio::time::sleep(Duration::from_secs(busy_for));
                if busy_for == 0 {
                    state.found_empty();
                }
                tokio::select! {
                    () = busy => {}
                    () = state.cut() => flag.store(true, SeqCst),
                }
                if busy_for == 0 {
                    state.cut().await;
                    flag.store(true, SeqCst);
                }
            });
            tokio::task::yield_now().await;
            let start = tokio::time::Instant::now();
            let left_open = readers.drain(t).await;
            assert_eq!(left_open, cut, "{name}");
            assert_eq!(was_cut.load(SeqCst), cut, "{name}");
            let took = start.elapsed();
            if cut {
                assert!(took <= t + Duration::from_millis(1), "{name}: {took:?}");
            } else {
                assert_eq!(took, Duration::from_secs(busy_for), "{name}");
            }
        }
    }
}
