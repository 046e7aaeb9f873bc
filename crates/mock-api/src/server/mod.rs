//! The server: a [`MockServer`] on the caller's runtime or a [`BlockingMockServer`] on its own
//! thread. One concern a file: [`log`] records requests, [`conn`] reads and routes them,
//! [`messages`] answers `POST /v1/messages` from the scenario, [`sse`] streams the answer.

mod conn;
mod log;
mod messages;
mod sse;

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;

use conn::accept_loop;
use log::Shared;

use crate::scenario::Scenario;

pub use log::{RecordedRequest, RequestLog, RequestSummary};
pub(crate) use sse::split_words;

/// Model name used when a request names none.
const DEFAULT_MODEL: &str = "claude-opus-5-5";
/// The signature sent with thinking blocks.
const SIGNATURE: &str = "c2lnbmF0dXJl";

/// Read access shared by [`MockServer`] and [`BlockingMockServer`].
macro_rules! server_accessors {
    ($ty:ident) => {
        impl $ty {
            /// The bound address (always `127.0.0.1`).
            pub fn addr(&self) -> SocketAddr {
                self.addr
            }

            /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
            pub fn base_url(&self) -> String {
                format!("http://{}", self.addr)
            }

            /// Every request so far, in arrival order.
            pub fn requests(&self) -> Vec<RecordedRequest> {
                self.log.requests()
            }

            /// The main requests (`POST /v1/messages`) so far.
            pub fn main_requests(&self) -> Vec<RecordedRequest> {
                self.log.main_requests()
            }

            /// How many main requests arrived so far.
            pub fn main_request_count(&self) -> usize {
                self.log.main_request_count()
            }

            /// A cloneable handle on the request log.
            pub fn log(&self) -> RequestLog {
                self.log.clone()
            }
        }
    };
}

server_accessors!(MockServer);
server_accessors!(BlockingMockServer);

/// A running mock server on `127.0.0.1`, driven by the caller's tokio runtime.
///
/// Dropping it stops the server too; [`MockServer::shutdown`] also waits for that.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    log: RequestLog,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl MockServer {
    /// Binds `127.0.0.1:0` and starts serving `scenario` on the current runtime.
    pub async fn start(scenario: Scenario) -> io::Result<MockServer> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(scenario, addr.port()));
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, shared.clone(), stopped));
        Ok(MockServer {
            addr,
            log: RequestLog::new(shared),
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// Stops accepting, ends every connection (stalls included) and waits for that.
    pub async fn shutdown(mut self) {
        self.stop.take();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        // Dropping the sender ends the accept loop, which aborts every connection.
        self.stop.take();
    }
}

/// A mock server running on its own thread and tokio runtime, for synchronous code.
///
/// Dropping it stops the server and joins the thread.
#[derive(Debug)]
pub struct BlockingMockServer {
    addr: SocketAddr,
    log: RequestLog,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BlockingMockServer {
    /// Starts serving `scenario` on a new thread; returns once the port is bound.
    pub fn start(scenario: Scenario) -> io::Result<BlockingMockServer> {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("mock-api".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    match MockServer::start(scenario).await {
                        Ok(server) => {
                            let (stop, stopped) = oneshot::channel::<()>();
                            if tx.send(Ok((server.addr(), server.log(), stop))).is_ok() {
                                let _ = stopped.await;
                            }
                            server.shutdown().await;
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                        }
                    }
                });
            })?;
        let started = rx
            .recv()
            .map_err(|_| io::Error::other("mock server thread ended before binding"))
            .and_then(|r| r);
        match started {
            Ok((addr, log, stop)) => Ok(BlockingMockServer {
                addr,
                log,
                stop: Some(stop),
                thread: Some(thread),
            }),
            Err(e) => {
                let _ = thread.join();
                Err(e)
            }
        }
    }

    /// Stops the server and joins its thread.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BlockingMockServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
