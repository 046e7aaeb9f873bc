//! `POST /v1/messages`: picks the scenario's step for a request and answers it.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncWrite};

use super::conn::{error_response, json_headers, Gone};
use super::log::{RequestSummary, Shared};
use super::sse::{stall, stream_block, Sse};
use super::{DEFAULT_MODEL, SIGNATURE};
use crate::http::{self, Request};
use crate::scenario::{Block, Stall, Step};

fn now_epoch_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(super) async fn messages<R, W>(
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
    let body: Option<Value> = serde_json::from_slice(&req.body).ok();
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
    if shared.scenario.validates() {
        if let Err(invalid) = crate::validate_messages(&body) {
            shared.record(&req, Some(body));
            error_response(
                wr,
                400,
                "invalid_request_error",
                &invalid.0,
                keep_alive,
                false,
            )
            .await?;
            return Ok(());
        }
    }
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
