//! Unit tests of the mock server over raw TCP (no CLI involved).

use std::time::Duration;

use mock_api::{
    BlockingMockServer, Matcher, MockServer, RateLimitHeaders, RequestSummary, Scenario,
    ScenarioOptions, StopReason, Turn, BASH_TOOL_ID, FINAL_TEXT, WRITE_TOOL_ID,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Upper bound for any single network step; the tests never rely on elapsed time.
const STEP: Duration = Duration::from_secs(10);

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

struct Client {
    conn: BufReader<TcpStream>,
}

impl Client {
    async fn connect(server: &MockServer) -> Client {
        Client {
            conn: BufReader::new(TcpStream::connect(server.addr()).await.unwrap()),
        }
    }

    async fn send(&mut self, raw: &[u8]) {
        self.conn.get_mut().write_all(raw).await.unwrap();
    }

    async fn post(&mut self, target: &str, body: &Value, extra_headers: &str) {
        let body = body.to_string();
        let req = format!(
            "POST {target} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{extra_headers}content-length: {}\r\n\r\n{body}",
            body.len()
        );
        self.send(req.as_bytes()).await;
    }

    async fn line(&mut self) -> String {
        let mut l = String::new();
        tokio::time::timeout(STEP, self.conn.read_line(&mut l))
            .await
            .expect("timely line")
            .unwrap();
        l
    }

    async fn head(&mut self) -> (u16, Vec<(String, String)>) {
        let status_line = self.line().await;
        assert!(
            status_line.starts_with("HTTP/1.1 "),
            "status line: {status_line:?}"
        );
        let status = status_line[9..12].parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let l = self.line().await;
            let l = l.trim_end();
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
        }
        (status, headers)
    }

    /// One chunk of a chunked body; `None` for the last (empty) chunk.
    async fn chunk(&mut self) -> Option<Vec<u8>> {
        let size = usize::from_str_radix(self.line().await.trim(), 16).unwrap();
        let mut data = vec![0; size];
        tokio::time::timeout(STEP, self.conn.read_exact(&mut data))
            .await
            .expect("timely chunk")
            .unwrap();
        assert_eq!(self.line().await, "\r\n");
        (size > 0).then_some(data)
    }

    async fn response(&mut self, head_only: bool) -> Resp {
        let (status, headers) = self.head().await;
        let find = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        let mut body = Vec::new();
        if head_only {
        } else if find("transfer-encoding").as_deref() == Some("chunked") {
            while let Some(c) = self.chunk().await {
                body.extend(c);
            }
        } else {
            let len: usize = find("content-length")
                .expect("content-length")
                .parse()
                .unwrap();
            body.resize(len, 0);
            self.conn.read_exact(&mut body).await.unwrap();
        }
        Resp {
            status,
            headers,
            body,
        }
    }

    async fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 1];
        matches!(
            tokio::time::timeout(STEP, self.conn.read(&mut buf)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

fn request(stream: bool, messages: Value) -> Value {
    json!({"model": "mock-model-1", "max_tokens": 32000, "stream": stream, "messages": messages})
}

fn hello(stream: bool) -> Value {
    request(stream, json!([{"role": "user", "content": "Say hello."}]))
}

/// Parses an SSE body into `(event name, data)` pairs, checking the framing.
fn sse_events(body: &[u8]) -> Vec<(String, Value)> {
    let text = std::str::from_utf8(body).unwrap();
    assert!(
        text.ends_with("\n\n"),
        "SSE body must end with a blank line"
    );
    text.split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|frame| {
            let mut lines = frame.lines();
            let event = lines
                .next()
                .unwrap()
                .strip_prefix("event: ")
                .expect("event line")
                .to_string();
            let data: Value = serde_json::from_str(
                lines
                    .next()
                    .unwrap()
                    .strip_prefix("data: ")
                    .expect("data line"),
            )
            .unwrap();
            assert_eq!(lines.next(), None, "one data line per frame");
            assert_eq!(data["type"], event.as_str(), "event name matches data.type");
            (event, data)
        })
        .collect()
}

async fn stream_turn(turn: Turn, body: Value) -> (Resp, Vec<(String, Value)>) {
    let server = MockServer::start(Scenario::new("t").turn(turn))
        .await
        .unwrap();
    let mut c = Client::connect(&server).await;
    c.post("/v1/messages?beta=true", &body, "").await;
    let resp = c.response(false).await;
    let events = sse_events(&resp.body);
    server.shutdown().await;
    (resp, events)
}

#[tokio::test]
async fn healthy_streams_well_framed_sse() {
    let (resp, events) = stream_turn(Turn::answer(FINAL_TEXT), hello(true)).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert!(resp
        .header("content-type")
        .unwrap()
        .starts_with("text/event-stream"));
    assert!(resp.header("request-id").unwrap().starts_with("req_mock_"));
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..3], ["message_start", "ping", "content_block_start"]);
    assert_eq!(
        names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(names[3..names.len() - 3]
        .iter()
        .all(|n| *n == "content_block_delta"));
    let start = &events[0].1["message"];
    assert_eq!(start["model"], "mock-model-1", "echoes the requested model");
    assert!(start["id"].as_str().unwrap().starts_with("msg_mock_"));
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| d["delta"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, FINAL_TEXT);
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "end_turn"
    );
}

