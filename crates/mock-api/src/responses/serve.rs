//! The Responses mock's connections: HTTP/1.1 (the crate's reader and writer), the routes, and
//! the SSE stream of one response.

use std::io;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::scenario::{Item, ResponseTurn, StallSpec};
use super::Shared;
use crate::http::{self, ReadError};
use crate::scenario::Stall;

/// Serve every connection of `listener` until `stopped` ([`http::accept_loop`]).
pub(super) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    stopped: oneshot::Receiver<()>,
) {
    http::accept_loop(listener, stopped, |stream| {
        serve_conn(stream, shared.clone())
    })
    .await;
}

fn json_headers() -> Vec<(String, String)> {
    vec![("content-type".into(), "application/json".into())]
}

/// An API error body, as the Responses API writes one.
fn error_body(status: u16, message: &str) -> String {
    let kind = if status >= 500 {
        "server_error"
    } else {
        "invalid_request_error"
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}}).to_string()
}

async fn serve_conn(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    loop {
        let mut req = match http::read_head(&mut rd).await {
            Ok(r) => r,
            Err(ReadError::Malformed(why)) => {
                let body = error_body(400, why);
                let _ =
                    http::write_full(&mut wr, 400, &json_headers(), body.as_bytes(), false, false)
                        .await;
                return;
            }
            Err(ReadError::Closed | ReadError::Io) => return,
        };
        let expects = req
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
        if expects && http::write_continue(&mut wr).await.is_err() {
            return;
        }
        if http::read_body(&mut rd, &mut req).await.is_err() {
            return;
        }
        let keep_alive = req.keep_alive();
        let head_only = req.method == "HEAD";
        let served = match (req.method.as_str(), req.path()) {
            ("POST", "/v1/responses" | "/responses") => {
                let body = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                let turn = shared.take(body);
                respond(&turn, &mut rd, &mut wr, keep_alive).await
            }
            ("GET" | "HEAD", _) => {
                let body = json!({"object": "list", "data": []}).to_string();
                http::write_full(
                    &mut wr,
                    200,
                    &json_headers(),
                    body.as_bytes(),
                    keep_alive,
                    head_only,
                )
                .await
                .map(|()| true)
            }
            (method, path) => {
                let body = error_body(404, &format!("mock: no route for {method} {path}"));
                http::write_full(
                    &mut wr,
                    404,
                    &json_headers(),
                    body.as_bytes(),
                    keep_alive,
                    head_only,
                )
                .await
                .map(|()| true)
            }
        };
        match served {
            Ok(true) if keep_alive => {}
            _ => return,
        }
    }
}

/// Answer one request with `turn`. `Ok(false)`: the connection is done with (a stall the
/// client gave up on, a stream that ended it).
async fn respond<R, W>(
    turn: &ResponseTurn,
    rd: &mut R,
    wr: &mut W,
    keep_alive: bool,
) -> io::Result<bool>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if let Some((status, message)) = &turn.error {
        let body = error_body(*status, message);
        http::write_full(
            wr,
            *status,
            &json_headers(),
            body.as_bytes(),
            keep_alive,
            false,
        )
        .await?;
        return Ok(true);
    }
    let headers = vec![
        ("content-type".to_string(), "text/event-stream".to_string()),
        ("cache-control".to_string(), "no-cache".to_string()),
    ];
    http::write_chunked_head(wr, 200, &headers, keep_alive).await?;
    let id = "resp_mock";
    let mut sse = Events { wr };
    sse.send(&json!({"type": "response.created", "response": {"id": id, "object": "response", "status": "in_progress", "output": []}}))
        .await?;
    let mut output = Vec::new();
    for (index, item) in turn.items.iter().enumerate() {
        let done = match item {
            Item::Text(text) => {
                let item_id = format!("msg_{index}");
                let open = json!({"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []});
                sse.send(&json!({"type": "response.output_item.added", "output_index": index, "item": open}))
                    .await?;
                let pieces = crate::server::split_words(text);
                let stall_here = index == 0 && turn.stall.is_some();
                for (i, piece) in pieces.iter().enumerate() {
                    sse.send(&json!({"type": "response.output_text.delta", "output_index": index, "item_id": item_id, "content_index": 0, "delta": piece}))
                        .await?;
                    if stall_here && i == 0 {
                        break;
                    }
                }
                if let (true, Some(spec)) = (stall_here, turn.stall) {
                    if !stall(rd, sse.wr, spec).await {
                        return Ok(false);
                    }
                }
                json!({"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]})
            }
            Item::Call {
                call_id,
                name,
                arguments,
            } => {
                let item = json!({"type": "function_call", "id": format!("fc_{index}"), "call_id": call_id, "name": name, "arguments": arguments.to_string(), "status": "completed"});
                let mut open = item.clone();
                open["arguments"] = json!("");
                open["status"] = json!("in_progress");
                sse.send(&json!({"type": "response.output_item.added", "output_index": index, "item": open}))
                    .await?;
                item
            }
        };
        sse.send(
            &json!({"type": "response.output_item.done", "output_index": index, "item": done}),
        )
        .await?;
        output.push(done);
    }
    let usage = json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120});
    sse.send(&json!({"type": "response.completed", "response": {"id": id, "object": "response", "status": "completed", "output": output, "usage": usage}}))
        .await?;
    http::write_last_chunk(sse.wr).await?;
    Ok(true)
}

/// An SSE writer: one `event:`/`data:` frame per event.
struct Events<'a, W> {
    wr: &'a mut W,
}

impl<W: AsyncWrite + Unpin> Events<'_, W> {
    async fn send(&mut self, data: &Value) -> io::Result<()> {
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        let frame = format!("event: {name}\ndata: {data}\n\n");
        http::write_chunk(self.wr, frame.as_bytes()).await
    }
}

/// Wait out a stall, with SSE comments as keep-alives if asked; `false` as soon as the client
/// closes the connection (or a write fails).
async fn stall<R, W>(rd: &mut R, wr: &mut W, spec: StallSpec) -> bool
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let deadline = match spec.stall {
        Stall::For(d) => Some(Instant::now() + d),
        Stall::Forever => None,
    };
    let mut next = spec.keep_alive.map(|every| Instant::now() + every);
    let mut watch_reads = true;
    loop {
        let wake = match (deadline, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let sleep = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = sleep => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return true;
                }
                if let (Some(every), Some(_)) = (spec.keep_alive, next) {
                    if http::write_chunk(wr, b": keep-alive\n\n").await.is_err() {
                        return false;
                    }
                    next = Some(Instant::now() + every);
                }
            }
            r = rd.fill_buf(), if watch_reads => match r {
                Ok([]) | Err(_) => return false,
                // The client sent more (pipelining): stop watching, keep stalling.
                Ok(_) => watch_reads = false,
            },
        }
    }
}
