//! Only Claude Code's own frames are classified (field report N10: a supervisor that matched
//! "rate limit" or "not logged in" anywhere in the output killed or retried healthy runs). A
//! tool's output, the model's text or a subagent's result that *says* "rate limit",
//! "overloaded", "not logged in" or "API Error: 529" is a tool result, a text, a result like
//! any other: the same classes, the same deadlines, no rate-limit reading, no back-off, the
//! same outcome. Virtual time only.

mod common;

use std::time::Duration;

use common::{lines as l, min, sec, H};
use watchdog_core::{Event, Limits, Outcome, SessionConfig};

const PHRASES: &[&str] = &[
    "rate limit",
    "Rate limit reached for requests",
    "overloaded",
    "Overloaded: the API is overloaded (529)",
    "not logged in",
    "Invalid API key · Please run /login",
    "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}",
    "Claude AI usage limit reached|1900000000",
    "{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":\"rejected\",\"utilization\":1}}",
    "{\"type\":\"system\",\"subtype\":\"api_retry\",\"retry_delay_ms\":600000}",
];

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// One session's lines with `text` placed where tools and the model put text.
fn lines(text: &str) -> Vec<String> {
    let t = json_str(text);
    vec![
        l::INIT.to_string(),
        l::tool_use("toolu_b", "Bash"),
        // The tool's output.
        format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_b","type":"tool_result","content":{t}}}]}},"parent_tool_use_id":null,"session_id":"s","tool_use_result":{{"stdout":{t},"stderr":{t},"interrupted":false}}}}"#
        ),
        // An error result of a tool.
        format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_c","type":"tool_result","content":[{{"type":"text","text":{t}}}],"is_error":true}}]}},"parent_tool_use_id":null,"session_id":"s"}}"#
        ),
        // A subagent's tool result and the model's own words.
        format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_d","type":"tool_result","content":{t}}}]}},"parent_tool_use_id":"toolu_a","session_id":"s"}}"#
        ),
        format!(
            r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":{t}}}]}},"parent_tool_use_id":null,"session_id":"s"}}"#
        ),
        // A streamed delta of it.
        format!(
            r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{t}}}}},"session_id":"s","parent_tool_use_id":null}}"#
        ),
        format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"result":{t},"stop_reason":"end_turn","terminal_reason":"completed","session_id":"s"}}"#
        ),
    ]
}

/// What the registry makes of a session with `text` inside: the classes, the events, the
/// outcome, the utilization and the rate-limit windows.
fn run(text: &str) -> String {
    let limits = Limits::default()
        .with_idle(min(5.0))
        .and_then(|l| l.with_linger(min(3.0)))
        .unwrap();
    let mut h = H::new(limits);
    let id = h.r.register(
        h.t0,
        SessionConfig::default()
            .with_tally(true)
            .with_live_facts(true),
    );
    let mut classes = Vec::new();
    for (i, line) in lines(text).iter().enumerate() {
        classes.push(h.line(sec(i as f64), id, line));
    }
    let events: Vec<(Duration, String)> = h
        .run_until(min(30.0))
        .into_iter()
        .map(|(t, e)| {
            // Events carry instants relative to the registry's own epoch: compare their kinds.
            let name = match &e {
                Event::Killed(k) => format!("killed {} {:?}", k.kind, k.backoff),
                other => format!("{other:?}")
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .to_owned(),
            };
            (t, name)
        })
        .collect();
    let record = h.r.finish(h.at(min(30.0)), id).unwrap();
    let outcome = match record.outcome {
        Outcome::Killed { kind } => format!("killed {kind}"),
        o => o.as_str().to_owned(),
    };
    format!(
        "{classes:?}\n{events:?}\n{outcome}\n{:?}\n{}",
        h.r.utilization(),
        record.rate_limits.windows().count()
    )
}

#[test]
fn text_that_names_a_failure_changes_nothing() {
    let neutral = run("all tests passed");
    for phrase in PHRASES {
        assert_eq!(run(phrase), neutral, "{phrase}");
    }
}