#[tokio::test]
async fn thinking_and_tool_use_blocks() {
    let turn = Turn::new()
        .thinking("Let me think. Step one.")
        .text("Running it.")
        .bash("toolu_x", "echo hi");
    let (_, events) = stream_turn(turn, hello(true)).await;
    let starts: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(starts.len(), 3);
    assert_eq!(starts[0]["content_block"]["type"], "thinking");
    assert_eq!(starts[1]["content_block"]["type"], "text");
    assert_eq!(
        starts[2]["content_block"],
        json!({"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {}})
    );
    let deltas = |i: u64, kind: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|(n, d)| {
                n == "content_block_delta" && d["index"] == i && d["delta"]["type"] == kind
            })
            .map(|(_, d)| d["delta"].clone())
            .collect()
    };
    let thinking: String = deltas(0, "thinking_delta")
        .iter()
        .map(|d| d["thinking"].as_str().unwrap())
        .collect();
    assert_eq!(thinking, "Let me think. Step one.");
    assert_eq!(deltas(0, "signature_delta").len(), 1);
    let json_parts = deltas(2, "input_json_delta");
    assert!(json_parts.len() >= 2, "tool input is streamed in pieces");
    let input: String = json_parts
        .iter()
        .map(|d| d["partial_json"].as_str().unwrap())
        .collect();
    let input: Value = serde_json::from_str(&input).unwrap();
    assert_eq!(input["command"], "echo hi");
    // Each block is stopped before the next one starts.
    let order: Vec<(String, u64)> = events
        .iter()
        .filter(|(n, _)| n == "content_block_start" || n == "content_block_stop")
        .map(|(n, d)| (n.clone(), d["index"].as_u64().unwrap()))
        .collect();
    let expected: Vec<(String, u64)> = (0..3)
        .flat_map(|i| {
            [
                ("content_block_start".to_string(), i),
                ("content_block_stop".to_string(), i),
            ]
        })
        .collect();
    assert_eq!(order, expected);
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "tool_use"
    );
}

#[tokio::test]
async fn write_path_is_resolved_against_the_reported_cwd() {
    let body = json!({
        "model": "m", "stream": true,
        "system": [{"type": "text", "text": "# Environment\n - Primary working directory: /tmp/x/project\n - Platform: linux"}],
        "messages": [{"role": "user", "content": "go"}],
    });
    let (_, events) =
        stream_turn(Turn::new().write(WRITE_TOOL_ID, "hello.txt", "hi\n"), body).await;
    let input: String = events
        .iter()
        .filter(|(n, d)| n == "content_block_delta" && d["delta"]["type"] == "input_json_delta")
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap().to_string())
        .collect();
    let input: Value = serde_json::from_str(&input).unwrap();
    assert_eq!(
        input,
        json!({"file_path": "/tmp/x/project/hello.txt", "content": "hi\n"})
    );
}

#[tokio::test]
async fn max_tokens_stop_reason() {
    let (_, events) =
        stream_turn(Turn::answer("cut off in the mid").max_tokens(), hello(true)).await;
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "max_tokens"
    );
}

