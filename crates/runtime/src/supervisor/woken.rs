//! The read of both pipes ([`read_buf`]). It tells the end's wait when the pipe was found
//! empty ([`ReaderState`]), ends when the reader is told to stop, and for stdout tells the
//! policy when lines may wait unread: its waker marks the
//! session's input pending the moment the runtime learns the pipe is readable (tokio wakes a
//! readable pipe's task before it runs the timers of the same turn), and the mark is lifted
//! when the read finds the pipe empty again. A deadline that falls due in between waits for
//! the lines ([`Registry::input_pending`](watchdog_core::Registry::input_pending)): after the
//! host was stopped (Ctrl-Z, then `fg`), what the child printed meanwhile counts first.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use tokio::io::{AsyncRead, AsyncReadExt};

use super::drain::ReaderState;
use crate::watchdog::InputMarker;

/// The waker the pipe's reads register: marks, then wakes the reader task.
pub(super) struct Woken {
    /// The reader task's own waker.
    task: Mutex<Option<Waker>>,
    marker: InputMarker,
}

impl Woken {
    pub(super) fn new(marker: InputMarker) -> Arc<Woken> {
        Arc::new(Woken {
            task: Mutex::new(None),
            marker,
        })
    }

    /// The reader has read everything that waited (or the pipe ended): lift the mark, and
    /// let a deadline the lines did not rescue fire now.
    pub(super) fn drained(&self) {
        if self.marker.set(false) {
            self.marker.apply();
        }
    }

    fn remember(&self, task: &Waker) {
        let mut slot = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if !slot.as_ref().is_some_and(|w| w.will_wake(task)) {
            *slot = Some(task.clone());
        }
    }
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.marker.set(true);
        let task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = task.as_ref() {
            w.wake_by_ref();
        }
    }
}

