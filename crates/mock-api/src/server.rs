//! The server: accept loop, routing, request recording, SSE streaming.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::http::{self, ReadError, Request};
use crate::scenario::{Block, Scenario, Stall, Step};

/// Model name used when a request names none.
const DEFAULT_MODEL: &str = "claude-opus-5-5";
const SIGNATURE: &str = "c2lnbmF0dXJl";

/// What the mock read from a `POST /v1/messages` body (and the session header).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestSummary {
    /// `model`.
    pub model: Option<String>,
    /// `stream` (false when absent, as in the API).
    pub stream: bool,
    /// `max_tokens`.
    pub max_tokens: Option<u64>,
    /// The `role` of each entry of `messages`, in order (`user`, `assistant`, `system`, ...).
    pub roles: Vec<String>,
    /// The text blocks of the last `user` message, joined with `\n`.
    pub last_user_text: Option<String>,
    /// The `tool_use_id`s of the `tool_result` blocks in the last `user` message.
    pub tool_result_ids: Vec<String>,
    /// The `x-claude-code-session-id` header.
    pub session_id: Option<String>,
    /// `session_id` inside `metadata.user_id` (itself a JSON string).
    pub metadata_session_id: Option<String>,
    /// The working directory the CLI reports in its environment block, if found.
    pub cwd: Option<String>,
    /// The `x-claude-code-agent-id` header: the request belongs to that subagent.
    pub agent_id: Option<String>,
}

impl RequestSummary {
    /// Summarises a Messages API request body; `session_header` is `x-claude-code-session-id`.
    pub fn from_body(body: &Value, session_header: Option<&str>) -> Self {
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let role = |m: &Value| {
            m.get("role")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let last_user = messages.iter().rev().find(|m| role(m) == "user");
        let mut last_user_text = None;
        let mut tool_result_ids = Vec::new();
        if let Some(m) = last_user {
            match m.get("content") {
                Some(Value::String(s)) => last_user_text = Some(s.clone()),
                Some(Value::Array(blocks)) => {
                    let mut texts = Vec::new();
                    for b in blocks {
                        match b.get("type").and_then(Value::as_str) {
                            Some("text") => texts
                                .extend(b.get("text").and_then(Value::as_str).map(str::to_string)),
                            Some("tool_result") => tool_result_ids.extend(
                                b.get("tool_use_id")
                                    .and_then(Value::as_str)
                                    .map(str::to_string),
                            ),
                            _ => {}
                        }
                    }
                    if !texts.is_empty() {
                        last_user_text = Some(texts.join("\n"));
                    }
                }
                _ => {}
            }
        }
        let metadata_session_id = body
            .pointer("/metadata/user_id")
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .and_then(|v| {
                v.get("session_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        RequestSummary {
            model: body
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string),
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            max_tokens: body.get("max_tokens").and_then(Value::as_u64),
            roles: messages.iter().map(role).collect(),
            last_user_text,
            tool_result_ids,
            session_id: session_header.map(str::to_string),
            metadata_session_id,
            cwd: find_cwd(body),
            agent_id: None,
        }
    }

    /// Number of entries in `messages`.
    pub fn message_count(&self) -> usize {
        self.roles.len()
    }
}

/// Finds the working directory in the CLI's environment block
/// (`Primary working directory: /path` or `Working directory: /path`).
fn find_cwd(body: &Value) -> Option<String> {
    fn walk(v: &Value) -> Option<String> {
        match v {
            Value::String(s) => {
                for marker in ["Primary working directory:", "Working directory:"] {
                    if let Some(pos) = s.find(marker) {
                        let rest = s[pos + marker.len()..].trim_start();
                        let path = rest.lines().next().unwrap_or("").trim();
                        if path.starts_with('/') {
                            return Some(path.to_string());
                        }
                    }
                }
                None
            }
            Value::Array(a) => a.iter().find_map(walk),
            Value::Object(o) => o.values().find_map(walk),
            _ => None,
        }
    }
    let system = body.get("system").and_then(walk);
    system.or_else(|| body.get("messages").and_then(walk))
}

/// One request as the mock received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `POST`, `HEAD`, ...
    pub method: String,
    /// The path without the query string, e.g. `/v1/messages`.
    pub path: String,
    /// The query string without `?`, e.g. `beta=true`.
    pub query: Option<String>,
    /// Headers, names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON, if it was JSON.
    pub body: Option<Value>,
    /// Body length in bytes.
    pub body_len: usize,
    /// For `POST /v1/messages` with a JSON body: the summary.
    pub summary: Option<RequestSummary>,
    /// For main requests: their 0-based index among main requests.
    pub main_index: Option<usize>,
    /// Milliseconds since the server started.
    pub at_ms: u64,
}

impl RecordedRequest {
    /// The first header of that (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this was a main request (`POST /v1/messages` with a JSON body).
    pub fn is_main(&self) -> bool {
        self.main_index.is_some()
    }
}

struct Shared {
    scenario: Scenario,
    requests: Mutex<Vec<RecordedRequest>>,
    main_count: Mutex<usize>,
    /// Per-key request counts of the agent scenario.
    agent_counts: Mutex<HashMap<String, usize>>,
    seq: AtomicU64,
    salt: u64,
    started: Instant,
}

impl Shared {
    fn requests(&self) -> MutexGuard<'_, Vec<RecordedRequest>> {
        // A poisoned lock only means a reader panicked; the data is still valid.
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn id(&self, prefix: &str) -> String {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}_mock_{:08x}{:012x}", self.salt as u32, n)
    }