#[tokio::test]
async fn non_streaming_request_gets_a_json_message() {
    let scenario = Scenario::new("t").turn(
        Turn::new()
            .thinking("hmm")
            .text("Hi.")
            .bash("toolu_b", "ls"),
    );
    let server = MockServer::start(scenario).await.unwrap();
    let mut c = Client::connect(&server).await;
    c.post("/v1/messages", &hello(false), "").await;
    let resp = c.response(false).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert!(resp.header("request-id").is_some());
    let m = resp.json();
    assert_eq!(m["type"], "message");
    assert_eq!(m["role"], "assistant");
    assert_eq!(m["model"], "mock-model-1");
    assert_eq!(m["stop_reason"], "tool_use");
    let types: Vec<&str> = m["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["thinking", "text", "tool_use"]);
    assert_eq!(m["content"][2]["input"]["command"], "ls");
    assert!(!server.main_requests()[0].summary.as_ref().unwrap().stream);
    server.shutdown().await;
}

#[tokio::test]
async fn side_endpoints_404_and_keep_alive() {
    let server = MockServer::start(Scenario::named("healthy").unwrap())
        .await
        .unwrap();
    let mut c = Client::connect(&server).await;
    // Several requests on one connection.
    c.send(b"HEAD /api/hello HTTP/1.1\r\nhost: x\r\n\r\n").await;
    let r = c.response(true).await;
    assert_eq!(r.status, 200);
    c.send(b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n").await;
    let r = c.response(false).await;
    assert_eq!(r.status, 200);
    assert!(r.json()["data"].as_array().is_some_and(|d| !d.is_empty()));
    c.post("/v1/messages/count_tokens?beta=true", &hello(true), "")
        .await;
    let r = c.response(false).await;
    assert_eq!(
        (r.status, r.json()["input_tokens"].as_u64()),
        (200, Some(100))
    );
    c.send(b"GET /v1/unknown HTTP/1.1\r\nhost: x\r\n\r\n").await;
    let r = c.response(false).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["type"], "not_found_error");
    c.post("/v1/messages?beta=true", &hello(true), "").await;
    let r = c.response(false).await;
    assert_eq!(r.status, 200);
    // None of the side requests counts as a main request.
    assert_eq!(server.main_request_count(), 1);
    assert_eq!(server.requests().len(), 5);
    // `connection: close` is honoured.
    c.send(b"GET /api/hello HTTP/1.1\r\nconnection: close\r\n\r\n")
        .await;
    assert_eq!(c.response(false).await.status, 200);
    assert!(c.is_closed().await);
    server.shutdown().await;
}

#[tokio::test]
async fn records_requests_and_summaries() {
    let server = MockServer::start(Scenario::named("tool_then_answer").unwrap())
        .await
        .unwrap();
    let mut c = Client::connect(&server).await;
    let user_id = json!({"device_id": "d", "account_uuid": "", "session_id": "sess-1"}).to_string();
    let body = json!({
        "model": "claude-opus-5-5", "max_tokens": 128000, "stream": true,
        "metadata": {"user_id": user_id},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Write a file."}]},
            {"role": "system", "content": "env"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": WRITE_TOOL_ID, "name": "Write", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": WRITE_TOOL_ID, "content": "ok"},
                {"type": "text", "text": "<system-reminder>x</system-reminder>"}
            ]},
        ],
    });
    c.post(
        "/v1/messages?beta=true",
        &body,
        "x-claude-code-session-id: sess-1\r\nx-api-key: sk-test\r\n",
    )
    .await;
    c.response(false).await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str(), r.query.as_deref()),
        ("POST", "/v1/messages", Some("beta=true"))
    );
    assert_eq!(r.header("x-api-key"), Some("sk-test"));
    assert_eq!(r.main_index, Some(0));
    assert_eq!(r.body.as_ref().unwrap()["max_tokens"], 128000);
    let s = r.summary.as_ref().unwrap();
    assert_eq!(
        s,
        &RequestSummary {
            model: Some("claude-opus-5-5".into()),
            stream: true,
            max_tokens: Some(128000),
            roles: ["user", "system", "assistant", "user"]
                .map(String::from)
                .to_vec(),
            last_user_text: Some("<system-reminder>x</system-reminder>".into()),
            tool_result_ids: vec![WRITE_TOOL_ID.into()],
            session_id: Some("sess-1".into()),
            metadata_session_id: Some("sess-1".into()),
            cwd: None,
            agent_id: None,
            answered_tool_ids: vec![WRITE_TOOL_ID.into()],
            tail_text: Some("ok\n<system-reminder>x</system-reminder>".into()),
        }
    );
    assert_eq!(s.message_count(), 4);
    server.shutdown().await;
}

fn summary(last_user_text: &str, tool_results: &[&str], stream: bool) -> RequestSummary {
    RequestSummary {
        stream,
        last_user_text: Some(last_user_text.into()),
        tool_result_ids: tool_results.iter().map(|s| s.to_string()).collect(),
        ..RequestSummary::default()
    }
}

