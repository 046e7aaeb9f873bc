//! Connections: the accept loop, HTTP/1.1 keep-alive, and routing of the side endpoints.

use std::io;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncWrite, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::log::Shared;
use super::messages::messages;
use super::DEFAULT_MODEL;
use crate::http::{self, ReadError, Request};

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

/// The client went away (or the socket failed): stop serving this connection.
pub(super) struct Gone;

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
        let served = if req.method == "POST" && req.path() == "/v1/messages" {
            messages(&shared, req, &mut rd, &mut wr, keep_alive).await
        } else {
            route(&shared, req, &mut wr, keep_alive).await
        };
        match served {
            Ok(()) if keep_alive => {}
            _ => return,
        }
    }
}

pub(super) fn json_headers() -> Vec<(String, String)> {
    vec![("content-type".into(), "application/json".into())]
}

pub(super) async fn error_response<W: AsyncWrite + Unpin>(
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

/// The side endpoints (every request but `POST /v1/messages`).
async fn route<W: AsyncWrite + Unpin>(
    shared: &Shared,
    req: Request,
    wr: &mut W,
    keep_alive: bool,
) -> Result<(), Gone> {
    let path = req.path().to_string();
    let head_only = req.method == "HEAD";
    let body_json: Option<Value> = serde_json::from_slice(&req.body).ok();
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