    /// Records a request; for main requests `main` carries the summary and the
    /// index (the caller holds the `main_count` lock).
    fn push(&self, req: &Request, body: Option<Value>, main: Option<(RequestSummary, usize)>) {
        let (path, query) = match req.target.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (req.target.clone(), None),
        };
        let (summary, main_index) = match main {
            Some((s, i)) => (Some(s), Some(i)),
            None => (None, None),
        };
        self.requests().push(RecordedRequest {
            method: req.method.clone(),
            path,
            query,
            headers: req.headers.clone(),
            body,
            body_len: req.body.len(),
            summary,
            main_index,
            at_ms: self.started.elapsed().as_millis() as u64,
        });
    }

    /// Records a request that is not a main request.
    fn record(&self, req: &Request, body: Option<Value>) {
        self.push(req, body, None);
    }
}

/// A cheap, cloneable view of what a server has received.
#[derive(Clone)]
pub struct RequestLog(Arc<Shared>);

impl std::fmt::Debug for RequestLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLog")
            .field("requests", &self.0.requests().len())
            .finish()
    }
}

impl RequestLog {
    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.0.requests().clone()
    }

    /// The main requests (`POST /v1/messages`) so far.
    pub fn main_requests(&self) -> Vec<RecordedRequest> {
        self.0
            .requests()
            .iter()
            .filter(|r| r.is_main())
            .cloned()
            .collect()
    }

    /// How many main requests arrived so far.
    pub fn main_request_count(&self) -> usize {
        *self.0.main_count.lock().unwrap_or_else(|e| e.into_inner())
    }
}

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
        let salt = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let shared = Arc::new(Shared {
            scenario,
            requests: Mutex::new(Vec::new()),
            main_count: Mutex::new(0),
            agent_counts: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(1),
            salt: salt ^ u64::from(addr.port()),
            started: Instant::now(),
        });
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, shared.clone(), stopped));
        Ok(MockServer {
            addr,
            log: RequestLog(shared),
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

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    conns.spawn(serve_conn(stream, shared.clone()));
                }
                // E.g. out of file descriptors: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.shutdown().await;
}

/// The client went away (or the socket failed): stop serving this connection.
struct Gone;

impl From<io::Error> for Gone {
    fn from(_: io::Error) -> Self {
        Gone
    }
}

