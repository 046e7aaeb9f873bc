//! A scripted mock of OpenAI's Responses API, for driving the real OpenAI Codex CLI offline
//! (Codex 0.169: a custom model provider with `wire_api = "responses"` pointed at it).
//!
//! `POST /v1/responses` answers with a server-sent-event stream scripted by a
//! [`ResponsesScenario`]: `response.created`, each output item (`response.output_item.added`,
//! the text's `response.output_text.delta`s, `response.output_item.done`), then
//! `response.completed` with the usage. A turn may instead stall mid-answer, with or without
//! SSE comments as keep-alives, or answer with an HTTP error. `GET` of anything is an empty
//! list (a models probe); everything else is a 404. Every request is recorded
//! ([`ResponsesRequest`]).
//!
//! ```no_run
//! use mock_api::responses::{ResponseTurn, ResponsesMockServer, ResponsesScenario};
//! let scenario = ResponsesScenario::new("one command")
//!     .turn(ResponseTurn::new().text("Building.").command("call_1", "cargo build"))
//!     .after_output("call_1", ResponseTurn::answer("Built."));
//! let server = ResponsesMockServer::start(scenario).unwrap();
//! // ... run `codex exec --json` with a provider whose base_url = server.base_url() + "/v1" ...
//! assert_eq!(server.requests().len(), 2);
//! ```

mod scenario;
mod serve;

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub use scenario::{ResponseTurn, ResponsesScenario};

/// What the mock read of one `POST /v1/responses`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesRequest {
    /// Its 0-based position among the requests.
    pub index: usize,
    /// `model`.
    pub model: Option<String>,
    /// The `call_id`s of the `function_call_output` items of its `input`, in order.
    pub call_outputs: Vec<String>,
    /// The whole body (`Value::Null` when it was not JSON).
    pub body: Value,
}

impl ResponsesRequest {
    fn of(index: usize, body: Value) -> Self {
        let input = body.get("input").and_then(Value::as_array);
        let call_outputs = input
            .into_iter()
            .flatten()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("function_call_output"))
            .filter_map(|i| i.get("call_id").and_then(Value::as_str).map(str::to_owned))
            .collect();
        ResponsesRequest {
            index,
            model: body.get("model").and_then(Value::as_str).map(str::to_owned),
            call_outputs,
            body,
        }
    }

    /// The tool call whose output is the last item of the input (what the model answers).
    pub fn last_output(&self) -> Option<&str> {
        let last = self.body.get("input")?.as_array()?.last()?;
        if last.get("type")?.as_str()? != "function_call_output" {
            return None;
        }
        last.get("call_id")?.as_str()
    }
}

/// The scenario and the requests so far, shared by the connections.
struct Shared {
    scenario: ResponsesScenario,
    requests: Mutex<Vec<ResponsesRequest>>,
}

impl Shared {
    /// Record a request and pick its turn, under one lock (concurrent requests get distinct
    /// positions).
    fn take(&self, body: Value) -> scenario::ResponseTurn {
        let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        let request = ResponsesRequest::of(requests.len(), body);
        let turn = self.scenario.select(request.index, request.last_output());
        requests.push(request);
        turn
    }
}

/// A running Responses-API mock on `127.0.0.1`, on its own thread and tokio runtime.
/// Dropping it stops the server and joins the thread.
pub struct ResponsesMockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ResponsesMockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponsesMockServer")
            .field("addr", &self.addr)
            .field("scenario", &self.shared.scenario.name)
            .finish_non_exhaustive()
    }
}

impl ResponsesMockServer {
    /// Bind `127.0.0.1:0` and serve `scenario` on a new thread; returns once bound.
    pub fn start(scenario: ResponsesScenario) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            scenario,
            requests: Mutex::new(Vec::new()),
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let served = shared.clone();
        let thread = std::thread::Builder::new()
            .name("mock-responses".into())
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
                    let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    };
                    let (stop, stopped) = oneshot::channel();
                    let bound = listener.local_addr().map(|a| (a, stop));
                    let ok = bound.is_ok();
                    if tx.send(bound).is_ok() && ok {
                        serve::accept_loop(listener, served, stopped).await;
                    }
                });
            })?;
        match rx.recv() {
            Ok(Ok((addr, stop))) => Ok(ResponsesMockServer {
                addr,
                shared,
                stop: Some(stop),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(io::Error::other("mock server thread ended before binding"))
            }
        }
    }

    /// The bound address (always `127.0.0.1`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (a provider's `base_url` is this plus `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every `POST /v1/responses` so far, in arrival order.
    pub fn requests(&self) -> Vec<ResponsesRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stop the server (stalls included) and join its thread.
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

impl Drop for ResponsesMockServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