#[test]
fn scenario_selection() {
    let s = Scenario::new("sel")
        .turn(Turn::answer("first"))
        .turn(Turn::answer("second"))
        .when(
            Matcher::ToolResultFor("toolu_7".into()),
            Turn::answer("after tool 7"),
        )
        .when(
            Matcher::LastUserTextContains("continue".into()),
            Turn::answer("continued"),
        )
        .when(Matcher::NonStreaming, Turn::answer("fallback"))
        .when(Matcher::Index(5), Turn::answer("fifth"));
    let text = |t: Turn| match t.blocks().next() {
        Some(mock_api::Block::Text(s)) => s.clone(),
        other => panic!("{other:?}"),
    };
    let plain = summary("hi", &[], true);
    assert_eq!(text(s.select(0, &plain)), "first");
    assert_eq!(text(s.select(1, &plain)), "second");
    assert_eq!(text(s.select(4, &plain)), "second", "the last turn repeats");
    assert_eq!(text(s.select(5, &plain)), "fifth");
    assert_eq!(
        text(s.select(0, &summary("hi", &["toolu_7"], true))),
        "after tool 7"
    );
    assert_eq!(
        text(s.select(0, &summary("please continue", &[], true))),
        "continued"
    );
    assert_eq!(text(s.select(0, &summary("hi", &[], false))), "fallback");
    assert_eq!(text(Scenario::new("empty").select(3, &plain)), FINAL_TEXT);
}