async fn serve_conn(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    loop {
        let mut req = match http::read_head(&mut rd).await {
            Ok(r) => r,
            Err(ReadError::Malformed(why)) => {
                let _ =
                    error_response(&mut wr, 400, "invalid_request_error", why, false, false).await;
                return;
            }
            Err(ReadError::Closed | ReadError::Io) => return,
        };
        if req
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
            && http::write_continue(&mut wr).await.is_err()
        {
            return;
        }
        match http::read_body(&mut rd, &mut req).await {
            Ok(()) => {}
            Err(ReadError::Malformed(why)) => {
                let _ =
                    error_response(&mut wr, 400, "invalid_request_error", why, false, false).await;
                return;
            }
            Err(ReadError::Closed | ReadError::Io) => return,
        }
        let keep_alive = req.keep_alive();
        match route(&shared, req, &mut rd, &mut wr, keep_alive).await {
            Ok(()) if keep_alive => {}
            _ => return,
        }
    }
}

fn json_headers() -> Vec<(String, String)> {
    vec![("content-type".into(), "application/json".into())]
}

async fn error_response<W: AsyncWrite + Unpin>(
    wr: &mut W,
    status: u16,
    error_type: &str,
    message: &str,
    keep_alive: bool,
    head_only: bool,
) -> io::Result<()> {
    let body =
        json!({"type": "error", "error": {"type": error_type, "message": message}}).to_string();
    http::write_full(
        wr,
        status,
        &json_headers(),
        body.as_bytes(),
        keep_alive,
        head_only,
    )
    .await
}

async fn route<R, W>(
    shared: &Shared,
    req: Request,
    rd: &mut R,
    wr: &mut W,
    keep_alive: bool,
) -> Result<(), Gone>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let path = req.target.split('?').next().unwrap_or("").to_string();
    let head_only = req.method == "HEAD";
    let body_json: Option<Value> = serde_json::from_slice(&req.body).ok();
    if req.method == "POST" && path == "/v1/messages" {
        return messages(shared, req, body_json, rd, wr, keep_alive).await;
    }
    let answer = match (req.method.as_str(), path.as_str()) {
        ("POST", "/v1/messages/count_tokens") => Some(json!({"input_tokens": 100})),
        ("GET" | "HEAD", "/v1/models") => {
            let model = json!({"type": "model", "id": DEFAULT_MODEL, "display_name": "Mock model", "created_at": "2026-01-01T00:00:00Z"});
            Some(
                json!({"data": [model], "has_more": false, "first_id": DEFAULT_MODEL, "last_id": DEFAULT_MODEL}),
            )
        }
        ("GET" | "HEAD", "/api/hello") => Some(json!({})),
        _ => None,
    };
    shared.record(&req, body_json);
    match answer {
        Some(body) => {
            let body = body.to_string();
            http::write_full(
                wr,
                200,
                &json_headers(),
                body.as_bytes(),
                keep_alive,
                head_only,
            )
            .await?;
        }
        None => {
            let msg = format!("mock: no route for {} {}", req.method, path);
            error_response(wr, 404, "not_found_error", &msg, keep_alive, head_only).await?;
        }
    }
    Ok(())
}

fn now_epoch_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

