//! The exports of what follows from the rules, for the npm package's helpers (`index.js`'s
//! `watchdogEnv` and `watchdogKill`, `lib/temporal.mjs`, `lib/metrics-server.mjs`): each a
//! call into the one Rust home of its rule, text in and out through the buffers as JSON.
//!
//! - [`rules_tables`]: the continuation prompt, the retrying host's failures, the session
//!   policy's options, the `/metrics` endpoint's defaults.
//! - [`rules_env`] (`watchdog_host::options::env_for`), [`rules_kill`] (the synthetic result's
//!   reader), [`rules_timeouts`] (the activity timeouts), [`rules_metrics_answer`] and
//!   [`rules_metrics_options`] (the endpoint's answers and bounds).
//! - `rules_run_*`: the SDK-run fold ([`watchdog_host::sdk_run::SdkRun`]), one object per
//!   session, named by an index; times are the host's milliseconds ([`crate::clock`]).

#![allow(unsafe_code)] // `#[no_mangle]` only: each export is named as it is written.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};
use watchdog_core::ending::FAILURES;
use watchdog_core::recovery::{Recovery, Trigger};
use watchdog_core::synthetic::SyntheticKill;
use watchdog_core::LineView;
use watchdog_host::metrics::bounds::ServeBounds;
use watchdog_host::metrics::scrape::{Request, CONTENT_TYPE};
use watchdog_host::options::{env_for, session_options, SessionPolicy};
use watchdog_host::sdk_run::SdkRun;

use crate::clock;
use crate::state::{with, Table};

thread_local! {
    static RUNS: RefCell<Table<SdkRun>> = RefCell::new(Table::default());
}

/// The input's first `len` bytes as JSON (`Null` when they are not JSON).
fn input_json(len: u32) -> Value {
    with(|s| serde_json::from_slice(s.input(len)).unwrap_or(Value::Null))
}

fn answer(v: &Value) -> u32 {
    with(|s| s.answer(&v.to_string()))
}

fn error(message: impl std::fmt::Display, type_error: bool) -> Value {
    json!({"error": message.to_string(), "typeError": type_error})
}

/// The rules' tables, as JSON (length of the text): `afterKillPrompt` (the continuation prompt
/// after a kill), `failures` (`{ending: [type, retryable]}`, and `fallback`, the failure of a
/// kill the table does not name), `policy` (the session policy's options: `name`, `env`,
/// `kind`, `default`, `range`), `metrics` (the endpoint's content type and defaults).
#[no_mangle]
pub extern "C" fn rules_tables() -> u32 {
    let failures: Map<String, Value> = FAILURES
        .iter()
        .map(|(n, f)| ((*n).to_owned(), json!([f.error_type, f.retryable])))
        .collect();
    let fallback = watchdog_core::ending::failure("");
    let policy: Vec<Value> = session_options()
        .map(|o| {
            json!({"name": o.name, "env": o.env, "kind": format!("{:?}", o.kind),
                   "default": o.default_value(), "range": o.range()})
        })
        .collect();
    let d = ServeBounds::default();
    answer(&json!({
        "afterKillPrompt": Recovery::default().prompt(Trigger::AfterKill),
        "failures": failures,
        "fallback": [fallback.error_type, fallback.retryable],
        "policy": policy,
        "metrics": {
            "contentType": CONTENT_TYPE,
            "defaults": {"port": d.port, "host": d.host, "timeoutMs": d.timeout.as_millis() as u64,
                         "maxHeaderBytes": d.max_head, "maxConnections": d.max_connections},
        },
    }))
}

/// A session policy (JSON object in the input) as its `AGENT_WATCHDOG_*` variables:
/// `{"env": {…}}`, or `{"error", "typeError"}` (length of the text).
#[no_mangle]
pub extern "C" fn rules_env(len: u32) -> u32 {
    let out = match input_json(len) {
        Value::Object(policy) => match env_for(&policy) {
            Ok(env) => json!({"env": env}),
            Err(e) => error(&e.message, e.type_error),
        },
        _ => error("policy: expected an object", true),
    };
    answer(&out)
}

