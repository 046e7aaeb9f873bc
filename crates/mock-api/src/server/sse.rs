//! Server-sent events: content blocks streamed in pieces, and stalls with optional pings.

use std::io;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite};
use tokio::time::Instant;

use super::conn::Gone;
use super::SIGNATURE;
use crate::http;
use crate::scenario::{Block, Stall};

/// An SSE writer: one `event:`/`data:` frame per event, each after `delay`.
pub(super) struct Sse<'a, W> {
    pub(super) wr: &'a mut W,
    pub(super) delay: Duration,
}

impl<W: AsyncWrite + Unpin> Sse<'_, W> {
    pub(super) async fn event(&mut self, data: &Value) -> io::Result<()> {
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

pub(super) async fn stream_block<W: AsyncWrite + Unpin>(
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
pub(super) async fn stall<R, W>(
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