async fn messages<R, W>(
    shared: &Shared,
    req: Request,
    body: Option<Value>,
    rd: &mut R,
    wr: &mut W,
    keep_alive: bool,
) -> Result<(), Gone>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let Some(body) = body.filter(Value::is_object) else {
        shared.record(&req, None);
        error_response(
            wr,
            400,
            "invalid_request_error",
            "mock: body is not a JSON object",
            keep_alive,
            false,
        )
        .await?;
        return Ok(());
    };
    let mut summary = RequestSummary::from_body(&body, req.header("x-claude-code-session-id"));
    summary.agent_id = req.header("x-claude-code-agent-id").map(str::to_string);
    // Select under the same lock that assigns the index, so concurrent requests
    // get distinct turns.
    let turn = {
        let mut count = shared.main_count.lock().unwrap_or_else(|e| e.into_inner());
        let index = *count;
        *count += 1;
        let mut counter = |key: String| {
            let mut counts = shared
                .agent_counts
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let n = counts.entry(key).or_insert(0);
            *n += 1;
            *n - 1
        };
        let turn = shared
            .scenario
            .select_request(index, &summary, &body, &mut counter);
        shared.push(&req, Some(body), Some((summary.clone(), index)));
        turn
    };

    let mut headers = vec![("request-id".to_string(), shared.id("req"))];
    headers.extend(shared.scenario.response_headers(&turn, now_epoch_secs()));

    if let Some((error_type, message)) = &turn.error {
        let body =
            json!({"type": "error", "error": {"type": error_type, "message": message}}).to_string();
        headers.extend(json_headers());
        http::write_full(
            wr,
            turn.status,
            &headers,
            body.as_bytes(),
            keep_alive,
            false,
        )
        .await?;
        return Ok(());
    }

    let model = summary
        .model
        .clone()
        .unwrap_or_else(|| DEFAULT_MODEL.to_string());
    let msg_id = shared.id("msg");
    let blocks: Vec<Step> = turn
        .steps
        .iter()
        .map(|s| match s {
            Step::Block(b) => Step::Block(resolve_block(b, summary.cwd.as_deref())),
            other => other.clone(),
        })
        .collect();

    if !summary.stream {
        match turn.non_streaming_delay() {
            None => {
                stall(rd, wr, Stall::Forever, None).await?;
                return Err(Gone);
            }
            Some(d) if !d.is_zero() => stall(rd, wr, Stall::For(d), None).await?,
            Some(_) => {}
        }
        let content: Vec<Value> = blocks
            .iter()
            .filter_map(|s| match s {
                Step::Block(b) => Some(block_json(b)),
                Step::Stall(_) => None,
            })
            .collect();
        let message = json!({
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": turn.effective_stop_reason().as_str(), "stop_sequence": null,
            "usage": usage_start(20),
        });
        headers.extend(json_headers());
        http::write_full(
            wr,
            turn.status,
            &headers,
            message.to_string().as_bytes(),
            keep_alive,
            false,
        )
        .await?;
        return Ok(());
    }

    headers.push((
        "content-type".into(),
        "text/event-stream; charset=utf-8".into(),
    ));
    headers.push(("cache-control".into(), "no-cache".into()));
    http::write_chunked_head(wr, turn.status, &headers, keep_alive).await?;
    if let Some(st) = turn.headers_only_stall {
        stall(rd, wr, st, None).await?;
    }
    let mut sse = Sse {
        wr,
        delay: turn.frame_delay,
    };
    let start = json!({"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": usage_start(1),
    }});
    sse.event(&start).await?;
    sse.event(&json!({"type": "ping"})).await?;
    let mut open: Option<usize> = None;
    let mut index = 0;
    for step in &blocks {
        match step {
            Step::Stall(st) => stall(rd, sse.wr, *st, turn.ping_every).await?,
            Step::Block(b) => {
                if let Some(i) = open.take() {
                    sse.event(&json!({"type": "content_block_stop", "index": i}))
                        .await?;
                }
                stream_block(&mut sse, index, b).await?;
                open = Some(index);
                index += 1;
            }
        }
    }
    if let Some(i) = open.take() {
        sse.event(&json!({"type": "content_block_stop", "index": i}))
            .await?;
    }
    let delta = json!({"type": "message_delta",
        "delta": {"stop_reason": turn.effective_stop_reason().as_str(), "stop_sequence": null},
        "usage": {"output_tokens": 20}});
    sse.event(&delta).await?;
    sse.event(&json!({"type": "message_stop"})).await?;
    http::write_last_chunk(sse.wr).await?;
    Ok(())
}

fn usage_start(output_tokens: u64) -> Value {
    json!({"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": output_tokens})
}