/// The watchdog's kill, if the message (JSON in the input) is its synthetic result:
/// `{"kind", "reason"}` (length of the text), else -1.
#[no_mangle]
pub extern "C" fn rules_kill(len: u32) -> i32 {
    let kill = with(|s| {
        let view = LineView::parse(s.input(len)).ok()?;
        SyntheticKill::read(&view)
    });
    match kill {
        Some(k) => answer(&json!({"kind": k.kind, "reason": k.reason})) as i32,
        None => -1,
    }
}

/// The environment (a JSON object of strings in the input) as the drop-in reads it.
fn env_of(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The Temporal activity timeouts of the policy in the environment (a JSON object in the
/// input: the `AGENT_WATCHDOG_*` variables over the worker's) plus `margin_ms`:
/// `{"heartbeatTimeout", "startToCloseTimeout"}` in ms (`null` without a ceiling), or
/// `{"error"}` (length of the text).
#[no_mangle]
pub extern "C" fn rules_timeouts(len: u32, margin_ms: f64) -> u32 {
    let env = env_of(&input_json(len));
    let Some(margin) = Duration::try_from_secs_f64(margin_ms / 1000.0).ok() else {
        return answer(&error(
            format!("margin: must be a duration >= 0, got {margin_ms} ms"),
            false,
        ));
    };
    let out = match SessionPolicy::from_env(&env) {
        Ok(p) => {
            let (hb, stc) = p.activity_timeouts(margin);
            json!({"heartbeatTimeout": ms(hb), "startToCloseTimeout": stc.map(ms)})
        }
        Err(e) => error(format!("invalid watchdog policy: {e}"), false),
    };
    answer(&out)
}

/// A fold of one SDK session that starts at `now` (`wall`: epoch ms then) under the policy of
/// its environment (a JSON object in the input), with `margin_ms` added to the kill ladder:
/// its index, or -1 with the error in the output.
#[no_mangle]
pub extern "C" fn rules_run_new(now: f64, wall: f64, margin_ms: f64, len: u32) -> i32 {
    let env = env_of(&input_json(len));
    let margin = Duration::try_from_secs_f64(margin_ms.max(0.0) / 1000.0).unwrap_or_default();
    let wall = if wall.is_finite() && wall > 0.0 {
        wall as u64
    } else {
        0
    };
    match SdkRun::from_env(clock::instant(now), wall, &env, margin) {
        Ok(run) => RUNS
            .with(|r| r.borrow_mut().insert(run))
            .map_or(-1, |i| i as i32),
        Err(e) => {
            with(|s| s.answer(&e));
            -1
        }
    }
}

/// Drop a fold.
#[no_mangle]
pub extern "C" fn rules_run_free(r: u32) {
    RUNS.with(|runs| runs.borrow_mut().remove(r));
}

fn on_run<R>(r: u32, or: R, f: impl FnOnce(&mut SdkRun) -> R) -> R {
    RUNS.with(|runs| runs.borrow_mut().get_mut(r).map_or(or, f))
}

/// Fold one message (JSON in the input) read at `now`: bit 0, a progress was confirmed
/// ([`rules_run_progress`]); bit 1, the turn was interrupted; bit 2, the watchdog's kill came.
#[no_mangle]
pub extern "C" fn rules_run_observe(r: u32, len: u32, now: f64) -> i32 {
    let line = with(|s| s.input(len).to_vec());
    on_run(r, 0, |run| {
        let step = run.observe(clock::instant(now), &line);
        i32::from(step.progress.is_some())
            | i32::from(step.interrupted) << 1
            | i32::from(step.kill) << 2
    })
}

/// The last confirmed progress, epoch ms (`NaN`: none).
#[no_mangle]
pub extern "C" fn rules_run_progress(r: u32) -> f64 {
    on_run(r, f64::NAN, |run| {
        run.last_progress()
            .map_or(f64::NAN, |at| run.wall_ms(at) as f64)
    })
}

/// Claude Code's session id in the output (its length), or -1 before one was read.
#[no_mangle]
pub extern "C" fn rules_run_session(r: u32) -> i32 {
    let id = on_run(r, None, |run| run.session_id().map(str::to_owned));
    id.map_or(-1, |id| with(|s| s.answer(&id)) as i32)
}

/// Whether the session is alive at `now` (1) or the watchdog beside it failed to end it (0).
#[no_mangle]
pub extern "C" fn rules_run_alive(r: u32, now: f64) -> i32 {
    on_run(r, 0, |run| i32::from(run.alive(clock::instant(now))))
}

/// The stream ended at `now`: how the session ended, as JSON (length of the text): `end` (its
/// name), `failure` (`{type, retryable}`, `null` for a success), `kill` (`{kind, reason}`),
/// `result` (the last result's `subtype`, `terminal_reason`, `num_turns`, `total_cost_usd`).
#[no_mangle]
pub extern "C" fn rules_run_finish(r: u32, now: f64) -> u32 {
    let out = on_run(r, Value::Null, |run| {
        let e = run.finish(clock::instant(now));
        json!({
            "end": e.end.name(),
            "failure": e.failure.map(|f| json!({"type": f.error_type, "retryable": f.retryable})),
            "kill": e.kill.map(|k| json!({"kind": k.kind, "reason": k.reason})),
            "result": e.result.map(|r| json!({
                "subtype": r.subtype, "terminal_reason": r.terminal_reason,
                "num_turns": r.num_turns, "total_cost_usd": r.total_cost_usd,
            })),
        })
    });
    answer(&out)
}

/// The answer to a request `METHOD TARGET` (the input): `{"status", "contentType", "allow",
/// "body"}` (`body` `null`: the metrics), length of the text.
#[no_mangle]
pub extern "C" fn rules_metrics_answer(len: u32) -> u32 {
    let text = with(|s| String::from_utf8_lossy(s.input(len)).into_owned());
    let (method, target) = text.split_once(' ').unwrap_or((&text, ""));
    let a = Request::of(method, target).answer();
    answer(
        &json!({"status": a.status, "contentType": a.content_type, "allow": a.allow,
                   "body": a.body}),
    )
}

/// `serveMetrics()`'s options (a JSON object in the input, the defaults under unset ones)
/// checked by the endpoint's rules: `{"options": {…}}` or `{"error"}` (length of the text).
#[no_mangle]
pub extern "C" fn rules_metrics_options(len: u32) -> u32 {
    let given = input_json(len);
    let d = ServeBounds::default();
    let num = |k: &str, default: f64| given.get(k).map_or(Some(default), Value::as_f64);
    let checked = (|| -> Result<Value, String> {
        let named = |k: &str, e: watchdog_core::config::InvalidValue| format!("{k} {e}");
        let port = num("port", f64::from(d.port)).unwrap_or(f64::NAN);
        let port = ServeBounds::port(port).map_err(|e| named("port", e))?;
        let host = match given.get("host") {
            None => d.host.clone(),
            Some(Value::String(s)) => ServeBounds::host(s).map_err(|e| named("host", e))?,
            Some(other) => return Err(format!("host must be a non-empty string, got {other}")),
        };
        let t = num("timeoutMs", d.timeout.as_secs_f64() * 1000.0).unwrap_or(f64::NAN);
        let timeout = ServeBounds::timeout_secs(t / 1000.0)
            .map_err(|_| format!("timeoutMs must be a number > 0, got {t}"))?;
        let head = num("maxHeaderBytes", d.max_head as f64).unwrap_or(f64::NAN);
        let head = ServeBounds::count(head).map_err(|e| named("maxHeaderBytes", e))?;
        let conns = num("maxConnections", d.max_connections as f64).unwrap_or(f64::NAN);
        let conns = ServeBounds::count(conns).map_err(|e| named("maxConnections", e))?;
        Ok(
            json!({"port": port, "host": host, "timeoutMs": timeout.as_secs_f64() * 1000.0,
                  "maxHeaderBytes": head, "maxConnections": conns}),
        )
    })();
    answer(&match checked {
        Ok(o) => json!({"options": o}),
        Err(e) => error(e, false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> u32 {
        let _ = crate::abi::input(text.len() as u32);
        with(|s| s.input.copy_from_slice(text.as_bytes()));
        text.len() as u32
    }

    fn out(len: u32) -> Value {
        with(|s| serde_json::from_slice(&s.output[..len as usize]).unwrap())
    }

    #[test]
    fn the_tables_and_the_policy_cross_as_json() {
        let t = out(rules_tables());
        assert!(t["afterKillPrompt"]
            .as_str()
            .unwrap()
            .starts_with("The previous run was stopped"));
        assert_eq!(t["failures"]["ceiling"], json!(["WatchdogCeiling", false]));
        assert_eq!(t["fallback"], json!(["WatchdogKill", true]));
        assert_eq!(t["metrics"]["defaults"]["port"], 9464);
        let env = out(rules_env(write(
            r#"{"noProgress": 90, "writeTools": ["Write"]}"#,
        )));
        assert_eq!(env["env"]["AGENT_WATCHDOG_NO_PROGRESS"], "90");
        let bad = out(rules_env(write(r#"{"idle": "0s"}"#)));
        assert_eq!(bad["typeError"], false, "{bad}");
        let unknown = out(rules_env(write(r#"{"idel": "5m"}"#)));
        assert_eq!(unknown["typeError"], true);
        let t = out(rules_timeouts(
            write(r#"{"AGENT_WATCHDOG_CEILING": "1h"}"#),
            60_000.0,
        ));
        assert_eq!(t["heartbeatTimeout"], (1800 + 5 + 60) * 1000);
        assert_eq!(t["startToCloseTimeout"], (3600 + 5 + 60) * 1000);
    }

    #[test]
    fn a_fold_reads_a_session_and_ends_as_run_does() {
        let r = rules_run_new(0.0, 1.9e12, 1000.0, write("{}")) as u32;
        let init = r#"{"type":"system","subtype":"init","session_id":"s-1"}"#;
        assert_eq!(rules_run_observe(r, write(init), 0.0), 0);
        assert_eq!(
            rules_run_observe(
                r,
                write(r#"{"type":"assistant","message":{"content":[]}}"#),
                5.0
            ),
            1
        );
        assert_eq!(rules_run_progress(r), 1.9e12);
        let len = rules_run_session(r);
        assert_eq!(with(|s| s.output[..len as usize].to_vec()), b"s-1");
        assert_eq!(rules_run_alive(r, 10.0), 1);
        let kill = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"watchdog_linger","result":"killed"}"#;
        assert_eq!(rules_run_observe(r, write(kill), 20.0), 4);
        let end = out(rules_run_finish(r, 30.0));
        assert_eq!(end["end"], "linger");
        assert_eq!(
            end["failure"],
            json!({"type": "WatchdogLinger", "retryable": true})
        );
        rules_run_free(r);
        assert_eq!(rules_run_alive(r, 40.0), 0, "a freed fold is nothing");
        assert_eq!(
            rules_run_new(0.0, 0.0, 0.0, write(r#"{"AGENT_WATCHDOG_IDLE": "0"}"#)),
            -1
        );
    }

    #[test]
    fn the_metrics_endpoint_answers_and_checks_as_every_host_does() {
        let a = out(rules_metrics_answer(write("POST /metrics")));
        assert_eq!(
            (a["status"].as_u64(), a["allow"].as_str()),
            (Some(405), Some("GET, HEAD"))
        );
        let a = out(rules_metrics_answer(write("GET /metrics?x")));
        assert_eq!(
            (a["status"].as_u64(), a["body"].is_null()),
            (Some(200), true)
        );
        let o = out(rules_metrics_options(write(r#"{"port": 0}"#)));
        assert_eq!(o["options"]["maxConnections"], 64);
        let e = out(rules_metrics_options(write(r#"{"port": 70000}"#)));
        assert_eq!(
            e["error"],
            "port must be an integer in [0, 65535], got 70000"
        );
        assert!(rules_kill(write(r#"{"type":"result","subtype":"success"}"#)) < 0);
    }
}
