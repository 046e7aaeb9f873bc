//! The Responses-API mock over raw TCP (no CLI involved): a healthy stream with tool calls,
//! the turn picked by the call whose output a request carries, a stall mid-answer with and
//! without SSE keep-alives, HTTP errors, bad requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mock_api::responses::{ResponseTurn, ResponsesMockServer, ResponsesScenario};
use mock_api::Stall;
use serde_json::{json, Value};

/// Upper bound for any single network step; the tests never rely on elapsed time.
const STEP: Duration = Duration::from_secs(10);

struct Client {
    conn: BufReader<TcpStream>,
}

impl Client {
    fn connect(server: &ResponsesMockServer) -> Client {
        let s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(STEP)).unwrap();
        Client {
            conn: BufReader::new(s),
        }
    }

    fn post(&mut self, path: &str, body: &str) {
        let req = format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        self.conn.get_mut().write_all(req.as_bytes()).unwrap();
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.conn.read_line(&mut l).expect("a timely line");
        l
    }

    /// The status and headers.
    fn head(&mut self) -> (u16, Vec<String>) {
        let status = self.line();
        let code = status[9..12].parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let l = self.line();
            if l.trim_end().is_empty() {
                return (code, headers);
            }
            headers.push(l.trim_end().to_ascii_lowercase());
        }
    }

    /// One chunk of a chunked body (empty: the last one).
    fn chunk(&mut self) -> String {
        let size = usize::from_str_radix(self.line().trim_end(), 16).unwrap();
        let mut data = vec![0; size + 2];
        self.conn.read_exact(&mut data).unwrap();
        data.truncate(size);
        String::from_utf8(data).unwrap()
    }

    /// Every SSE event of a streamed response, until its last chunk.
    fn events(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let c = self.chunk();
            if c.is_empty() {
                return out;
            }
            if let Some(data) = c.lines().find_map(|l| l.strip_prefix("data: ")) {
                out.push(serde_json::from_str(data).unwrap());
            }
        }
    }

    /// A `Content-Length` body.
    fn body(&mut self, headers: &[String]) -> Value {
        let len: usize = headers
            .iter()
            .find_map(|h| h.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        let mut b = vec![0; len];
        self.conn.read_exact(&mut b).unwrap();
        serde_json::from_slice(&b).unwrap()
    }
}