#[test]
fn named_scenarios_exist_and_have_the_expected_shape() {
    for name in Scenario::NAMES {
        assert_eq!(Scenario::named(name).unwrap().name(), *name);
    }
    assert!(Scenario::named("nope").is_none());
    let gateway: Vec<&str> = Scenario::NAMES
        .iter()
        .copied()
        .filter(|n| Scenario::named(n).unwrap().uses_rate_limit_headers())
        .collect();
    assert_eq!(
        gateway,
        ["rate_limit_warning", "rate_limited_then_ok", "rejected"]
    );
    let s = RequestSummary::default();
    let first = |n: &str| Scenario::named(n).unwrap().select(0, &s);
    let second = |n: &str| Scenario::named(n).unwrap().select(1, &s);
    assert_eq!(
        first("tool_then_answer").effective_stop_reason(),
        StopReason::ToolUse
    );
    assert_eq!(
        second("tool_then_answer").effective_stop_reason(),
        StopReason::EndTurn
    );
    assert_eq!(
        first("max_tokens_always").effective_stop_reason(),
        StopReason::MaxTokens
    );
    assert_eq!(
        Scenario::named("max_tokens_always")
            .unwrap()
            .select(7, &s)
            .effective_stop_reason(),
        StopReason::MaxTokens
    );
    assert_eq!(
        second("max_tokens_once").effective_stop_reason(),
        StopReason::EndTurn
    );
    assert_eq!(first("rate_limited_then_ok").status(), 429);
    assert_eq!(second("rate_limited_then_ok").status(), 200);
    assert_eq!(
        Scenario::named("rejected").unwrap().select(3, &s).status(),
        429
    );
    let long = Scenario::named_with(
        "long_tool",
        &ScenarioOptions {
            long_tool: Duration::from_secs(40),
            ..Default::default()
        },
    );
    match long.unwrap().select(0, &s).blocks().last() {
        Some(mock_api::Block::ToolUse { id, name, input }) => {
            assert_eq!((id.as_str(), name.as_str()), (BASH_TOOL_ID, "Bash"));
            let cmd = input["command"].as_str().unwrap();
            assert!(
                !cmd.starts_with("sleep"),
                "the CLI refuses a leading standalone sleep"
            );
            assert!(cmd.contains("sleep 40"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn rate_limited_then_ok_sends_429_with_retry_after_then_succeeds() {
    let opts = ScenarioOptions {
        reset_in: Duration::from_secs(3),
        ..Default::default()
    };
    let server = MockServer::start(Scenario::named_with("rate_limited_then_ok", &opts).unwrap())
        .await
        .unwrap();
    let mut c = Client::connect(&server).await;
    c.post("/v1/messages?beta=true", &hello(true), "").await;
    let r = c.response(false).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("3"));
    assert_eq!(r.json()["error"]["type"], "rate_limit_error");
    assert!(r.header("request-id").is_some());
    let reset: u64 = r
        .header("anthropic-ratelimit-unified-reset")
        .unwrap()
        .parse()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        reset >= now && reset <= now + 4,
        "reset {reset} is ~3 s after {now}"
    );
    c.post("/v1/messages?beta=true", &hello(true), "").await;
    let r = c.response(false).await;
    assert_eq!(r.status, 200);
    assert_eq!(sse_events(&r.body).last().unwrap().0, "message_stop");
    assert_eq!(server.main_request_count(), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn unified_rate_limit_headers() {
    let server = MockServer::start(Scenario::named("rate_limit_warning").unwrap())
        .await
        .unwrap();
    let mut c = Client::connect(&server).await;
    c.post("/v1/messages?beta=true", &hello(true), "").await;
    let r = c.response(false).await;
    assert_eq!(r.status, 200);
    let h = |n: &str| {
        r.header(&format!("anthropic-ratelimit-unified-{n}"))
            .map(str::to_string)
    };
    assert_eq!(h("status").as_deref(), Some("allowed"));
    assert_eq!(h("5h-utilization").as_deref(), Some("0.95"));
    assert_eq!(h("5h-status").as_deref(), Some("allowed_warning"));
    assert_eq!(h("7d-utilization").as_deref(), Some("0.42"));
    assert_eq!(h("7d-status").as_deref(), Some("allowed"));
    assert_eq!(h("overage-status").as_deref(), Some("rejected"));
    assert_eq!(
        h("overage-disabled-reason").as_deref(),
        Some("org_level_disabled")
    );
    assert_eq!(h("representative-claim").as_deref(), Some("five_hour"));
    for n in ["reset", "5h-reset", "7d-reset"] {
        assert!(h(n).unwrap().parse::<u64>().is_ok(), "{n} is epoch seconds");
    }
    server.shutdown().await;

    let rejected = RateLimitHeaders::rejected(Duration::from_secs(60))
        .header("X-Extra", "1")
        .to_headers(1000);
    assert!(rejected.contains(&(
        "anthropic-ratelimit-unified-status".into(),
        "rejected".into()
    )));
    assert!(rejected.contains(&("anthropic-ratelimit-unified-reset".into(), "1060".into())));
    assert!(rejected.contains(&(
        "anthropic-ratelimit-unified-5h-utilization".into(),
        "1".into()
    )));
    assert!(rejected.contains(&("x-extra".into(), "1".into())));
}

#[tokio::test]
async fn malformed_requests_do_not_crash_the_server() {
    let server = MockServer::start(Scenario::named("healthy").unwrap())
        .await
        .unwrap();
    let garbage: [&[u8]; 7] = [
        b"\x00\xff\xfe garbage\r\n\r\n",
        b"GET\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\ncontent-length: nope\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\ncontent-length: 999999999999\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"GET / HTTP/1.1\r\nno colon here\r\n\r\n",
    ];
    for raw in garbage {
        let mut c = Client::connect(&server).await;
        c.send(raw).await;
        let r = c.response(false).await;
        assert_eq!(r.status, 400, "for {:?}", String::from_utf8_lossy(raw));
        assert!(c.is_closed().await);
    }
    // A body that is not JSON, and a truncated body followed by a hang-up.
    let mut c = Client::connect(&server).await;
    c.send(b"POST /v1/messages HTTP/1.1\r\ncontent-length: 5\r\n\r\nnot{j")
        .await;
    assert_eq!(c.response(false).await.status, 400);
    let mut c2 = Client::connect(&server).await;
    c2.send(b"POST /v1/messages HTTP/1.1\r\ncontent-length: 100\r\n\r\n{\"a\"")
        .await;
    c2.conn.get_mut().shutdown().await.unwrap();
    drop(c2);
    // The server still works, on the same kept-alive connection too.
    c.post("/v1/messages", &hello(true), "").await;
    assert_eq!(c.response(false).await.status, 200);
    assert_eq!(server.main_request_count(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn chunked_request_body_is_accepted() {
    let server = MockServer::start(Scenario::named("healthy").unwrap())
        .await
        .unwrap();
    let mut c = Client::connect(&server).await;
    let body = hello(true).to_string();
    let (a, b) = body.split_at(10);
    let raw = format!(
        "POST /v1/messages HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x};ext=1\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    c.send(raw.as_bytes()).await;
    assert_eq!(c.response(false).await.status, 200);
    assert_eq!(
        server.main_requests()[0]
            .summary
            .as_ref()
            .unwrap()
            .model
            .as_deref(),
        Some("mock-model-1")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn ping_only_stall_pings_until_shutdown() {
    let opts = ScenarioOptions {
        ping_every: Duration::from_millis(20),
        ..Default::default()
    };
    let server = MockServer::start(Scenario::named_with("ping_only_stall", &opts).unwrap())
        .await
        .unwrap();
    let mut c = Client::connect(&server).await;
    c.post("/v1/messages?beta=true", &hello(true), "").await;
    let (status, _) = c.head().await;
    assert_eq!(status, 200);
    let mut names = Vec::new();
    while names.iter().filter(|n| *n == "ping").count() < 4 {
        let chunk = c.chunk().await.expect("stream continues");
        names.extend(sse_events(&chunk).into_iter().map(|(n, _)| n));
    }
    // message_start, its ping, the partial text block, then nothing but pings.
    assert_eq!(names[..2], ["message_start", "ping"]);
    assert!(names.contains(&"content_block_delta".to_string()));
    assert!(!names.contains(&"content_block_stop".to_string()));
    let after_text = names.iter().rposition(|n| n != "ping").unwrap();
    assert!(
        names.len() - after_text > 2,
        "pings after the text: {names:?}"
    );
    tokio::time::timeout(STEP, server.shutdown())
        .await
        .expect("shutdown ends the stall");
    assert!(
        c.is_closed().await,
        "the stalled connection is closed on shutdown"
    );
}

#[tokio::test]
async fn headers_only_stall_sends_headers_then_nothing_until_shutdown() {
    let server = MockServer::start(Scenario::named("headers_only_stall").unwrap())
        .await
        .unwrap();
    let mut c = Client::connect(&server).await;
    c.post("/v1/messages?beta=true", &hello(true), "").await;
    let (status, headers) = c.head().await;
    assert_eq!(status, 200);
    assert!(headers
        .iter()
        .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream")));
    tokio::time::timeout(STEP, server.shutdown())
        .await
        .expect("shutdown ends the stall");
    // Nothing but EOF follows the head.
    let mut rest = Vec::new();
    tokio::time::timeout(STEP, c.conn.read_to_end(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert!(
        rest.is_empty(),
        "unexpected bytes: {:?}",
        String::from_utf8_lossy(&rest)
    );
}

#[tokio::test]
async fn finite_stall_then_completes() {
    let turn = Turn::answer("partial")
        .stall(Duration::from_millis(30))
        .text("rest");
    let (_, events) = stream_turn(turn, hello(true)).await;
    let starts = events
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .count();
    assert_eq!(starts, 2);
    assert_eq!(events.last().unwrap().0, "message_stop");
}

#[tokio::test]
async fn non_streaming_request_stalls_forever_when_the_turn_does() {
    let server = MockServer::start(Scenario::named("silent_after_tool_result").unwrap())
        .await
        .unwrap();
    let mut c = Client::connect(&server).await;
    c.post("/v1/messages", &hello(true), "").await;
    c.response(false).await; // the tool call
    c.post("/v1/messages", &hello(false), "").await;
    // Wait until the server has taken the request, then stop it: the client sees EOF, no response.
    while server.main_request_count() < 2 {
        tokio::task::yield_now().await;
    }
    tokio::time::timeout(STEP, server.shutdown())
        .await
        .expect("shutdown ends the stall");
    let mut rest = Vec::new();
    tokio::time::timeout(STEP, c.conn.read_to_end(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert!(rest.is_empty());
}

#[test]
fn blocking_server_works_from_sync_code() {
    use std::io::{BufRead, Read, Write};
    let server = BlockingMockServer::start(Scenario::named("healthy").unwrap()).unwrap();
    assert!(server.addr().ip().is_loopback());
    assert_eq!(
        server.base_url(),
        format!("http://127.0.0.1:{}", server.addr().port())
    );
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(STEP)).unwrap();
    s.write_all(b"GET /nope HTTP/1.1\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut r = std::io::BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 404"), "{status}");
    let mut rest = String::new();
    r.read_to_string(&mut rest).unwrap();
    assert_eq!(server.requests().len(), 1);
    let log = server.log();
    server.shutdown();
    assert_eq!(log.requests()[0].path, "/nope");
}

#[test]
fn blocking_server_drop_ends_a_stall() {
    let server = BlockingMockServer::start(Scenario::named("headers_only_stall").unwrap()).unwrap();
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    use std::io::{Read, Write};
    let body = hello(true).to_string();
    write!(
        s,
        "POST /v1/messages HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    s.set_read_timeout(Some(STEP)).unwrap();
    let mut buf = [0u8; 1024];
    let n = s.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    drop(server); // joins the server thread: must not hang on the stalled connection
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
}
