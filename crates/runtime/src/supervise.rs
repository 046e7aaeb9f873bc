//! `supervise(stream, session)`: pass every item through, feed the session, and end with
//! [`Killed`] the moment the session is killed, even if the stream never yields again.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio_util::sync::WaitForCancellationFutureOwned;
use watchdog_core::Kill;

use crate::line::AsLine;
use crate::watchdog::Session;

/// The watchdog killed the session; the stream ends after this.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("session killed by the watchdog ({})", .0.kind)]
pub struct Killed(pub Kill);

/// Wrap `stream`: every item passes through (as `Ok`) after it is fed to `session`; when the
/// session is killed the stream yields `Err(Killed)` at once and then ends. When the inner
/// stream ends, the session is ended (its outcome classified).
pub fn supervise<S: Stream>(stream: S, session: Session) -> Supervised<S>
where
    S::Item: AsLine,
{
    let cancelled = Box::pin(session.token().cancelled_owned());
    Supervised {
        inner: Box::pin(stream),
        session,
        cancelled,
        done: false,
    }
}

/// The stream returned by [`supervise`].
pub struct Supervised<S> {
    inner: Pin<Box<S>>,
    session: Session,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    done: bool,
}

impl<S> std::fmt::Debug for Supervised<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervised")
            .field("session", &self.session)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<S> Supervised<S> {
    /// The session fed by this stream.
    pub fn session(&self) -> &Session {
        &self.session
    }
}

impl<S: Stream> Supervised<S>
where
    S::Item: AsLine,
{
    /// The next item (a convenience for callers without a `StreamExt`).
    pub async fn next(&mut self) -> Option<Result<S::Item, Killed>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl<S: Stream> Stream for Supervised<S>
where
    S::Item: AsLine,
{
    type Item = Result<S::Item, Killed>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.cancelled.as_mut().poll(cx).is_ready() {
            if let Some(kill) = this.session.kill() {
                this.done = true;
                return Poll::Ready(Some(Err(Killed(kill))));
            }
        }
        match this.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(item)) => {
                if let Some(line) = item.as_line() {
                    this.session.observe(line);
                }
                Poll::Ready(Some(Ok(item)))
            }
            Poll::Ready(None) => {
                this.done = true;
                this.session.end();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