fn request(input: Value) -> String {
    json!({"model": "mock-model", "stream": true, "input": input}).to_string()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn a_healthy_stream_with_a_tool_call_then_the_answer_after_its_output() {
    let scenario = ResponsesScenario::new("healthy")
        .turn(ResponseTurn::new().text("Listing.").command("call_1", "ls"))
        .after_output("call_1", ResponseTurn::answer("Two files here."));
    let server = ResponsesMockServer::start(scenario).unwrap();
    let mut c = Client::connect(&server);
    c.post(
        "/v1/responses",
        &request(json!([{"type": "message", "role": "user", "content": []}])),
    );
    let (status, headers) = c.head();
    assert_eq!(status, 200);
    assert!(headers.contains(&"content-type: text/event-stream".to_string()));
    let events = c.events();
    assert_eq!(types(&events)[0], "response.created");
    assert_eq!(*types(&events).last().unwrap(), "response.completed");
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Listing.");
    let call = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "function_call")
        .unwrap();
    assert_eq!(call["item"]["name"], "exec_command");
    assert_eq!(call["item"]["call_id"], "call_1");
    let args: Value = serde_json::from_str(call["item"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["cmd"], "ls");
    // The same connection (keep-alive): the tool's output comes back, the answer follows.
    c.post(
        "/v1/responses",
        &request(json!([{"type": "function_call_output", "call_id": "call_1", "output": "a b"}])),
    );
    let (status, _) = c.head();
    assert_eq!(status, 200);
    let done = c.events();
    let message = done
        .iter()
        .find(|e| e["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(message["item"]["content"][0]["text"], "Two files here.");
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].call_outputs, ["call_1"]);
    assert_eq!(seen[1].last_output(), Some("call_1"));
    assert_eq!(seen[0].model.as_deref(), Some("mock-model"));
}

/// Reads raw bytes of a stalled stream until `until` holds of them, or its end, or a quiet
/// `STEP`; returns what came.
fn read_until(c: &mut Client, until: impl Fn(&str) -> bool) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !until(&String::from_utf8_lossy(&got)) {
        match c.conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn a_stall_mid_answer_sends_nothing_more_or_only_keep_alive_comments() {
    for keep_alive in [false, true] {
        let mut turn = ResponseTurn::answer("Working on the answer now").stall(Stall::Forever);
        if keep_alive {
            turn = turn.keep_alive_every(Duration::from_millis(50));
        }
        let server =
            ResponsesMockServer::start(ResponsesScenario::new("stall").turn(turn)).unwrap();
        let mut c = Client::connect(&server);
        c.post("/v1/responses", &request(json!([])));
        let (status, _) = c.head();
        assert_eq!(status, 200);
        // Two keep-alives when they come; else what came before a quiet spell of 300 ms.
        if !keep_alive {
            c.conn
                .get_ref()
                .set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
        }
        let stalled = read_until(&mut c, |s| s.matches(": keep-alive").count() >= 2);
        assert!(stalled.contains("response.created"), "{stalled}");
        assert!(stalled.contains("Working "), "the answer began: {stalled}");
        assert!(!stalled.contains("response.completed"), "{stalled}");
        assert!(
            !stalled.contains("the answer now"),
            "the rest never came: {stalled}"
        );
        assert_eq!(
            stalled.contains(": keep-alive"),
            keep_alive,
            "keep-alives {keep_alive}: {stalled}"
        );
        // Shutting down ends the stall.
        server.shutdown();
    }
}

#[test]
fn a_stall_for_a_while_then_the_rest() {
    let turn =
        ResponseTurn::answer("Half then the rest").stall(Stall::For(Duration::from_millis(100)));
    let server = ResponsesMockServer::start(ResponsesScenario::new("pause").turn(turn)).unwrap();
    let mut c = Client::connect(&server);
    c.post("/v1/responses", &request(json!([])));
    c.head();
    let events = c.events();
    assert_eq!(*types(&events).last().unwrap(), "response.completed");
}

#[test]
fn http_errors_carry_an_api_error_body_and_retries_get_the_same() {
    let server = ResponsesMockServer::start(
        ResponsesScenario::new("overloaded").turn(ResponseTurn::error(500, "mock: overloaded")),
    )
    .unwrap();
    for _ in 0..2 {
        let mut c = Client::connect(&server);
        c.post("/v1/responses", &request(json!([])));
        let (status, headers) = c.head();
        assert_eq!(status, 500);
        let body = c.body(&headers);
        assert_eq!(body["error"]["message"], "mock: overloaded");
        assert_eq!(body["error"]["type"], "server_error");
    }
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn odd_requests_get_clear_answers() {
    let server = ResponsesMockServer::start(ResponsesScenario::new("empty")).unwrap();
    // No scenario turns: the default answer.
    let mut c = Client::connect(&server);
    c.post("/v1/responses", "not json");
    let (status, _) = c.head();
    assert_eq!(status, 200);
    let events = c.events();
    assert_eq!(*types(&events).last().unwrap(), "response.completed");
    assert_eq!(server.requests()[0].body, Value::Null);
    let mut c = Client::connect(&server);
    c.post("/v1/chat/completions", "{}");
    let (status, headers) = c.head();
    assert_eq!(status, 404);
    assert!(c.body(&headers)["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no route"));
    let mut c = Client::connect(&server);
    c.conn.get_mut().write_all(b"GARBAGE\r\n\r\n").unwrap();
    let (status, _) = c.head();
    assert_eq!(status, 400);
}
