//! A Prometheus scrape endpoint for a long-lived host (cargo feature `prometheus`): a small
//! HTTP/1.1 responder that answers `GET /metrics` with
//! [`Watchdog::metrics`](crate::Watchdog::metrics) rendered in the text exposition format
//! 0.0.4. No dependency beyond tokio.
//!
//! ```no_run
//! use agent_sdk_watchdog::{Watchdog, WatchdogConfig};
//! use watchdog_core::Limits;
//!
//! # async fn host() -> std::io::Result<()> {
//! let watchdog = Watchdog::new(WatchdogConfig::new(Limits::default()));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9464").await?;
//! tokio::spawn(agent_sdk_watchdog::prometheus::serve(watchdog.clone(), listener));
//! // … register sessions on `watchdog`; Prometheus scrapes http://127.0.0.1:9464/metrics
//! # Ok(()) }
//! ```
//!
//! Every answer closes its connection (`Connection: close`). `GET` and `HEAD` of `/metrics`
//! (any query string) answer 200; another path 404; another method 405; a request that is
//! not HTTP 400; a request head over [`ServeConfig::max_head`] 431. A client gets
//! [`ServeConfig::timeout`] for its whole request head (then it is dropped unanswered) and as
//! long again for reading the answer; at most [`ServeConfig::max_connections`] are served at
//! once (more wait in the listen backlog). Nothing is printed, nothing panics on any input.
//! The answers are watchdog-host's ([`watchdog_host::metrics::scrape`]), as the Python API's
//! endpoint's are.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use watchdog_host::metrics::bounds::ServeBounds;
use watchdog_host::metrics::scrape::{head_end, Request};

use crate::Watchdog;

/// The content type of the text exposition format 0.0.4.
pub use watchdog_host::metrics::scrape::CONTENT_TYPE;

/// Bounds of the [`serve_with`] endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeConfig {
    /// The time a client has to send its whole request head, and again to take the answer.
    /// Default 5 s.
    pub timeout: Duration,
    /// The largest request head read (request line and headers). Default 8 KiB.
    pub max_head: usize,
    /// Connections served at once. Default 64; at least 1 is used.
    pub max_connections: usize,
}

impl Default for ServeConfig {
    /// The bounds every host's endpoint has by default ([`ServeBounds`]).
    fn default() -> Self {
        let d = ServeBounds::default();
        ServeConfig {
            timeout: d.timeout,
            max_head: d.max_head,
            max_connections: d.max_connections,
        }
    }
}

/// Serve `watchdog`'s metrics on `listener` with the default [`ServeConfig`], until the
/// future is dropped (or its task aborted). It holds a clone of `watchdog`, so the watchdog's
/// timer runs while it does.
pub async fn serve(watchdog: Watchdog, listener: TcpListener) {
    serve_with(watchdog, listener, ServeConfig::default()).await
}

/// [`serve`] with other bounds.
pub async fn serve_with(watchdog: Watchdog, listener: TcpListener, config: ServeConfig) {
    let permits = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        // Finished connections are reaped here so the set does not grow.
        while connections.try_join_next().is_some() {}
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return; // never closed
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors and the like: wait a little rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let watchdog = watchdog.clone();
        connections.spawn(async move {
            connection(stream, &watchdog, config).await;
            drop(permit);
        });
    }
}

async fn connection(mut stream: TcpStream, watchdog: &Watchdog, config: ServeConfig) {
    let mut buf = vec![0; config.max_head];
    let answer = match tokio::time::timeout(config.timeout, read_head(&mut stream, &mut buf)).await
    {
        Ok(Some(answer)) => answer,
        // Timed out, or closed or failed before a whole head: nothing to answer.
        Ok(None) | Err(_) => return,
    };
    let response = answer.response(|| watchdog.metrics().render_prometheus());
    let written = tokio::time::timeout(config.timeout, async {
        stream.write_all(&response).await?;
        stream.shutdown().await
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
        return;
    }
    // Take what the client still sends (a body we did not read) for a moment, so the close
    // does not reset the connection before it read the answer.
    let _ = tokio::time::timeout(config.timeout.min(Duration::from_secs(1)), async {
        let mut sink = [0; 1024];
        let mut left = 64 * 1024_usize;
        while left > 0 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

/// Read until the end of the request head (`\r\n\r\n`, or `\n\n`), at most `buf.len()` bytes,
/// and classify it; `None` when the client closed or failed first.
async fn read_head(stream: &mut TcpStream, buf: &mut [u8]) -> Option<Request> {
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            return Some(Request::HeadTooLarge);
        }
        let n = stream.read(&mut buf[filled..]).await.ok()?;
        if n == 0 {
            return None;
        }
        // Look for the end from a little before the new bytes (it may straddle two reads).
        let from = filled.saturating_sub(3);
        filled += n;
        if let Some(end) = head_end(&buf[from..filled]) {
            return Some(Request::classify(&buf[..from + end]));
        }
    }
}
