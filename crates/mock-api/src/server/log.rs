//! What the server records: each request, its summary, and the shared log.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::time::Instant;

use crate::http::Request;
use crate::scenario::Scenario;

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
    /// The `tool_use_id`s of every `tool_result` block in the conversation, in order: how far
    /// a scripted conversation came, whatever messages the CLI added after a result.
    pub answered_tool_ids: Vec<String>,
    /// Every string in the messages after the last `assistant` one (any role, tool results
    /// included), joined with `\n`: what a turn the CLI started by itself was started with (a
    /// wakeup's prompt, a monitor's event, a task's notification).
    pub tail_text: Option<String>,
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
        let mut answered_tool_ids = Vec::new();
        for m in messages {
            if let Some(Value::Array(blocks)) = m.get("content") {
                answered_tool_ids.extend(blocks.iter().filter_map(|b| {
                    (b.get("type").and_then(Value::as_str) == Some("tool_result"))
                        .then(|| b.get("tool_use_id").and_then(Value::as_str))
                        .flatten()
                        .map(str::to_string)
                }));
            }
        }
        let after_assistant = messages
            .iter()
            .rposition(|m| role(m) == "assistant")
            .map_or(0, |i| i + 1);
        let mut tail = Vec::new();
        for m in &messages[after_assistant..] {
            strings(m.get("content").unwrap_or(&Value::Null), &mut tail);
        }
        let tail_text = (!tail.is_empty()).then(|| tail.join("\n"));
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
            answered_tool_ids,
            tail_text,
        }
    }

    /// Number of entries in `messages`.
    pub fn message_count(&self) -> usize {
        self.roles.len()
    }
}

/// The text of a message's content, in order: strings, `text` blocks and the content of
/// `tool_result` blocks.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => ["text", "content"]
            .iter()
            .filter_map(|k| o.get(*k))
            .for_each(|x| strings(x, out)),
        _ => {}
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

pub(super) struct Shared {
    pub(super) scenario: Scenario,
    pub(super) requests: Mutex<Vec<RecordedRequest>>,
    pub(super) main_count: Mutex<usize>,
    /// Per-key request counts of the agent scenario.
    pub(super) agent_counts: Mutex<HashMap<String, usize>>,
    pub(super) seq: AtomicU64,
    pub(super) salt: u64,
    pub(super) started: Instant,
}

impl Shared {
    /// A fresh log for `scenario`; `port` salts the ids so two servers never hand out the same.
    pub(super) fn new(scenario: Scenario, port: u16) -> Shared {
        let salt = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Shared {
            scenario,
            requests: Mutex::new(Vec::new()),
            main_count: Mutex::new(0),
            agent_counts: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(1),
            salt: salt ^ u64::from(port),
            started: Instant::now(),
        }
    }

    pub(super) fn requests(&self) -> MutexGuard<'_, Vec<RecordedRequest>> {
        // A poisoned lock only means a reader panicked; the data is still valid.
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn id(&self, prefix: &str) -> String {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}_mock_{:08x}{:012x}", self.salt as u32, n)
    }

    /// Records a request; for main requests `main` carries the summary and the
    /// index (the caller holds the `main_count` lock).
    pub(super) fn push(
        &self,
        req: &Request,
        body: Option<Value>,
        main: Option<(RequestSummary, usize)>,
    ) {
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
    pub(super) fn record(&self, req: &Request, body: Option<Value>) {
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
    pub(super) fn new(shared: Arc<Shared>) -> RequestLog {
        RequestLog(shared)
    }

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