/// `pipe.read_buf(buf)`, the one read of both pipes: its readiness registered through `woken`
/// (stdout's, when the policy wants it), what it found told to the end's wait (`state`), and
/// `Ok(0)`, as at the pipe's end, once the reader is told to stop reading.
pub(super) async fn read_buf<R: AsyncRead + Unpin>(
    pipe: &mut R,
    buf: &mut Vec<u8>,
    woken: Option<&Arc<Woken>>,
    state: &ReaderState,
) -> std::io::Result<usize> {
    let mut read = std::pin::pin!(pipe.read_buf(buf));
    let mut cut = std::pin::pin!(state.cut());
    let read = std::future::poll_fn(|cx| {
        if cut.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ok(0));
        }
        let polled = match woken {
            Some(woken) => {
                woken.remember(cx.waker());
                let waker = Waker::from(woken.clone());
                read.as_mut().poll(&mut Context::from_waker(&waker))
            }
            None => read.as_mut().poll(cx),
        };
        if polled.is_pending() {
            // Nothing waits in the pipe: what was read is fed already.
            if let Some(woken) = woken {
                woken.drained();
            }
            state.found_empty();
        }
        polled
    })
    .await;
    state.read(*read.as_ref().unwrap_or(&0));
    read
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncWriteExt;
    use watchdog_core::{Event, KillKind, Limits, SessionConfig};

    use super::*;
    use crate::{Watchdog, WatchdogConfig};

    const ASSISTANT: &[u8] = br#"{"type":"assistant","message":{"content":[]}}"#;

    fn watchdog() -> Watchdog {
        let limits = Limits::default()
            .with_idle(Duration::from_secs(1))
            .and_then(|l| l.with_extend_factor(1.0))
            .unwrap();
        Watchdog::new(WatchdogConfig::new(limits))
    }

    async fn run_tasks() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    /// The pipe's readiness marks the input pending in the writer's own call, before the
    /// reader task has run; the read that then finds the pipe empty lifts the mark.
    #[tokio::test(start_paused = true)]
    async fn readiness_marks_before_the_reader_runs_and_an_empty_pipe_lifts_the_mark() {
        let watchdog = watchdog();
        let session = watchdog.register(SessionConfig::default());
        let marker = session.input_marker();
        let woken = Woken::new(marker.clone());
        let (mut child, mut pipe) = tokio::io::duplex(64);
        let state = Arc::new(ReaderState::default());
        let reader = {
            let (woken, state) = (woken.clone(), state.clone());
            tokio::spawn(async move {
                let mut buf = Vec::with_capacity(64);
                let n = read_buf(&mut pipe, &mut buf, Some(&woken), &state)
                    .await
                    .unwrap();
                // Fed, then the next read finds nothing and lifts the mark.
                let more = read_buf(&mut pipe, &mut buf, Some(&woken), &state);
                let _ = tokio::time::timeout(Duration::from_millis(1), more).await;
                n
            })
        };
        run_tasks().await;
        assert!(!marker.pending.load(std::sync::atomic::Ordering::SeqCst));
        child.write_all(b"x\n").await.unwrap();
        assert!(
            marker.pending.load(std::sync::atomic::Ordering::SeqCst),
            "marked by the waker itself"
        );
        assert_eq!(reader.await.unwrap(), 2);
        assert!(!marker.pending.load(std::sync::atomic::Ordering::SeqCst));
        assert!(
            state.caught_up(),
            "the empty pipe is told to the end's wait"
        );
    }

    /// A reader told to stop reading gets the pipe's end at once, with or without the policy's
    /// waker, even with bytes waiting: what it holds then goes out as a last line.
    #[tokio::test(start_paused = true)]
    async fn a_cut_read_ends_like_the_pipe_s_end() {
        for with_waker in [true, false] {
            let watchdog = watchdog();
            let session = watchdog.register(SessionConfig::default());
            let woken = Woken::new(session.input_marker());
            let (mut child, mut pipe) = tokio::io::duplex(64);
            let state = ReaderState::default();
            let mut buf = Vec::with_capacity(64);
            let woken = with_waker.then_some(&woken);
            child.write_all(b"partial").await.unwrap();
            assert_eq!(
                read_buf(&mut pipe, &mut buf, woken, &state).await.unwrap(),
                7
            );
            assert!(!state.caught_up());
            let pending = read_buf(&mut pipe, &mut buf, woken, &state);
            let waited = tokio::time::timeout(Duration::from_secs(1), pending).await;
            assert!(waited.is_err(), "an open, empty pipe waits");
            assert!(state.caught_up());
            child.write_all(b" more").await.unwrap();
            state.cut_now();
            assert_eq!(
                read_buf(&mut pipe, &mut buf, woken, &state).await.unwrap(),
                0
            );
            assert_eq!(buf, b"partial", "with_waker: {with_waker}");
        }
    }

    /// The cell applies the mark at its next call, the timer's included: an overdue deadline
    /// waits for the marked lines, which rescue the session; unmarked, the same timer kills.
    #[tokio::test(start_paused = true)]
    async fn a_marked_session_s_overdue_deadline_waits_for_its_lines() {
        for marked in [true, false] {
            let watchdog = watchdog();
            let session = watchdog.register(SessionConfig::default());
            session.observe_bytes(ASSISTANT);
            let marker = session.input_marker();
            let mut events = session.events();
            if marked {
                marker.set(true);
            }
            tokio::time::advance(Duration::from_millis(1500)).await;
            run_tasks().await;
            session.observe_bytes(ASSISTANT);
            marker.set(false);
            marker.apply();
            run_tasks().await;
            let kills: Vec<KillKind> = std::iter::from_fn(|| events.try_recv().ok())
                .filter_map(|e| match e {
                    Event::Killed(k) => Some(k.kind),
                    _ => None,
                })
                .collect();
            let expected: &[KillKind] = if marked { &[] } else { &[KillKind::Idle] };
            assert_eq!(kills, expected, "marked: {marked}");
        }
    }
}