/// Makes a relative `Write` path absolute with the CLI's working directory.
fn resolve_block(b: &Block, cwd: Option<&str>) -> Block {
    match (b, cwd) {
        (Block::ToolUse { id, name, input }, Some(cwd)) if name == "Write" => {
            let mut input = input.clone();
            if let Some(p) = input.get("file_path").and_then(Value::as_str) {
                if !p.starts_with('/') {
                    let abs = format!("{}/{}", cwd.trim_end_matches('/'), p);
                    input["file_path"] = Value::String(abs);
                }
            }
            Block::ToolUse {
                id: id.clone(),
                name: name.clone(),
                input,
            }
        }
        _ => b.clone(),
    }
}

fn block_json(b: &Block) -> Value {
    match b {
        Block::Text(t) => json!({"type": "text", "text": t}),
        Block::Thinking(t) => json!({"type": "thinking", "thinking": t, "signature": SIGNATURE}),
        Block::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
    }
}

struct Sse<'a, W> {
    wr: &'a mut W,
    delay: Duration,
}

impl<W: AsyncWrite + Unpin> Sse<'_, W> {
    async fn event(&mut self, data: &Value) -> io::Result<()> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        let frame = format!("event: {name}\ndata: {data}\n\n");
        http::write_chunk(self.wr, frame.as_bytes()).await
    }
}

async fn stream_block<W: AsyncWrite + Unpin>(
    sse: &mut Sse<'_, W>,
    index: usize,
    b: &Block,
) -> io::Result<()> {
    let start = match b {
        Block::Text(_) => json!({"type": "text", "text": ""}),
        Block::Thinking(_) => json!({"type": "thinking", "thinking": "", "signature": ""}),
        Block::ToolUse { id, name, .. } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": {}})
        }
    };
    sse.event(&json!({"type": "content_block_start", "index": index, "content_block": start}))
        .await?;
    let deltas: Vec<Value> = match b {
        Block::Text(t) => split_words(t)
            .into_iter()
            .map(|p| json!({"type": "text_delta", "text": p}))
            .collect(),
        Block::Thinking(t) => {
            let mut d: Vec<Value> = split_words(t)
                .into_iter()
                .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                .collect();
            d.push(json!({"type": "signature_delta", "signature": SIGNATURE}));
            d
        }
        Block::ToolUse { input, .. } => split_half(&input.to_string())
            .into_iter()
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect(),
    };
    for delta in deltas {
        sse.event(&json!({"type": "content_block_delta", "index": index, "delta": delta}))
            .await?;
    }
    Ok(())
}

/// Splits text into pieces of roughly 12+ bytes at word boundaries (at least one piece).
pub(crate) fn split_words(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut cur = String::new();
    for word in text.split_inclusive(' ') {
        cur.push_str(word);
        if cur.len() >= 12 {
            pieces.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() || pieces.is_empty() {
        pieces.push(cur);
    }
    pieces
}

/// Splits a string in two at a char boundary near the middle (one piece if short).
fn split_half(s: &str) -> Vec<String> {
    if s.len() < 8 {
        return vec![s.to_string()];
    }
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    vec![s[..mid].to_string(), s[mid..].to_string()]
}

/// Waits out a stall, sending SSE pings every `ping_every` if given; returns
/// `Err(Gone)` as soon as the client closes the connection.
async fn stall<R, W>(
    rd: &mut R,
    wr: &mut W,
    stall: Stall,
    ping_every: Option<Duration>,
) -> Result<(), Gone>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let deadline = match stall {
        Stall::For(d) => Some(Instant::now() + d),
        Stall::Forever => None,
    };
    let mut watch_reads = true;
    let mut next_ping = ping_every.map(|p| Instant::now() + p);
    loop {
        let wake = match (deadline, next_ping) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        tokio::select! {
            _ = sleep_until(wake) => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(());
                }
                if let (Some(every), Some(_)) = (ping_every, next_ping) {
                    http::write_chunk(wr, b"event: ping\ndata: {\"type\": \"ping\"}\n\n").await?;
                    next_ping = Some(Instant::now() + every);
                }
            }
            r = rd.fill_buf(), if watch_reads => match r {
                Ok([]) | Err(_) => return Err(Gone),
                // The client sent more (pipelining): stop watching, keep stalling.
                Ok(_) => watch_reads = false,
            },
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
